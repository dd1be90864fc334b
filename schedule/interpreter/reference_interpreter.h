// The reference interpreter: evaluates a ComputeDAG directly, element by element, in float64 with
// float64 accumulation. It is the ground truth for every correctness check in tessel.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schedule/te/dag.h"

namespace tessel {

using HostTensors = std::map<std::string, std::vector<float>>;
using ReferenceTensors = std::map<std::string, std::vector<double>>;

// Evaluates every compute op of `dag` given values for all placeholders (row-major, exactly
// num_elements() each; throws InputError otherwise; a 16-bit float placeholder's values are first
// rounded to its type). Returns every computed tensor by name. Like
// make_random_inputs, it first refuses (InputError) a workload whose buffers do not fit in this
// machine's memory (host_memory.h).
ReferenceTensors evaluate_reference(const ComputeDAG& dag, const HostTensors& inputs);

// Deterministic random inputs for every placeholder, uniform in [-1, 1) (rounded to a 16-bit
// placeholder's type).
HostTensors make_random_inputs(const ComputeDAG& dag, uint64_t seed);

// Compares an fp32 result with the float64 reference: |got - want| <= atol * scale + rtol * |want|,
// where scale = max(1, max |want| over the tensor) so sums of many terms near zero are judged against
// the magnitude of the tensor. NaN is equal only to NaN, inf only to the same inf. Returns the number of mismatches and describes the first
// in `first_mismatch` ("C[3, 17]: got 1.5, want 1.25").
struct CompareResult {
  int64_t mismatches = 0;
  double max_abs_error = 0;
  std::string first_mismatch;
};
CompareResult compare_with_reference(const Operation& op, const std::vector<float>& got,
                                     const std::vector<double>& want, double rtol = 1e-4,
                                     double atol = 1e-5);
// "3 wrong values in C, first C[0, 1]: got 2, want 1.5": how every check reports a mismatch.
std::string mismatch_summary(const std::string& tensor, const CompareResult& c);

// The same on raw arrays of `shape`'s element count (a process holding only the data and the
// output's name and shape, such as a runner worker). A large output is checked in up to `chunks`
// parallel chunks of at least 1M values (0: one per core, at most 8), with the result of one pass.
CompareResult compare_with_reference(const std::string& name, const std::vector<int64_t>& shape, const float* got,
                                     const double* want, double rtol, double atol, int chunks = 0);

}  // namespace tessel
