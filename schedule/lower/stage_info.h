// What lowering knows about each computed stage once inlining and bound inference have run.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedule/state/state.h"

namespace tessel {

struct StageInfo {
  Stage stage;                         // extents re-derived from root_extent
  Expr body;                           // the op's body with inlined stages substituted
  std::vector<Expr> root_base;         // per root var: first index computed (0 unless computed at)
  std::vector<int64_t> root_extent;    // per root var: how many indices are computed
  std::vector<std::string> leaf_names; // the loop variable names in generated code
  // Tensor-core tiles cover whole 16 x 16 tiles past the tensor's end: the stage's region is not
  // clamped to its tensor, and (`zero_fill`) a staged operand stores zero outside the tensor.
  bool padded = false;
  bool zero_fill = false;
};

// Keyed by stage name; holds every compute stage that is not inlined.
using StageInfoMap = std::map<std::string, StageInfo>;

}  // namespace tessel
