#include "frontend/simplify.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "frontend/constant_fold.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

bool is_graph_output(const Graph& graph, const std::string& name) {
  return std::find(graph.outputs.begin(), graph.outputs.end(), name) != graph.outputs.end();
}

bool is_graph_input(const Graph& graph, const std::string& name) {
  return std::find(graph.inputs.begin(), graph.inputs.end(), name) != graph.inputs.end();
}

void erase_nodes(Graph& graph, const std::vector<bool>& erased) {
  std::vector<Node> kept;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (!erased[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
}

// Every reference to `from` (node inputs and outputs, graph outputs) now names `to`.
void rename_value(Graph& graph, const std::string& from, const std::string& to) {
  for (Node& node : graph.nodes) {
    std::replace(node.inputs.begin(), node.inputs.end(), from, to);
    std::replace(node.outputs.begin(), node.outputs.end(), from, to);
  }
  std::replace(graph.outputs.begin(), graph.outputs.end(), from, to);
}

// Pass 1: constant folding. A node whose inputs are constant (Shape and Size: whose input has a
// static shape, which every value has) becomes constant values; in node order, so a chain folds
// in one sweep. The folded result must agree with the types shape inference gave.
void fold_constants(Graph& graph) {
  std::vector<bool> folded(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (!is_foldable_op(node.op_type)) continue;
    std::vector<FoldInput> inputs(node.inputs.size());
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (node.inputs[k].empty()) continue;
      const Value& v = graph.value(node.inputs[k]);
      inputs[k] = FoldInput{&v.info, v.constant ? &*v.constant : nullptr};
    }
    std::optional<std::vector<TensorData>> out = fold_node(node, inputs, graph.opset);
    if (!out) continue;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const TensorInfo info{(*out)[k].dtype(), (*out)[k].shape()};
      if (graph.has_value(node.outputs[k])) {
        const TensorInfo& inferred = graph.value(node.outputs[k]).info;
        if (inferred.dtype != info.dtype || inferred.shape != info.shape)
          throw InputError(node.where() + ": its constant result " + shape_string(info.shape) + " of " +
                           to_string(info.dtype) + " differs from the inferred " + shape_string(inferred.shape) +
                           " of " + to_string(inferred.dtype));
      }
      graph.set_value(Value{node.outputs[k], info, std::move((*out)[k])});
    }
    folded[i] = true;
  }
  erase_nodes(graph, folded);
}

// Pass 2: Identity nodes go; their readers read the input instead. An Identity that names a graph
// output renames its producer's output instead, so outputs keep their names; one between a graph
// input and a graph output stays (the output is a copy).
void drop_identities(Graph& graph) {
  std::vector<bool> dropped(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (node.op_type != "Identity" || node.inputs.size() != 1 || node.outputs.size() != 1) continue;
    const std::string in = node.inputs[0], out = node.outputs[0];
    if (!is_graph_output(graph, out)) {
      dropped[i] = true;
      rename_value(graph, out, in);
    } else if (!is_graph_input(graph, in) && !is_graph_output(graph, in) && !graph.is_constant(in)) {
      dropped[i] = true;
      rename_value(graph, in, out);
    }
  }
  erase_nodes(graph, dropped);
}

// The constant float data of `name`, or null.
const TensorData* float_constant(const Graph& graph, const std::string& name) {
  if (name.empty() || !graph.is_constant(name)) return nullptr;
  const TensorData& data = *graph.value(name).constant;
  return data.dtype() == DType::Float32 ? &data : nullptr;
}

