// tessel ops / show / schedule / check / run.
#include "tools/commands.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "codegen/cuda/cuda_backend.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/llvm/parallel_runtime.h"
#include "measure/cpu_kernel.h"
#include "measure/host_buffers.h"
#include "measure/timer.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/random_schedule.h"
#include "search/tuning_machine.h"
#include "search/tuning_records.h"
#include "tools/tuning_log_glue.h"
#include "tools/workload.h"

namespace tessel {

namespace {

Workload workload_of(const WorkloadArgs& w) { return workload_of_args(w); }

CpuTargetSpec host_spec() { return CpuTargetSpec{host_vector_lanes(), num_threads()}; }

Trace schedule_of(const Workload& w, const std::string& spec) { return schedule_for(w, spec, TargetKind::Llvm); }

const char* kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::Int: return "int";
    case ParamKind::Float: return "float";
    case ParamKind::Choice: return "choice";
    case ParamKind::Shape: return "shape";
    case ParamKind::Text: return "text";
  }
  return "?";
}

}  // namespace

Trace schedule_for(const Workload& w, const std::string& spec, TargetKind target) {
  if (spec == "default" || spec.empty())
    return target == TargetKind::Cuda ? default_gpu_schedule(w.dag, GpuTargetSpec{}) : default_schedule(w.dag, host_spec());
  if (spec == "none") return Trace{};
  return load_trace_file(spec);
}

Workload workload_of_args(const WorkloadArgs& w) {
  Workload out = resolve_workload(w.op, w.params, w.suite, w.case_name);
  if (!w.dtype.empty()) apply_dtype(out, w.dtype);
  return out;
}

int cmd_ops() {
  for (const OpTemplate& t : op_templates()) {
    std::cout << t.name << "  —  " << t.summary << "\n";
    for (const OpParam& p : t.params) {
      std::cout << "    " << std::left << std::setw(10) << p.name << std::setw(7) << kind_name(p.kind);
      if (!p.choices.empty()) {
        std::cout << "{";
        for (size_t i = 0; i < p.choices.size(); ++i) std::cout << (i ? "|" : "") << p.choices[i];
        std::cout << "} ";
      }
      std::cout << (p.default_value.empty() ? "required" : "default " + p.default_value);
      if (!p.doc.empty()) std::cout << "  " << p.doc;
      std::cout << "\n";
    }
  }
  return 0;
}

int cmd_schedule(const ScheduleArgs& args) {
  Workload w = workload_of(args.workload);
  Trace t;
  if (args.target == TargetKind::Cuda)
    t = args.random_seed >= 0 ? random_gpu_schedule(w.dag, static_cast<uint64_t>(args.random_seed), GpuTargetSpec{})
                              : default_gpu_schedule(w.dag, GpuTargetSpec{});
  else
    t = args.random_seed >= 0 ? random_schedule(w.dag, static_cast<uint64_t>(args.random_seed), host_spec())
                              : default_schedule(w.dag, host_spec());
  std::cout << trace_to_json(t, true) << "\n";
  return 0;
}

int cmd_show(const ShowArgs& args) {
  bool cuda = args.target == TargetKind::Cuda;
  if (args.emit == "cuda" && !cuda) throw InputError("--emit cuda needs --target cuda");
  if (args.emit == "llvm" && cuda) throw InputError("--emit llvm is for --target llvm; use --emit cuda");
  Workload w = workload_of(args.workload);
  if (args.emit == "te") {
    std::cout << w.dag.to_text();
    return 0;
  }
  Trace trace = schedule_for(w, args.schedule, args.target);
  State state = replay(w.dag, trace);
  if (args.emit == "schedule") {
    std::cout << trace_to_json(trace, true) << "\n\n" << state.to_string();
    return 0;
  }
  LowerOptions options;
  options.target = cuda ? LowerTarget::Gpu : LowerTarget::Cpu;
  if (args.dump_passes) options.dump = &std::cout;
  LoweredFunc f = lower(state, "kernel", options);
  if (args.emit == "lowered") {
    if (!args.dump_passes) std::cout << to_string(f);
    return 0;
  }
  if (cuda) print_cuda_program(std::cout, emit_cuda(f));
  else std::cout << emit_llvm_ir(f);
  return 0;
}

