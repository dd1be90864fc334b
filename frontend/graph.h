// The model graph tessel imports from ONNX: values with static shapes and dtypes, constant data
// (initializers and folded values), and nodes in topological order. It is the front end's own small
// IR — every later pass (simplification, fusion, task extraction, the build) reads this, never the
// protobuf.
//
//   Graph: inputs (fed at run time) → nodes (op_type + attributes, topological) → outputs
//          values: every tensor by name, with its dtype, its shape and, for a constant, its data
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "schedule/te/expr.h"         // DType
#include "schedule/te/tensor_size.h"  // dtype_bytes

namespace tessel {

// Constant tensor data, row-major, immutable once made. Float32 as float, Int64 as int64_t, Bool as
// one byte per element (0 or 1). Sizes are checked when it is made.
class TensorData {
 public:
  TensorData() = default;
  // Throws InputError (naming `what`) when the bytes do not hold exactly the shape's elements.
  TensorData(DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes, const std::string& what);
  static TensorData of_floats(std::vector<int64_t> shape, const std::vector<float>& values);
  static TensorData of_ints(std::vector<int64_t> shape, const std::vector<int64_t>& values);
  static TensorData of_bools(std::vector<int64_t> shape, const std::vector<bool>& values);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t num_elements() const;
  const uint8_t* bytes() const { return bytes_ ? bytes_->data() : nullptr; }
  size_t byte_size() const { return bytes_ ? bytes_->size() : 0; }

  // Element i converted: float of any dtype, int64 of Int64 / Bool (a float is truncated toward zero;
  // NaN gives 0 and floats past INT64 saturate).
  double as_double(int64_t i) const;
  int64_t as_int(int64_t i) const;
  std::vector<int64_t> ints() const;  // every element as int64
  std::vector<float> floats() const;  // every element as float

 private:
  DType dtype_ = DType::Float32;
  std::vector<int64_t> shape_;
  std::shared_ptr<const std::vector<uint8_t>> bytes_;  // shared: copies of a graph share weights
};

// "[2, 3, 4]" ("[]" for a scalar), for messages.
std::string shape_string(const std::vector<int64_t>& shape);

struct TensorInfo {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // static: every extent >= 0 (an empty tensor has a 0)
};

struct Value {
  std::string name;
  TensorInfo info;
  std::optional<TensorData> constant;  // initializers and folded values
};

// An ONNX attribute. Graph-valued attributes (If, Loop) are not supported and never stored.
using Attribute = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, TensorData>;

struct Node {
  std::string name;  // the ONNX node's name, or "<op_type>_<index>" when it had none
  std::string op_type;
  std::vector<std::string> inputs;  // "" for an optional input left out
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;

  // Typed attribute access; each throws InputError naming the node and the attribute when it has
  // another type.
  std::optional<int64_t> int_attr(const std::string& name) const;
  std::optional<double> float_attr(const std::string& name) const;
  std::optional<std::string> string_attr(const std::string& name) const;
  std::optional<std::vector<int64_t>> ints_attr(const std::string& name) const;
  std::optional<std::vector<double>> floats_attr(const std::string& name) const;
  const TensorData* tensor_attr(const std::string& name) const;
  // "node 'NAME' (OP_TYPE)", for messages.
  std::string where() const;
};

class Graph {
 public:
  int64_t opset = 0;                // of the default ONNX domain
  std::vector<Node> nodes;          // topological order
  std::vector<std::string> inputs;  // fed at run time (initializers excluded)
  std::vector<std::string> outputs;

  // Throws InputError when `name` is not a value of the graph.
  const Value& value(const std::string& name) const;
  Value& value(const std::string& name);
  bool has_value(const std::string& name) const { return values_.count(name) > 0; }
  bool is_constant(const std::string& name) const;
  void set_value(Value value);
  void erase_value(const std::string& name);
  const std::map<std::string, Value>& values() const { return values_; }

  // The nodes reading `name`, by index into `nodes`.
  std::vector<size_t> consumers(const std::string& name) const;
  // Removes values no node, input or output refers to.
  void drop_unused_values();

 private:
  std::map<std::string, Value> values_;
};

}  // namespace tessel
