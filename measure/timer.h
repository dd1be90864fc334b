// Wall-clock timing of a kernel on the CPU: warm up, then take samples until their total reaches a
// minimum time; report the median and keep every sample.
#pragma once

#include <functional>
#include <vector>

namespace tessel {

struct TimingOptions {
  double min_total_s = 0.2;   // keep sampling until the samples add up to this
  int warmup_runs = 2;
  int min_samples = 5;
  int max_samples = 10000;
};

struct TimingResult {
  std::vector<double> samples_ms;
  double median_ms = 0;
};

TimingResult time_function(const std::function<void()>& fn, const TimingOptions& options = {});

double median(std::vector<double> values);

}  // namespace tessel
