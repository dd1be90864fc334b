// ONNX import on small valid models: the graph it makes (values, constants, attributes, order),
// input shape bindings and their errors, and the tensor files of ONNX's test data sets.
#include <catch2/catch.hpp>

#include "frontend/onnx_import.h"
#include "frontend/onnx_tensor.h"
#include "frontend/simplify.h"
#include "tests/frontend/onnx_test_models.h"

using namespace tessel;
using namespace tessel_test;
using Catch::Matchers::Contains;

TEST_CASE("a small conv net imports with its weights, attributes and inferred shapes", "[frontend][onnx]") {
  const Graph g = import_onnx_bytes(serialize(small_conv_model()), {});
  CHECK(g.opset == 13);
  CHECK(g.inputs == std::vector<std::string>{"x"});
  CHECK(g.outputs == std::vector<std::string>{"y"});
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].name == "conv");
  CHECK(g.nodes[0].op_type == "Conv");
  CHECK(g.nodes[0].ints_attr("pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(g.value("c").info.shape == std::vector<int64_t>{1, 3, 4, 4});
  CHECK(g.value("c").info.dtype == DType::Float32);
  REQUIRE(g.is_constant("w"));
  CHECK(g.value("w").constant->shape() == std::vector<int64_t>{3, 2, 3, 3});
  CHECK(g.value("b").constant->floats() == std::vector<float>{0.1f, -0.2f, 0.3f});
  CHECK_FALSE(g.is_constant("x"));
}

TEST_CASE("an exporter-style conv, batch norm and shape chain imports and simplifies", "[frontend][onnx]") {
  Graph g = import_onnx_bytes(serialize(conv_bn_reshape_model()), {});
  CHECK(g.nodes.size() == 8);
  CHECK(g.value("target").info.shape == std::vector<int64_t>{2});
  simplify(g);
  REQUIRE(g.nodes.size() == 3);
  CHECK(g.nodes[0].op_type == "Conv");
  CHECK(g.nodes[0].outputs == std::vector<std::string>{"bn"});
  CHECK(g.nodes[1].op_type == "Relu");
  CHECK(g.nodes[2].op_type == "Reshape");
  REQUIRE(g.is_constant("target"));
  CHECK(g.value("target").constant->ints() == std::vector<int64_t>{1, -1});
  CHECK(g.value("y").info.shape == std::vector<int64_t>{1, 48});
}

TEST_CASE("import names unnamed nodes, sorts unsorted ones and makes Constant nodes constants", "[frontend][onnx]") {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {2, 3});
  add_node(model, "Relu", {"s"}, {"y"});  // reads what the next node makes: the file is not sorted
  add_node(model, "Add", {"x", "k"}, {"s"});
  auto* k = add_node(model, "Constant", {}, {"k"});
  auto* attr = k->add_attribute();
  attr->set_name("value");
  attr->set_type(onnx::AttributeProto::TENSOR);
  attr->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  attr->mutable_t()->add_dims(3);
  for (float v : {1.f, 2.f, 3.f}) attr->mutable_t()->add_float_data(v);
  add_output(model, "y", {2, 3});
  // The Constant comes last in the file too; sorting puts it (as a constant) before its reader.
  const Graph g = import_onnx_bytes(serialize(model), {});
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].name == "Add_1");
  CHECK(g.nodes[1].name == "Relu_0");
  REQUIRE(g.is_constant("k"));
  CHECK(g.value("k").constant->floats() == std::vector<float>{1, 2, 3});
}

TEST_CASE("integer constants of other widths are widened to INT64", "[frontend][onnx]") {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {2, 3});
  auto* shape = model.mutable_graph()->add_initializer();
  shape->set_name("shape32");
  shape->set_data_type(onnx::TensorProto::INT32);
  shape->add_dims(2);
  shape->add_int32_data(3);
  shape->add_int32_data(2);
  auto* cast = add_node(model, "Cast", {"shape32"}, {"shape"});
  add_int_attr(cast, "to", onnx::TensorProto::INT64);
  add_node(model, "Reshape", {"x", "shape"}, {"y"});
  add_output(model, "y", {3, 2});
  const Graph g = import_onnx_bytes(serialize(model), {});
  REQUIRE(g.is_constant("shape32"));
  CHECK(g.value("shape32").info.dtype == DType::Int64);
  CHECK(g.value("shape32").constant->ints() == std::vector<int64_t>{3, 2});
  CHECK(g.value("y").info.shape == std::vector<int64_t>{3, 2});
}

