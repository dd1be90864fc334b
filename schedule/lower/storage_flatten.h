// Lowering pass: N-d tensor accesses (Provide / TensorRead) become flat buffer accesses (Store /
// Load) with row-major strides; storage_align pads a dimension's stride of an allocated buffer.
#pragma once

#include "schedule/ir/stmt.h"
#include "schedule/state/state.h"

namespace tessel {

// Element strides of a row-major buffer of `extents`, each dimension's stride padded as
// storage_align asks.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& extents, const std::vector<StorageAlign>& align);

// `params` give the shapes of the function's arguments; allocations carry their own extents.
Stmt storage_flatten(const Stmt& s, const std::vector<BufferParam>& params, const State& state);

}  // namespace tessel
