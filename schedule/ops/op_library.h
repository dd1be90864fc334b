// The built-in operator templates (matmul, dense, conv2d, softmax ...): the contract the benchmark
// suite, users and other tools rely on. Each template turns string parameters into a ComputeDAG.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedule/te/dag.h"

namespace tessel {

enum class ParamKind : uint8_t { Int, Float, Choice, Shape, Text };

struct OpParam {
  std::string name;
  ParamKind kind = ParamKind::Int;
  std::string default_value;          // empty: required
  std::vector<std::string> choices;   // Choice only (e.g. "0", "1" or "none", "relu", ...)
  std::string doc;                    // one line
};

struct OpTemplate {
  std::string name;
  std::string summary;  // one line, e.g. "C[M,N] = sum_k A[M,K]*B[K,N]"
  std::vector<OpParam> params;
};

using OpParams = std::map<std::string, std::string>;

// All templates, in a fixed order.
const std::vector<OpTemplate>& op_templates();
const OpTemplate* find_op_template(const std::string& name);  // nullptr when unknown

// Builds the DAG of `op` with `params` (missing params take their defaults). Throws InputError that
// names the op and the parameter on an unknown op, an unknown / missing / non-numeric / negative or
// zero extent, a bad choice, a malformed shape or expression.
ComputeDAG build_op(const std::string& op, const OpParams& params);

}  // namespace tessel
