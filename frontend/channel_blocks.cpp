#include "frontend/channel_blocks.h"

#include <algorithm>
#include <map>
#include <optional>

#include "frontend/op_library.h"

namespace tessel {

int64_t channel_block(int64_t channels, int64_t widest) {
  if (channels <= 0) return 0;
  if (widest > 8 && channels % widest == 0) return widest;
  return channels % 8 == 0 ? 8 : 0;
}

namespace {

bool is_float_of_rank(const Value& v, size_t rank) {
  return v.info.dtype == DType::Float32 && v.info.shape.size() == rank;
}

// W[F, C/g, KH, KW] → W[F/b, C/g, KH, KW, b] (a depthwise one, C/g = 1, → [F/b, KH, KW, b]).
TensorData repack_weights(const TensorData& w, int64_t b, bool depthwise) {
  const std::vector<int64_t>& s = w.shape();
  const int64_t filters = s[0], per_filter = s[1] * s[2] * s[3];
  const std::vector<float> src = w.floats();
  std::vector<float> dst(src.size());
  for (int64_t f = 0; f < filters; ++f)
    for (int64_t k = 0; k < per_filter; ++k) dst[((f / b) * per_filter + k) * b + f % b] = src[f * per_filter + k];
  std::vector<int64_t> shape = {filters / b, s[1], s[2], s[3], b};
  if (depthwise) shape = {filters / b, s[2], s[3], b};
  return TensorData::of_floats(shape, dst);
}

// The blocks of a Conv that can run as ConvNCHWc: its output's and (0 for NCHW) its input's.
struct ConvBlocks {
  int64_t output = 0, input = 0;
  bool depthwise = false;
};

std::optional<ConvBlocks> conv_blocks(const Graph& graph, const Node& node, int64_t widest) {
  if (node.op_type != "Conv" || node.inputs.size() < 2 || node.outputs.size() != 1) return std::nullopt;
  const Value& x = graph.value(node.inputs[0]);
  const Value& w = graph.value(node.inputs[1]);
  if (!is_float_of_rank(x, 4) || x.constant || !is_float_of_rank(w, 4) || !w.constant) return std::nullopt;
  if (!is_float_of_rank(graph.value(node.outputs[0]), 4)) return std::nullopt;
  const int64_t channels = x.info.shape[1], filters = w.info.shape[0];
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    const Value& bias = graph.value(node.inputs[2]);
    if (!bias.constant || bias.info.dtype != DType::Float32 || bias.info.shape != std::vector<int64_t>{filters})
      return std::nullopt;
  }
  const int64_t groups = node.int_attr("group").value_or(1);
  ConvBlocks blocks;
  blocks.depthwise = groups != 1;
  if (blocks.depthwise && (groups != channels || filters != channels || w.info.shape[1] != 1)) return std::nullopt;
  if (!blocks.depthwise && w.info.shape[1] != channels) return std::nullopt;
  blocks.output = channel_block(filters, widest);
  if (blocks.output == 0) return std::nullopt;
  blocks.input = blocks.depthwise ? blocks.output : channel_block(channels, widest);
  return blocks;
}

// The blocked form of a pool over 2-D; nullptr for other ops.
const char* blocked_pool(const std::string& op_type) {
  if (op_type == "MaxPool") return kMaxPoolBlocked;
  if (op_type == "AveragePool") return kAveragePoolBlocked;
  if (op_type == "GlobalMaxPool") return kGlobalMaxPoolBlocked;
  if (op_type == "GlobalAveragePool") return kGlobalAveragePoolBlocked;
  return nullptr;
}

bool is_pool(const Graph& graph, const Node& node) {
  if (!blocked_pool(node.op_type)) return false;
  if (node.inputs.empty() || !is_float_of_rank(graph.value(node.inputs[0]), 4)) return false;
  // MaxPool's Indices output (rarely read) is computed only in NCHW.
  return node.outputs.size() == 1 || std::all_of(node.outputs.begin() + 1, node.outputs.end(),
                                                 [&](const std::string& o) { return o.empty(); });
}

bool single_constant(const Graph& graph, const std::string& name) {
  const Value& v = graph.value(name);
  return v.constant && v.constant->num_elements() == 1;
}

class Rewriter {
 public:
  Rewriter(Graph& graph, int64_t widest) : graph_(graph), widest_(widest) {}

  void run() {
    std::vector<Node> nodes = std::move(graph_.nodes);
    graph_.nodes.clear();
    for (Node& node : nodes) {
      if (std::optional<ConvBlocks> blocks = conv_blocks(graph_, node, widest_))
        conv(node, *blocks);
      else if (is_pool(graph_, node) && blocked_.count(node.inputs[0]))
        pool(node);
      else if (movable(node))
        elementwise(node);
      else
        graph_.nodes.push_back(std::move(node));
    }
    drop_unread_conversions();
    graph_.drop_unused_values();
  }

 private:
  // A value name not yet in the graph, derived from `base`.
  std::string fresh(const std::string& base) const {
    std::string name = base + "/nchwc";
    for (int k = 1; graph_.has_value(name); ++k) name = base + "/nchwc" + std::to_string(k);
    return name;
  }

  std::string add_value(const std::string& base, TensorInfo info, std::optional<TensorData> data = std::nullopt) {
    const std::string name = fresh(base);
    graph_.set_value(Value{name, std::move(info), std::move(data)});
    return name;
  }

