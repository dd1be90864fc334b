// CPU baselines, measured in one process with the same thread count:
//   - matmul 1024^3 with a hand-written tessel schedule vs OpenBLAS sgemm;
//   - softmax 8192^2 and layernorm 16384x1024 default schedules vs memory-copy bandwidth (memcpy,
//     each thread copying its half; bytes read + written, the same accounting as the kernels).
// Prints a markdown table. Usage: bench_cpu_baselines [--threads N] [--schedules DIR] [--min-time S]
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <thread>

#include "codegen/llvm/llvm_backend.h"
#include "codegen/llvm/parallel_runtime.h"
#include "measure/cpu_kernel.h"
#include "measure/host_buffers.h"
#include "measure/timer.h"
#include "schedule/ops/op_library.h"
#include "search/default_schedule.h"

extern "C" void openblas_set_num_threads(int);

using namespace tessel;

namespace {

struct Row {
  std::string what;
  double ms;
  double value;  // GFLOP/s or GB/s
  const char* unit;
};

TimingResult time_kernel(const CpuKernel& k, HostBuffers& b, double min_time) {
  TimingOptions t;
  t.min_total_s = min_time;
  t.warmup_runs = 3;
  return time_function([&] { k.kernel->run(b.args()); }, t);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  std::string schedules = "experiments/schedules/cpu";
  double min_time = 1.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") threads = std::stoi(argv[i + 1]);
    else if (a == "--schedules") schedules = argv[i + 1];
    else if (a == "--min-time") min_time = std::stod(argv[i + 1]);
  }
  set_num_threads(threads);
  openblas_set_num_threads(threads);
  std::vector<Row> rows;

  // --- matmul 1024^3: tessel (hand-written schedule) vs OpenBLAS sgemm -------------------------
  ComputeDAG mm = build_op("matmul", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}});
  CpuKernel tk = build_cpu_kernel(mm, load_trace_file(schedules + "/matmul_1024.json"));
  HostBuffers tb(tk.func.params);
  HostTensors inputs = make_random_inputs(mm, 1);
  tb.set_inputs(inputs);
  CheckOutcome ok = check_cpu_kernel(tk, inputs, evaluate_reference(mm, inputs), mm);
  if (!ok.correct) {
    std::cerr << "error: matmul_1024.json gives wrong results: " << ok.message << "\n";
    return 1;
  }
  std::vector<float> A = inputs.at("A"), B = inputs.at("B"), C(1024 * 1024);
  TimingOptions t;
  t.min_total_s = min_time;
  t.warmup_runs = 3;
  // Interleave the two so drift on a shared machine hits both alike.
  std::vector<double> blas_ms, tessel_ms;
  for (int round = 0; round < 3; ++round) {
    TimingResult rb = time_function([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1024, 1024, 1024, 1.0f, A.data(), 1024, B.data(), 1024,
                  0.0f, C.data(), 1024);
    }, t);
    TimingResult rt = time_kernel(tk, tb, min_time);
    blas_ms.insert(blas_ms.end(), rb.samples_ms.begin(), rb.samples_ms.end());
    tessel_ms.insert(tessel_ms.end(), rt.samples_ms.begin(), rt.samples_ms.end());
  }
  double flops = 2.0 * 1024 * 1024 * 1024;
  double blas = median(blas_ms), ours = median(tessel_ms);
  rows.push_back({"OpenBLAS sgemm 1024^3", blas, flops / blas / 1e6, "GFLOP/s"});
  rows.push_back({"tessel matmul 1024^3 (matmul_1024.json)", ours, flops / ours / 1e6, "GFLOP/s"});

  // --- memory-bound: copy bandwidth vs softmax and layernorm default schedules ------------------
  const size_t copy_bytes = size_t(256) << 20;
  std::vector<char> src(copy_bytes, 1), dst(copy_bytes, 0);
  TimingResult rc = time_function([&] {
    std::vector<std::thread> ts;
    size_t chunk = copy_bytes / threads;
    for (int k = 0; k < threads; ++k)
      ts.emplace_back([&, k] { std::memcpy(dst.data() + k * chunk, src.data() + k * chunk, chunk); });
    for (auto& th : ts) th.join();
  }, t);
  double memcpy_gbps = 2.0 * copy_bytes / (rc.median_ms * 1e-3) / 1e9;
  rows.push_back({"memcpy 256 MiB (read + write)", rc.median_ms, memcpy_gbps, "GB/s"});
  // A second copy: tessel's own streaming kernel Y = x over the same bytes. The reference bandwidth
  // is the faster of the two, so the ratios below never flatter the kernels.
  ComputeDAG copy = build_op("elementwise", {{"shape", "8192x8192"}, {"expr", "x"}});
  CpuKernel ck = build_cpu_kernel(copy, default_schedule(copy, {host_vector_lanes(), threads}));
  HostBuffers cb(ck.func.params);
  cb.set_inputs(make_random_inputs(copy, 3));
  TimingResult rcopy = time_kernel(ck, cb, min_time);
  double tessel_copy_gbps = static_cast<double>(cb.total_bytes()) / (rcopy.median_ms * 1e-3) / 1e9;
  rows.push_back({"tessel copy kernel 256 MiB (read + write)", rcopy.median_ms, tessel_copy_gbps, "GB/s"});
  double copy_gbps = std::max(memcpy_gbps, tessel_copy_gbps);

  struct Mem {
    const char* name;
    ComputeDAG dag;
  } mems[] = {{"softmax 8192x8192 (default schedule)", build_op("softmax", {{"rows", "8192"}, {"cols", "8192"}})},
              {"layernorm 16384x1024 (default schedule)", build_op("layernorm", {{"rows", "16384"}, {"cols", "1024"}})}};
  std::vector<double> mem_ratio;
  for (Mem& m : mems) {
    CpuKernel k = build_cpu_kernel(m.dag, default_schedule(m.dag, {host_vector_lanes(), threads}));
    HostBuffers b(k.func.params);
    HostTensors in = make_random_inputs(m.dag, 2);
    b.set_inputs(in);
    TimingResult r = time_kernel(k, b, min_time);
    double gbps = static_cast<double>(b.total_bytes()) / (r.median_ms * 1e-3) / 1e9;
    rows.push_back({m.name, r.median_ms, gbps, "GB/s"});
    mem_ratio.push_back(gbps / copy_gbps);
  }

  const HostTarget& host = host_target();
  std::cout << "CPU: " << host.cpu << ", " << threads << " threads, " << host.vector_bits << "-bit vectors\n\n";
  std::cout << "| kernel | median ms | throughput |\n|---|---:|---:|\n";
  for (const Row& r : rows)
    std::cout << "| " << r.what << " | " << std::fixed << std::setprecision(3) << r.ms << " | " << std::setprecision(1)
              << r.value << " " << r.unit << " |\n";
  std::cout << std::setprecision(2);
  std::cout << "\nCopy bandwidth reference: " << copy_gbps << " GB/s (the faster copy above).\n\n";
  std::cout << "| ratio | value | target |\n|---|---:|---:|\n";
  std::cout << "| tessel matmul / OpenBLAS sgemm | " << blas / ours << " | >= 0.50 |\n";
  std::cout << "| softmax / copy bandwidth | " << mem_ratio[0] << " | >= 0.60 |\n";
  std::cout << "| layernorm / copy bandwidth | " << mem_ratio[1] << " | >= 0.60 |\n";
  return 0;
}
