// The ONNX operators tessel imports: for each op type, its fusion pattern kind and its tensor-
// expression definition (frontend/ops/*.cpp, one file per family). An op that is not listed is an
// error naming the node, its op_type and the model's opset — never a silent skip.
#pragma once

#include <string>
#include <vector>

#include "frontend/graph.h"
#include "frontend/subgraph_builder.h"

namespace tessel {

// How an op fuses (TVM's OpPatternKind, in the same order: a lower kind fuses more freely).
enum class OpPattern {
  Elementwise,      // out[i] = f(in[i])                               (relu, add of same shapes)
  Broadcast,        // out[i] = f(in[g(i)]), g dropping or fixing axes  (add with a bias)
  Injective,        // out[i] = in[g(i)], g any index map               (reshape, transpose, slice)
  Reduction,        // out[i] = combine over r of f(in[i, r])            (reduce_mean, softmax's sums)
  OutEwiseFusable,  // a contraction or window whose output an elementwise epilogue may join (conv, matmul, pool)
  Opaque,           // nothing fuses through it
};
const char* to_string(OpPattern pattern);

// What an op's definition sees: the graph (for constant inputs such as Reshape's shape, and for
// the inferred output shapes), its node, and the builder of the subgraph it joins.
struct OpContext {
  const Graph& graph;
  const Node& node;
  SubgraphBuilder& builder;

  // The inferred type of the node's output k (what the definition must produce).
  const TensorInfo& output_info(size_t k = 0) const;
  // The constant data of input k; InputError naming the node when it is not a constant.
  const TensorData& constant_input(size_t k) const;
  bool has_input(size_t k) const { return k < node.inputs.size() && !node.inputs[k].empty(); }
  // InputError "node 'N' (OP): <message>".
  [[noreturn]] void fail(const std::string& message) const;
};

struct OpSpec {
  const char* op_type;
  OpPattern pattern;
  // One LazyTensor per node output, from one per node input (a left-out optional input is a
  // default-constructed LazyTensor).
  std::vector<LazyTensor> (*build)(const OpContext& ctx, const std::vector<LazyTensor>& inputs);
  // How a task's name shows the op: nullptr for its op_type, "" to leave it out (a layout change).
  const char* label = nullptr;
  // Made by tessel's own passes, never read from a model: an imported node of this type is refused.
  bool internal = false;
};

// The internal ops of the CPU channel-block layout (frontend/channel_blocks.h): a 2-D Conv and the
// pools over [N, C/b, H, W, b] tensors, and the conversions from and to NCHW.
inline constexpr const char* kConvBlocked = "ConvNCHWc";
inline constexpr const char* kMaxPoolBlocked = "MaxPoolNCHWc";
inline constexpr const char* kAveragePoolBlocked = "AveragePoolNCHWc";
inline constexpr const char* kGlobalMaxPoolBlocked = "GlobalMaxPoolNCHWc";
inline constexpr const char* kGlobalAveragePoolBlocked = "GlobalAveragePoolNCHWc";
inline constexpr const char* kToBlocks = "ToNCHWc";
inline constexpr const char* kFromBlocks = "FromNCHWc";

// The op's definition; nullptr when tessel does not support the op type.
const OpSpec* find_op(const std::string& op_type);
// The op's definition when a model may hold it (not internal); nullptr otherwise.
const OpSpec* find_model_op(const std::string& op_type);
// Every supported op type, sorted.
std::vector<std::string> supported_op_types();

}  // namespace tessel
