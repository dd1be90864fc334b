// Lowering pass: simplifies every expression knowing the range of each enclosing loop variable,
// removes guards that always hold, branches that never run, loops of extent 0, and replaces loops of
// extent 1 by their single iteration.
#pragma once

#include "schedule/ir/stmt.h"
#include "schedule/lower/arith.h"

namespace tessel {

Stmt simplify(const Stmt& s, const VarRanges& outer = {});

}  // namespace tessel
