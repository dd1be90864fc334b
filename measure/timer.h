// Wall-clock timing of a kernel on the CPU: warm up, then take samples until their total reaches a
// minimum time; report the median and keep every sample.
#pragma once

#include <functional>
#include <limits>
#include <vector>

namespace tessel {

struct TimingOptions {
  double min_total_s = 0.2;   // keep sampling until the samples add up to this
  int warmup_runs = 2;
  int min_samples = 5;
  int max_samples = 10000;
  // Stop once this much wall time has gone by in sampling, even short of the minimums (at least one
  // sample is always taken).
  double budget_s = std::numeric_limits<double>::infinity();
  // Runs before every sample, outside the timed region (e.g. a cache flush).
  std::function<void()> before_sample;
};

struct TimingResult {
  std::vector<double> samples_s;
  double median_s = 0;
};

TimingResult time_function(const std::function<void()>& fn, const TimingOptions& options = {});

double median(std::vector<double> values);

}  // namespace tessel
