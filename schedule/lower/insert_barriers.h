// Lowering pass (GPU): a buffer in shared memory is written cooperatively by the threads of a
// block and then read by other threads. A barrier after the writes makes them visible; a barrier
// before them keeps the previous iteration's readers from seeing the buffer overwritten. Inside a
// loop bound to a thread index only cooperative fetches (nests that bind the index again) count.
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

Stmt insert_barriers(const Stmt& s);

}  // namespace tessel
