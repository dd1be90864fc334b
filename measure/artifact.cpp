#include "measure/artifact.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "schedule/te/error.h"

namespace tessel {
namespace {

nlohmann::json params_json(const std::vector<BufferParam>& params) {
  nlohmann::json out = nlohmann::json::array();
  for (const BufferParam& p : params)
    out.push_back({{"name", p.name}, {"dtype", to_string(p.dtype)}, {"shape", p.shape}, {"output", p.is_output}});
  return out;
}

std::vector<BufferParam> params_from(const nlohmann::json& j) {
  std::vector<BufferParam> params;
  for (const auto& p : j) {
    BufferParam b;
    b.name = p.at("name").get<std::string>();
    b.shape = p.at("shape").get<std::vector<int64_t>>();
    b.is_output = p.at("output").get<bool>();
    // A manifest without a dtype (float32 was the only one) reads as float32.
    const std::string dtype = p.value("dtype", std::string("float32"));
    if (dtype == "int64") b.dtype = DType::Int64;
    else if (dtype == "bool") b.dtype = DType::Bool;
    else if (dtype == "float16") b.dtype = DType::Float16;
    else if (dtype == "bfloat16") b.dtype = DType::BFloat16;
    else if (dtype != "float32") throw Error("artifact parameter " + b.name + ": unknown dtype " + dtype);
    params.push_back(std::move(b));
  }
  return params;
}

}  // namespace

std::string artifact_to_json(const Artifact& a) {
  nlohmann::json j = {{"target", target_kind_name(a.target)},
                      {"kernel", a.kernel_name},
                      {"binary", a.binary_path},
                      {"params", params_json(a.params)},
                      {"scratch", params_json(a.scratch)}};
  j["launches"] = nlohmann::json::array();
  for (const CudaLaunch& l : a.launches)
    j["launches"].push_back({{"kernel", l.kernel_name},
                             {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                             {"block", {l.block[0], l.block[1], l.block[2]}},
                             {"dynamic_shared_bytes", l.dynamic_shared_bytes},
                             {"args", l.args}});
  return j.dump();
}

Artifact artifact_from_json(const std::string& text, const std::string& what) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    Artifact a;
    a.target = parse_target_kind(j.at("target").get<std::string>());
    a.kernel_name = j.at("kernel").get<std::string>();
    a.binary_path = j.at("binary").get<std::string>();
    a.params = params_from(j.at("params"));
    a.scratch = params_from(j.at("scratch"));
    for (const auto& l : j.at("launches")) {
      CudaLaunch launch;
      launch.kernel_name = l.at("kernel").get<std::string>();
      for (int d = 0; d < 3; ++d) {
        launch.grid[d] = l.at("grid").at(d).get<int64_t>();
        launch.block[d] = l.at("block").at(d).get<int64_t>();
      }
      launch.dynamic_shared_bytes = l.at("dynamic_shared_bytes").get<int64_t>();
      launch.args = l.at("args").get<std::vector<std::string>>();
      a.launches.push_back(std::move(launch));
    }
    return a;
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + ": bad artifact manifest: " + e.what());
  }
}

std::vector<char> read_binary_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path + ": " + std::strerror(errno));
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_binary_file(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write " + path + ": " + std::strerror(errno));
  out.write(data, static_cast<std::streamsize>(size));
  out.close();
  if (!out) throw Error("error writing " + path);
}

std::string device_info_to_json(const CudaDeviceInfo& d) {
  return nlohmann::json{{"name", d.name},
                        {"cc", {d.cc_major, d.cc_minor}},
                        {"arch", d.arch},
                        {"max_threads_per_block", d.max_threads_per_block},
                        {"max_shared_per_block", d.max_shared_per_block},
                        {"max_shared_per_block_optin", d.max_shared_per_block_optin},
                        {"max_grid", {d.max_grid[0], d.max_grid[1], d.max_grid[2]}},
                        {"max_block", {d.max_block[0], d.max_block[1], d.max_block[2]}},
                        {"sm_count", d.sm_count},
                        {"driver_version", d.driver_version},
                        {"l2_bytes", d.l2_bytes}}
      .dump();
}

CudaDeviceInfo device_info_from_json(const std::string& text) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    CudaDeviceInfo d;
    d.name = j.at("name").get<std::string>();
    d.cc_major = j.at("cc").at(0).get<int>();
    d.cc_minor = j.at("cc").at(1).get<int>();
    d.arch = j.at("arch").get<std::string>();
    d.max_threads_per_block = j.at("max_threads_per_block").get<int>();
    d.max_shared_per_block = j.at("max_shared_per_block").get<int64_t>();
    d.max_shared_per_block_optin = j.at("max_shared_per_block_optin").get<int64_t>();
    for (int i = 0; i < 3; ++i) {
      d.max_grid[i] = j.at("max_grid").at(i).get<int64_t>();
      d.max_block[i] = j.at("max_block").at(i).get<int64_t>();
    }
    d.sm_count = j.at("sm_count").get<int>();
    d.driver_version = j.at("driver_version").get<std::string>();
    d.l2_bytes = j.at("l2_bytes").get<int64_t>();
    return d;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("bad device description from the runner: ") + e.what());
  }
}

}  // namespace tessel
