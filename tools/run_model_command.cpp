// tessel run MODEL.tsl: a built model run once on inputs from files (ONNX TensorProto .pb, as in
// ONNX's test data, or NumPy .npy), its outputs written to files or summarized, and with --bench its
// latency over repeated runs (median and spread), with --profile each kernel's time in the run, by task.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <nlohmann/json.hpp>

#include "codegen/llvm/parallel_runtime.h"
#include "frontend/onnx_tensor.h"
#include "runtime/model.h"
#include "schedule/te/error.h"
#include "tools/commands.h"
#include "tools/format_duration.h"
#include "tools/model_bench.h"
#include "tools/npy.h"

namespace tessel {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TensorData read_tensor_file(const std::string& path) {
  if (ends_with(path, ".npy")) return read_npy(path);
  if (ends_with(path, ".pb")) return read_tensor_pb(path);
  throw InputError("'" + path + "': give an .npy or a .pb (ONNX TensorProto) file");
}

void write_tensor_file(const std::string& path, const std::string& name, const TensorData& data) {
  if (ends_with(path, ".npy")) return write_npy(path, data);
  if (ends_with(path, ".pb")) return write_tensor_pb(path, name, data);
  throw InputError("'" + path + "': write an .npy or a .pb file");
}

// "[NAME=]FILE" → (name or "", file).
std::pair<std::string, std::string> split_binding(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) return {"", spec};
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

// The model input each --input names (by position when unnamed).
size_t input_slot(const LoadedModel& model, const std::string& name, size_t position) {
  if (name.empty()) {
    if (position >= model.inputs().size())
      throw InputError("more --input files than the model's " + std::to_string(model.inputs().size()) + " inputs");
    return position;
  }
  std::optional<size_t> i = model.input_index(name);
  if (!i) {
    std::string known;
    for (const ModelTensor& t : model.inputs()) known += (known.empty() ? "" : ", ") + t.name;
    throw InputError("the model has no input '" + name + "' (its inputs: " + known + ")");
  }
  return *i;
}

// The profile by task: kernels of one workload and schedule are one task (a model repeats blocks),
// their medians summed; the slowest task first.
nlohmann::json task_profile(const ModelArtifact& a, const ProfileResult& p) {
  std::map<std::pair<std::string, int64_t>, size_t> index;
  std::vector<nlohmann::json> tasks;
  for (size_t k = 0; k < a.kernels.size(); ++k) {
    const PlanKernel& kernel = a.kernels[k];
    auto [it, fresh] = index.emplace(std::make_pair(kernel.workload_key, kernel.record_id), tasks.size());
    if (fresh)
      tasks.push_back({{"summary", kernel.summary}, {"workload_key", kernel.workload_key},
                       {"record_id", kernel.record_id}, {"kernels", 0}, {"seconds", 0.0}});
    nlohmann::json& t = tasks[it->second];
    t["kernels"] = t["kernels"].get<int>() + 1;
    t["seconds"] = t["seconds"].get<double>() + p.kernel_median_s[k];
  }
  std::stable_sort(tasks.begin(), tasks.end(), [](const nlohmann::json& x, const nlohmann::json& y) {
    return x["seconds"].get<double>() > y["seconds"].get<double>();
  });
  return tasks;
}

void print_profile(const nlohmann::json& profile, bool graph) {
  const double sum = profile["sum_s"].get<double>();
  std::cout << "profile: " << profile["kernels"].size() << " kernels in " << profile["tasks"].size() << " tasks, "
            << profile["runs"].get<size_t>() << " runs, each kernel timed alone in the run"
            << (graph ? " (launched one by one, not as the graph)" : "") << "; kernels' medians sum to "
            << format_duration(sum) << "\n";
  std::cout << "  " << std::left << std::setw(11) << "time" << std::setw(8) << "share" << std::setw(9) << "kernels"
            << std::setw(13) << "schedule" << "task\n";
  for (const nlohmann::json& t : profile["tasks"]) {
    const double s = t["seconds"].get<double>();
    const int64_t record = t["record_id"].get<int64_t>();
    std::ostringstream share;
    share << std::fixed << std::setprecision(1) << (sum > 0 ? 100 * s / sum : 0.0) << "%";
    std::cout << "  " << std::setw(11) << format_duration(s) << std::setw(8) << share.str() << std::setw(9)
              << t["kernels"].get<int>() << std::setw(13)
              << (record >= 0 ? "record " + std::to_string(record) : std::string("default"))
              << t["summary"].get<std::string>() << "\n";
  }
  std::cout << std::right;
}

}  // namespace

