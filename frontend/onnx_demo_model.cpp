#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>

#include "frontend/demo_model.h"

namespace tessel {
namespace {

class ModelMaker {
 public:
  ModelMaker() : rng_(20261125) {
    model_.set_ir_version(8);
    model_.set_producer_name("tessel demo");
    model_.add_opset_import()->set_version(13);
    graph_ = model_.mutable_graph();
    graph_->set_name("demo_cnn");
  }

  void input(const std::string& name, std::vector<int64_t> shape) { value(graph_->add_input(), name, shape); }
  void output(const std::string& name, std::vector<int64_t> shape) { value(graph_->add_output(), name, shape); }

  // A float initializer of `shape`: normal(mean, std) values, or `fill` for every element.
  std::string weight(const std::string& name, std::vector<int64_t> shape, double mean, double std) {
    onnx::TensorProto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : shape) {
      t->add_dims(d);
      n *= d;
    }
    std::normal_distribution<float> normal(static_cast<float>(mean), static_cast<float>(std));
    for (int64_t i = 0; i < n; ++i) t->add_float_data(std > 0 ? normal(rng_) : static_cast<float>(mean));
    return name;
  }

  onnx::NodeProto* node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
    onnx::NodeProto* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(graph_->node_size()));
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output(output);
    return n;
  }

  static void ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> values) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }

  static void integer(onnx::NodeProto* n, const std::string& name, int64_t value) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }

  // Conv (3x3, padding 1) + BatchNormalization (+ ReLU), as exporters write a conv block.
  std::string conv_block(const std::string& in, const std::string& name, int64_t c_in, int64_t c_out, int64_t stride,
                         bool relu) {
    const double fan = std::sqrt(2.0 / static_cast<double>(c_in * 9));
    onnx::NodeProto* conv = node("Conv", {in, weight(name + ".weight", {c_out, c_in, 3, 3}, 0, fan)}, name + ".conv");
    ints(conv, "kernel_shape", {3, 3});
    ints(conv, "pads", {1, 1, 1, 1});
    ints(conv, "strides", {stride, stride});
    node("BatchNormalization",
         {name + ".conv", weight(name + ".gamma", {c_out}, 1, 0.1), weight(name + ".beta", {c_out}, 0, 0.1),
          weight(name + ".mean", {c_out}, 0, 0.1), weight(name + ".var", {c_out}, 1, 0)},
         name + ".bn");
    if (!relu) return name + ".bn";
    node("Relu", {name + ".bn"}, name + ".relu");
    return name + ".relu";
  }

  std::string serialize() const { return model_.SerializeAsString(); }

 private:
  void value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& shape) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->mutable_shape()->add_dim()->set_dim_value(d);
  }

  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  std::mt19937 rng_;
};

}  // namespace

std::string demo_cnn_onnx() {
  ModelMaker m;
  m.input("image", {1, 3, 32, 32});
  const std::string a = m.conv_block("image", "block1", 3, 32, 1, true);
  const std::string b = m.conv_block(a, "block2", 32, 64, 2, true);
  const std::string c = m.conv_block(b, "block3", 64, 64, 1, false);
  m.node("Add", {c, b}, "residual");
  m.node("Relu", {"residual"}, "features");
  m.node("GlobalAveragePool", {"features"}, "pooled");
  m.node("Flatten", {"pooled"}, "flat");
  // As torch's Linear exports: the weight is [out, in], transposed by the Gemm.
  onnx::NodeProto* gemm = m.node(
      "Gemm", {"flat", m.weight("classifier.weight", {10, 64}, 0, 0.1), m.weight("classifier.bias", {10}, 0, 0.1)},
      "logits");
  ModelMaker::integer(gemm, "transB", 1);
  m.node("Softmax", {"logits"}, "probabilities");
  m.output("probabilities", {1, 10});
  return m.serialize();
}

}  // namespace tessel
