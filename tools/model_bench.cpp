#include "tools/model_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "measure/timer.h"

namespace tessel {

BenchResult bench_runs(ExecutionContext& ctx, double min_time_s) {
  for (int i = 0; i < 2; ++i) ctx.run();
  std::vector<double> samples;
  double total = 0;
  while (samples.size() < 10 || (total < min_time_s && samples.size() < 10000)) {
    const auto t0 = std::chrono::steady_clock::now();
    ctx.run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    samples.push_back(s);
    total += s;
  }
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) { return samples[static_cast<size_t>(q * static_cast<double>(samples.size() - 1))]; };
  return BenchResult{at(0.5), at(0.1), at(0.9), samples.size()};
}

ProfileResult profile_runs(ExecutionContext& ctx, double min_time_s) {
  for (int i = 0; i < 2; ++i) ctx.run_profiled();
  std::vector<std::vector<double>> per_kernel;  // per kernel, its samples
  double total = 0;
  size_t runs = 0;
  while (runs < 10 || (total < min_time_s && runs < 10000)) {
    const std::vector<double> s = ctx.run_profiled();
    per_kernel.resize(s.size());
    for (size_t k = 0; k < s.size(); ++k) {
      per_kernel[k].push_back(s[k]);
      total += s[k];
    }
    ++runs;
    if (s.empty()) break;  // a model of no kernels
  }
  ProfileResult r;
  r.runs = runs;
  for (const std::vector<double>& samples : per_kernel) r.kernel_median_s.push_back(median(samples));
  return r;
}

}  // namespace tessel
