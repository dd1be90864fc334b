// tessel build: a model and its tuning log into a deployable model file (deploy/model_builder.h),
// with a table of every task's schedule (tuned, and from which record, or the default) and a
// warning naming the tasks left on their default schedule with their share of the model's latency.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "codegen/cuda/cuda_backend.h"
#include "deploy/model_builder.h"
#include "schedule/te/error.h"
#include "search/tuning_machine.h"
#include "tools/commands.h"
#include "tools/format_duration.h"

namespace tessel {
namespace {

std::string percent(double share) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << 100 * share << "%";
  return out.str();
}

BuildOptions build_options(const BuildArgs& args) {
  BuildOptions o;
  o.target = args.target;
  o.db = args.db;
  if (args.memory_target && args.no_memory_target)
    throw InputError("--memory-target and --no-memory-target: one or the other");
  if ((args.memory_target || args.no_memory_target) && args.target != TargetKind::Cuda)
    throw InputError(std::string(args.memory_target ? "--memory-target" : "--no-memory-target") +
                     " applies to cuda builds");
  o.memory_target = !args.no_memory_target;
  if (args.target == TargetKind::Cuda) {
    // The GPU this machine has, or (none here) an H100's limits: a model built without a GPU runs
    // only where the architecture matches, and the log's records name the GPU they were timed on.
    std::string why;
    if (CudaRuntime* rt = CudaRuntime::get(&why)) {
      o.device = rt->device();
    } else {
      if (args.db) throw InputError("building for cuda from a tuning log needs the GPU it was tuned on: " + why);
      o.device = default_cuda_device_info();
    }
    o.device_name = o.device.name;
  } else {
    o.device_name = host_llvm_target().device_name;
  }
  return o;
}

void print_report(const BuildReport& r, const std::string& out) {
  double total = 0;
  for (const BuiltTask& t : r.tasks) total += t.weight * t.estimate_s;
  std::cout << std::left << std::setw(5) << "#" << std::setw(52) << "task" << std::right << std::setw(7) << "weight"
            << std::setw(12) << "schedule" << std::setw(12) << "latency"
            << "\n";
  std::vector<std::string> untuned;
  double untuned_share = 0;
  for (size_t i = 0; i < r.tasks.size(); ++i) {
    const BuiltTask& t = r.tasks[i];
    const std::string schedule = t.record_id >= 0 ? "record " + std::to_string(t.record_id) : "default";
    std::cout << std::left << std::setw(5) << i << std::setw(52) << t.name.substr(0, 51) << std::right << std::setw(7)
              << t.weight << std::setw(12) << schedule << std::setw(12)
              << (t.tuned_s ? format_duration(*t.tuned_s) : "-") << "\n";
    if (t.record_id < 0) {
      const double share = total > 0 ? t.weight * t.estimate_s / total : 0;
      untuned.push_back("t" + std::to_string(i) + " (" + percent(share) + ")");
      untuned_share += share;
    }
  }
  for (const std::string& note : r.notes) std::cerr << "note: " << note << "\n";
  if (!untuned.empty()) {
    std::string list;
    for (size_t i = 0; i < untuned.size() && i < 12; ++i) list += (i ? ", " : "") + untuned[i];
    std::cerr << "warning: " << untuned.size() << " of " << r.tasks.size()
              << " tasks have no tuned schedule in the log and use their default (" << percent(untuned_share)
              << " of the estimated latency): " << list << (untuned.size() > 12 ? ", ..." : "") << "\n";
  }
  std::cout << "built " << out << ": " << r.kernels << " kernels of " << r.tasks.size() << " tasks in " << std::fixed
            << std::setprecision(2) << r.seconds << " s; weights " << r.weight_bytes / 1024 << " KiB, intermediates "
            << r.arena_bytes / 1024 << " KiB (at least " << r.live_bound_bytes / 1024 << " KiB live at once)\n";
}

nlohmann::json report_json(const BuildReport& r, const std::string& out) {
  nlohmann::json j = {{"output", out},
                      {"seconds", r.seconds},
                      {"kernels", r.kernels},
                      {"weight_bytes", r.weight_bytes},
                      {"arena_bytes", r.arena_bytes},
                      {"live_bound_bytes", r.live_bound_bytes},
                      {"notes", r.notes},
                      {"tasks", nlohmann::json::array()}};
  for (const BuiltTask& t : r.tasks)
    j["tasks"].push_back({{"key", t.key},
                          {"name", t.name},
                          {"weight", t.weight},
                          {"record", t.record_id},
                          {"estimate_s", t.estimate_s},
                          {"tuned_s", t.tuned_s ? nlohmann::json(*t.tuned_s) : nlohmann::json()}});
  return j;
}

}  // namespace

int cmd_build(const BuildArgs& args) {
  if (args.output.empty()) throw InputError("tessel build needs -o FILE (the model file to write)");
  const BuildOptions options = build_options(args);
  const Model model =
      load_model(args.model, import_options(args.input_shapes, args.cpu_channel_blocks, args.dtype), args.target);
  const BuildReport report = build_model(model, options, args.output);
  if (args.json)
    std::cout << report_json(report, args.output).dump() << "\n";
  else
    print_report(report, args.output);
  return 0;
}

}  // namespace tessel
