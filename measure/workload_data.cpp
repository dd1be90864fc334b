#include "measure/workload_data.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "schedule/te/error.h"

namespace tessel {
namespace {

constexpr char kMagic[] = "TESSELWD1\n";
constexpr size_t kMagicSize = sizeof kMagic - 1;
constexpr int64_t kAlign = 4096;

int64_t align_up(int64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float32: return {1e-4, 1e-5};
    // torch.testing's tolerances for these types: one rounding of the result is about 2^-11 (float16)
    // and 2^-8 (bfloat16) relative, and accumulating in float32 adds little to that.
    case DType::Float16: return {1e-3, 1e-5};
    case DType::BFloat16: return {1.6e-2, 1e-5};
    default: return {1e-4, 1e-5};
  }
}

void write_workload_data(const std::string& path, const ComputeDAG& dag, const HostTensors& inputs,
                         const ReferenceTensors& reference) {
  struct Blob {
    const void* data;
    int64_t bytes;
  };
  std::vector<Blob> blobs;
  nlohmann::json manifest = nlohmann::json::array();
  auto add = [&](const Operation& op, bool is_output, const void* data, int64_t elements, int64_t element_bytes) {
    if (elements != op.num_elements())
      throw Error("workload data: " + op.name + " has " + std::to_string(elements) + " values, expected " +
                  std::to_string(op.num_elements()));
    Tolerance t = tolerance_for(op.dtype);
    manifest.push_back({{"name", op.name},
                        {"shape", op.shape},
                        {"role", is_output ? "reference" : "input"},
                        {"dtype", is_output ? "float64" : "float32"},
                        {"rtol", t.rtol},
                        {"atol", t.atol}});
    blobs.push_back({data, elements * element_bytes});
  };
  for (const std::string& name : dag.inputs()) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error("workload data: no values for input " + name);
    add(dag.op(name), false, it->second.data(), static_cast<int64_t>(it->second.size()), 4);
  }
  for (const std::string& name : dag.outputs()) {
    auto it = reference.find(name);
    if (it == reference.end()) throw Error("workload data: no reference for output " + name);
    add(dag.op(name), true, it->second.data(), static_cast<int64_t>(it->second.size()), 8);
  }
  // Offsets depend on the manifest's length, which depends on the offsets: reserve room for them.
  int64_t header = align_up(static_cast<int64_t>(kMagicSize + manifest.dump().size() + 64 * blobs.size() + 64));
  int64_t offset = header;
  for (size_t i = 0; i < blobs.size(); ++i) {
    manifest[i]["offset"] = offset;
    offset += align_up(blobs[i].bytes);
  }
  std::string head = std::string(kMagic) + manifest.dump() + "\n";
  if (static_cast<int64_t>(head.size()) > header) throw Error("workload data: manifest larger than its room");
  head.resize(static_cast<size_t>(header), '\0');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write workload data " + path + ": " + std::strerror(errno));
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  const std::string zeros(kAlign, '\0');
  for (const Blob& b : blobs) {
    out.write(static_cast<const char*>(b.data), static_cast<std::streamsize>(b.bytes));
    out.write(zeros.data(), static_cast<std::streamsize>(align_up(b.bytes) - b.bytes));
  }
  out.close();
  if (!out) throw Error("error writing workload data " + path);
}

WorkloadData WorkloadData::map(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open workload data " + path + ": " + std::strerror(errno));
  struct stat st {};
  fstat(fd, &st);
  WorkloadData d;
  d.size_ = static_cast<size_t>(st.st_size);
  if (d.size_ < kMagicSize) {
    close(fd);
    throw Error(path + " is not a workload data file (too short)");
  }
  d.base_ = mmap(nullptr, d.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (d.base_ == MAP_FAILED) {
    d.base_ = nullptr;
    throw Error("cannot map workload data " + path + ": " + std::strerror(errno));
  }
  const char* bytes = static_cast<const char*>(d.base_);
  if (std::memcmp(bytes, kMagic, kMagicSize) != 0) throw Error(path + " is not a workload data file");
  const char* end = static_cast<const char*>(std::memchr(bytes + kMagicSize, '\n', d.size_ - kMagicSize));
  if (!end) throw Error(path + ": workload data manifest is not terminated");
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(bytes + kMagicSize, end);
    for (const auto& t : manifest) {
      Tensor tensor;
      tensor.name = t.at("name").get<std::string>();
      tensor.shape = t.at("shape").get<std::vector<int64_t>>();
      tensor.is_output = t.at("role") == "reference";
      tensor.tolerance = {t.at("rtol").get<double>(), t.at("atol").get<double>()};
      tensor.elements = 1;
      for (int64_t e : tensor.shape) tensor.elements *= e;
      int64_t offset = t.at("offset").get<int64_t>();
      int64_t bytes_needed = tensor.elements * (tensor.is_output ? 8 : 4);
      if (offset < 0 || offset % kAlign != 0 || offset + bytes_needed > static_cast<int64_t>(d.size_))
        throw Error(path + ": tensor " + tensor.name + " lies outside the file (truncated?)");
      if (tensor.is_output)
        tensor.reference = reinterpret_cast<const double*>(bytes + offset);
      else
        tensor.input = reinterpret_cast<const float*>(bytes + offset);
      d.tensors_.push_back(std::move(tensor));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": bad workload data manifest: " + e.what());
  }
  return d;
}

WorkloadData::WorkloadData(WorkloadData&& other) noexcept { *this = std::move(other); }

WorkloadData& WorkloadData::operator=(WorkloadData&& other) noexcept {
  if (this != &other) {
    if (base_) munmap(base_, size_);
    base_ = other.base_;
    size_ = other.size_;
    tensors_ = std::move(other.tensors_);
    other.base_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

WorkloadData::~WorkloadData() {
  if (base_) munmap(base_, size_);
}

const WorkloadData::Tensor* WorkloadData::find(const std::string& name) const {
  for (const Tensor& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace tessel