int cmd_check(const CheckArgs& args) {
  Workload w = workload_of(args.workload);
  require_fits_in_memory(w);
  struct Candidate {
    std::string label;
    Trace trace;
    uint64_t input_seed;
  };
  std::vector<Candidate> candidates;
  candidates.push_back({"default", default_schedule(w.dag, host_spec()), args.seed});
  if (!args.schedule.empty()) candidates.push_back({args.schedule, load_trace_file(args.schedule), args.seed + 1});
  for (int i = 0; i < args.random_schedules; ++i) {
    uint64_t seed = args.seed + static_cast<uint64_t>(i);
    candidates.push_back({"random seed " + std::to_string(seed), random_schedule(w.dag, seed, host_spec()),
                          seed * 7919 + 17});
  }
  int correct = 0;
  for (const Candidate& c : candidates) {
    std::string failure;
    try {
      HostTensors inputs = make_random_inputs(w.dag, c.input_seed);
      ReferenceTensors reference = evaluate_reference(w.dag, inputs);
      CpuKernel kernel = build_cpu_kernel(w.dag, c.trace);
      CheckOutcome outcome = check_cpu_kernel(kernel, inputs, reference, w.dag);
      if (!outcome.correct) failure = outcome.message;
    } catch (const ScheduleError& e) {
      if (c.label == args.schedule) throw;  // a user's schedule that does not apply is bad input
      failure = e.what();
    } catch (const Error& e) {
      failure = e.what();
    }
    if (failure.empty()) {
      ++correct;
      if (args.verbose) std::cout << "ok   " << c.label << "\n";
    } else {
      std::cout << "FAIL " << c.label << ": " << failure << "\n  schedule: " << trace_to_json(c.trace) << "\n";
    }
  }
  std::cout << "checked " << candidates.size() << " schedules: " << correct << " correct\n";
  return correct == static_cast<int>(candidates.size()) ? 0 : 1;
}

int cmd_run(const RunArgs& args) {
  if (args.threads > 0) set_num_threads(args.threads);
  if ((args.record || args.best) && args.db.empty()) throw InputError("--record and --best need --db PATH");
  if (!args.db.empty() && !args.record && !args.best) throw InputError("--db goes with --record or --best");
  if (args.best && args.schedule != "default") throw InputError("give either --schedule or --best, not both");
  Workload w = workload_of(args.workload);
  require_fits_in_memory(w);
  Trace trace;
  std::optional<Trace> best;
  if (args.best) best = best_recorded_trace(args.db, w, std::cerr);
  trace = best ? *best : schedule_of(w, args.schedule);
  // Open the log before measuring, so a log that cannot take records costs no measurement.
  std::optional<TuningLog> log;
  if (args.record) {
    log.emplace(TuningLog::open(args.db, TuningLog::Mode::ReadWrite));
    check_flush_matches(*log, w.dag.workload_key(), host_llvm_target(), false, w.name);  // `run` never flushes on the CPU
  }
  auto build_start = std::chrono::steady_clock::now();
  CpuKernel kernel = build_cpu_kernel(w.dag, trace);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
  HostBuffers buffers(kernel.func.params);
  HostTensors inputs = make_random_inputs(w.dag, 1);
  buffers.set_inputs(inputs);

  std::optional<CheckOutcome> outcome;
  if (args.check || args.record) {
    ReferenceTensors reference = evaluate_reference(w.dag, inputs);
    outcome = check_cpu_kernel(kernel, inputs, reference, w.dag);
  }
  TimingOptions timing;
  timing.min_total_s = args.min_time_s.value_or(0.2);
  auto run_start = std::chrono::steady_clock::now();
  TimingResult t = time_function([&] { kernel.kernel->run(buffers.args()); }, timing);
  double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  int64_t record_id = 0;
  if (log) {
    nlohmann::json settings = {{"min_total_s", timing.min_total_s}, {"warmup_runs", timing.warmup_runs},
                               {"threads", num_threads()}, {"timer", "steady_clock"}, {"flush", false}};
    Measurement m{t.samples_s, t.median_s, outcome->correct, outcome->message, build_s, run_s, settings.dump()};
    record_id = record_measurement(*log, w, host_llvm_target(), trace, m);  // returns after COMMIT
  }
  double gflops = w.dag.flops() / t.median_s / 1e9;
  double gbps = static_cast<double>(buffers.total_bytes()) / t.median_s / 1e9;

  if (args.json) {
    nlohmann::json j;
    j["workload"] = w.name;
    j["workload_key"] = w.dag.workload_key();
    j["target"] = "llvm";
    j["threads"] = num_threads();
    j["median_ms"] = t.median_s * 1e3;
    j["samples_ms"] = milliseconds(t.samples_s);
    j["gflops"] = gflops;
    j["gbps"] = gbps;
    j["correct"] = outcome ? nlohmann::json(outcome->correct) : nlohmann::json(nullptr);
    if (outcome && !outcome->correct) j["error"] = outcome->message;
    if (record_id) j["record_id"] = record_id;
    if (args.best) j["schedule_source"] = best ? "tuning log" : "default";
    std::cout << j.dump() << "\n";
  } else {
    std::cout << w.name << ": median " << std::fixed << std::setprecision(4) << t.median_s * 1e3 << " ms over "
              << t.samples_s.size() << " runs, " << std::setprecision(1) << gflops << " GFLOP/s, " << gbps
              << " GB/s (" << num_threads() << " threads)\n";
    if (outcome) std::cout << (outcome->correct ? "correct\n" : "WRONG: " + outcome->message + "\n");
    if (record_id) std::cout << "recorded as record " << record_id << " in " << log->path() << "\n";
  }
  return outcome && !outcome->correct ? 1 : 0;
}

}  // namespace tessel