int cmd_run_model(const RunModelArgs& args) {
  const LoadedModel model = LoadedModel::load(args.model);
  if (args.threads > 0) {
    if (model.target() != TargetKind::Llvm) throw InputError("--threads is for a model built for llvm");
    set_num_threads(args.threads);
  }
  ExecutionContext ctx(model);
  std::vector<TensorData> inputs(model.inputs().size());
  std::vector<bool> bound(model.inputs().size(), false);
  for (size_t k = 0; k < args.inputs.size(); ++k) {
    const auto [name, file] = split_binding(args.inputs[k]);
    const size_t slot = input_slot(model, name, k);
    inputs[slot] = read_tensor_file(file);
    ctx.set_input(slot, inputs[slot].dtype(), inputs[slot].shape(), inputs[slot].bytes());
    bound[slot] = true;
  }
  ctx.run();  // names every unbound input before any kernel runs
  nlohmann::json j = {
      {"model", args.model}, {"target", target_kind_name(model.target())}, {"outputs", nlohmann::json::array()}};
  if (model.target() == TargetKind::Llvm) j["threads"] = num_threads();
  std::vector<TensorData> outputs;
  for (size_t i = 0; i < model.outputs().size(); ++i) {
    const ModelTensor& t = model.outputs()[i];
    std::vector<uint8_t> bytes(static_cast<size_t>(t.bytes));
    ctx.copy_output(i, bytes.data(), MemoryKind::Host);
    outputs.emplace_back(t.dtype, t.shape, std::move(bytes), t.name);
    double sum = 0;
    for (int64_t e = 0; e < outputs.back().num_elements(); ++e) sum += outputs.back().as_double(e);
    j["outputs"].push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", to_string(t.dtype)}, {"sum", sum}});
  }
  for (size_t k = 0; k < args.outputs.size(); ++k) {
    const auto [name, file] = split_binding(args.outputs[k]);
    const size_t i = name.empty() ? k : model.output_index(name).value_or(model.outputs().size());
    if (i >= outputs.size()) throw InputError("--output " + args.outputs[k] + ": the model has no such output");
    write_tensor_file(file, model.outputs()[i].name, outputs[i]);
  }
  if (args.bench) {
    const BenchResult b = bench_runs(ctx);
    j["latency_s"] = {{"median", b.median_s}, {"p10", b.p10_s}, {"p90", b.p90_s}, {"runs", b.runs}};
    const MemoryUsage m = ctx.memory_usage();
    j["memory_bytes"] = {{"weights", m.weights}, {"context", m.context_bytes()}};
  }
  if (args.profile) {
    const ProfileResult p = profile_runs(ctx);
    const ModelArtifact& a = model.artifact();
    nlohmann::json kernels = nlohmann::json::array();
    double sum = 0;
    for (size_t k = 0; k < a.kernels.size(); ++k) {
      kernels.push_back({{"name", a.kernels[k].name}, {"summary", a.kernels[k].summary},
                         {"workload_key", a.kernels[k].workload_key}, {"record_id", a.kernels[k].record_id},
                         {"median_s", p.kernel_median_s[k]}});
      sum += p.kernel_median_s[k];
    }
    j["profile"] = {{"runs", p.runs}, {"sum_s", sum}, {"kernels", kernels}, {"tasks", task_profile(a, p)}};
  }
  if (args.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  for (const nlohmann::json& o : j["outputs"])
    std::cout << o["name"].get<std::string>() << ": " << o["dtype"].get<std::string>() << " " << o["shape"].dump()
              << ", sum " << o["sum"].get<double>() << "\n";
  if (args.bench)
    std::cout << "latency: median " << format_duration(j["latency_s"]["median"]) << " (p10 "
              << format_duration(j["latency_s"]["p10"]) << ", p90 " << format_duration(j["latency_s"]["p90"]) << ", "
              << j["latency_s"]["runs"].get<size_t>() << " runs"
              << (ctx.replays_graph() ? ", each one CUDA graph" : "")
              << (j.contains("threads") ? ", " + std::to_string(j["threads"].get<int>()) + " threads" : "")
              << ")\n";
  if (args.profile) print_profile(j["profile"], ctx.replays_graph());
  return 0;
}

}  // namespace tessel
