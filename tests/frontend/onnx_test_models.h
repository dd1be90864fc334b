// Building small ONNX models in tests with ONNX's protobuf API (no binary files in the repository),
// and temporary folders to write them to.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "schedule/te/error.h"

namespace tessel_test {

// A folder under $TMPDIR (or /tmp), removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/tessel_frontend_XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A model of the default domain at `opset`, IR version 8 (ONNX 1.12's).
inline onnx::ModelProto make_model(int64_t opset = 13) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("tessel tests");
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  model.mutable_graph()->set_name("test");
  return model;
}

// A tensor value declaration; a negative extent becomes a symbolic dimension named `param`.
inline void set_type(onnx::ValueInfoProto* info, const std::string& name, int32_t elem_type,
                     const std::vector<int64_t>& dims, const std::string& param = "N") {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0)
      dim->set_dim_param(param);
    else
      dim->set_dim_value(d);
  }
}

inline void add_input(onnx::ModelProto& model, const std::string& name, const std::vector<int64_t>& dims,
                      int32_t elem_type = onnx::TensorProto::FLOAT) {
  set_type(model.mutable_graph()->add_input(), name, elem_type, dims);
}

inline void add_output(onnx::ModelProto& model, const std::string& name, const std::vector<int64_t>& dims,
                       int32_t elem_type = onnx::TensorProto::FLOAT) {
  set_type(model.mutable_graph()->add_output(), name, elem_type, dims);
}

inline onnx::NodeProto* add_node(onnx::ModelProto& model, const std::string& op_type,
                                 const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                 const std::string& name = "") {
  auto* node = model.mutable_graph()->add_node();
  node->set_op_type(op_type);
  node->set_name(name);
  for (const auto& in : inputs) node->add_input(in);
  for (const auto& out : outputs) node->add_output(out);
  return node;
}

