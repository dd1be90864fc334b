// A run's inputs copied to their places when a source may lie in a place: which sources are copied
// aside first, checked by simulating the copies in random orders; and, on this CPU, a model whose
// inputs are also its outputs, those outputs given back as its inputs, and a one-kernel model whose
// output is given back as its input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "runtime/executor.h"
#include "tests/deploy/build_test_model.h"
#include "tests/frontend/onnx_test_models.h"
#include "tests/runtime/given_back_checks.h"

namespace tessel {
namespace {

using namespace tessel_test;

ByteRange range(uintptr_t begin, uintptr_t bytes) { return {begin, begin + bytes}; }

}  // namespace

TEST_CASE("sources in another input's place are copied aside and a source in its own place is not", "[runtime]") {
  const std::vector<ByteRange> places = {range(0, 64), range(64, 64), {}};
  // 0: from outside; 1: from input 0's place; 2: used where it is, from input 1's place
  CHECK(sources_to_set_aside({range(1000, 64), range(0, 64), range(64, 64)}, places) ==
        std::vector<bool>{false, true, true});
  // a source exactly its own place needs no copy; one straddling its own place does
  CHECK(sources_to_set_aside({range(0, 64), range(96, 64), {}}, places) == std::vector<bool>{false, true, false});
  // host sources (empty ranges) never alias
  CHECK(sources_to_set_aside({{}, {}, {}}, places) == std::vector<bool>{false, false, false});
  // touching is not overlapping
  CHECK(sources_to_set_aside({range(128, 8), range(200, 8), {}}, places) == std::vector<bool>{false, false, false});
}

TEST_CASE("inputs copied after the set-aside get the bytes they had before the run in random orders", "[runtime]") {
  // Memory of 256 bytes; n inputs of random sizes at random disjoint places; each source random
  // inside that memory (often in a place) or outside it. Copy the flagged sources aside, then every
  // input to its place in a random order: each place must end up holding its source's old bytes.
  std::mt19937 rng(11);
  int aliased = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 4);
    std::vector<uint8_t> memory(256), outside(256);
    for (size_t i = 0; i < memory.size(); ++i) {
      memory[i] = static_cast<uint8_t>(rng());
      outside[i] = static_cast<uint8_t>(rng());
    }
    std::vector<ByteRange> places, sources;
    std::vector<const uint8_t*> from;
    uintptr_t next = rng() % 8;
    for (int i = 0; i < n; ++i) {
      const uintptr_t bytes = 1 + rng() % 40;
      places.push_back(range(next, bytes));
      next += bytes + rng() % 8;
      const bool inside = rng() % 3 != 0;
      const uintptr_t at = rng() % (256 - bytes);
      sources.push_back(inside ? range(at, bytes) : ByteRange{});  // outside: another memory, no alias
      from.push_back(inside ? memory.data() + at : outside.data() + at);
    }
    std::vector<std::vector<uint8_t>> want;
    for (int i = 0; i < n; ++i) want.emplace_back(from[i], from[i] + (places[i].end - places[i].begin));
    const std::vector<bool> aside = sources_to_set_aside(sources, places);
    std::vector<std::vector<uint8_t>> copies(n);
    for (int i = 0; i < n; ++i)
      if (aside[i]) {
        copies[i] = want[i];
        from[i] = copies[i].data();
        ++aliased;
      }
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (int i : order) {
      uint8_t* to = memory.data() + places[i].begin;
      const size_t bytes = places[i].end - places[i].begin;
      if (from[i] == to) continue;
      INFO("trial " << trial << ", input " << i);
      REQUIRE((from[i] + bytes <= to || to + bytes <= from[i]));  // a copy that overlaps itself is undefined
      std::memcpy(to, from[i], bytes);
    }
    for (int i = 0; i < n; ++i) {
      INFO("trial " << trial << ", input " << i);
      CHECK(std::equal(want[i].begin(), want[i].end(), memory.data() + places[i].begin));
    }
  }
  CHECK(aliased > 100);  // the random cases do alias
}

namespace {

// Built for this CPU with default schedules and loaded.
LoadedModel built_for_cpu(const onnx::ModelProto& proto, const TempDir& dir) {
  REQUIRE(build_test_model(proto, TargetKind::Llvm, dir));
  return LoadedModel::load(dir.file("m.tsl"));
}

}  // namespace

TEST_CASE("cpu: inputs that are also outputs given back as inputs keep the bytes they had", "[runtime]") {
  TempDir dir;
  const LoadedModel model = built_for_cpu(pass_through_model(), dir);
  const ModelArtifact& a = model.artifact();
  REQUIRE(a.inputs.size() == 2);
  REQUIRE(a.outputs.size() == 3);
  REQUIRE(a.outputs[0] == a.inputs[0]);  // what the test is about: one buffer, input and output
  REQUIRE(a.outputs[1] == a.inputs[1]);
  const PassThroughValues v = pass_through_values();
  const size_t n = v.x.size();
  // Not 64-byte aligned, as NumPy's arrays often are: the runtime copies them.
  std::vector<float> storage(3 * n + 3);
  float* x = storage.data() + 1;
  float* y = x + n + 1;
  float* z = y + n + 1;
  REQUIRE(reinterpret_cast<uintptr_t>(x) % 64 != 0);
  REQUIRE(reinterpret_cast<uintptr_t>(z) % 64 != 0);
  std::copy(v.x.begin(), v.x.end(), x);
  std::copy(v.y.begin(), v.y.end(), y);
  std::copy(v.z.begin(), v.z.end(), z);
  ExecutionContext ctx(model);
  check_outputs_given_back(ctx, MemoryKind::Host, x, y, z);
}

TEST_CASE("cpu: a one-kernel model's output given back as its input matches the same run from a copy",
          "[runtime]") {
  // y = transpose(x) * 2, x and y float[37, 37]: one kernel reads x[j][i] after it has written
  // y[i][j], which in place would be x[i][j].
  onnx::ModelProto proto = make_model();
  add_input(proto, "x", {37, 37});
  add_float_initializer(proto, "two", {1}, {2.0f});
  add_ints_attr(add_node(proto, "Transpose", {"x"}, {"t"}, "transpose"), "perm", {1, 0});
  add_node(proto, "Mul", {"t", "two"}, {"y"}, "double");
  add_output(proto, "y", {37, 37});
  TempDir dir;
  const LoadedModel model = built_for_cpu(proto, dir);
  REQUIRE(model.artifact().kernels.size() == 1);
  std::vector<float> x(37 * 37), y1(x.size()), want(x.size()), got(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3f * static_cast<float>(i));
  ExecutionContext ctx(model);
  ctx.set_input(0, DType::Float32, {37, 37}, x.data());
  ctx.run();
  ctx.copy_output(0, y1.data(), MemoryKind::Host);
  ctx.set_input(0, DType::Float32, {37, 37}, y1.data());
  ctx.run();
  ctx.copy_output(0, want.data(), MemoryKind::Host);
  ctx.set_input(0, DType::Float32, {37, 37}, x.data());
  ctx.run();
  ctx.set_input(0, DType::Float32, {37, 37}, ctx.output_data(0));  // the output's own block
  ctx.run();
  ctx.copy_output(0, got.data(), MemoryKind::Host);
  CHECK(got == want);
}

}  // namespace tessel
