// Lowering, first step: substitutes the bodies of inlined stages into their readers.
#pragma once

#include <map>
#include <string>

#include "schedule/state/state.h"

namespace tessel {

// The body of every compute stage with each read of an inlined stage replaced by that stage's
// body at the read indices (transitively). Inlined stages are included too.
std::map<std::string, Expr> inline_stages(const State& state);

}  // namespace tessel
