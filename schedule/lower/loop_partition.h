// Lowering pass: splits loops so that the guards inside them are decided outside the inner loops.
//  - Peeling: the last iteration of a loop comes off when that makes a guard always true for the
//    others (a non-divisible split then pays for its guard only in its last tile), and, with
//    `selects`, for a Select guard the first iteration likewise (a window's first column, the only
//    one reading the padding on the left).
//  - Hoisting (with `selects`): for a Select guard that compares a linear form of the loop
//    variables, the condition on the variables outside a loop under which it holds in every
//    iteration (its inner terms at their least) is tested once before the loop; where it holds,
//    the loop is emitted again without the guard. An inlined padding's bounds tests then leave the
//    inner loops of a convolution: a tile away from the input's border runs guard-free, one at the
//    border keeps them.
// Guards are IfThenElse conditions and, with `selects`, scalar Select conditions on no loaded value,
// each conjunct judged on its own. The simplifier then removes what became constant.
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

struct LoopPartitionOptions {
  int max_partitions = 16;  // bounds code growth: each partition duplicates one loop body
  bool selects = false;     // also Select conditions, and hoisting
};

Stmt loop_partition(const Stmt& s, const LoopPartitionOptions& options = {});

}  // namespace tessel
