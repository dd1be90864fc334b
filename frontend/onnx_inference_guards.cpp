// ONNX 1.12's shape inference functions trust some attributes and ranks that a model controls: a
// stride of 0 makes convPoolShapeInference divide by zero (SIGFPE), and a weight of another rank
// than its input, or a strides list of the wrong length, makes it read past its vectors. These
// guards check what an op's inference function assumes before it runs, failing the way ONNX's own
// checks fail (an inference error naming the node), so the importer reports bad input instead of
// crashing. Guards are added where the ONNX loader's fuzz test finds a crash.
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "frontend/onnx_import_steps.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"

namespace tessel {

namespace {

using onnx::InferenceContext;

// Inputs of the conv and pool family: the data (N, C, spatial...) and the weight, -1 for none.
struct WindowInputs {
  int data;
  int weight;
};

const std::map<std::string, WindowInputs>& window_ops() {
  static const std::map<std::string, WindowInputs> ops = {
      {"Conv", {0, 1}},         {"ConvInteger", {0, 1}}, {"QLinearConv", {0, 3}}, {"ConvTranspose", {0, 1}},
      {"AveragePool", {0, -1}}, {"MaxPool", {0, -1}},    {"LpPool", {0, -1}},
  };
  return ops;
}

// An ints attribute, when present, has `size` entries, each at least `min`.
void check_ints(InferenceContext& ctx, const char* name, size_t size, int64_t min) {
  std::vector<int64_t> values;
  if (!onnx::getRepeatedAttribute(ctx, name, values)) return;
  if (values.size() != size)
    fail_shape_inference("attribute ", name, " has ", values.size(), " values; the input's spatial rank needs ", size);
  for (int64_t v : values)
    if (v < min) fail_shape_inference("attribute ", name, " has the value ", v, "; each must be at least ", min);
}

void check_window_op(InferenceContext& ctx, const WindowInputs& inputs) {
  if (!onnx::hasInputShape(ctx, inputs.data)) return;  // the inference function does nothing then
  const int rank = onnx::getInputShape(ctx, inputs.data).dim_size();
  if (rank < 2) fail_shape_inference("the input has rank ", rank, "; it needs a batch and a channel axis");
  if (inputs.weight >= 0 && static_cast<size_t>(inputs.weight) < ctx.getNumInputs() &&
      onnx::hasInputShape(ctx, inputs.weight)) {
    const int weight_rank = onnx::getInputShape(ctx, inputs.weight).dim_size();
    if (weight_rank != rank)
      fail_shape_inference("the weight has rank ", weight_rank, " and the input rank ", rank, "; they must agree");
  }
  const size_t spatial = static_cast<size_t>(rank - 2);
  check_ints(ctx, "strides", spatial, 1);
  check_ints(ctx, "dilations", spatial, 1);
  check_ints(ctx, "kernel_shape", spatial, 1);
  check_ints(ctx, "output_padding", spatial, 0);
  check_ints(ctx, "output_shape", spatial, 0);
  check_ints(ctx, "pads", 2 * spatial, 0);
  const auto* group = ctx.getAttribute("group");
  if (group && group->i() < 1) fail_shape_inference("attribute group is ", group->i(), "; it must be at least 1");
}

// Where an op's `axis` attribute may point for an input 0 of rank r: `reach` 0 for [-r, r-1] (most
// ops), 1 for [-r, r] (Flatten), 2 for [-r-1, r] (OneHot, which adds an axis); and the default the
// inference function uses when the attribute is absent, where it indexes with it unchecked
// (LayerNormalization in ONNX 1.12, whose default -1 is no axis of a scalar).
struct AxisRule {
  int reach;
  std::optional<int64_t> default_axis;
};

const std::map<std::string, AxisRule>& axis_ops() {
  static const std::map<std::string, AxisRule> ops = {
      {"LayerNormalization", {0, -1}},
      {"Softmax", {0, {}}},
      {"LogSoftmax", {0, {}}},
      {"Hardmax", {0, {}}},
      {"Gather", {0, {}}},
      {"GatherElements", {0, {}}},
      {"ScatterElements", {0, {}}},
      {"Scatter", {0, {}}},
      {"Concat", {0, {}}},
      {"Split", {0, {}}},
      {"TopK", {0, {}}},
      {"ArgMax", {0, {}}},
      {"ArgMin", {0, {}}},
      {"Compress", {0, {}}},
      {"QuantizeLinear", {0, {}}},
      {"DequantizeLinear", {0, {}}},
      {"LpNormalization", {0, {}}},
      {"Flatten", {1, {}}},
      {"OneHot", {2, {}}},
  };
  return ops;
}

void check_axis(InferenceContext& ctx, const AxisRule& rule) {
  const auto* attr = ctx.getAttribute("axis");
  if ((!attr && !rule.default_axis) || ctx.getNumInputs() == 0 || !onnx::hasInputShape(ctx, 0)) return;
  const int64_t axis = attr ? attr->i() : *rule.default_axis;
  const int64_t rank = onnx::getInputShape(ctx, 0).dim_size();
  const int64_t low = -rank - (rule.reach == 2 ? 1 : 0), high = rank - 1 + (rule.reach > 0 ? 1 : 0);
  if (axis < low || axis > high)
    fail_shape_inference("axis ", axis, " is out of range for an input of rank ", rank, " (it must lie in [", low, ", ",
                         high, "])");
}

// GatherND's batch_dims must be below both inputs' ranks.
void check_gather_nd(InferenceContext& ctx) {
  const auto* attr = ctx.getAttribute("batch_dims");
  const int64_t batch_dims = attr ? attr->i() : 0;
  if (batch_dims < 0) fail_shape_inference("batch_dims is ", batch_dims, "; it must not be negative");
  for (size_t k = 0; k < 2 && k < ctx.getNumInputs(); ++k)
    if (onnx::hasInputShape(ctx, k) && batch_dims >= onnx::getInputShape(ctx, k).dim_size())
      fail_shape_inference("batch_dims ", batch_dims, " is not below the rank of input ", k);
}

// STFT reads dimensions 0 and 1 of its signal, [batch, length, 1 or 2].
void check_stft(InferenceContext& ctx) {
  if (onnx::hasInputShape(ctx, 0) && onnx::getInputShape(ctx, 0).dim_size() != 3)
    fail_shape_inference("the signal has rank ", onnx::getInputShape(ctx, 0).dim_size(),
                         "; it must be [batch, length, 1 or 2]");
}

// DepthToSpace and SpaceToDepth divide by blocksize², which must not overflow to 0.
void check_blocksize(InferenceContext& ctx) {
  const auto* attr = ctx.getAttribute("blocksize");
  if (attr && (attr->i() < 1 || attr->i() > INT32_MAX))
    fail_shape_inference("blocksize is ", attr->i(), "; it must lie in [1, 2^31)");
}

// MaxUnpool reads the channel count from dimension 1 of its indices, which must then have a shape.
void check_max_unpool(InferenceContext& ctx) {
  check_window_op(ctx, {0, -1});
  if (ctx.getNumInputs() != 2 || !onnx::hasInputShape(ctx, 0)) return;
  if (!onnx::hasInputShape(ctx, 1) || onnx::getInputShape(ctx, 1).dim_size() < 2)
    fail_shape_inference("the indices need a shape of rank 2 or more");
}

// The guard of an op type, or null when its inference needs none.
std::function<void(InferenceContext&)> guard_for(const std::string& op_type) {
  if (op_type == "MaxUnpool") return check_max_unpool;
  if (op_type == "GatherND") return check_gather_nd;
  if (op_type == "STFT") return check_stft;
  if (op_type == "DepthToSpace" || op_type == "SpaceToDepth") return check_blocksize;
  auto window = window_ops().find(op_type);
  if (window != window_ops().end()) {
    const WindowInputs inputs = window->second;
    return [inputs](InferenceContext& ctx) { check_window_op(ctx, inputs); };
  }
  auto axis = axis_ops().find(op_type);
  if (axis != axis_ops().end()) {
    const AxisRule rule = axis->second;
    return [rule](InferenceContext& ctx) { check_axis(ctx, rule); };
  }
  return nullptr;
}

// ONNX's registry, except that guarded ops come as copies of their schema whose inference runs the
// guard first. The copies live as long as the process, as ONNX's own schemas do.
class GuardedSchemaRegistry final : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_inclusive_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(key, max_inclusive_version, domain);
    if (!schema || !schema->has_type_and_shape_inference_function()) return schema;
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, fresh] = guarded_.try_emplace(schema);
    if (fresh) {
      if (auto guard = guard_for(key)) {
        it->second = std::make_unique<onnx::OpSchema>(*schema);
        it->second->TypeAndShapeInferenceFunction(
            [guard, original = schema->GetTypeAndShapeInferenceFunction()](InferenceContext& ctx) {
              guard(ctx);
              original(ctx);
            });
      }
    }
    return it->second ? it->second.get() : schema;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

}  // namespace

const onnx::ISchemaRegistry* guarded_schema_registry() {
  static const GuardedSchemaRegistry registry;
  return &registry;
}

}  // namespace tessel