std::string fresh_name(const Graph& graph, const std::string& base) {
  std::string name = base;
  for (int k = 1; graph.has_value(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

bool only_reader_is(const Graph& graph, const std::string& value, size_t reader) {
  const std::vector<size_t> readers = graph.consumers(value);
  return readers.size() == 1 && readers[0] == reader && !is_graph_output(graph, value);
}

// Folds BatchNormalization node `bn` into Conv node `conv` when every operand is a constant that
// fits: per output channel c, s = γ/√(σ²+ε), W'[c] = W[c]·s, b'[c] = (b[c] − μ)·s + β. Returns
// whether it did.
bool fold_batch_norm_into(Graph& graph, Node& conv, const Node& bn) {
  const TensorData* w = float_constant(graph, conv.inputs.size() > 1 ? conv.inputs[1] : "");
  const TensorData* bias = conv.inputs.size() > 2 ? float_constant(graph, conv.inputs[2]) : nullptr;
  const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
  if (!w || w->shape().empty() || (has_bias && !bias) || bn.inputs.size() != 5) return false;
  const int64_t channels = w->shape()[0];
  std::vector<const TensorData*> p;  // γ, β, μ, σ²
  for (size_t k = 1; k < 5; ++k) {
    p.push_back(float_constant(graph, bn.inputs[k]));
    if (!p.back() || p.back()->num_elements() != channels) return false;
  }
  if (bias && bias->num_elements() != channels) return false;
  const double epsilon = bn.float_attr("epsilon").value_or(1e-5);
  std::vector<float> weights = w->floats(), shift(channels);
  const int64_t per_channel = channels ? w->num_elements() / channels : 0;
  for (int64_t c = 0; c < channels; ++c) {
    const double variance = p[3]->as_double(c) + epsilon;
    if (!(variance > 0)) return false;  // not a valid normalization: leave it to run as it is
    const double s = p[0]->as_double(c) / std::sqrt(variance);
    for (int64_t j = 0; j < per_channel; ++j)
      weights[c * per_channel + j] = static_cast<float>(weights[c * per_channel + j] * s);
    shift[c] = static_cast<float>(((bias ? bias->as_double(c) : 0.0) - p[2]->as_double(c)) * s + p[1]->as_double(c));
  }
  const std::string w_name = fresh_name(graph, bn.outputs[0] + "_folded_weight");
  const std::string b_name = fresh_name(graph, bn.outputs[0] + "_folded_bias");
  TensorData new_w = TensorData::of_floats(w->shape(), weights), new_b = TensorData::of_floats({channels}, shift);
  graph.set_value(Value{w_name, TensorInfo{DType::Float32, w->shape()}, std::move(new_w)});
  graph.set_value(Value{b_name, TensorInfo{DType::Float32, {channels}}, std::move(new_b)});
  conv.inputs.resize(3);
  conv.inputs[1] = w_name;
  conv.inputs[2] = b_name;
  conv.outputs[0] = bn.outputs[0];
  return true;
}

// Pass 3: a BatchNormalization (inference mode) whose input is a Conv output read by nothing else
// folds into that Conv, which gains a bias if it had none.
void fold_batch_norms(Graph& graph) {
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const std::string& out : graph.nodes[i].outputs) producer[out] = i;
  std::vector<bool> folded(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& bn = graph.nodes[i];
    if (bn.op_type != "BatchNormalization" || bn.inputs.empty() || bn.int_attr("training_mode").value_or(0) != 0)
      continue;
    bool extra_outputs_used = false;
    for (size_t k = 1; k < bn.outputs.size(); ++k)
      extra_outputs_used = extra_outputs_used || (!bn.outputs[k].empty() && (!graph.consumers(bn.outputs[k]).empty() ||
                                                                             is_graph_output(graph, bn.outputs[k])));
    auto it = producer.find(bn.inputs[0]);
    if (extra_outputs_used || it == producer.end()) continue;
    Node& conv = graph.nodes[it->second];
    if (conv.op_type != "Conv" || conv.outputs.size() != 1 || !only_reader_is(graph, bn.inputs[0], i)) continue;
    folded[i] = fold_batch_norm_into(graph, conv, bn);
  }
  erase_nodes(graph, folded);
}

// Pass 4: a Gemm whose B is a constant stored [N, K] (transB, how exporters write nn.Linear) gets
// B transposed once into [K, N] and transB 0, the layout the contraction schedules stage and
// vectorize along N. A one-row Gemm keeps its [N, K] B: it is a matrix-vector product that reads
// each row of B contiguously (frontend/ops/nn.cpp).
void lay_out_gemm_weights(Graph& graph) {
  std::map<std::string, std::string> transposed;  // a B that several Gemms read is transposed once
  for (Node& gemm : graph.nodes) {
    if (gemm.op_type != "Gemm" || gemm.inputs.size() < 2 || gemm.int_attr("transB").value_or(0) == 0) continue;
    const TensorData* b = float_constant(graph, gemm.inputs[1]);
    if (!b || b->shape().size() != 2 || gemm.inputs[0].empty() || !graph.has_value(gemm.inputs[0])) continue;
    const std::vector<int64_t>& a = graph.value(gemm.inputs[0]).info.shape;
    const bool ta = gemm.int_attr("transA").value_or(0) != 0;
    if (a.size() != 2 || a[ta ? 1 : 0] == 1) continue;
    gemm.attributes["transB"] = int64_t{0};
    if (auto it = transposed.find(gemm.inputs[1]); it != transposed.end()) {
      gemm.inputs[1] = it->second;
      continue;
    }
    const int64_t n = b->shape()[0], k = b->shape()[1];
    const std::vector<float> nk = b->floats();
    std::vector<float> kn(nk.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) kn[j * n + i] = nk[i * k + j];
    const std::string name = fresh_name(graph, gemm.inputs[1] + "_kn");
    graph.set_value(Value{name, TensorInfo{DType::Float32, {k, n}}, TensorData::of_floats({k, n}, kn)});
    transposed[gemm.inputs[1]] = name;
    gemm.inputs[1] = name;
  }
}

// Pass 5: nodes none of whose outputs reach a graph output go, last to first.
void remove_dead_nodes(Graph& graph) {
  std::set<std::string> live(graph.outputs.begin(), graph.outputs.end());
  std::vector<bool> dead(graph.nodes.size(), false);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& node = graph.nodes[i];
    dead[i] = std::none_of(node.outputs.begin(), node.outputs.end(),
                           [&](const std::string& out) { return !out.empty() && live.count(out); });
    if (!dead[i]) live.insert(node.inputs.begin(), node.inputs.end());
  }
  erase_nodes(graph, dead);
}

}  // namespace

void simplify(Graph& graph) {
  fold_constants(graph);
  drop_identities(graph);
  fold_batch_norms(graph);
  lay_out_gemm_weights(graph);
  remove_dead_nodes(graph);
  graph.drop_unused_values();
}

}  // namespace tessel
