#include "schedule/lower/storage_flatten.h"

#include <map>

#include "schedule/lower/arith.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

class Flattener {
 public:
  Flattener(const std::vector<BufferParam>& params, const State& state) : state_(state) {
    for (const BufferParam& p : params) strides_[p.name] = row_major_strides(p.shape, {});
  }

  Stmt run(const Stmt& s) {
    switch (s->op) {
      case StmtOp::Allocate: {
        std::vector<StorageAlign> align;
        if (state_.stage_index(s->buffer) >= 0) align = state_.stage(s->buffer).storage_align;
        std::vector<int64_t> strides = row_major_strides(s->extents, align);
        int64_t size = s->extents.empty() ? 1 : strides[0] * s->extents[0];
        auto saved = strides_.find(s->buffer) != strides_.end() ? std::optional(strides_[s->buffer]) : std::nullopt;
        strides_[s->buffer] = strides;
        Stmt body = run(s->body[0]);
        if (saved) strides_[s->buffer] = *saved;
        else strides_.erase(s->buffer);
        return make_allocate(s->buffer, s->dtype, {size}, s->scope, body);
      }
      case StmtOp::Provide:
        return make_store(s->buffer, flat_index(s->buffer, s->indices), flatten_expr(s->value));
      case StmtOp::AllReduce:
        return make_allreduce(s->buffer, {flat_index(s->buffer, s->indices)}, s->combiner, s->thread_tag,
                              *as_int(s->extent));
      default: {
        std::vector<Stmt> body;
        for (const Stmt& b : s->body) body.push_back(run(b));
        Stmt rebuilt = s->body.empty() ? s : with_body(s, body);
        return rewrite(rebuilt, [&](const Expr& e) -> Expr { return flatten_read(e); }, nullptr);
      }
    }
  }

 private:
  Expr flat_index(const std::string& buffer, const std::vector<Expr>& indices) {
    auto it = strides_.find(buffer);
    TESSEL_CHECK(it != strides_.end(), "access to unknown buffer " + buffer);
    TESSEL_CHECK(it->second.size() == indices.size(), "rank mismatch in access to " + buffer);
    Expr flat;
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr term = it->second[d] == 1 ? indices[d] : indices[d] * make_int(it->second[d]);
      flat = flat ? flat + term : term;
    }
    return flat ? simplify_expr(flat) : make_int(0);
  }

  Expr flatten_read(const Expr& e) {
    if (e->op != ExprOp::TensorRead) return nullptr;
    return make_load(e->name, flat_index(e->name, e->args), e->type);
  }

  Expr flatten_expr(const Expr& e) {
    return rewrite(e, [&](const Expr& n) { return flatten_read(n); });
  }

  const State& state_;
  std::map<std::string, std::vector<int64_t>> strides_;
};

}  // namespace

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& extents, const std::vector<StorageAlign>& align) {
  std::vector<int64_t> strides(extents.size(), 1);
  int64_t stride = 1;
  for (size_t d = extents.size(); d-- > 0;) {
    for (const StorageAlign& a : align)
      if (a.axis == static_cast<int>(d) && d + 1 < extents.size() + 1) {
        // Pad so that stride % factor == offset (applied to the dimension's own stride): the
        // smallest padding, computed (a loop of increments would take `factor` steps).
        stride += ((a.offset - stride % a.factor) % a.factor + a.factor) % a.factor;
      }
    strides[d] = stride;
    stride *= extents[d];
  }
  return strides;
}

Stmt storage_flatten(const Stmt& s, const std::vector<BufferParam>& params, const State& state) {
  return Flattener(params, state).run(s);
}

}  // namespace tessel
