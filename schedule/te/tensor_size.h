// The size limits of tessel's tensors and loop nests, checked once when a ComputeDAG is built: an op
// template, a suite case, a tuning-log record and an imported model all meet the same rules, and
// everything downstream (lowering, code generation, the interpreter, buffers) may multiply sizes
// in int64 without overflowing.
//
// Limits:
//  - every extent is at least 1;
//  - a tensor takes at most kMaxTensorBytes (256 TiB, 2^48 bytes): no 64-bit machine of today
//    addresses more (x86-64 and AArch64 user space end at 2^47 to 2^48 bytes). A tensor's element
//    count is then below 2^48 too, so a flat index times a small factor stays far from 2^63;
//  - an operation's loop nest (its axes times its reduction axes) runs at most kMaxIterations
//    (2^62) iterations, which keeps trip counts and index sums within int64 with headroom.
// Whether a workload's buffers fit in this machine's memory is a separate question, asked only by
// what allocates them (schedule/interpreter/host_memory.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/te/dag.h"

namespace tessel {

constexpr int64_t kMaxTensorBytes = int64_t{1} << 48;
constexpr int64_t kMaxIterations = int64_t{1} << 62;

// 4 for float32, 8 for int64, 1 for bool, 2 for float16 and bfloat16.
int64_t dtype_bytes(DType dtype);

// "A[1000000000000, 16]".
std::string describe_tensor(const std::string& name, const std::vector<int64_t>& shape);

// The element count and byte size of a tensor of `shape` and `dtype`. Throws InputError naming the
// tensor, its shape and the size (exact when it fits in int64, approximate otherwise) when an
// extent is below 1 or the tensor exceeds kMaxTensorBytes.
int64_t checked_elements(const std::string& name, const std::vector<int64_t>& shape, DType dtype);
int64_t checked_bytes(const std::string& name, const std::vector<int64_t>& shape, DType dtype);

// The iterations of `op`'s loop nest (1 for a placeholder). Throws InputError naming the operation
// and its extents beyond kMaxIterations.
int64_t checked_iterations(const Operation& op);

// Every size rule above for one operation; ComputeDAG's constructor calls it for each.
void check_operation_sizes(const Operation& op);

}  // namespace tessel
