// Hostile and broken ONNX models: each is refused with an InputError naming what is wrong and
// where (the tensor, the node), never a crash, an abort or another exception.
#include <catch2/catch.hpp>

#include "frontend/onnx_import.h"
#include "tests/frontend/onnx_test_models.h"

using namespace tessel;
using namespace tessel_test;
using Catch::Matchers::Contains;

namespace {

std::string bytes_error(const std::string& bytes) {
  return input_error([&] { import_onnx_bytes(bytes, {}); });
}

}  // namespace

TEST_CASE("truncated and bit-flipped protobufs are refused", "[frontend][onnx][hostile]") {
  const std::string bytes = serialize(small_conv_model());
  CHECK_THAT(bytes_error(bytes.substr(0, bytes.size() / 2)), Contains("not a valid ONNX model"));
  CHECK_THAT(bytes_error(bytes.substr(0, 7)), Contains("not a valid ONNX model"));
  CHECK_THAT(bytes_error("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), Contains("not a valid ONNX model"));
  // Every single-bit flip of the first bytes: refused or imported, never another failure.
  int refused = 0;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 96); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      refused += bytes_error(flipped).empty() ? 0 : 1;
    }
  CHECK(refused > 0);
}

TEST_CASE("a file that is not a model is refused, naming the file", "[frontend][onnx][hostile]") {
  TempDir dir;
  write_file(dir.file("model.onnx"), "not a protobuf at all \xff\xff");
  CHECK_THAT(input_error([&] { import_onnx(dir.file("model.onnx"), {}); }),
             Contains(dir.file("model.onnx") + ": not a valid ONNX model"));
  CHECK_THAT(input_error([&] { import_onnx(dir.path(), {}); }), Contains("is not a regular file"));
  CHECK_THAT(input_error([&] { import_onnx(dir.file("none.onnx"), {}); }), Contains("cannot open the model"));
}

TEST_CASE("a graph cycle is refused, naming the nodes on it", "[frontend][onnx][hostile]") {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {2});
  add_node(model, "Add", {"x", "b"}, {"a"}, "first");
  add_node(model, "Relu", {"a"}, {"b"}, "second");
  add_output(model, "b", {2});
  CHECK_THAT(
      import_error(model),
      Contains(
          "the graph has a cycle: node 'first' (Add) reads from node 'second' (Relu) reads from node 'first' (Add)"));
}

TEST_CASE("a node reading a tensor nothing defines is refused", "[frontend][onnx][hostile]") {
  onnx::ModelProto model = small_conv_model();
  model.mutable_graph()->mutable_initializer()->RemoveLast();  // the bias "b"
  CHECK_THAT(import_error(model),
             Contains("node 'conv' (Conv) reads tensor 'b', which no input, initializer or node defines"));
}

TEST_CASE("a tensor defined twice is refused", "[frontend][onnx][hostile]") {
  onnx::ModelProto model = small_conv_model();
  add_node(model, "Relu", {"x"}, {"c"}, "again");
  CHECK_THAT(import_error(model),
             Contains("tensor 'c' is defined twice: by node 'again' (Relu) and by node 'conv' (Conv)"));
  onnx::ModelProto shadow = small_conv_model();
  add_node(shadow, "Relu", {"x"}, {"w"}, "shadow");
  CHECK_THAT(import_error(shadow),
             Contains("tensor 'w' is defined twice: by node 'shadow' (Relu) and by an input or initializer"));
  onnx::ModelProto twice = small_conv_model();
  add_float_initializer(twice, "b", {3}, {1, 2, 3});
  CHECK_THAT(import_error(twice), Contains("initializer 'b' is given twice"));
}

TEST_CASE("negative and overflowing dimensions are refused before allocation", "[frontend][onnx][hostile]") {
  onnx::ModelProto negative = small_conv_model();
  negative.mutable_graph()->mutable_initializer(0)->set_dims(1, -2);
  CHECK_THAT(import_error(negative), Contains("initializer 'w': dimension 1 of [3, -2, 3, 3] is negative"));

  // 2^32 · 2^32 elements: the product passes 2^63 (the data is a few bytes).
  onnx::ModelProto huge = small_conv_model();
  auto* t = huge.mutable_graph()->mutable_initializer(1);
  t->clear_dims();
  t->add_dims(int64_t{1} << 32);
  t->add_dims(int64_t{1} << 32);
  CHECK_THAT(import_error(huge),
             Contains("initializer 'b': the shape [4294967296, 4294967296] has more than 2^63 elements"));

  // Fits in elements, not in bytes: 2^62 floats.
  onnx::ModelProto bytes = small_conv_model();
  t = bytes.mutable_graph()->mutable_initializer(1);
  t->clear_dims();
  t->add_dims(int64_t{1} << 62);
  CHECK_THAT(import_error(bytes), Contains("initializer 'b': 4611686018427387904 elements of 4 bytes pass 2^63 bytes"));

  onnx::ModelProto input = make_model();
  add_input(input, "x", {int64_t{1} << 40, int64_t{1} << 40});
  add_node(input, "Relu", {"x"}, {"y"});
  add_output(input, "y", {int64_t{1} << 40, int64_t{1} << 40});
  CHECK_THAT(import_error(input),
             Contains("tensor 'x': the shape [1099511627776, 1099511627776] has more than 2^63 elements"));

  onnx::ModelProto negative_input = make_model();
  add_input(negative_input, "x", {4});
  negative_input.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-4);
  add_node(negative_input, "Relu", {"x"}, {"y"});
  add_output(negative_input, "y", {4});
  CHECK_THAT(import_error(negative_input), Contains("tensor 'x': dimension 0 of [-4] is negative"));
}

