// The steps of the ONNX importer that work on the parsed proto, each in the file named beside it;
// onnx_import.cpp runs them in order. Internal to the front end: the proto types are declared here,
// ONNX's headers stay in the onnx_*.cpp files.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "frontend/graph.h"

namespace onnx {
class GraphProto;
class ISchemaRegistry;
class ModelProto;
class NodeProto;
class TypeProto;
}  // namespace onnx

namespace tessel {

// onnx_model_checks.cpp -------------------------------------------------------------------------

// "node 'NAME' (OP_TYPE)", the form Node::where() prints.
std::string node_label(const onnx::NodeProto& node);
// Names each unnamed node "<op_type>_<index>" (its position in the file), so every later message
// can name it.
void name_unnamed_nodes(onnx::GraphProto* graph);
// Refuses what tessel does not import before ONNX's checker and shape inference look at it: nodes
// of another domain than the default (naming node, op_type and domain), graph attributes (control
// flow), sparse initializers.
void check_supported_features(const onnx::GraphProto& graph);
// Every size the proto states, checked without allocating: initializer and tensor-attribute data
// against their dims, and the dims of every declared value (non-negative, element count < 2^63).
void check_declared_sizes(const onnx::GraphProto& graph);
// Orders the nodes so that each follows the producers of its inputs. InputError naming the node
// or tensor for a node input nothing defines, a tensor defined twice, an undefined graph output,
// or a cycle (naming the nodes on it).
void sort_nodes(onnx::GraphProto* graph);

// onnx_constants.cpp ----------------------------------------------------------------------------

// Turns every Constant node into an initializer of the same name, so that shape inference reads its
// data (as it reads initializers) and type checks never see the node. Raises the IR version to 4 if
// lower, which lets initializers stand without a graph input of their name (IR 3 is a special case
// of IR 4 there). InputError naming the node for a value of strings or a sparse tensor.
void constants_to_initializers(onnx::ModelProto* model);
// Runs `infer`; while a node output's shape is left unknown (computed from data ONNX does not
// propagate, such as a ConstantOfShape of a Shape or a Range up to a dimension), folds every node
// whose inputs are constant into an initializer (fold_node) and runs `infer` again.
void infer_shapes_folding_constants(onnx::ModelProto* model, int64_t opset,
                                    const std::function<void(onnx::ModelProto*)>& infer);

// onnx_inference_guards.cpp ---------------------------------------------------------------------

// ONNX's operator schemas for shape inference, with guards in front of the inference functions
// that trust attributes or ranks a model controls (ONNX 1.12 divides by a zero stride, for one).
const onnx::ISchemaRegistry* guarded_schema_registry();

// onnx_to_graph.cpp -----------------------------------------------------------------------------

// The Graph of a checked and shape-inferred model: values and their types, constants, nodes and
// their attributes. InputError naming the tensor for a type tessel does not compute with or a
// shape left symbolic, naming the node for an attribute it cannot hold.
Graph graph_from_proto(const onnx::ModelProto& model, int64_t opset);
// The node with its attributes converted; InputError naming the node for an attribute tessel
// cannot hold.
Node node_from_proto(const onnx::NodeProto& proto);
// The type as a TensorInfo when it is a tensor of a supported element type with a static shape.
std::optional<TensorInfo> static_tensor_info(const onnx::TypeProto& type);

}  // namespace tessel