  void add_node(const std::string& name, const std::string& op_type, std::vector<std::string> inputs,
                const std::string& output, std::map<std::string, Attribute> attributes = {}) {
    Node n;
    n.name = name;
    n.op_type = op_type;
    n.inputs = std::move(inputs);
    n.outputs = {output};
    n.attributes = std::move(attributes);
    graph_.nodes.push_back(std::move(n));
  }

  // `nchw` ([N, C, H, W]) in blocks of `block`: the blocked value it was converted from, when there
  // is one, else a ToNCHWc of it.
  std::string in_blocks(const std::string& nchw, int64_t block, const std::string& node_name) {
    auto it = blocked_.find(nchw);
    if (it != blocked_.end() && graph_.value(it->second).info.shape[4] == block) return it->second;
    const std::string out = add_value(nchw, blocked_info(nchw, block));
    add_node(node_name + "/to_nchwc", kToBlocks, {nchw}, out, {{"block", block}});
    return out;
  }

  // `node` computes `blocked` ([N, C/b, H, W, b]) instead of its NCHW output, which a FromNCHWc
  // makes under the old name for whoever still reads it.
  void finish(Node& node, const std::string& blocked) {
    const std::string nchw = node.outputs[0];
    node.outputs = {blocked};
    const std::string name = node.name;
    graph_.nodes.push_back(std::move(node));
    add_node(name + "/from_nchwc", kFromBlocks, {blocked}, nchw);
    blocked_[nchw] = blocked;
  }

  TensorInfo blocked_info(const std::string& nchw, int64_t block) const {
    const TensorInfo& info = graph_.value(nchw).info;
    const std::vector<int64_t>& s = info.shape;
    return {info.dtype, {s[0], s[1] / block, s[2], s[3], block}};
  }

  void conv(Node& node, const ConvBlocks& blocks) {
    const int64_t b = blocks.output;
    const std::string x = blocks.input ? in_blocks(node.inputs[0], blocks.input, node.name) : node.inputs[0];
    const Value& w = graph_.value(node.inputs[1]);
    TensorData packed = repack_weights(*w.constant, b, blocks.depthwise);
    std::vector<std::string> inputs = {x, add_value(w.name, {DType::Float32, packed.shape()}, packed)};
    if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
      const Value& bias = graph_.value(node.inputs[2]);
      const int64_t filters = bias.info.shape[0];
      TensorData lanes = TensorData::of_floats({filters / b, b}, bias.constant->floats());
      inputs.push_back(add_value(bias.name, {DType::Float32, lanes.shape()}, lanes));
    }
    node.op_type = kConvBlocked;
    node.inputs = inputs;
    finish(node, add_value(node.outputs[0], blocked_info(node.outputs[0], b)));
  }

  void pool(Node& node) {
    const std::string& x = blocked_.at(node.inputs[0]);
    const int64_t b = graph_.value(x).info.shape[4];
    node.op_type = blocked_pool(node.op_type);
    node.inputs = {x};
    node.outputs.resize(1);
    finish(node, add_value(node.outputs[0], blocked_info(node.outputs[0], b)));
  }

  // An elementwise or broadcast op of one float output whose inputs are blocked tensors of one shape
  // or single constants (at least one blocked), and whose output has those tensors' NCHW shape.
  bool movable(const Node& node) const {
    const OpSpec* spec = find_model_op(node.op_type);
    if (!spec || (spec->pattern != OpPattern::Elementwise && spec->pattern != OpPattern::Broadcast)) return false;
    if (node.outputs.size() != 1 || !graph_.has_value(node.outputs[0])) return false;
    if (graph_.value(node.outputs[0]).info.dtype != DType::Float32) return false;  // the conversions are of floats
    std::optional<std::vector<int64_t>> blocks;
    for (const std::string& in : node.inputs) {
      if (in.empty() || single_constant(graph_, in)) continue;
      auto it = blocked_.find(in);
      if (it == blocked_.end()) return false;
      const std::vector<int64_t>& s = graph_.value(it->second).info.shape;
      if (blocks && *blocks != s) return false;
      blocks = s;
    }
    if (!blocks) return false;
    const std::vector<int64_t>& out = graph_.value(node.outputs[0]).info.shape;
    const std::vector<int64_t>& b = *blocks;
    return out == std::vector<int64_t>{b[0], b[1] * b[4], b[2], b[3]};
  }

  void elementwise(Node& node) {
    int64_t b = 0;
    for (std::string& in : node.inputs) {
      auto it = blocked_.find(in);
      if (it == blocked_.end()) continue;
      in = it->second;
      b = graph_.value(in).info.shape[4];
    }
    finish(node, add_value(node.outputs[0], blocked_info(node.outputs[0], b)));
  }

  // The FromNCHWc nodes whose NCHW output nothing reads any more (every reader now reads blocks).
  void drop_unread_conversions() {
    std::map<std::string, int> reads;
    for (const Node& n : graph_.nodes)
      for (const std::string& in : n.inputs) ++reads[in];
    for (const std::string& out : graph_.outputs) ++reads[out];
    graph_.nodes.erase(std::remove_if(graph_.nodes.begin(), graph_.nodes.end(),
                                      [&](const Node& n) { return n.op_type == kFromBlocks && !reads[n.outputs[0]]; }),
                       graph_.nodes.end());
  }

  Graph& graph_;
  int64_t widest_;
  std::map<std::string, std::string> blocked_;  // NCHW value → the blocked value a FromNCHWc makes it from
};

}  // namespace

void block_channels(Graph& graph, int64_t widest) { Rewriter(graph, widest).run(); }

}  // namespace tessel
