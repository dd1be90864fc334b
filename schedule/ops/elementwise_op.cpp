// The elementwise template: Y[i0, ..., in] = expr(x, y, z) over 1 to 3 inputs of one shape.
#include "schedule/ops/elementwise_parser.h"
#include "schedule/ops/op_builders.h"
#include "schedule/te/error.h"

namespace tessel::ops_detail {

ComputeDAG build_elementwise(const ParamReader& p) {
  std::vector<int64_t> shape = p.shape("shape");
  int count = std::stoi(p.choice("inputs"));
  const std::vector<std::string> all_names = {"x", "y", "z"};
  std::vector<std::string> names(all_names.begin(), all_names.begin() + count);

  std::vector<Axis> axes;
  for (size_t d = 0; d < shape.size(); ++d) axes.push_back(Axis{"i" + std::to_string(d), shape[d]});

  Expr body;
  try {
    body = parse_elementwise_expr(p.text("expr"), names, [&](const std::string& name) { return read(name, axes); });
  } catch (const InputError& e) {
    p.fail("expr", e.what());
  }

  std::vector<Operation> ops;
  for (const std::string& name : names) ops.push_back(placeholder(name, shape));
  ops.push_back(compute("Y", axes, body));
  return ComputeDAG(std::move(ops));
}

}  // namespace tessel::ops_detail