inline void add_int_attr(onnx::NodeProto* node, const std::string& name, int64_t value) {
  auto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

inline void add_ints_attr(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  auto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

inline onnx::TensorProto* add_float_initializer(onnx::ModelProto& model, const std::string& name,
                                                const std::vector<int64_t>& dims, const std::vector<float>& values) {
  auto* t = model.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

inline onnx::TensorProto* add_int_initializer(onnx::ModelProto& model, const std::string& name,
                                              const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  auto* t = model.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return t;
}

// x[1,2,4,4] → Conv(w[3,2,3,3], b[3], pad 1) → Relu → y[1,3,4,4]: a valid model to break.
inline onnx::ModelProto small_conv_model() {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {1, 2, 4, 4});
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
  add_float_initializer(model, "w", {3, 2, 3, 3}, w);
  add_float_initializer(model, "b", {3}, {0.1f, -0.2f, 0.3f});
  auto* conv = add_node(model, "Conv", {"x", "w", "b"}, {"c"}, "conv");
  add_ints_attr(conv, "pads", {1, 1, 1, 1});
  add_node(model, "Relu", {"c"}, {"y"}, "relu");
  add_output(model, "y", {1, 3, 4, 4});
  return model;
}

// x[1,C,S,S] → Conv(3x3, pad 1)+Relu → Conv → Conv+Relu → y[1,F,S,S], the last two with one weight
// w[F,F,3,3]: the input read by the first kernel only, the output written by the last.
inline onnx::ModelProto conv_chain_model(int64_t in_channels, int64_t channels, int64_t side) {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {1, in_channels, side, side});
  std::vector<float> w1(static_cast<size_t>(channels * in_channels * 9));
  std::vector<float> w(static_cast<size_t>(channels * channels * 9));
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.03f * static_cast<float>(i % 11) - 0.1f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
  add_float_initializer(model, "w1", {channels, in_channels, 3, 3}, w1);
  add_float_initializer(model, "w", {channels, channels, 3, 3}, w);
  add_ints_attr(add_node(model, "Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  add_node(model, "Relu", {"c1"}, {"b"}, "relu1");
  add_ints_attr(add_node(model, "Conv", {"b", "w"}, {"c"}, "conv2"), "pads", {1, 1, 1, 1});
  add_ints_attr(add_node(model, "Conv", {"c", "w"}, {"c3"}, "conv3"), "pads", {1, 1, 1, 1});
  add_node(model, "Relu", {"c3"}, {"y"}, "relu3");
  add_output(model, "y", {1, channels, side, side});
  return model;
}

// a[4,37] and b[4,37] in; out: a and b themselves, then c = a - b. A graph input that is also its
// output shares one buffer with it.
inline onnx::ModelProto pass_through_model() {
  onnx::ModelProto model = make_model();
  add_input(model, "a", {4, 37});
  add_input(model, "b", {4, 37});
  add_node(model, "Sub", {"a", "b"}, {"c"}, "sub");
  add_output(model, "a", {4, 37});
  add_output(model, "b", {4, 37});
  add_output(model, "c", {4, 37});
  return model;
}

// Three distinct values for pass_through_model()'s inputs.
struct PassThroughValues {
  std::vector<float> x, y, z;
};
inline PassThroughValues pass_through_values() {
  PassThroughValues v;
  for (int i = 0; i < 4 * 37; ++i) {
    v.x.push_back(0.5f * static_cast<float>(i));
    v.y.push_back(1000.0f + static_cast<float>(i));
    v.z.push_back(-3.0f * static_cast<float>(i) - 1.0f);
  }
  return v;
}

// What exporters emit around a convolution: x[1,2,4,4] → Conv → BatchNormalization → Relu → r, then
// Reshape(r, Concat(Unsqueeze(Gather(Shape(r), 0)), [-1])) → y[1,48]. simplify() leaves Conv, Relu
// and Reshape.
// y = x + Cast(Range(0, Shape(x)[1], 1)) with x [2, 5]: ONNX's inference leaves the Range's extent
// unknown, and only folding the shape chain makes every shape static.
inline onnx::ModelProto range_from_shape_model() {
  onnx::ModelProto model = make_model();
  add_input(model, "x", {2, 5});
  add_int_initializer(model, "zero", {}, {0});
  add_int_initializer(model, "one", {}, {1});
  add_node(model, "Shape", {"x"}, {"s"});
  add_node(model, "Gather", {"s", "one"}, {"n"});
  add_node(model, "Range", {"zero", "n", "one"}, {"positions"});
  add_int_attr(add_node(model, "Cast", {"positions"}, {"p"}), "to", onnx::TensorProto::FLOAT);
  add_node(model, "Add", {"x", "p"}, {"y"});
  add_output(model, "y", {2, 5});
  return model;
}

inline onnx::ModelProto conv_bn_reshape_model() {
  onnx::ModelProto model = small_conv_model();
  auto* graph = model.mutable_graph();
  graph->mutable_node(1)->set_input(0, "bn");  // Relu reads the BatchNormalization
  graph->mutable_node(1)->set_output(0, "r");
  graph->clear_output();
  add_float_initializer(model, "gamma", {3}, {1.5f, 0.5f, -2.f});
  add_float_initializer(model, "beta", {3}, {0.1f, 0.2f, 0.3f});
  add_float_initializer(model, "mean", {3}, {0.5f, -0.25f, 1.f});
  add_float_initializer(model, "var", {3}, {4.f, 0.25f, 1.f});
  auto* bn = graph->add_node();
  bn->set_op_type("BatchNormalization");
  bn->set_name("bn");
  for (const char* in : {"c", "gamma", "beta", "mean", "var"}) bn->add_input(in);
  bn->add_output("bn");
  // Nodes must follow their producers: move the BatchNormalization between Conv and Relu.
  graph->mutable_node()->SwapElements(1, 2);
  add_int_initializer(model, "zero", {}, {0});
  add_int_initializer(model, "axes", {1}, {0});
  add_int_initializer(model, "minus_one", {1}, {-1});
  add_node(model, "Shape", {"r"}, {"s"}, "shape");
  add_node(model, "Gather", {"s", "zero"}, {"n"}, "gather");
  add_node(model, "Unsqueeze", {"n", "axes"}, {"n1"}, "unsqueeze");
  add_int_attr(add_node(model, "Concat", {"n1", "minus_one"}, {"target"}, "concat"), "axis", 0);
  add_node(model, "Reshape", {"r", "target"}, {"y"}, "reshape");
  add_output(model, "y", {1, 48});
  return model;
}

inline std::string serialize(const onnx::ModelProto& model) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("cannot serialize the model");
  return bytes;
}

// The message of the InputError that `f` throws; "" when it throws none. Any other exception
// propagates and fails the test.
template <typename F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const tessel::InputError& e) {
    return e.what();
  }
  return "";
}

inline std::string import_error(const onnx::ModelProto& model, const tessel::ImportOptions& options = {}) {
  const std::string bytes = serialize(model);
  return input_error([&] { tessel::import_onnx_bytes(bytes, options); });
}

}  // namespace tessel_test
