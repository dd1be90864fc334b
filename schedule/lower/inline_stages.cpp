#include "schedule/lower/inline_stages.h"

namespace tessel {

std::map<std::string, Expr> inline_stages(const State& state) {
  std::map<std::string, Expr> bodies;
  // Topological order: an inlined producer's body is final before any reader is visited.
  for (size_t i = 0; i < state.ops().size(); ++i) {
    const Operation& op = state.ops()[i];
    if (op.is_placeholder) continue;
    bodies[op.name] = rewrite(op.body, [&](const Expr& e) -> Expr {
      if (e->op != ExprOp::TensorRead) return nullptr;
      int p = state.stage_index(e->name);
      if (p < 0 || state.stages()[p].loc != ComputeLoc::Inline) return nullptr;
      const Operation& producer = state.ops()[p];
      Expr body = bodies.at(producer.name);
      for (size_t d = 0; d < producer.axes.size(); ++d) body = substitute(body, producer.axes[d].name, e->args[d]);
      return body;
    });
  }
  return bodies;
}

}  // namespace tessel
