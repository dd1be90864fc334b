// Runs of a context of pass_through_model() (tests/frontend/onnx_test_models.h: out a, b and
// c = a - b) with its outputs given back as its inputs, in `memory` (device pointers on the GPU):
// given back as the other input while that one takes new bytes, swapped, and as themselves. Each
// input must read the bytes it had when the run began. x, y and z: three distinct float[4 * 37].
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "runtime/model.h"

namespace tessel_test {

inline void check_outputs_given_back(tessel::ExecutionContext& ctx, tessel::MemoryKind memory, const float* x,
                                     const float* y, const float* z) {
  using tessel::DType;
  const std::vector<int64_t> shape = {4, 37};
  const auto expect_c = [&](const float* p, const float* q, const std::string& step) {
    std::vector<float> c(4 * 37);
    ctx.copy_output(2, c.data(), tessel::MemoryKind::Host);
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i] != p[i] - q[i]) FAIL(step << ": c[" << i << "] = " << c[i] << ", want " << p[i] - q[i]);
  };
  ctx.set_input(0, DType::Float32, shape, x);
  ctx.set_input(1, DType::Float32, shape, y);
  ctx.run();
  expect_c(x, y, "the first run");
  // a given back as b while a takes new bytes: b reads x, not the z copied over it
  ctx.set_input(1, DType::Float32, shape, ctx.output_data(0), memory);
  ctx.set_input(0, DType::Float32, shape, z);
  ctx.run();
  expect_c(z, x, "a given back as b");
  // each given back as the other: both read the other's place
  ctx.set_input(0, DType::Float32, shape, ctx.output_data(1), memory);
  ctx.set_input(1, DType::Float32, shape, ctx.output_data(0), memory);
  ctx.run();
  expect_c(x, z, "swapped");
  ctx.run();  // the same pointers, which now hold the swapped values
  expect_c(z, x, "swapped back");
  ctx.set_input(0, DType::Float32, shape, ctx.output_data(0), memory);
  ctx.set_input(1, DType::Float32, shape, ctx.output_data(1), memory);
  ctx.run();
  expect_c(z, x, "each given back as itself");
}

}  // namespace tessel_test
