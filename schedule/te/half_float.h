// Conversions between float and the two 16-bit storage floats (expr.h): IEEE binary16 ("float16")
// and bfloat16 (float32's sign and exponent with 7 mantissa bits). Narrowing rounds to nearest, ties
// to even, as the code generators' conversions do; NaN stays NaN, overflow becomes infinity.
#pragma once

#include <cstdint>

#include "schedule/te/expr.h"

namespace tessel {

uint16_t float_to_half_bits(float value);
float half_bits_to_float(uint16_t bits);
uint16_t float_to_bfloat16_bits(float value);
float bfloat16_bits_to_float(uint16_t bits);

// The same for `dtype`, Float16 or BFloat16: `n` floats narrowed into `out`, and one widened.
void narrow_to_half_bits(DType dtype, const float* values, int64_t n, uint16_t* out);
float half_bits_to_float(DType dtype, uint16_t bits);

// `value` as the nearest value of `dtype` (Float16 and BFloat16 round; Float32 rounds to float;
// other types are returned unchanged). A double narrows through float first: a value within half an
// ulp of float of a 16-bit tie can round the other way, an error of one 16-bit ulp that every
// tolerance for these types allows.
double round_to_dtype(double value, DType dtype);

}  // namespace tessel
