// Reads the canonical text of a ComputeDAG (ComputeDAG::to_text) back into the DAG. Tuning logs store
// each workload as that text; the cost model and log tools rebuild the programs from it.
#pragma once

#include <string>

#include "schedule/te/dag.h"

namespace tessel {

// The inverse of ComputeDAG::to_text(): for every DAG d, parse_dag_text(d.to_text()) has the same
// operations, axes and expressions as d, built by the checking constructors of expr.h, so its text,
// workload key and float constants (bit for bit) are d's. What the text does not spell is taken
// from the DAG's rules: axis variables are int64 and a tensor read has the dtype of its tensor.
// Two printed forms are not invertible and never occur in a DAG: `nan` (any NaN reads back as the
// quiet NaN) and flat-buffer loads (they print like tensor reads, which they are read as).
//
// Blanks between tokens and empty lines are accepted; each operation is one line. Bad input throws
// InputError naming `source`, the line and column and what was expected, e.g.
// "workload text: line 3, column 17: expected ']' after the indices of X, found ','".
ComputeDAG parse_dag_text(const std::string& text, const std::string& source = "workload text");

}  // namespace tessel
