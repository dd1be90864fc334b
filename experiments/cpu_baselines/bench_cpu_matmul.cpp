// tessel's default matmul schedules against OpenBLAS sgemm, in one process with the same threads:
// the products of a transformer (BERT-base at batch 8, sequence 128: 1024 rows) and odd sizes. Each
// default is checked against the reference interpreter first; then, in interleaved rounds, OpenBLAS
// and tessel are timed back to back (each the median of its samples over --min-time seconds), and
// each round gives its own ratio. Prints a markdown table. Usage:
//   bench_cpu_matmul [--threads N] [--min-time S] [--rounds R] [--schedules DIR] [MxNxK ...]
// With --schedules, DIR/matmul_MxNxK.json (where present) is timed in the same rounds as a third
// column, e.g. the best schedule `tessel tune` found for that size.
#include <cblas.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "codegen/llvm/parallel_runtime.h"
#include "measure/cpu_kernel.h"
#include "measure/host_buffers.h"
#include "measure/timer.h"
#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/ops/op_library.h"
#include "schedule/state/trace.h"
#include "search/default_schedule.h"
#include "search/target_spec.h"
#include "codegen/llvm/llvm_backend.h"

extern "C" void openblas_set_num_threads(int);

using namespace tessel;

namespace {

struct Shape {
  int64_t m, n, k;
  std::string name() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
};

const std::vector<Shape> kDefaultShapes = {
    {1024, 768, 768}, {1024, 2304, 768}, {1024, 3072, 768}, {1024, 768, 3072},  // BERT-base b8 s128
    {128, 768, 768},  {1024, 1024, 1024},                                        // a sequence; a square
    {197, 771, 1000}, {1000, 1000, 1000}, {61, 197, 771},                        // odd sizes
};

Shape parse_shape(const std::string& s) {
  Shape out{};
  char x1 = 0, x2 = 0;
  std::istringstream in(s);
  if (!(in >> out.m >> x1 >> out.n >> x2 >> out.k) || x1 != 'x' || x2 != 'x' || out.m < 1 || out.n < 1 || out.k < 1)
    throw std::runtime_error("a shape is MxNxK with positive sizes, not '" + s + "'");
  return out;
}

struct Timed {
  CpuKernel kernel;
  std::unique_ptr<HostBuffers> buffers;
  std::vector<double> ms;  // per round
};

Timed prepare(const ComputeDAG& dag, const Trace& trace, const HostTensors& inputs, const ReferenceTensors& ref,
              const std::string& what) {
  Timed t{build_cpu_kernel(dag, trace), nullptr, {}};
  CheckOutcome ok = check_cpu_kernel(t.kernel, inputs, ref, dag);
  if (!ok.correct) throw std::runtime_error(what + " gives wrong results: " + ok.message);
  t.buffers = std::make_unique<HostBuffers>(t.kernel.func.params);
  t.buffers->set_inputs(inputs);
  return t;
}

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

}  // namespace

int main(int argc, char** argv) try {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  double min_time = 0.3;
  int rounds = 5;
  std::string schedules;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--threads" && has_value) threads = std::stoi(argv[++i]);
    else if (a == "--min-time" && has_value) min_time = std::stod(argv[++i]);
    else if (a == "--rounds" && has_value) rounds = std::stoi(argv[++i]);
    else if (a == "--schedules" && has_value) schedules = argv[++i];
    else if (!a.empty() && a[0] != '-') shapes.push_back(parse_shape(a));
    else throw std::runtime_error("unknown argument '" + a + "'");
  }
  if (threads < 1 || rounds < 1 || !(min_time > 0)) throw std::runtime_error("threads, rounds and --min-time must be positive");
  if (shapes.empty()) shapes = kDefaultShapes;
  set_num_threads(threads);
  openblas_set_num_threads(threads);
  CpuTargetSpec target;
  target.vector_lanes = host_vector_lanes();
  target.num_threads = threads;

  std::cout << "| M x N x K | OpenBLAS GFLOP/s | tessel default GFLOP/s | default vs OpenBLAS (rounds) |"
            << (schedules.empty() ? "" : " given schedule GFLOP/s | given vs OpenBLAS (rounds) |") << "\n";
  std::cout << "|---|---:|---:|---:|" << (schedules.empty() ? "" : "---:|---:|") << "\n";
  for (const Shape& s : shapes) {
    ComputeDAG dag = build_op("matmul", {{"M", std::to_string(s.m)}, {"N", std::to_string(s.n)}, {"K", std::to_string(s.k)}});
    HostTensors inputs = make_random_inputs(dag, 1);
    ReferenceTensors ref = evaluate_reference(dag, inputs);
    std::vector<Timed> kernels;
    kernels.push_back(prepare(dag, default_schedule(dag, target), inputs, ref, "the default schedule of " + s.name()));
    const std::string given = schedules.empty() ? "" : schedules + "/matmul_" + s.name() + ".json";
    if (!given.empty() && std::filesystem::exists(given))
      kernels.push_back(prepare(dag, load_trace_file(given), inputs, ref, given));
    std::vector<float> a = inputs.at("A"), b = inputs.at("B"), c(static_cast<size_t>(s.m * s.n));
    TimingOptions t;
    t.min_total_s = min_time;
    t.warmup_runs = 3;
    std::vector<double> blas_ms;
    for (int r = 0; r < rounds; ++r) {
      blas_ms.push_back(1e3 * time_function([&] {
                          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m),
                                      static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a.data(),
                                      static_cast<int>(s.k), b.data(), static_cast<int>(s.n), 0.0f, c.data(),
                                      static_cast<int>(s.n));
                        }, t).median_s);
      for (Timed& k : kernels)
        k.ms.push_back(1e3 * time_function([&] { k.kernel.kernel->run(k.buffers->args()); }, t).median_s);
    }
    const double gflop = 2.0 * static_cast<double>(s.m * s.n * s.k) / 1e9;
    std::cout << "| " << s.name() << " | " << fixed(gflop / median(blas_ms) * 1e3, 1);
    for (const Timed& k : kernels) {
      std::vector<double> ratios;
      for (int r = 0; r < rounds; ++r) ratios.push_back(blas_ms[static_cast<size_t>(r)] / k.ms[static_cast<size_t>(r)]);
      const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
      std::cout << " | " << fixed(gflop / median(k.ms) * 1e3, 1) << " | " << fixed(median(ratios), 2) << "x ("
                << fixed(*lo, 2) << "-" << fixed(*hi, 2) << ")";
    }
    if (kernels.size() == 1 && !schedules.empty()) std::cout << " | - | -";
    std::cout << " |" << std::endl;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 2;
}
