// CPU baselines, measured in one process with the same thread count:
//   - matmul 1024^3 with a hand-written tessel schedule vs OpenBLAS sgemm;
//   - softmax 8192^2 and layernorm 16384x1024 default schedules vs memory-copy bandwidth (memcpy,
//     each thread copying its half; bytes read + written, the same accounting as the kernels).
// Prints a markdown table. Usage:
//   bench_cpu_baselines [--threads N] [--schedules DIR] [--min-time S] [--matmul-schedule FILE]
// --matmul-schedule times that schedule (e.g. the best one `tessel tune` found) instead of the
// hand-written DIR/matmul_1024.json.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
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
  std::string matmul_schedule;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads") threads = std::stoi(argv[i + 1]);
    else if (a == "--schedules") schedules = argv[i + 1];
    else if (a == "--min-time") min_time = std::stod(argv[i + 1]);
    else if (a == "--matmul-schedule") matmul_schedule = argv[i + 1];
  }
  set_num_threads(threads);
  openblas_set_num_threads(threads);
  std::vector<Row> rows;

  // --- matmul 1024^3: tessel (hand-written schedule) vs OpenBLAS sgemm -------------------------
  ComputeDAG mm = build_op("matmul", {{"M", "1024"}, {"N", "1024"}, {"K", "1024"}});
  if (matmul_schedule.empty()) matmul_schedule = schedules + "/matmul_1024.json";
  CpuKernel tk = build_cpu_kernel(mm, load_trace_file(matmul_schedule));
  HostBuffers tb(tk.func.params);
  HostTensors inputs = make_random_inputs(mm, 1);
  tb.set_inputs(inputs);
  CheckOutcome ok = check_cpu_kernel(tk, inputs, evaluate_reference(mm, inputs), mm);
  if (!ok.correct) {
    std::cerr << "error: " << matmul_schedule << " gives wrong results: " << ok.message << "\n";
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
    for (double s : rb.samples_s) blas_ms.push_back(s * 1e3);
    for (double s : rt.samples_s) tessel_ms.push_back(s * 1e3);
  }
  double flops = 2.0 * 1024 * 1024 * 1024;
  double blas = median(blas_ms), ours = median(tessel_ms);
  rows.push_back({"OpenBLAS sgemm 1024^3", blas, flops / blas / 1e6, "GFLOP/s"});
  rows.push_back({"tessel matmul 1024^3 (" + matmul_schedule + ")", ours, flops / ours / 1e6, "GFLOP/s"});

  // --- memory-bound: copy bandwidth vs softmax and layernorm default schedules ------------------
  // This machine's memory bandwidth drifts with its neighbours' load, so the copies and the kernels
  // are measured in interleaved rounds and each round gives its own ratio; the table reports the
  // median ratio and its range.
  const size_t copy_bytes = size_t(256) << 20;
  std::vector<char> src(copy_bytes, 1), dst(copy_bytes, 0);
  auto memcpy_run = [&] {
    std::vector<std::thread> ts;
    size_t chunk = copy_bytes / threads;
    for (int k = 0; k < threads; ++k)
      ts.emplace_back([&, k] { std::memcpy(dst.data() + k * chunk, src.data() + k * chunk, chunk); });
    for (auto& th : ts) th.join();
  };
  // tessel's own streaming copy Y = x over the same bytes; the reference bandwidth of a round is the
  // faster of the two copies, so the ratios never flatter the kernels.
  ComputeDAG copy = build_op("elementwise", {{"shape", "8192x8192"}, {"expr", "x"}});
  CpuKernel ck = build_cpu_kernel(copy, default_schedule(copy, {host_vector_lanes(), threads}));
  HostBuffers cb(ck.func.params);
  cb.set_inputs(make_random_inputs(copy, 3));

  struct Mem {
    const char* name;
    ComputeDAG dag;
  } mems[] = {{"softmax 8192x8192 (default schedule)", build_op("softmax", {{"rows", "8192"}, {"cols", "8192"}})},
              {"layernorm 16384x1024 (default schedule)", build_op("layernorm", {{"rows", "16384"}, {"cols", "1024"}})}};
  std::vector<CpuKernel> kernels;
  std::vector<std::unique_ptr<HostBuffers>> buffers;
  for (Mem& m : mems) {
    kernels.push_back(build_cpu_kernel(m.dag, default_schedule(m.dag, {host_vector_lanes(), threads})));
    buffers.push_back(std::make_unique<HostBuffers>(kernels.back().func.params));
    buffers.back()->set_inputs(make_random_inputs(m.dag, 2));
  }
  const int rounds = 7;
  std::vector<double> memcpy_gbps, copy_gbps, kernel_gbps[2], ratio[2];
  double round_time = std::max(0.2, min_time / 3);
  for (int r = 0; r < rounds; ++r) {
    TimingOptions rt;
    rt.min_total_s = round_time;
    double m = 2.0 * copy_bytes / time_function(memcpy_run, rt).median_s / 1e9;
    double c = static_cast<double>(cb.total_bytes()) / time_kernel(ck, cb, round_time).median_s / 1e9;
    memcpy_gbps.push_back(m);
    copy_gbps.push_back(c);
    for (int k = 0; k < 2; ++k) {
      double g = static_cast<double>(buffers[k]->total_bytes()) /
                 time_kernel(kernels[k], *buffers[k], round_time).median_s / 1e9;
      kernel_gbps[k].push_back(g);
      ratio[k].push_back(g / std::max(m, c));
    }
  }
  auto gb_to_ms = [](double gbps, double bytes) { return bytes / (gbps * 1e9) * 1e3; };
  rows.push_back({"memcpy 256 MiB (read + write)", gb_to_ms(median(memcpy_gbps), 2.0 * copy_bytes), median(memcpy_gbps), "GB/s"});
  rows.push_back({"tessel copy kernel 256 MiB (read + write)", gb_to_ms(median(copy_gbps), 2.0 * copy_bytes),
                  median(copy_gbps), "GB/s"});
  for (int k = 0; k < 2; ++k)
    rows.push_back({mems[k].name, gb_to_ms(median(kernel_gbps[k]), static_cast<double>(buffers[k]->total_bytes())),
                    median(kernel_gbps[k]), "GB/s"});

  const HostTarget& host = host_target();
  std::cout << "CPU: " << host.cpu << ", " << threads << " threads, " << host.vector_bits << "-bit vectors\n\n";
  std::cout << "| kernel | median ms | throughput |\n|---|---:|---:|\n";
  for (const Row& r : rows)
    std::cout << "| " << r.what << " | " << std::fixed << std::setprecision(3) << r.ms << " | " << std::setprecision(1)
              << r.value << " " << r.unit << " |\n";
  std::cout << std::setprecision(2);
  auto range = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::ostringstream o;
    o << std::fixed << std::setprecision(2) << v.front() << " - " << v.back();
    return o.str();
  };
  std::cout << "\nMemory-bound ratios: " << rounds << " interleaved rounds; in each, the kernel's bandwidth over the "
            << "faster of the two copies measured in the same round.\n\n";
  std::cout << "| ratio | value (median of rounds) | range | target |\n|---|---:|---:|---:|\n" << std::fixed
            << std::setprecision(2);
  std::cout << "| tessel matmul / OpenBLAS sgemm | " << blas / ours << " | | >= 0.50 |\n";
  std::cout << "| softmax / copy bandwidth | " << median(ratio[0]) << " | " << range(ratio[0]) << " | >= 0.60 |\n";
  std::cout << "| layernorm / copy bandwidth | " << median(ratio[1]) << " | " << range(ratio[1]) << " | >= 0.60 |\n";
  return 0;
}
