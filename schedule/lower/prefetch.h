// Part of schedule_ops: the prefetch statements a stage issues at the top of one iteration of a
// loop (the `prefetch` step). Each read of the tensor in the stage's body becomes the flat region it
// touches during the iteration `offset` ahead: contiguous where the inner loops walk memory densely,
// a small loop nest of prefetches where they stride.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "schedule/ir/stmt.h"

namespace tessel {

// `body`: the stage's computation, whose reads of `tensor` (a dense row-major input of `shape`) are
// indexed by loop variables; `loop`: the loop the prefetch is issued in; `inner`: the loops nested
// inside it (name, extent from 0), whose whole range one iteration covers. A read whose address is
// not affine in the inner loops is not prefetched. Returns an empty sequence when nothing is.
Stmt prefetch_nest(const std::string& tensor, const std::vector<int64_t>& shape, const Expr& body,
                   const std::string& loop, int64_t offset, const std::vector<std::pair<std::string, int64_t>>& inner);

}  // namespace tessel
