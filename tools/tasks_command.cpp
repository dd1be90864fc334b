// tessel tasks: the tuning tasks of a model — its fused subgraphs grouped by workload key — with
// their weight, work and share of the model's estimated latency.
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "codegen/llvm/llvm_backend.h"
#include "frontend/model.h"
#include "schedule/te/error.h"
#include "tools/commands.h"
#include "tools/format_duration.h"
#include "tools/workload.h"

namespace tessel {
namespace {

std::string engineering(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T"};
  int p = 0;
  while (v >= 1000 && p < 4) {
    v /= 1000;
    ++p;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f %s%s", v, prefixes[p], unit);
  return buffer;
}

nlohmann::json task_json(const ModelTask& t, double share) {
  std::vector<std::vector<int64_t>> inputs;
  for (const Operation& op : t.dag.ops())
    if (op.is_placeholder) inputs.push_back(op.shape);
  return {{"key", t.key},     {"name", t.name},         {"weight", t.weight},
          {"flops", t.flops}, {"bytes", t.bytes},       {"estimate_s", t.estimate_s},
          {"share", share},   {"input_shapes", inputs}, {"output_shape", t.dag.ops().back().shape}};
}

}  // namespace

ImportOptions import_options(const std::vector<std::string>& input_shapes, bool cpu_channel_blocks,
                             const std::string& dtype) {
  ImportOptions o;
  // Blocks of one vector of this CPU (the layout its tuning log and its builds share).
  o.cpu_channel_block = cpu_channel_blocks ? host_vector_lanes() : 0;
  if (!dtype.empty()) o.storage = parse_dtype_option(dtype);
  for (const std::string& spec : input_shapes) {
    auto [name, shape] = parse_input_shape(spec);
    if (!o.input_shapes.emplace(name, shape).second) throw InputError("--input-shape " + name + " is given twice");
  }
  return o;
}

int cmd_tasks(const TasksArgs& args) {
  const Model model =
      load_model(args.model, import_options(args.input_shapes, args.cpu_channel_blocks, args.dtype), args.target);
  double total = 0;
  for (const ModelTask& t : model.tasks) total += t.weight * t.estimate_s;
  auto share = [&](const ModelTask& t) { return total > 0 ? t.weight * t.estimate_s / total : 0.0; };
  if (args.json) {
    nlohmann::json j = {{"model", args.model},
                        {"target", target_kind_name(args.target)},
                        {"subgraphs", model.partition.subgraphs.size()},
                        {"estimated_latency_s", total},
                        {"tasks", nlohmann::json::array()}};
    for (const ModelTask& t : model.tasks) j["tasks"].push_back(task_json(t, share(t)));
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  std::cout << args.model << ": " << model.graph.nodes.size() << " nodes, " << model.partition.subgraphs.size()
            << " fused subgraphs, " << model.tasks.size() << " tasks (" << target_kind_name(args.target) << ")\n";
  std::cout << std::left << std::setw(5) << "#" << std::setw(18) << "key" << std::right << std::setw(7) << "weight"
            << std::setw(13) << "FLOPs" << std::setw(12) << "bytes" << std::setw(12) << "estimate" << std::setw(8)
            << "share"
            << "  fused ops and output shape\n";
  for (size_t i = 0; i < model.tasks.size(); ++i) {
    const ModelTask& t = model.tasks[i];
    std::ostringstream pct;
    pct << std::fixed << std::setprecision(1) << 100 * share(t) << "%";
    std::cout << std::left << std::setw(5) << i << std::setw(18) << t.key << std::right << std::setw(7) << t.weight
              << std::setw(13) << engineering(t.flops, "") << std::setw(12) << engineering(t.bytes, "B")
              << std::setw(12) << format_duration(t.estimate_s) << std::setw(8) << pct.str() << "  " << t.name << "\n";
  }
  std::cout << "estimated model latency: " << format_duration(total)
            << " (a roofline estimate of each task; tuning measures them)\n";
  return 0;
}

}  // namespace tessel
