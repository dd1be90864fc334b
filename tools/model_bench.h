// Timing a built model's runs in this process, for `tessel run --bench` and `tessel demo`.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/model.h"

namespace tessel {

struct BenchResult {
  double median_s = 0, p10_s = 0, p90_s = 0;
  size_t runs = 0;
};

// Repeated runs of `ctx` (its inputs bound) after two warm-up runs, until `min_time_s` of samples (at
// least 10 runs, at most 10000).
BenchResult bench_runs(ExecutionContext& ctx, double min_time_s = 1.0);

struct ProfileResult {
  std::vector<double> kernel_median_s;  // per kernel of the plan, in its order
  size_t runs = 0;
};
// Each kernel's median seconds over repeated profiled runs of `ctx` (ExecutionContext::run_profiled,
// kernels timed one by one), after two warm-up runs, until `min_time_s` of runs (at least 10, at
// most 10000).
ProfileResult profile_runs(ExecutionContext& ctx, double min_time_s = 1.0);

}  // namespace tessel
