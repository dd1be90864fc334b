// Predicate injection: the conditions under which one iteration of a stage's loop nest computes a
// real element. A split whose factor does not divide its loop's extent runs past the end; a stage
// computed at a consumer's tile may cover indices outside its tensor at the last tile.
#pragma once

#include <vector>

#include "schedule/lower/stage_info.h"

namespace tessel {

// Conditions over the loop variables of `info` (values = every var's value in those loops, as
// var_values gives them). With `spatial_only`, only conditions that involve no reduction loop
// (what the initialization of a reduction needs). Trivially true conditions are left out. With
// `clamps`, the conditions that keep an index inside the tensor go there instead of the result.
std::vector<Expr> stage_predicates(const StageInfo& info, const std::vector<int64_t>& shape,
                                   const std::vector<Expr>& values, bool spatial_only,
                                   std::vector<Expr>* clamps = nullptr);

}  // namespace tessel
