#include "measure/timer.h"

#include <algorithm>
#include <chrono>

namespace tessel {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

TimingResult time_function(const std::function<void()>& fn, const TimingOptions& options) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < options.warmup_runs; ++i) fn();
  TimingResult r;
  double total = 0;
  auto start = clock::now();
  while (static_cast<int>(r.samples_s.size()) < options.max_samples &&
         (total < options.min_total_s || static_cast<int>(r.samples_s.size()) < options.min_samples)) {
    if (!r.samples_s.empty() && std::chrono::duration<double>(clock::now() - start).count() >= options.budget_s)
      break;
    if (options.before_sample) options.before_sample();
    auto t0 = clock::now();
    fn();
    double s = std::chrono::duration<double>(clock::now() - t0).count();
    r.samples_s.push_back(s);
    total += s;
  }
  r.median_s = median(r.samples_s);
  return r;
}

}  // namespace tessel
