#include "frontend/graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "schedule/te/error.h"
#include "schedule/te/half_float.h"

namespace tessel {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

namespace {

// A zero extent makes the count 0, but the other extents still enter strides, so their product is
// held to the same limit.
int64_t element_count(const std::vector<int64_t>& shape, const std::string& what) {
  int64_t bounded = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) throw InputError(what + ": negative dimension " + std::to_string(d));
    empty = empty || d == 0;
    if (d > 1 && bounded > (int64_t{1} << 50) / d) throw InputError(what + ": more than 2^50 elements");
    bounded *= std::max<int64_t>(d, 1);
  }
  return empty ? 0 : bounded;
}

}  // namespace

TensorData::TensorData(DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes, const std::string& what)
    : dtype_(dtype), shape_(std::move(shape)) {
  const int64_t n = element_count(shape_, what);
  if (static_cast<int64_t>(bytes.size()) != n * dtype_bytes(dtype_))
    throw InputError(what + ": " + std::to_string(bytes.size()) + " bytes of data for " + std::to_string(n) +
                     " elements of " + to_string(dtype_));
  bytes_ = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
}

TensorData TensorData::of_floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return TensorData(DType::Float32, std::move(shape), std::move(bytes), "float constant");
}

TensorData TensorData::of_ints(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return TensorData(DType::Int64, std::move(shape), std::move(bytes), "integer constant");
}

TensorData TensorData::of_bools(std::vector<int64_t> shape, const std::vector<bool>& values) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  return TensorData(DType::Bool, std::move(shape), std::move(bytes), "boolean constant");
}

int64_t TensorData::num_elements() const { return static_cast<int64_t>(byte_size()) / dtype_bytes(dtype_); }

double TensorData::as_double(int64_t i) const {
  const uint8_t* p = bytes() + i * dtype_bytes(dtype_);
  if (dtype_ == DType::Float32) {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  if (dtype_ == DType::Int64) {
    int64_t v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  }
  if (dtype_ == DType::Float16 || dtype_ == DType::BFloat16) {
    uint16_t bits;
    std::memcpy(&bits, p, sizeof bits);
    return half_bits_to_float(dtype_, bits);
  }
  return *p ? 1.0 : 0.0;
}

int64_t TensorData::as_int(int64_t i) const {
  const uint8_t* p = bytes() + i * dtype_bytes(dtype_);
  if (dtype_ == DType::Int64) {
    int64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  if (dtype_ == DType::Bool) return *p ? 1 : 0;
  // Truncated toward zero; NaN and floats past INT64's range, which C++ leaves undefined, saturate.
  const double v = as_double(i);
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v < -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

std::vector<int64_t> TensorData::ints() const {
  std::vector<int64_t> out(static_cast<size_t>(num_elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = as_int(static_cast<int64_t>(i));
  return out;
}

std::vector<float> TensorData::floats() const {
  std::vector<float> out(static_cast<size_t>(num_elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(as_double(static_cast<int64_t>(i)));
  return out;
}

std::string Node::where() const { return "node '" + name + "' (" + op_type + ")"; }

namespace {

template <typename T>
std::optional<T> typed_attr(const Node& node, const std::string& name, const char* kind) {
  auto it = node.attributes.find(name);
  if (it == node.attributes.end()) return std::nullopt;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  throw InputError(node.where() + ": attribute '" + name + "' must be " + kind);
}

}  // namespace

std::optional<int64_t> Node::int_attr(const std::string& name) const {
  return typed_attr<int64_t>(*this, name, "an integer");
}
std::optional<double> Node::float_attr(const std::string& name) const {
  auto it = attributes.find(name);
  if (it != attributes.end())
    if (const int64_t* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  return typed_attr<double>(*this, name, "a float");
}
std::optional<std::string> Node::string_attr(const std::string& name) const {
  return typed_attr<std::string>(*this, name, "a string");
}
std::optional<std::vector<int64_t>> Node::ints_attr(const std::string& name) const {
  return typed_attr<std::vector<int64_t>>(*this, name, "a list of integers");
}
std::optional<std::vector<double>> Node::floats_attr(const std::string& name) const {
  return typed_attr<std::vector<double>>(*this, name, "a list of floats");
}
const TensorData* Node::tensor_attr(const std::string& name) const {
  auto it = attributes.find(name);
  if (it == attributes.end()) return nullptr;
  if (const TensorData* v = std::get_if<TensorData>(&it->second)) return v;
  throw InputError(where() + ": attribute '" + name + "' must be a tensor");
}

const Value& Graph::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw InputError("the model has no tensor '" + name + "'");
  return it->second;
}

Value& Graph::value(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) throw InputError("the model has no tensor '" + name + "'");
  return it->second;
}

bool Graph::is_constant(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second.constant.has_value();
}

void Graph::set_value(Value value) {
  std::string name = value.name;
  values_[name] = std::move(value);
}

void Graph::erase_value(const std::string& name) { values_.erase(name); }

std::vector<size_t> Graph::consumers(const std::string& name) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (std::find(nodes[i].inputs.begin(), nodes[i].inputs.end(), name) != nodes[i].inputs.end()) out.push_back(i);
  return out;
}

void Graph::drop_unused_values() {
  std::map<std::string, bool> used;
  for (const Node& n : nodes) {
    for (const std::string& v : n.inputs) used[v] = true;
    for (const std::string& v : n.outputs) used[v] = true;
  }
  for (const std::string& v : inputs) used[v] = true;
  for (const std::string& v : outputs) used[v] = true;
  for (auto it = values_.begin(); it != values_.end();) it = used.count(it->first) ? std::next(it) : values_.erase(it);
}

}  // namespace tessel
