// tessel check / run with --target cuda, and the printing of CUDA programs.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "codegen/cuda/cuda_backend.h"
#include "measure/cuda_kernel.h"
#include "measure/host_buffers.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"
#include "search/gpu_schedule.h"
#include "search/tuning_records.h"
#include "tools/commands.h"
#include "tools/tuning_log_glue.h"
#include "tools/workload.h"

namespace tessel {

namespace {

// The device, or an InputError-style exit: measuring on a machine without one is a usage problem.
CudaRuntime& require_device() {
  std::string why;
  CudaRuntime* rt = CudaRuntime::get(&why);
  if (!rt) throw InputError("no CUDA device: " + why + " (use --compile-only to build without one)");
  return *rt;
}

}  // namespace

void print_cuda_program(std::ostream& out, const CudaProgram& program) {
  out << program.source;
  for (const CudaLaunch& l : program.launches)
    out << "// launch " << l.kernel_name << " grid(" << l.grid[0] << ", " << l.grid[1] << ", " << l.grid[2]
        << ") block(" << l.block[0] << ", " << l.block[1] << ", " << l.block[2] << ")"
        << (l.dynamic_shared_bytes ? " dynamic shared " + std::to_string(l.dynamic_shared_bytes) + " B" : "") << "\n";
}

int cmd_check_cuda(const CheckArgs& args) {
  Workload w = workload_of_args(args.workload);
  if (!args.compile_only) require_fits_in_memory(w);
  CudaRuntime* rt = args.compile_only ? nullptr : &require_device();
  std::string arch = rt ? rt->device().arch : "sm_90";
  CudaDeviceInfo device = rt ? rt->device() : default_cuda_device_info();
  struct Candidate {
    std::string label;
    Trace trace;
    uint64_t input_seed;
  };
  std::vector<Candidate> candidates;
  candidates.push_back({"default", default_gpu_schedule(w.dag, GpuTargetSpec{}), args.seed});
  if (!args.schedule.empty()) candidates.push_back({args.schedule, load_trace_file(args.schedule), args.seed + 1});
  for (int i = 0; i < args.random_schedules; ++i) {
    uint64_t seed = args.seed + static_cast<uint64_t>(i);
    candidates.push_back({"random seed " + std::to_string(seed), random_gpu_schedule(w.dag, seed, GpuTargetSpec{}),
                          seed * 7919 + 17});
  }
  int correct = 0;
  size_t done = 0;
  for (; done < candidates.size(); ++done) {
    const Candidate& c = candidates[done];
    std::string failure;
    try {
      CudaBuild build = build_cuda_kernel(w.dag, c.trace, arch, true, device);
      if (rt) {
        HostTensors inputs = make_random_inputs(w.dag, c.input_seed);
        CheckOutcome outcome = check_cuda_kernel(*rt, build, inputs, evaluate_reference(w.dag, inputs), w.dag);
        if (!outcome.correct) failure = outcome.message;
      }
    } catch (const ScheduleError& e) {
      if (c.label == args.schedule) throw;
      failure = e.what();
    } catch (const Error& e) {
      failure = e.what();
    }
    if (failure.empty()) {
      ++correct;
      if (args.verbose) std::cout << "ok   " << c.label << "\n";
      continue;
    }
    std::cout << "FAIL " << c.label << ": " << failure << "\n  schedule: " << trace_to_json(c.trace) << "\n";
    // A fault leaves the CUDA context unusable: stop rather than blame the schedules after it.
    std::string why;
    if (rt && !CudaRuntime::get(&why)) {
      std::cout << "stopped: " << why << "\n";
      ++done;
      break;
    }
  }
  std::cout << "checked " << done << " schedules: " << correct << " correct"
            << (args.compile_only ? " (compiled through NVRTC for " + arch + ", not run)" : "") << "\n";
  return correct == static_cast<int>(candidates.size()) ? 0 : 1;
}

int cmd_run_cuda(const RunArgs& args) {
  if ((args.record || args.best) && args.db.empty()) throw InputError("--record and --best need --db PATH");
  if (args.best && args.schedule != "default") throw InputError("give either --schedule or --best, not both");
  if (args.threads) throw InputError("--threads is for --target llvm");
  Workload w = workload_of_args(args.workload);
  require_fits_in_memory(w);
  CudaRuntime& rt = require_device();
  TargetInfo target = cuda_target(rt.device());
  std::optional<Trace> best;
  if (args.best) best = best_recorded_trace(args.db, w, std::cerr, target);
  Trace trace = best ? *best : schedule_for(w, args.schedule, TargetKind::Cuda);
  std::optional<TuningLog> log;
  if (args.record) {
    log.emplace(TuningLog::open(args.db, TuningLog::Mode::ReadWrite));
    check_flush_matches(*log, w.dag.workload_key(), target, args.flush_l2, w.name);
  }

  auto t0 = std::chrono::steady_clock::now();
  CudaBuild build = build_cuda_kernel(w.dag, trace, rt.device().arch, true, rt.device());
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  HostTensors inputs = make_random_inputs(w.dag, 1);
  std::optional<CheckOutcome> outcome;
  if (args.check || args.record)
    outcome = check_cuda_kernel(rt, build, inputs, evaluate_reference(w.dag, inputs), w.dag);
  std::unique_ptr<CudaModule> module = rt.load(build.program, build.cubin);
  DeviceBuffers buffers(rt, build.func.params);
  buffers.set_inputs(inputs);
  const double min_s = args.min_time_s.value_or(0.05);
  auto r0 = std::chrono::steady_clock::now();
  CudaTiming t = rt.time([&] { module->run(buffers.args()); }, min_s, args.flush_l2);
  rt.synchronize();
  double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
  int64_t record_id = 0;
  nlohmann::json settings = {{"min_total_s", min_s},
                             {"flush", args.flush_l2},
                             {"timer", t.graph_replay ? "cuda events, batch replayed as a cuda graph" : "cuda events"}};
  if (log) {
    Measurement m{t.samples_s, t.median_s, outcome->correct, outcome->message, build_s, run_s, settings.dump()};
    record_id = record_measurement(*log, w, target, trace, m);
  }
  int64_t bytes = 0;
  for (const BufferParam& p : build.func.params) bytes += num_elements(p) * 4;
  double gflops = w.dag.flops() / t.median_s / 1e9;
  double gbps = static_cast<double>(bytes) / t.median_s / 1e9;
  if (args.json) {
    nlohmann::json j;
    j["workload"] = w.name;
    j["workload_key"] = w.dag.workload_key();
    j["target"] = "cuda";
    j["device"] = rt.device().name;
    j["median_ms"] = t.median_s * 1e3;
    j["samples_ms"] = milliseconds(t.samples_s);
    j["gflops"] = gflops;
    j["gbps"] = gbps;
    j["flush_l2"] = args.flush_l2;
    j["graph_replay"] = t.graph_replay;
    j["correct"] = outcome ? nlohmann::json(outcome->correct) : nlohmann::json(nullptr);
    if (outcome && !outcome->correct) j["error"] = outcome->message;
    if (record_id) j["record_id"] = record_id;
    std::cout << j.dump() << "\n";
  } else {
    std::cout << w.name << " on " << rt.device().name << ": median " << std::fixed << std::setprecision(2)
              << t.median_s * 1e6 << " us over " << t.samples_s.size() << " runs, " << std::setprecision(1) << gflops
              << " GFLOP/s, " << gbps << " GB/s\n";
    if (outcome) std::cout << (outcome->correct ? "correct\n" : "WRONG: " + outcome->message + "\n");
    if (record_id) std::cout << "recorded as record " << record_id << " in " << log->path() << "\n";
  }
  return outcome && !outcome->correct ? 1 : 0;
}

}  // namespace tessel