TEST_CASE("shapes computed from data are folded until every shape is static", "[frontend][onnx]") {
  const Graph g = import_onnx_bytes(serialize(range_from_shape_model()), {});
  REQUIRE(g.is_constant("p"));
  CHECK(g.value("p").constant->floats() == std::vector<float>{0, 1, 2, 3, 4});
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op_type == "Add");
}

namespace {

onnx::ModelProto symbolic_model() {
  onnx::ModelProto model = make_model();
  add_input(model, "tokens", {-1, 16});  // dimension 0 is "N"
  add_node(model, "Relu", {"tokens"}, {"y"});
  add_output(model, "y", {-1, 16});
  return model;
}

}  // namespace

TEST_CASE("input shapes bind symbolic dimensions", "[frontend][onnx]") {
  ImportOptions options;
  options.input_shapes["tokens"] = {8, 16};
  const Graph g = import_onnx_bytes(serialize(symbolic_model()), options);
  CHECK(g.value("tokens").info.shape == std::vector<int64_t>{8, 16});
  CHECK(g.value("y").info.shape == std::vector<int64_t>{8, 16});
}

TEST_CASE("input shape bindings that do not fit are errors", "[frontend][onnx]") {
  const onnx::ModelProto model = symbolic_model();
  CHECK_THAT(import_error(model), Contains("input 'tokens': dimension 0 'N' is symbolic"));
  ImportOptions unknown;
  unknown.input_shapes["tokens"] = {8, 16};
  unknown.input_shapes["mask"] = {8, 16};
  CHECK_THAT(import_error(model, unknown),
             Contains("a shape is given for 'mask', which is not an input of the model (inputs: 'tokens')"));
  ImportOptions rank;
  rank.input_shapes["tokens"] = {8};
  CHECK_THAT(import_error(model, rank),
             Contains("input 'tokens' has rank 2, but the shape given for it, [8], has rank 1"));
  ImportOptions fixed;
  fixed.input_shapes["tokens"] = {8, 32};
  CHECK_THAT(import_error(model, fixed),
             Contains("input 'tokens': dimension 1 is 16 in the model, but the shape given for it says 32"));
}

TEST_CASE("input shapes parse from NAME=8x128", "[frontend][onnx]") {
  CHECK(parse_input_shape("tokens=8x128") == std::pair<std::string, std::vector<int64_t>>{"tokens", {8, 128}});
  CHECK(parse_input_shape("a=b=3") == std::pair<std::string, std::vector<int64_t>>{"a=b", {3}});
  CHECK_THAT(input_error([] { parse_input_shape("tokens"); }), Contains("no input name"));
  CHECK_THAT(input_error([] { parse_input_shape("=8"); }), Contains("no input name"));
  CHECK_THAT(input_error([] { parse_input_shape("t=8x"); }), Contains("'' is not a positive integer"));
  CHECK_THAT(input_error([] { parse_input_shape("t=8x0"); }), Contains("'0' is not a positive integer"));
  CHECK_THAT(input_error([] { parse_input_shape("t=-8"); }), Contains("'-8' is not a positive integer"));
  CHECK_THAT(input_error([] { parse_input_shape("t=99999999999999999999"); }), Contains("is not a positive integer"));
}

TEST_CASE("tensor files round-trip and read ONNX's narrower integer types", "[frontend][onnx]") {
  TempDir dir;
  const TensorData t = TensorData::of_floats({2, 2}, {1.5f, -2.f, 0.f, 4.f});
  write_tensor_pb(dir.file("t.pb"), "weights", t);
  std::string name;
  const TensorData back = read_tensor_pb(dir.file("t.pb"), &name);
  CHECK(name == "weights");
  CHECK(back.shape() == t.shape());
  CHECK(back.floats() == t.floats());

  onnx::TensorProto u8;
  u8.set_name("bytes");
  u8.set_data_type(onnx::TensorProto::UINT8);
  u8.add_dims(3);
  u8.set_raw_data(std::string("\x01\xff\x07", 3));
  write_file(dir.file("u8.pb"), u8.SerializeAsString());
  CHECK(read_tensor_pb(dir.file("u8.pb")).ints() == std::vector<int64_t>{1, 255, 7});

  write_file(dir.file("bad.pb"), "\x08\x01\x12");
  CHECK_THAT(input_error([&] { read_tensor_pb(dir.file("bad.pb")); }), Contains("is not a valid ONNX TensorProto"));
  CHECK_THAT(input_error([&] { read_tensor_pb(dir.file("missing.pb")); }), Contains("cannot open tensor file"));
}
