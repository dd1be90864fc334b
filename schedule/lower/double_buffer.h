// Lowering, GPU only, after insert_barriers: double buffering of shared tiles (software pipelining
// of a reduction loop). A loop marked double_buffer whose body allocates shared tiles, fills them,
// then works on them becomes
//
//     fill tiles for iteration 0 into copy 0; commit
//     for t: if t + 1 < n: fill for t + 1 into copy (t + 1) % 2     -- in flight during the work
//            commit; wait for iteration t's copies; barrier
//            work on copy t % 2; barrier
//
// With more copies (pipeline_stages), the fills run further ahead (see `pipeline` in the source);
// warpgroup products then keep one group of products running across iterations.
// Fills that copy a 4-, 8- or 16-byte aligned run of global memory unchanged become asynchronous
// copies (cp.async, see mark_async_copies); others (the zero-filled edges of a tile) plain stores.
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

Stmt double_buffer(const Stmt& body);
// After vectorization: the fills of double-buffered tiles that copy global memory unchanged, 4, 8
// or 16 aligned bytes at a time, become asynchronous (async_copy).
Stmt mark_async_copies(const Stmt& body, const std::vector<BufferParam>& params);

}  // namespace tessel
