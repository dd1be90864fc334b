#include "deploy/model_builder.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "codegen/llvm/llvm_backend.h"
#include "database/tuning_log.h"
#include "deploy/memory_plan.h"
#include "measure/cuda_kernel.h"
#include "runtime/model_artifact.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"
#include "schedule/te/parallel.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/tuning_machine.h"

namespace tessel {
namespace {

struct Chosen {
  Trace trace;
  int64_t record_id = -1;
  std::optional<double> latency_s;
  bool is_default = true;  // the trace is the default schedule's (a record of it, or no record)
};

// The bytes a GPU schedule's kernels keep in global memory between their launches (a padded input,
// split-K partial sums): scratch the build places in the arena beside the model's values.
int64_t gpu_scratch_bytes(const ComputeDAG& dag, const Trace& trace, const CudaDeviceInfo& device) {
  const CudaProgram program = emit_cuda(lower(replay(dag, trace), "scratch", gpu_lower_options(device)));
  int64_t bytes = 0;
  for (const BufferParam& p : program.scratch) bytes += buffer_bytes(p);
  return bytes;
}

std::string megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// The task's schedule: the log's best that still applies to the workload, else the default. With
// `scratch_budget` (cuda), only schedules whose scratch fits it.
Chosen choose(const ModelTask& task, const TuningLog* log, const TargetInfo& target, const BuildOptions& o,
              std::vector<std::string>& notes, std::optional<int64_t> scratch_budget = std::nullopt) {
  Chosen c;
  GpuTargetSpec gpu{o.device.max_threads_per_block, o.device.max_shared_per_block};
  if (scratch_budget) gpu.max_partial_sum_bytes = *scratch_budget;
  const CpuTargetSpec cpu{host_vector_lanes(), available_cores()};
  const Trace fallback =
      o.target == TargetKind::Cuda ? default_gpu_schedule(task.dag, gpu) : default_schedule(task.dag, cpu);
  const bool forced_default = std::count(o.default_for.begin(), o.default_for.end(), task.key) > 0;
  if (log && !forced_default) {
    RecordValidator fits;
    if (scratch_budget)
      fits = [&](const MeasureRecord& r) -> std::optional<std::string> {
        try {
          const int64_t bytes = gpu_scratch_bytes(task.dag, trace_from_json(r.trace_json, "log record"), o.device);
          if (bytes <= *scratch_budget) return std::nullopt;
          return "its scratch takes " + megabytes(bytes);
        } catch (const Error& e) {
          return std::string(e.what());
        }
      };
    if (std::optional<MeasureRecord> best = log->best(task.key, target, fits)) {
      try {
        c.trace = trace_from_json(best->trace_json, "log record " + std::to_string(best->id));
        replay(task.dag, c.trace);
        c.record_id = best->id;
        c.latency_s = best->median_s;
        c.is_default = trace_steps_key(c.trace) == trace_steps_key(fallback);
        return c;
      } catch (const Error& e) {
        notes.push_back(task.name + ": the log's best schedule (record " + std::to_string(best->id) +
                        ") does not apply (" + e.what() + "); using the default");
      }
    }
  }
  c.trace = fallback;
  return c;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct CompiledTask {
  std::vector<uint8_t> code;
  std::vector<BufferParam> params;
  std::vector<CudaLaunch> launches;
  std::vector<BufferParam> scratch;
  std::string error;
};

CompiledTask compile(const ModelTask& task, const Trace& trace, const std::string& entry, const BuildOptions& o,
                     const std::string& scratch_dir) {
  CompiledTask c;
  try {
    const State state = replay(task.dag, trace);
    if (o.target == TargetKind::Cuda) {
      const LoweredFunc func = lower(state, entry, gpu_lower_options(o.device));
      const CudaProgram program = emit_cuda(func);
      const std::vector<char> cubin = nvrtc_compile(program, o.device.arch);
      c.code.assign(cubin.begin(), cubin.end());
      c.params = func.params;
      c.launches = program.launches;
      c.scratch = program.scratch;
    } else {
      const LoweredFunc func = lower(state, entry);
      const std::string path = scratch_dir + "/" + entry + ".so";
      write_shared_object(func, path);
      c.code = read_file(path);
      c.params = func.params;
    }
  } catch (const std::exception& e) {
    c.error = task.name + ": " + e.what();
  }
  return c;
}

// The plan's buffers: one per model value a kernel touches, by name.
class BufferTable {
 public:
  explicit BufferTable(ModelArtifact& a, std::vector<std::vector<uint8_t>>& blobs) : a_(a), blobs_(blobs) {}

  int64_t add(const std::string& name, const TensorInfo& info, PlanBuffer::Kind kind) {
    auto it = index_.find(name);
    if (it != index_.end()) return it->second;
    PlanBuffer b;
    b.name = name;
    b.dtype = info.dtype;
    b.shape = info.shape;
    b.kind = kind;
    a_.buffers.push_back(b);
    return index_[name] = static_cast<int64_t>(a_.buffers.size()) - 1;
  }

  int64_t weight(const Value& v) {
    auto it = index_.find(v.name);
    if (it != index_.end()) return it->second;
    const int64_t i = add(v.name, v.info, PlanBuffer::Kind::Weight);
    a_.buffers[i].blob = static_cast<int64_t>(blobs_.size());
    blobs_.emplace_back(v.constant->bytes(), v.constant->bytes() + v.constant->byte_size());
    return i;
  }

  std::optional<int64_t> find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }

 private:
  ModelArtifact& a_;
  std::vector<std::vector<uint8_t>>& blobs_;
  std::map<std::string, int64_t> index_;
};

// Places the model's values in one arena: an intermediate lives from the kernel that writes it to
// the last that reads it, and a GPU kernel's scratch buffers (between the launches of one kernel)
// for that kernel alone, so they take bytes the graph's values leave free at that step. On the GPU
// the context's copies of the inputs and its outputs are in the arena too: an input lives until its
// last reader, an output for the whole run, so that no input copied in at the start of a run shares
// bytes with the outputs of the last (a caller may pass those back as inputs). The liveness bound is
// over the graph's values as they truly live (an output from its writer on). `held` gets, per
// kernel, the bytes of the values placed for that step (the scratch aside).
void place_values(ModelArtifact& a, BuildReport& report, std::vector<int64_t>& held) {
  const int64_t end = std::max<int64_t>(0, static_cast<int64_t>(a.kernels.size()) - 1);
  std::vector<int64_t> ids;
  std::vector<Lifetime> lives, true_lives;
  for (size_t b = 0; b < a.buffers.size(); ++b) {
    if (!in_arena(a.buffers[b], a.target)) continue;
    const PlanBuffer::Kind kind = a.buffers[b].kind;
    Lifetime l{a.buffers[b].bytes(), -1, -1};
    for (size_t k = 0; k < a.kernels.size(); ++k)
      for (int64_t arg : a.kernels[k].args)
        if (arg == static_cast<int64_t>(b)) {
          if (l.first < 0) l.first = static_cast<int64_t>(k);
          l.last = static_cast<int64_t>(k);
        }
    const bool model_output = std::find(a.outputs.begin(), a.outputs.end(), static_cast<int64_t>(b)) != a.outputs.end();
    if (l.first < 0 || kind == PlanBuffer::Kind::Input) l.first = 0;  // an input is copied in first
    if (l.last < 0 || model_output) l.last = end;
    Lifetime placed = l;
    if (kind == PlanBuffer::Kind::Output) placed.first = 0;  // held for the whole run
    ids.push_back(static_cast<int64_t>(b));
    lives.push_back(placed);
    true_lives.push_back(l);
  }
  const int64_t graph_bound = live_bound_bytes(true_lives);
  held.assign(a.kernels.size(), 0);
  for (const Lifetime& l : lives)
    for (int64_t k = l.first; k <= l.last && k < static_cast<int64_t>(held.size()); ++k)
      held[static_cast<size_t>(k)] += l.bytes;
  for (size_t k = 0; k < a.kernels.size(); ++k)
    for (const BufferParam& s : a.kernels[k].scratch)
      lives.push_back(Lifetime{buffer_bytes(s), static_cast<int64_t>(k), static_cast<int64_t>(k)});
  const MemoryPlan plan = plan_memory(lives);
  size_t i = 0;
  for (; i < ids.size(); ++i) a.buffers[ids[i]].offset = plan.offsets[i];
  for (PlanKernel& k : a.kernels) {
    k.scratch_offsets.clear();
    for (size_t s = 0; s < k.scratch.size(); ++s) k.scratch_offsets.push_back(plan.offsets[i++]);
  }
  a.arena_bytes = plan.arena_bytes;
  a.liveness_bound_bytes = graph_bound;
  report.arena_bytes = plan.arena_bytes;
  report.live_bound_bytes = graph_bound;
}

}  // namespace

// The artifact of the compiled tasks: its buffers, the kernels in the partition's order, the
// outputs, and every value and scratch buffer placed in the arena (report's arena and bound).
ModelArtifact assemble(const Model& model, const BuildOptions& o, const std::vector<CompiledTask>& compiled,
                       const std::vector<Chosen>& chosen, BuildReport& report, std::vector<std::vector<uint8_t>>& blobs,
                       std::vector<int64_t>& held) {
  ModelArtifact a;
  a.target = o.target;
  a.arch = o.target == TargetKind::Cuda ? o.device.arch : host_llvm_target().arch;
  a.device = o.device_name;
  if (o.target == TargetKind::Llvm) a.cpu_features = host_llvm_target().cpu_features;  // the runtime checks them
  a.tool_version = std::string("tessel ") + TESSEL_VERSION;
  a.model = model.path;
  BufferTable buffers(a, blobs);
  for (const std::string& in : model.graph.inputs)
    a.inputs.push_back(buffers.add(in, model.graph.value(in).info, PlanBuffer::Kind::Input));
  std::vector<int64_t> code_blob(model.tasks.size(), -1);
  std::map<size_t, size_t> task_of;
  for (size_t t = 0; t < model.tasks.size(); ++t)
    for (size_t s : model.tasks[t].subgraphs) task_of[s] = t;
  const auto& outputs = model.graph.outputs;
  for (size_t s = 0; s < model.partition.subgraphs.size(); ++s) {
    const Subgraph& sub = model.partition.subgraphs[s];
    const size_t t = task_of.at(s);
    if (code_blob[t] < 0) {
      code_blob[t] = static_cast<int64_t>(blobs.size());
      blobs.push_back(compiled[t].code);
    }
    PlanKernel k;
    k.name = "k" + std::to_string(s);
    k.entry = "tessel_k" + std::to_string(t);
    k.blob = code_blob[t];
    k.launches = compiled[t].launches;
    k.scratch = compiled[t].scratch;
    k.workload_key = model.tasks[t].key;
    k.summary = model.tasks[t].name;
    k.record_id = chosen[t].record_id;
    for (const BufferParam& p : compiled[t].params) {
      if (p.is_output) {
        const bool model_output = std::find(outputs.begin(), outputs.end(), sub.output) != outputs.end();
        k.args.push_back(buffers.add(sub.output, model.graph.value(sub.output).info,
                                     model_output ? PlanBuffer::Kind::Output : PlanBuffer::Kind::Intermediate));
        continue;
      }
      const std::string& value = sub.inputs.at(static_cast<size_t>(std::stoll(p.name.substr(1))));  // p<k>: input k
      const Value& v = model.graph.value(value);
      if (v.constant)
        k.args.push_back(buffers.weight(v));
      else if (std::optional<int64_t> b = buffers.find(value))
        k.args.push_back(*b);
      else
        throw Error("building " + sub.summary + ": its input '" + value + "' is computed by no earlier kernel");
    }
    a.kernels.push_back(std::move(k));
  }
  for (const std::string& out : outputs) {
    const Value& v = model.graph.value(out);
    std::optional<int64_t> b = buffers.find(out);
    a.outputs.push_back(b            ? *b
                        : v.constant ? buffers.weight(v)
                                     : throw Error("nothing computes the output '" + out + "'"));
  }
  place_values(a, report, held);
  return a;
}

BuildReport build_model(const Model& model, const BuildOptions& o, const std::string& out_path) {
  const auto start = std::chrono::steady_clock::now();
  BuildReport report;
  std::optional<TuningLog> log;
  if (o.db) log.emplace(TuningLog::open(*o.db, TuningLog::Mode::ReadOnly));
  const TargetInfo target = o.target == TargetKind::Cuda ? cuda_target(o.device) : host_llvm_target();

  std::vector<Chosen> chosen;
  for (const ModelTask& task : model.tasks)
    chosen.push_back(choose(task, log ? &*log : nullptr, target, o, report.notes));
  std::vector<CompiledTask> compiled(model.tasks.size());
  auto compile_tasks = [&](const std::vector<size_t>& which) {
    const std::string scratch_dir =
        (std::filesystem::temp_directory_path() / ("tessel-build-" + std::to_string(getpid()))).string();
    std::filesystem::create_directories(scratch_dir);
    parallel_indices(which.size(), [&](size_t i) {
      const size_t t = which[i];
      compiled[t] = compile(model.tasks[t], chosen[t].trace, "tessel_k" + std::to_string(t), o, scratch_dir);
    });
    std::filesystem::remove_all(scratch_dir);
    for (size_t t : which)
      if (!compiled[t].error.empty()) throw Error("cannot build " + compiled[t].error);
  };
  std::vector<size_t> all(model.tasks.size());
  for (size_t t = 0; t < all.size(); ++t) all[t] = t;
  compile_tasks(all);
  std::vector<std::vector<uint8_t>> blobs;
  std::vector<int64_t> held;  // per kernel: the bytes of the values placed for its step
  ModelArtifact a = assemble(model, o, compiled, chosen, report, blobs, held);

  // On the GPU a kernel's scratch (split-K partial sums, a padded input) lives beside the values
  // held during that kernel. With memory_target, a task whose scratch passes what its steps leave
  // of 1.2x the values' liveness bound takes its best schedule that fits (or a default that does),
  // and the build says so; should the arena still come out over the target (the placement is not
  // perfect), every such task fits a fifth of the bound instead.
  if (o.target == TargetKind::Cuda && o.memory_target) {
    const int64_t limit = report.live_bound_bytes * 6 / 5;
    std::vector<int64_t> room(model.tasks.size(), limit);
    for (size_t t = 0; t < model.tasks.size(); ++t)
      for (size_t s : model.tasks[t].subgraphs)  // kernel s computes subgraph s
        room[t] = std::min(room[t], std::max<int64_t>(0, limit - held[s]));
    auto scratch_of = [&](size_t t) {
      int64_t bytes = 0;
      for (const BufferParam& p : compiled[t].scratch) bytes += buffer_bytes(p);
      return bytes;
    };
    const std::vector<Chosen> fastest = chosen;
    std::vector<int64_t> fastest_scratch(model.tasks.size());
    for (size_t t = 0; t < model.tasks.size(); ++t) fastest_scratch[t] = scratch_of(t);
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (attempt == 1 && a.arena_bytes <= limit) break;
      std::vector<size_t> over;
      for (size_t t = 0; t < model.tasks.size(); ++t) {
        const int64_t budget = attempt == 0 ? room[t] : std::min(room[t], report.live_bound_bytes / 5);
        if (scratch_of(t) <= budget) continue;
        chosen[t] = choose(model.tasks[t], log ? &*log : nullptr, target, o, report.notes, budget);
        over.push_back(t);
      }
      if (over.empty()) continue;
      compile_tasks(over);
      blobs.clear();
      a = assemble(model, o, compiled, chosen, report, blobs, held);
    }
    for (size_t t = 0; t < model.tasks.size(); ++t) {
      if (fastest[t].record_id < 0 || chosen[t].record_id == fastest[t].record_id) continue;
      auto which = [](const Chosen& c) {
        return c.record_id >= 0 ? "record " + std::to_string(c.record_id) : std::string("the default schedule");
      };
      report.notes.push_back(model.tasks[t].name + ": " + which(fastest[t]) + " keeps " +
                             megabytes(fastest_scratch[t]) + " in scratch, more than the memory target leaves it (" +
                             megabytes(limit) + ", 1.2x the values' liveness bound); " + which(chosen[t]) + " instead");
    }
  }
  for (const PlanBuffer& b : a.buffers)
    if (b.kind == PlanBuffer::Kind::Weight) report.weight_bytes += b.bytes();
  write_model_artifact(out_path, a, blobs);

  for (size_t t = 0; t < model.tasks.size(); ++t) {
    const ModelTask& m = model.tasks[t];
    report.tasks.push_back(BuiltTask{m.key, m.name, m.weight, chosen[t].record_id, chosen[t].is_default, m.estimate_s,
                                     chosen[t].latency_s});
  }
  report.kernels = static_cast<int64_t>(a.kernels.size());
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace tessel
