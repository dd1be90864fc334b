// Lowering pass: turns each vectorized loop into vector expressions. The loop variable becomes
// ramp(min, 1, lanes); scalars meeting vectors are broadcast; ramps stay ramps through + - and
// multiplication by constants, so contiguous accesses reach codegen as dense vector loads/stores.
// A vectorized loop whose body holds control flow (a guard left in a boundary tile) is emitted as a
// scalar loop instead.
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

Stmt vectorize_loops(const Stmt& s);

}  // namespace tessel
