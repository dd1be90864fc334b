#include "tools/model_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

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

}  // namespace tessel
