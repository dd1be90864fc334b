// tessel demo: the main job on its embedded default. Builds a few representative suite cases with
// their default CPU schedules, checks each against the reference interpreter and times it.
#include <chrono>
#include <iomanip>
#include <iostream>

#include "codegen/llvm/llvm_backend.h"
#include "codegen/llvm/parallel_runtime.h"
#include "measure/cpu_kernel.h"
#include "measure/host_buffers.h"
#include "measure/timer.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"
#include "tools/commands.h"
#include "tools/workload.h"

namespace tessel {

namespace {

const std::vector<std::string> kDefaultCases = {
    "gemm_1024", "dense_bias_gelu_1024x768x3072", "conv2d_bias_relu_b1_64x56x56_k3",
    "softmax_8192x8192", "layernorm_16384x1024", "gelu_tanh_8192",
};

}  // namespace

int cmd_demo(const DemoArgs& args) {
  std::vector<Workload> all = load_suite(args.suite);
  std::vector<std::string> names = args.cases.empty() ? kDefaultCases : args.cases;
  const HostTarget& host = host_target();
  std::cout << "tessel demo: default CPU schedules on " << host.cpu << " (" << host.vector_bits << "-bit vectors, "
            << num_threads() << " threads)\n\n";
  std::cout << std::left << std::setw(36) << "case" << std::right << std::setw(12) << "median ms" << std::setw(11)
            << "GFLOP/s" << std::setw(9) << "GB/s" << std::setw(10) << "correct" << std::setw(10) << "build s"
            << "\n";
  int failures = 0;
  for (const std::string& name : names) {
    const Workload* w = nullptr;
    for (const Workload& c : all)
      if (c.name == name) w = &c;
    if (!w) throw InputError("suite " + args.suite + " has no case '" + name + "'");
    std::cout << std::left << std::setw(36) << name << std::flush;
    auto t0 = std::chrono::steady_clock::now();
    CpuKernel kernel = build_cpu_kernel(w->dag, default_schedule(w->dag, {host_vector_lanes(), num_threads()}));
    double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    HostTensors inputs = make_random_inputs(w->dag, 1);
    CheckOutcome outcome = check_cpu_kernel(kernel, inputs, evaluate_reference(w->dag, inputs), w->dag);
    failures += !outcome.correct;
    HostBuffers buffers(kernel.func.params);
    buffers.set_inputs(inputs);
    TimingOptions timing;
    timing.min_total_s = args.min_time_s;
    TimingResult t = time_function([&] { kernel.kernel->run(buffers.args()); }, timing);
    double s = t.median_ms * 1e-3;
    std::cout << std::right << std::fixed << std::setw(12) << std::setprecision(3) << t.median_ms << std::setw(11)
              << std::setprecision(1) << w->dag.flops() / s / 1e9 << std::setw(9)
              << static_cast<double>(buffers.total_bytes()) / s / 1e9 << std::setw(10)
              << (outcome.correct ? "yes" : "NO") << std::setw(10) << std::setprecision(2) << build_s << "\n";
    if (!outcome.correct) std::cout << "  " << outcome.message << "\n";
  }
  std::cout << "\nGB/s counts each input read once and each output written once.\n";
  return failures ? 1 : 0;
}

}  // namespace tessel
