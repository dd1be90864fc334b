#include "frontend/op_library.h"

#include <algorithm>

#include "frontend/ops/op_families.h"
#include "schedule/te/error.h"

namespace tessel {
namespace {

const std::vector<OpSpec>& table() {
  static const std::vector<OpSpec> specs = [] {
    std::vector<OpSpec> t;
    onnx_ops::add_elementwise_ops(t);
    onnx_ops::add_tensor_ops(t);
    onnx_ops::add_nn_ops(t);
    onnx_ops::add_reduce_ops(t);
    onnx_ops::add_channel_block_ops(t);
    std::sort(t.begin(), t.end(), [](const OpSpec& a, const OpSpec& b) { return std::string(a.op_type) < b.op_type; });
    return t;
  }();
  return specs;
}

}  // namespace

const char* to_string(OpPattern pattern) {
  switch (pattern) {
    case OpPattern::Elementwise:
      return "elementwise";
    case OpPattern::Broadcast:
      return "broadcast";
    case OpPattern::Injective:
      return "injective";
    case OpPattern::Reduction:
      return "reduction";
    case OpPattern::OutEwiseFusable:
      return "out-elementwise-fusable";
    case OpPattern::Opaque:
      return "opaque";
  }
  return "?";
}

const TensorInfo& OpContext::output_info(size_t k) const {
  if (k >= node.outputs.size()) fail("has no output " + std::to_string(k));
  return graph.value(node.outputs[k]).info;
}

const TensorData& OpContext::constant_input(size_t k) const {
  if (!has_input(k)) fail("input " + std::to_string(k) + " is required");
  const Value& v = graph.value(node.inputs[k]);
  if (!v.constant)
    fail("input " + std::to_string(k) + " ('" + v.name + "') must be a constant (tessel compiles static shapes)");
  return *v.constant;
}

void OpContext::fail(const std::string& message) const { throw InputError(node.where() + ": " + message); }

const OpSpec* find_op(const std::string& op_type) {
  const std::vector<OpSpec>& t = table();
  auto it = std::lower_bound(t.begin(), t.end(), op_type,
                             [](const OpSpec& s, const std::string& name) { return s.op_type < name; });
  return it != t.end() && it->op_type == op_type ? &*it : nullptr;
}

const OpSpec* find_model_op(const std::string& op_type) {
  const OpSpec* spec = find_op(op_type);
  return spec && !spec->internal ? spec : nullptr;
}

std::vector<std::string> supported_op_types() {
  std::vector<std::string> names;
  for (const OpSpec& s : table())
    if (!s.internal) names.push_back(s.op_type);
  return names;
}

namespace onnx_ops {

std::vector<int64_t> broadcast_shape(const OpContext& ctx, const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[rank - s.size() + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o != 1)
        ctx.fail("input shapes do not broadcast (dimension " + std::to_string(s[d]) + " against " + std::to_string(o) +
                 ")");
      o = s[d];
    }
  return out;
}

Expr read_broadcast(const LazyTensor& t, const std::vector<Expr>& out) {
  const size_t rank = t.shape().size();
  std::vector<Expr> idx;
  for (size_t d = 0; d < rank; ++d) idx.push_back(t.shape()[d] == 1 ? make_int(0) : out[out.size() - rank + d]);
  return t.at(idx);
}

int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is outside a tensor of rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

const TensorInfo& checked_output(const OpContext& ctx, DType dtype, const std::vector<int64_t>& shape, size_t k) {
  const TensorInfo& want = ctx.output_info(k);
  if (want.dtype != dtype || want.shape != shape)
    ctx.fail("output " + std::to_string(k) + " computes " + to_string(dtype) + " " + shape_text(shape) +
             ", but the model records " + to_string(want.dtype) + " " + shape_text(want.shape));
  return want;
}

const LazyTensor& input_of_type(const OpContext& ctx, const std::vector<LazyTensor>& inputs, size_t k, DType dtype) {
  if (!ctx.has_input(k) || k >= inputs.size()) ctx.fail("input " + std::to_string(k) + " is required");
  if (inputs[k].dtype() != dtype)
    ctx.fail("input " + std::to_string(k) + " ('" + ctx.node.inputs[k] + "') is " + to_string(inputs[k].dtype()) +
             "; tessel supports this op on " + to_string(dtype) + " only");
  return inputs[k];
}

bool output_used(const OpContext& ctx, size_t k) {
  if (k >= ctx.node.outputs.size() || ctx.node.outputs[k].empty()) return false;
  const std::string& name = ctx.node.outputs[k];
  const std::vector<std::string>& outs = ctx.graph.outputs;
  return !ctx.graph.consumers(name).empty() || std::find(outs.begin(), outs.end(), name) != outs.end();
}

}  // namespace onnx_ops
}  // namespace tessel
