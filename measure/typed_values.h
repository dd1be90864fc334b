// Tensor data of any element type, converted from and to the float values tessel keeps inputs and
// results in (the reference interpreter's inputs, the workload data file): Float32 copied, Float16
// and BFloat16 rounded to nearest even, Int64 truncated from exact integers, Bool as "not zero".
// Outputs are poisoned before a checked run with a value no correct kernel leaves: NaN, INT64_MIN,
// or a byte that is neither 0 nor 1.
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/te/expr.h"

namespace tessel {

int64_t element_bytes(DType dtype);
void store_values(DType dtype, const float* values, int64_t n, void* dst);
void poison_values(DType dtype, int64_t n, void* dst);
std::vector<float> load_values(DType dtype, const void* src, int64_t n);

}  // namespace tessel
