#include "measure/typed_values.h"

#include <cstring>
#include <limits>

#include "schedule/te/half_float.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

int64_t element_bytes(DType dtype) { return dtype_bytes(dtype); }

void store_values(DType dtype, const float* values, int64_t n, void* dst) {
  if (dtype == DType::Float32) {
    std::memcpy(dst, values, static_cast<size_t>(n) * sizeof(float));
  } else if (dtype == DType::Int64) {
    auto* out = static_cast<int64_t*>(dst);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(values[i]);
  } else if (dtype == DType::Float16 || dtype == DType::BFloat16) {
    narrow_to_half_bits(dtype, values, n, static_cast<uint16_t*>(dst));
  } else {
    auto* out = static_cast<uint8_t*>(dst);
    for (int64_t i = 0; i < n; ++i) out[i] = values[i] != 0 ? 1 : 0;
  }
}

void poison_values(DType dtype, int64_t n, void* dst) {
  if (dtype == DType::Float32) {
    auto* out = static_cast<float*>(dst);
    for (int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<float>::quiet_NaN();
  } else if (dtype == DType::Int64) {
    auto* out = static_cast<int64_t*>(dst);
    for (int64_t i = 0; i < n; ++i) out[i] = std::numeric_limits<int64_t>::min();
  } else if (dtype == DType::Float16 || dtype == DType::BFloat16) {
    auto* out = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) out[i] = dtype == DType::Float16 ? 0x7E00 : 0x7FC0;  // quiet NaN
  } else {
    std::memset(dst, 0xA5, static_cast<size_t>(n));
  }
}

std::vector<float> load_values(DType dtype, const void* src, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  if (dtype == DType::Float32) {
    std::memcpy(out.data(), src, static_cast<size_t>(n) * sizeof(float));
  } else if (dtype == DType::Int64) {
    const auto* in = static_cast<const int64_t*>(src);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
  } else if (dtype == DType::Float16 || dtype == DType::BFloat16) {
    const auto* in = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) out[i] = half_bits_to_float(dtype, in[i]);
  } else {
    // A byte that is neither 0 nor 1 (the poison) reads as NaN, so a kernel that skipped it fails.
    const auto* in = static_cast<const uint8_t*>(src);
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] <= 1 ? in[i] : std::numeric_limits<float>::quiet_NaN();
  }
  return out;
}

}  // namespace tessel