TEST_CASE("an initializer whose data does not match its dims is refused", "[frontend][onnx][hostile]") {
  onnx::ModelProto raw = small_conv_model();
  raw.mutable_graph()->mutable_initializer(1)->mutable_raw_data()->resize(8);
  CHECK_THAT(import_error(raw), Contains("initializer 'b': raw_data holds 8 bytes, but [3] elements of FLOAT need 12"));
  onnx::ModelProto typed = small_conv_model();
  add_int_initializer(typed, "shape", {3}, {1, 2});
  CHECK_THAT(import_error(typed),
             Contains("initializer 'shape': int64_data holds 2 elements, but its shape [3] of INT64 needs 3"));
}

TEST_CASE("inputs of mismatched types are refused by strict type inference", "[frontend][onnx][hostile]") {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {2});
  add_input(model, "i", {2}, onnx::TensorProto::INT64);
  add_node(model, "Add", {"x", "i"}, {"y"}, "mixed");
  add_output(model, "y", {2});
  const std::string error = import_error(model);
  CHECK_THAT(error, Contains("ONNX shape inference fails"));
  CHECK_THAT(error, Contains("mixed"));
}

TEST_CASE("values of unsupported types are refused, naming the tensor and type", "[frontend][onnx][hostile]") {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {2}, onnx::TensorProto::FLOAT16);
  add_node(model, "Relu", {"x"}, {"y"});
  add_output(model, "y", {2}, onnx::TensorProto::FLOAT16);
  CHECK_THAT(import_error(model), Contains("input 'x': element type FLOAT16 is not supported"));
  onnx::ModelProto cast = make_model();
  add_input(cast, "x", {2});
  add_int_attr(add_node(cast, "Cast", {"x"}, {"y"}, "to_int32"), "to", onnx::TensorProto::INT32);
  add_output(cast, "y", {2}, onnx::TensorProto::INT32);
  CHECK_THAT(import_error(cast),
             Contains("tensor 'y' (output of node 'to_int32' (Cast)): element type INT32 is not supported"));
}

TEST_CASE("other domains, missing opsets and graph attributes are refused, naming the node",
          "[frontend][onnx][hostile]") {
  onnx::ModelProto domain = small_conv_model();
  auto* custom = add_node(domain, "FancyOp", {"x"}, {"z"}, "fancy");
  custom->set_domain("com.example");
  CHECK_THAT(import_error(domain), Contains("node 'fancy' (FancyOp): domain 'com.example' is not supported"));

  onnx::ModelProto no_opset = small_conv_model();
  no_opset.mutable_opset_import(0)->set_domain("ai.onnx.ml");
  CHECK_THAT(import_error(no_opset), Contains("the model imports no opset of the default ONNX domain"));

  onnx::ModelProto future = small_conv_model();
  future.mutable_opset_import(0)->set_version(99);
  CHECK_THAT(import_error(future), Contains("the model's default ONNX opset 99 is not one this build of ONNX knows"));

  onnx::ModelProto control = make_model();
  add_input(control, "cond", {}, onnx::TensorProto::BOOL);
  auto* branch = add_node(control, "If", {"cond"}, {"y"}, "choose");
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* attr = branch->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::GRAPH);
    attr->mutable_g()->set_name(name);
  }
  add_output(control, "y", {1});
  CHECK_THAT(import_error(control), Contains("node 'choose' (If): attribute 'then_branch' is a graph"));
}

TEST_CASE("models the ONNX checker refuses are refused with its reason", "[frontend][onnx][hostile]") {
  onnx::ModelProto model = small_conv_model();
  model.mutable_graph()->mutable_node(1)->add_input("x");  // Relu takes one input
  const std::string error = import_error(model);
  CHECK_THAT(error, Contains("the ONNX checker refuses the model"));
  CHECK_THAT(error, Contains("relu"));
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("attributes that ONNX 1.12's shape inference trusts are checked first", "[frontend][onnx][hostile]") {
  // Each of these crashed ONNX 1.12's inference (a division by zero, a read past a vector).
  onnx::ModelProto stride = small_conv_model();
  add_ints_attr(stride.mutable_graph()->mutable_node(0), "strides", {0, 1});
  const std::string stride_error = import_error(stride);
  CHECK_THAT(stride_error, Contains("attribute strides has the value 0; each must be at least 1"));
  CHECK_THAT(stride_error, Contains("conv"));

  onnx::ModelProto rank = small_conv_model();
  rank.mutable_graph()->mutable_initializer(0)->add_dims(1);  // a rank-5 weight for a rank-4 input
  CHECK_THAT(import_error(rank), Contains("the weight has rank 5 and the input rank 4"));

  onnx::ModelProto norm = make_model(17);
  add_input(norm, "x", {});
  add_input(norm, "scale", {1});
  add_node(norm, "LayerNormalization", {"x", "scale"}, {"y", "mean"}, "norm");
  add_output(norm, "y", {});
  CHECK_THAT(import_error(norm), Contains("axis -1 is out of range for an input of rank 0"));

  onnx::ModelProto block = make_model();
  add_input(block, "x", {1, 8, 2, 2});
  add_int_attr(add_node(block, "DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", int64_t{1} << 40);
  add_output(block, "y", {1, 2, 4, 4});
  CHECK_THAT(import_error(block), Contains("blocksize is 1099511627776; it must lie in [1, 2^31)"));
}
