#include "schedule/te/half_float.h"

#include <cmath>
#include <cstring>

namespace tessel {

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

uint16_t float_to_half_bits(float value) {
  const uint32_t x = bits_of(value);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t magnitude = x & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | 0x7E00u;  // NaN (quiet)
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and beyond round to infinity
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal half, counted in units of 2^-24. Scaling by 2^24 is exact, and
    // nearbyint rounds ties to even in the default rounding mode. 1024 units is the smallest normal,
    // whose encoding is the same number.
    const float units = std::nearbyint(float_of(magnitude) * 16777216.0f);
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(units));
  }
  const uint32_t exponent = (magnitude >> 23) - 127 + 15;
  const uint32_t mantissa = magnitude & 0x7FFFFFu;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent, as it should
  return static_cast<uint16_t>(sign | h);
}

float half_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);  // exact
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return float_of(sign | 0x7F800000u | (mantissa << 13));
  return float_of(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t x = bits_of(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // NaN stays NaN
  const uint32_t rounded = x + 0x7FFFu + ((x >> 16) & 1u);  // overflow carries into infinity
  return static_cast<uint16_t>(rounded >> 16);
}

float bfloat16_bits_to_float(uint16_t bits) { return float_of(static_cast<uint32_t>(bits) << 16); }

void narrow_to_half_bits(DType dtype, const float* values, int64_t n, uint16_t* out) {
  auto narrow = dtype == DType::Float16 ? float_to_half_bits : float_to_bfloat16_bits;
  for (int64_t i = 0; i < n; ++i) out[i] = narrow(values[i]);
}

float half_bits_to_float(DType dtype, uint16_t bits) {
  return dtype == DType::Float16 ? half_bits_to_float(bits) : bfloat16_bits_to_float(bits);
}

double round_to_dtype(double value, DType dtype) {
  switch (dtype) {
    case DType::Float32: return static_cast<float>(value);
    case DType::Float16: return half_bits_to_float(float_to_half_bits(static_cast<float>(value)));
    case DType::BFloat16: return bfloat16_bits_to_float(float_to_bfloat16_bits(static_cast<float>(value)));
    default: return value;
  }
}

}  // namespace tessel
