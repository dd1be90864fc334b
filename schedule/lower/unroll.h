// Lowering pass: replaces unrolled loops by copies of their body, one per iteration, and applies
// the auto_unroll_max_step pragma (unroll every loop inside whose unrolled size stays within the
// budget, innermost first).
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

// Loops marked unrolled with more iterations than this, or whose copies would add up to more
// statements than kMaxUnrolledStatements, stay ordinary loops.
constexpr int64_t kMaxExplicitUnroll = 128;
constexpr int64_t kMaxUnrolledStatements = 1024;

Stmt unroll_loops(const Stmt& s);

}  // namespace tessel
