#include "frontend/tasks.h"

#include <algorithm>
#include <map>

#include "schedule/te/parallel.h"
#include "schedule/te/tensor_size.h"

namespace tessel {
namespace {

int64_t tensor_bytes(const Operation& op) {
  return op.num_elements() * dtype_bytes(op.dtype);
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

}  // namespace

Roofline default_roofline(TargetKind target) {
  if (target == TargetKind::Cuda) return Roofline{51.7e12, 3.0e12};
  // Two 8-lane FMAs a cycle per core at 2.5 GHz; about 10 GB/s of DRAM per core.
  const double cores = static_cast<double>(available_cores());
  return Roofline{cores * 2 * 8 * 2 * 2.5e9, cores * 10e9};
}

std::vector<ModelTask> extract_tasks(const Partition& partition, const Roofline& roofline) {
  std::vector<ModelTask> tasks;
  std::map<std::string, size_t> by_key;
  for (size_t i = 0; i < partition.subgraphs.size(); ++i) {
    const Subgraph& s = partition.subgraphs[i];
    const std::string key = s.dag.workload_key();
    auto [it, fresh] = by_key.try_emplace(key, tasks.size());
    if (fresh) {
      ModelTask t;
      t.key = key;
      t.name = s.summary + " " + shape_text(s.dag.ops().back().shape);
      t.dag = s.dag;
      t.flops = s.dag.flops();
      for (const Operation& op : s.dag.ops())
        if (op.is_placeholder) t.bytes += static_cast<double>(tensor_bytes(op));
      t.bytes += static_cast<double>(tensor_bytes(s.dag.ops().back()));
      t.estimate_s = std::max(t.flops / roofline.flops_per_s, t.bytes / roofline.bytes_per_s);
      tasks.push_back(std::move(t));
    }
    ModelTask& t = tasks[it->second];
    ++t.weight;
    t.subgraphs.push_back(i);
  }
  return tasks;
}

double model_latency(const std::vector<ModelTask>& tasks, const std::vector<double>& task_latency_s) {
  double total = 0;
  for (size_t i = 0; i < tasks.size() && i < task_latency_s.size(); ++i) total += tasks[i].weight * task_latency_s[i];
  return total;
}

}  // namespace tessel
