// The size rules of tensors and loop nests (see tensor_size.h).
#include "schedule/te/tensor_size.h"

#include <cstdio>

#include "schedule/te/checked_math.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

// The product of `extents` as a double, for messages about sizes beyond int64.
double approximate_product(const std::vector<int64_t>& extents) {
  double p = 1;
  for (int64_t e : extents) p *= static_cast<double>(e);
  return p;
}

std::string approximate(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", value);
  return text;
}

std::string limit_text() { return "tessel handles tensors of up to " + format_bytes(kMaxTensorBytes) + " (2^48 bytes)"; }

}  // namespace

int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
  }
  return 8;
}

std::string describe_tensor(const std::string& name, const std::vector<int64_t>& shape) {
  std::string s = name + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t checked_elements(const std::string& name, const std::vector<int64_t>& shape, DType dtype) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] < 1)
      throw InputError("tensor " + describe_tensor(name, shape) + ": extent " + std::to_string(shape[d]) +
                       " of dimension " + std::to_string(d) + " is not positive");
  const int64_t width = dtype_bytes(dtype);
  int64_t elements = 1;
  for (int64_t e : shape) {
    std::optional<int64_t> next = checked_mul(elements, e);
    if (!next) {
      const double total = approximate_product(shape);
      throw InputError("tensor " + describe_tensor(name, shape) + " is too large: about " + approximate(total) +
                       " elements of " + to_string(dtype) + " (" + format_bytes(total * static_cast<double>(width)) +
                       "); " + limit_text());
    }
    elements = *next;
  }
  if (elements > kMaxTensorBytes / width) {
    const std::optional<int64_t> bytes = checked_mul(elements, width);
    const double approximate_bytes = static_cast<double>(elements) * static_cast<double>(width);
    throw InputError("tensor " + describe_tensor(name, shape) + " is too large: " + std::to_string(elements) +
                     " elements of " + to_string(dtype) + " = " +
                     (bytes ? std::to_string(*bytes) + " bytes (" + format_bytes(approximate_bytes) + ")"
                            : format_bytes(approximate_bytes)) +
                     "; " + limit_text());
  }
  return elements;
}

int64_t checked_bytes(const std::string& name, const std::vector<int64_t>& shape, DType dtype) {
  // checked_elements keeps elements * width within kMaxTensorBytes.
  return checked_elements(name, shape, dtype) * dtype_bytes(dtype);
}

int64_t checked_iterations(const Operation& op) {
  if (op.is_placeholder) return 1;
  std::vector<int64_t> extents;
  for (const Axis& a : op.axes) extents.push_back(a.extent);
  for (const Axis& a : op.reduce_axes) extents.push_back(a.extent);
  int64_t n = 1;
  for (int64_t e : extents) {
    std::optional<int64_t> next = checked_mul(n, e);
    if (!next || *next > kMaxIterations) {
      std::string spelled;
      for (int64_t x : extents) spelled += (spelled.empty() ? "" : " x ") + std::to_string(x);
      throw InputError("operation " + op.name + " loops over " + spelled + " = about " +
                       approximate(approximate_product(extents)) +
                       " iterations; tessel's limit is 2^62 (about 4.6e+18) per operation");
    }
    n = *next;
  }
  return n;
}

void check_operation_sizes(const Operation& op) {
  checked_elements(op.name, op.shape, op.dtype);
  for (const Axis& a : op.reduce_axes)
    if (a.extent < 1)
      throw InputError("operation " + op.name + ": reduction axis " + a.name + " has the non-positive extent " +
                       std::to_string(a.extent));
  checked_iterations(op);
}

}  // namespace tessel
