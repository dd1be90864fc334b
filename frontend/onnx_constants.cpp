// Constants in the ONNX proto, before tessel's graph exists: Constant nodes become initializers,
// and constant subgraphs are folded where ONNX's shape inference needs their values to give a
// shape (it propagates Shape → Gather → Concat chains itself, but not through ConstantOfShape,
// Range and friends).
#include <map>

#include "frontend/constant_fold.h"
#include "frontend/onnx_import_steps.h"
#include "frontend/onnx_tensor.h"
#include "onnx/onnx_pb.h"
#include "schedule/te/error.h"

namespace tessel {

using onnx::AttributeProto;
using onnx::GraphProto;
using onnx::NodeProto;
using onnx::TensorProto;
using onnx::TypeProto;

namespace {

// The Constant node's value as a tensor named after its output.
TensorProto constant_tensor(const NodeProto& node) {
  TensorProto t;
  bool found = false;
  for (const AttributeProto& attr : node.attribute()) {
    found = true;
    if (attr.name() == "value") {
      t = attr.t();
    } else if (attr.name() == "value_float" || attr.name() == "value_floats") {
      t.set_data_type(TensorProto::FLOAT);
      if (attr.name() == "value_floats") t.add_dims(attr.floats_size());
      if (attr.name() == "value_float") t.add_float_data(attr.f());
      for (float f : attr.floats()) t.add_float_data(f);
    } else if (attr.name() == "value_int" || attr.name() == "value_ints") {
      t.set_data_type(TensorProto::INT64);
      if (attr.name() == "value_ints") t.add_dims(attr.ints_size());
      if (attr.name() == "value_int") t.add_int64_data(attr.i());
      for (int64_t i : attr.ints()) t.add_int64_data(i);
    } else {
      found = false;
      continue;
    }
    break;
  }
  if (!found)
    throw InputError(node_label(node) +
                     ": its value is not a tensor, float or integer (strings and sparse tensors are not supported)");
  t.set_name(node.output(0));
  return t;
}

}  // namespace

void constants_to_initializers(onnx::ModelProto* model) {
  GraphProto* graph = model->mutable_graph();
  google::protobuf::RepeatedPtrField<NodeProto> kept;
  for (NodeProto& node : *graph->mutable_node()) {
    if (node.op_type() != "Constant") {
      kept.Add()->Swap(&node);
      continue;
    }
    if (node.output_size() != 1 || node.output(0).empty()) throw InputError(node_label(node) + ": needs one output");
    *graph->add_initializer() = constant_tensor(node);
  }
  graph->mutable_node()->Swap(&kept);
  if (model->ir_version() < 4) model->set_ir_version(4);
}

namespace {

bool has_static_shape(const TypeProto* type) {
  if (!type || !type->has_tensor_type() || !type->tensor_type().has_shape()) return false;
  for (const auto& dim : type->tensor_type().shape().dim())
    if (!dim.has_dim_value()) return false;
  return true;
}

std::map<std::string, const TypeProto*> inferred_types(const GraphProto& graph) {
  std::map<std::string, const TypeProto*> types;
  for (const auto& info : graph.input()) types.emplace(info.name(), &info.type());
  for (const auto& info : graph.value_info()) types.emplace(info.name(), &info.type());
  for (const auto& info : graph.output()) types.emplace(info.name(), &info.type());
  return types;
}

bool all_shapes_static(const GraphProto& graph) {
  const auto types = inferred_types(graph);
  for (const NodeProto& node : graph.node())
    for (const std::string& out : node.output()) {
      if (out.empty()) continue;
      auto it = types.find(out);
      if (!has_static_shape(it == types.end() ? nullptr : it->second)) return false;
    }
  return true;
}

// One pass over the nodes in order, folding each whose inputs are constant (or, for Shape and
// Size, statically shaped) into initializers; later nodes see the new constants at once.
class ConstantFolder {
 public:
  ConstantFolder(GraphProto* graph, int64_t opset) : graph_(graph), opset_(opset), types_(inferred_types(*graph)) {
    for (const TensorProto& t : graph->initializer()) initializers_[t.name()] = &t;
  }

  bool run() {
    google::protobuf::RepeatedPtrField<NodeProto> kept;
    bool folded = false;
    for (NodeProto& node : *graph_->mutable_node()) {
      std::optional<std::vector<TensorData>> out;
      if (is_foldable_op(node.op_type())) out = try_fold(node);
      if (!out) {
        kept.Add()->Swap(&node);
        continue;
      }
      for (int k = 0; k < node.output_size(); ++k) {
        tensor_to_proto((*out)[k], node.output(k), graph_->add_initializer());
        data_[node.output(k)] = (*out)[k];
      }
      folded = true;
    }
    graph_->mutable_node()->Swap(&kept);
    return folded;
  }

 private:
  std::optional<std::vector<TensorData>> try_fold(const NodeProto& proto) {
    std::vector<TensorInfo> infos(proto.input_size());
    std::vector<FoldInput> inputs(proto.input_size());
    for (int k = 0; k < proto.input_size(); ++k) {
      const std::string& name = proto.input(k);
      if (name.empty()) continue;
      if (const TensorData* data = constant(name, proto.op_type() == "Cast")) {
        infos[k] = TensorInfo{data->dtype(), data->shape()};
        inputs[k] = FoldInput{&infos[k], data};
        continue;
      }
      auto it = types_.find(name);
      std::optional<TensorInfo> info = it == types_.end() ? std::nullopt : static_tensor_info(*it->second);
      if (!info) return std::nullopt;
      infos[k] = *info;
      inputs[k] = FoldInput{&infos[k], nullptr};
    }
    return fold_node(node_from_proto(proto), inputs, opset_);
  }

  // The data of a constant input, null when it is none or too large to fold. Integer types other
  // than INT64 are widened to INT64, which only a Cast may read: any other op would then compute
  // in INT64 what ONNX types as the narrower type.
  const TensorData* constant(const std::string& name, bool widening_allowed) {
    if (auto it = data_.find(name); it != data_.end()) return &it->second;
    auto it = initializers_.find(name);
    if (it == initializers_.end()) return nullptr;
    const TensorProto& proto = *it->second;
    if (!dtype_from_onnx(proto.data_type()) && !widening_allowed) return nullptr;
    const std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
    if (checked_element_count(dims, "initializer '" + name + "'") > kMaxFoldElements) return nullptr;
    return &data_.emplace(name, tensor_from_proto(proto, "initializer '" + name + "'", Widening::Integers))
                .first->second;
  }

  GraphProto* graph_;
  int64_t opset_;
  std::map<std::string, const TypeProto*> types_;
  std::map<std::string, const TensorProto*> initializers_;
  std::map<std::string, TensorData> data_;  // converted initializers and folded outputs
};

}  // namespace

void infer_shapes_folding_constants(onnx::ModelProto* model, int64_t opset,
                                    const std::function<void(onnx::ModelProto*)>& infer) {
  GraphProto* graph = model->mutable_graph();
  // Each inference starts from the model's own declarations, not the previous round's guesses.
  const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> declared = graph->value_info();
  infer(model);
  constexpr int kMaxRounds = 16;  // each round folds at least one node; real models need one or two
  for (int round = 0; round < kMaxRounds && !all_shapes_static(*graph); ++round) {
    if (!ConstantFolder(graph, opset).run()) return;
    *graph->mutable_value_info() = declared;
    infer(model);
  }
}

}  // namespace tessel
