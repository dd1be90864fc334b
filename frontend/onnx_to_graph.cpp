// The last step of the ONNX importer: a checked, shape-inferred ModelProto becomes tessel's Graph.
// Every value gets a TensorInfo here, so this is where unsupported types and shapes that stayed
// symbolic are reported.
#include <map>
#include <set>

#include "frontend/onnx_import_steps.h"
#include "frontend/onnx_tensor.h"
#include "onnx/onnx_pb.h"
#include "schedule/te/error.h"

namespace tessel {

using onnx::AttributeProto;
using onnx::GraphProto;
using onnx::NodeProto;
using onnx::TypeProto;

namespace {

using TypeMap = std::map<std::string, const TypeProto*>;

// Every declared or inferred type by tensor name.
TypeMap declared_types(const GraphProto& graph) {
  TypeMap types;
  for (const auto& info : graph.input()) types.emplace(info.name(), &info.type());
  for (const auto& info : graph.value_info()) types.emplace(info.name(), &info.type());
  for (const auto& info : graph.output()) types.emplace(info.name(), &info.type());
  return types;
}

const char* kind_of(const TypeProto& type) {
  switch (type.value_case()) {
    case TypeProto::kSequenceType:
      return "a sequence";
    case TypeProto::kMapType:
      return "a map";
    case TypeProto::kOptionalType:
      return "an optional";
    case TypeProto::kSparseTensorType:
      return "a sparse tensor";
    default:
      return "not a tensor";
  }
}

// `what` names the tensor ("tensor 'x' (output of node 'n' (Relu))").
TensorInfo tensor_info(const TypeProto* type, const std::string& what) {
  if (!type) throw InputError(what + ": its type could not be inferred");
  if (!type->has_tensor_type()) throw InputError(what + " is " + kind_of(*type) + ", not a tensor");
  const auto& tensor = type->tensor_type();
  const std::optional<DType> dtype = dtype_from_onnx(tensor.elem_type());
  if (!dtype)
    throw InputError(what + ": element type " + onnx_type_name(tensor.elem_type()) +
                     " is not supported (tessel computes with FLOAT, INT64 and BOOL)");
  if (!tensor.has_shape()) throw InputError(what + ": its rank could not be inferred");
  TensorInfo info{*dtype, {}};
  for (int k = 0; k < tensor.shape().dim_size(); ++k) {
    const auto& dim = tensor.shape().dim(k);
    if (!dim.has_dim_value())
      throw InputError(what + ": dimension " + std::to_string(k) +
                       (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : std::string()) +
                       " is not static after shape inference");
    info.shape.push_back(dim.dim_value());
  }
  checked_byte_count(checked_element_count(info.shape, what), dtype_bytes(*dtype), what);
  return info;
}

Attribute convert_attribute(const AttributeProto& attr, const std::string& what) {
  switch (attr.type()) {
    case AttributeProto::FLOAT:
      return static_cast<double>(attr.f());
    case AttributeProto::INT:
      return static_cast<int64_t>(attr.i());
    case AttributeProto::STRING:
      return attr.s();
    case AttributeProto::TENSOR:
      return tensor_from_proto(attr.t(), what, Widening::Integers);
    case AttributeProto::FLOATS:
      return std::vector<double>(attr.floats().begin(), attr.floats().end());
    case AttributeProto::INTS:
      return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
    default:
      throw InputError(what + " is of type " + AttributeProto::AttributeType_Name(attr.type()) +
                       ", which tessel does not support");
  }
}

Value constant_value(const std::string& name, TensorData data) {
  TensorInfo info{data.dtype(), data.shape()};
  return Value{name, std::move(info), std::move(data)};
}

void add_node(Graph& graph, const NodeProto& proto, const TypeMap& types) {
  Node node = node_from_proto(proto);
  for (const std::string& out : node.outputs) {
    if (out.empty()) continue;
    auto it = types.find(out);
    const std::string what = "tensor '" + out + "' (output of " + node_label(proto) + ")";
    graph.set_value(Value{out, tensor_info(it == types.end() ? nullptr : it->second, what), std::nullopt});
  }
  graph.nodes.push_back(std::move(node));
}

}  // namespace

Node node_from_proto(const NodeProto& proto) {
  Node node;
  node.name = proto.name();
  node.op_type = proto.op_type();
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  for (const AttributeProto& attr : proto.attribute())
    node.attributes[attr.name()] = convert_attribute(attr, "attribute '" + attr.name() + "' of " + node_label(proto));
  return node;
}

std::optional<TensorInfo> static_tensor_info(const TypeProto& type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  const std::optional<DType> dtype = dtype_from_onnx(type.tensor_type().elem_type());
  if (!dtype) return std::nullopt;
  TensorInfo info{*dtype, {}};
  for (const auto& dim : type.tensor_type().shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0) return std::nullopt;
    info.shape.push_back(dim.dim_value());
  }
  return info;
}

Graph graph_from_proto(const onnx::ModelProto& model, int64_t opset) {
  const GraphProto& proto = model.graph();
  const TypeMap types = declared_types(proto);
  Graph graph;
  graph.opset = opset;
  std::set<std::string> initializers;
  for (const auto& init : proto.initializer()) {
    initializers.insert(init.name());
    graph.set_value(
        constant_value(init.name(), tensor_from_proto(init, "initializer '" + init.name() + "'", Widening::Integers)));
  }
  for (const auto& input : proto.input()) {
    if (initializers.count(input.name())) continue;  // a weight listed as an input too (IR version 3)
    graph.set_value(Value{input.name(), tensor_info(&input.type(), "input '" + input.name() + "'"), std::nullopt});
    graph.inputs.push_back(input.name());
  }
  for (const NodeProto& node : proto.node()) add_node(graph, node, types);
  for (const auto& output : proto.output()) graph.outputs.push_back(output.name());
  return graph;
}

}  // namespace tessel
