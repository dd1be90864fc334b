// Lowering pass: peels the last iteration off a loop when that makes a guard inside it always true
// for the remaining iterations. Non-divisible splits then pay for their guard only in the last tile:
// interior tiles run guard-free (and vectorize), the simplifier removing the proven guards.
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

// `max_partitions` bounds code growth: each partition duplicates one loop body.
Stmt loop_partition(const Stmt& s, int max_partitions = 16);

}  // namespace tessel
