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

// The bytes a kernel's scratch buffers take in the arena, one after the other.
int64_t scratch_bytes(const std::vector<BufferParam>& scratch) {
  int64_t bytes = 0;
  for (const BufferParam& p : scratch) bytes += arena_bytes_of(buffer_bytes(p));
  return bytes;
}

// The bytes a GPU schedule's kernels keep in global memory between their launches (a padded input,
// split-K partial sums): scratch the build places in the arena beside the model's values.
int64_t gpu_scratch_bytes(const ComputeDAG& dag, const Trace& trace, const CudaDeviceInfo& device) {
  return scratch_bytes(emit_cuda(lower(replay(dag, trace), "scratch", gpu_lower_options(device))).scratch);
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
  GpuTargetSpec gpu = gpu_target_spec(o.device);
  if (scratch_budget) {
    gpu.max_scratch_bytes = std::max<int64_t>(1, *scratch_budget);  // 0 there: no limit
    gpu.scratch_alignment = kArenaAlignment;  // counted as the memory plan places it
  }
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

// The memory target of a cuda build: the arena within 1.2x the values' liveness bound.
int64_t memory_target_bytes(int64_t live_bound) { return live_bound * 6 / 5; }

// Places the model's values in one arena: an intermediate lives from the kernel that writes it to
// the last that reads it, and a GPU kernel's scratch buffers (between the launches of one kernel)
// for that kernel alone, so they take bytes the graph's values leave free at that step. On the GPU
// the context's copies of the inputs and its outputs are in the arena too: an input lives from the
// start of the run to its last reader, an output from its writer to the end, and no input shares
// bytes with an output (a caller may pass one run's outputs back as the next run's inputs:
// plan_inputs_apart_from_outputs). The liveness bound is over the values as they truly live.
//
// Two placements, the smaller arena kept: the values and the scratch together, and the values
// first with each kernel's scratch then put in the tightest gap its step leaves below the memory
// target.
struct StepRoom {
  std::vector<int64_t> free;  // per kernel: the memory target less the values alive at its step
  std::vector<int64_t> gap;   // per kernel: the longest run of bytes those values leave free below the
                              // target; scratch that fits it keeps the arena within the target
  int64_t values_arena = 0;   // the arena of the values alone, without any scratch
};

void place_values(ModelArtifact& a, BuildReport& report, StepRoom& room) {
  const int64_t end = std::max<int64_t>(0, static_cast<int64_t>(a.kernels.size()) - 1);
  std::vector<int64_t> ids;
  std::vector<Lifetime> true_lives;
  std::vector<bool> is_input, is_output;
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
    ids.push_back(static_cast<int64_t>(b));
    true_lives.push_back(l);
    is_input.push_back(kind == PlanBuffer::Kind::Input);
    is_output.push_back(kind == PlanBuffer::Kind::Output);
  }
  const PlannedLives placed = plan_inputs_apart_from_outputs(true_lives, is_input, is_output);
  const std::vector<Lifetime>& lives = placed.lives;
  const MemoryPlan& values = placed.plan;
  const int64_t graph_bound = live_bound_bytes(true_lives);
  const int64_t top = memory_target_bytes(graph_bound);
  const int64_t steps = static_cast<int64_t>(a.kernels.size());
  room.gap = step_room(lives, values, steps, top);
  room.values_arena = values.arena_bytes;
  room.free.assign(a.kernels.size(), top);
  for (const Lifetime& l : lives)
    for (int64_t k = l.first; k <= l.last && k < steps; ++k)
      room.free[static_cast<size_t>(k)] -= arena_bytes_of(l.bytes);

  std::vector<int64_t> blocks(a.kernels.size(), 0);
  std::vector<Lifetime> together = lives;
  for (size_t k = 0; k < a.kernels.size(); ++k) {
    blocks[k] = scratch_bytes(a.kernels[k].scratch);
    for (const BufferParam& s : a.kernels[k].scratch)
      together.push_back(Lifetime{buffer_bytes(s), static_cast<int64_t>(k), static_cast<int64_t>(k)});
  }
  const MemoryPlan joint = plan_memory(together);
  const MemoryPlan gapped = place_step_blocks(lives, values, blocks, top);
  const bool use_joint = joint.arena_bytes < gapped.arena_bytes;
  const MemoryPlan& plan = use_joint ? joint : gapped;
  for (size_t i = 0; i < ids.size(); ++i) a.buffers[ids[i]].offset = plan.offsets[i];
  size_t next = ids.size();
  for (size_t k = 0; k < a.kernels.size(); ++k) {
    PlanKernel& kernel = a.kernels[k];
    kernel.scratch_offsets.clear();
    int64_t at = use_joint ? 0 : plan.offsets[ids.size() + k];  // one block a kernel, buffers in turn
    for (const BufferParam& s : kernel.scratch) {
      kernel.scratch_offsets.push_back(use_joint ? plan.offsets[next++] : at);
      at += arena_bytes_of(buffer_bytes(s));
    }
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
                       StepRoom& room) {
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
  place_values(a, report, room);
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
  StepRoom room;
  ModelArtifact a = assemble(model, o, compiled, chosen, report, blobs, room);

  // On the GPU a kernel's scratch (split-K partial sums, a padded input) lives beside the values
  // alive during that kernel. With memory_target, a task whose scratch passes the room its steps
  // leave below 1.2x the values' liveness bound takes its best schedule that fits (or a default
  // that does), and the build says so. First the room as bytes free at the step; should the arena
  // come out over the target (free bytes in several pieces), the room as the longest free run, with
  // which the arena stays within the target (the values' placement does not depend on schedules).
  if (o.target == TargetKind::Cuda && o.memory_target) {
    const int64_t limit = memory_target_bytes(report.live_bound_bytes);
    auto scratch_of = [&](size_t t) { return scratch_bytes(compiled[t].scratch); };
    const std::vector<Chosen> fastest = chosen;
    const std::vector<CompiledTask> fastest_compiled = compiled;
    std::vector<int64_t> fastest_scratch(model.tasks.size());
    for (size_t t = 0; t < model.tasks.size(); ++t) fastest_scratch[t] = scratch_of(t);
    for (const std::vector<int64_t>* step_room : {&room.free, &room.gap}) {
      if (step_room == &room.gap && a.arena_bytes <= limit) break;
      std::vector<size_t> over;
      for (size_t t = 0; t < model.tasks.size(); ++t) {
        int64_t task_room = limit;
        for (size_t s : model.tasks[t].subgraphs)  // kernel s computes subgraph s
          task_room = std::min(task_room, std::max<int64_t>(0, (*step_room)[s]));
        if (fastest_scratch[t] <= task_room) {  // its fastest (again, in the second pass)
          chosen[t] = fastest[t];
          compiled[t] = fastest_compiled[t];
          continue;
        }
        chosen[t] = choose(model.tasks[t], log ? &*log : nullptr, target, o, report.notes, task_room);
        over.push_back(t);
      }
      if (over.empty() && step_room == &room.free) continue;
      compile_tasks(over);
      blobs.clear();
      a = assemble(model, o, compiled, chosen, report, blobs, room);
    }
    if (a.arena_bytes > limit)  // a default whose scratch its step has no room for, or values that do not fit
      report.notes.push_back("the arena takes " + megabytes(a.arena_bytes) + ", more than the memory target (" +
                             megabytes(limit) + ", 1.2x the values' liveness bound): " +
                             (room.values_arena > limit
                                  ? "the values alone take " + megabytes(room.values_arena)
                                  : std::string("a default schedule keeps scratch its step has no room for")));
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
