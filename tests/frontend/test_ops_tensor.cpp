// The injective ONNX ops (frontend/ops/tensor*.cpp) on hand-built one-node graphs at odd shapes:
// each result from the reference interpreter and from the default CPU schedule compiled with LLVM,
// compared with loops written here from the ONNX spec; and the variants the ops refuse.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>

#include "tests/frontend/op_check.h"

using namespace tessel;
using namespace tessel_test;

namespace {

using Index = std::vector<int64_t>;

// A reshape keeps the row-major order: the same values under another shape.
Array reshape_of(const Array& x, const Index& shape) { return Array{x.dtype, shape, x.values}; }

// numpy.pad's reflect mode, written as repeated reflection.
int64_t reflect_index(int64_t j, int64_t dim) {
  if (dim == 1) return 0;
  while (j < 0 || j >= dim) j = j < 0 ? -j : 2 * (dim - 1) - j;
  return j;
}

}  // namespace

TEST_CASE("Flatten, Reshape, Squeeze and Unsqueeze keep the row-major order", "[frontend][ops]") {
  const Array x = random_array({3, 5, 7}, 1);
  SECTION("Flatten at axis 1, -1 and 0") {
    for (auto [axis, shape] : {std::pair<int64_t, Index>{1, {3, 35}}, {-1, {15, 7}}, {0, {1, 105}}}) {
      OpGraph g;
      g.input("x", x).node("Flatten", {"x"}, {{"y", shape}}, {{"axis", axis}});
      check_op(g, "y", reshape_of(x, shape));
    }
  }
  SECTION("Reshape with 0 (copy the input's dimension) and -1 (inferred)") {
    OpGraph g;
    g.input("x", x).ints("shape", {0, -1}).node("Reshape", {"x", "shape"}, {{"y", {3, 35}}});
    check_op(g, "y", reshape_of(x, {3, 35}));
  }
  SECTION("Reshape that splits and merges dimensions") {
    const Array w = random_array({6, 13, 2}, 2);
    OpGraph g;
    g.input("w", w).ints("shape", {2, 3, 26}).node("Reshape", {"w", "shape"}, {{"y", {2, 3, 26}}});
    check_op(g, "y", reshape_of(w, {2, 3, 26}));
  }
  SECTION("a reshape that only splits the input's dimensions reads affinely") {
    OpGraph g;
    g.input("x", x).ints("shape", {-1}).node("Reshape", {"x", "shape"}, {{"y", {105}}});
    check_op(g, "y", reshape_of(x, {105}));
    const Array w = random_array({3, 35}, 2);
    OpGraph h;
    h.input("w", w).ints("shape", {3, 1, 5, 7}).node("Reshape", {"w", "shape"}, {{"y", {3, 1, 5, 7}}});
    check_op(h, "y", reshape_of(w, {3, 1, 5, 7}));
    const std::string text = build_subgraph(h, "y").dag.to_text();
    CHECK(text.find("floordiv") == std::string::npos);
    CHECK(text.find("floormod") == std::string::npos);
  }
  SECTION("Squeeze with an axes input, without axes, and with the attribute before opset 13") {
    const Array u = random_array({1, 7, 1, 13}, 3);
    OpGraph g;
    g.input("u", u).ints("axes", {-2}).node("Squeeze", {"u", "axes"}, {{"y", {1, 7, 13}}});
    check_op(g, "y", reshape_of(u, {1, 7, 13}));
    OpGraph all;
    all.input("u", u).node("Squeeze", {"u"}, {{"y", {7, 13}}});
    check_op(all, "y", reshape_of(u, {7, 13}));
    OpGraph old(11);
    old.input("u", u).node("Squeeze", {"u"}, {{"y", {7, 1, 13}}}, {{"axes", Index{0}}});
    check_op(old, "y", reshape_of(u, {7, 1, 13}));
  }
  SECTION("Unsqueeze with axes counted in the output's rank") {
    const Array v = random_array({7, 13}, 4);
    OpGraph g;
    g.input("v", v).ints("axes", {0, -1}).node("Unsqueeze", {"v", "axes"}, {{"y", {1, 7, 13, 1}}});
    check_op(g, "y", reshape_of(v, {1, 7, 13, 1}));
    OpGraph old(11);
    old.input("v", v).node("Unsqueeze", {"v"}, {{"y", {7, 1, 13}}}, {{"axes", Index{1}}});
    check_op(old, "y", reshape_of(v, {7, 1, 13}));
  }
}

TEST_CASE("Transpose permutes indices, reversing them by default", "[frontend][ops]") {
  const Array x = random_array({3, 5, 7}, 5);
  OpGraph g;
  g.input("x", x).node("Transpose", {"x"}, {{"y", {7, 3, 5}}}, {{"perm", Index{2, 0, 1}}});
  check_op(g, "y", make_array({7, 3, 5}, [&](const Index& o) { return x.at({o[1], o[2], o[0]}); }));
  OpGraph r;
  r.input("x", x).node("Transpose", {"x"}, {{"y", {7, 5, 3}}});
  check_op(r, "y", make_array({7, 5, 3}, [&](const Index& o) { return x.at({o[2], o[1], o[0]}); }));
}

TEST_CASE("Expand broadcasts and Tile repeats", "[frontend][ops]") {
  const Array x = random_array({7, 1}, 6);
  OpGraph g;
  g.input("x", x).ints("shape", {3, 1, 13}).node("Expand", {"x", "shape"}, {{"y", {3, 7, 13}}});
  check_op(g, "y", make_array({3, 7, 13}, [&](const Index& o) { return x.at({o[1], 0}); }));
  const Array t = random_array({3, 1, 5}, 7);
  OpGraph h;
  h.input("t", t).ints("repeats", {2, 4, 1}).node("Tile", {"t", "repeats"}, {{"y", {6, 4, 5}}});
  check_op(h, "y", make_array({6, 4, 5}, [&](const Index& o) { return t.at({o[0] % 3, 0, o[2]}); }));
}

TEST_CASE("Concat selects among its inputs along the axis", "[frontend][ops]") {
  const Array a = random_array({2, 3, 5}, 8), b = random_array({2, 4, 5}, 9), c = random_array({2, 1, 5}, 10);
  for (int64_t axis : {1, -2}) {
    OpGraph g;
    g.input("a", a).input("b", b).input("c", c).node("Concat", {"a", "b", "c"}, {{"y", {2, 8, 5}}}, {{"axis", axis}});
    check_op(g, "y", make_array({2, 8, 5}, [&](const Index& o) {
               if (o[1] < 3) return a.at(o);
               if (o[1] < 7) return b.at({o[0], o[1] - 3, o[2]});
               return c.at({o[0], 0, o[2]});
             }));
  }
}

TEST_CASE("Slice: negative and out-of-range bounds, negative steps, axes", "[frontend][ops]") {
  const Array x = random_array({13, 61}, 11);
  SECTION("negative starts and ends past the end are clamped") {
    OpGraph g;
    g.input("x", x).ints("starts", {-5, 2}).ints("ends", {1000, -3});
    g.node("Slice", {"x", "starts", "ends"}, {{"y", {5, 56}}});
    check_op(g, "y", make_array({5, 56}, [&](const Index& o) { return x.at({8 + o[0], 2 + o[1]}); }));
  }
  SECTION("negative step to the start (INT64_MIN end), on a negative axis") {
    OpGraph g;
    g.input("x", x).ints("starts", {-1}).ints("ends", {INT64_MIN}).ints("axes", {-2}).ints("steps", {-3});
    g.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {{"y", {5, 61}}});
    check_op(g, "y", make_array({5, 61}, [&](const Index& o) { return x.at({12 - 3 * o[0], o[1]}); }));
  }
  SECTION("step 7 on axis 1 and a reversed range on axis 0") {
    OpGraph g;
    g.input("x", x).ints("starts", {3, 10}).ints("ends", {60, 0}).ints("axes", {1, 0}).ints("steps", {7, -4});
    g.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {{"y", {3, 9}}});
    check_op(g, "y", make_array({3, 9}, [&](const Index& o) { return x.at({10 - 4 * o[0], 3 + 7 * o[1]}); }));
  }
}

TEST_CASE("Slice: steps longer than the axis take one element", "[frontend][ops]") {
  const Array x = random_array({13, 61}, 42);
  OpGraph g;
  g.input("x", x).ints("starts", {2, -1}).ints("ends", {INT64_MAX, INT64_MIN}).ints("axes", {1, 0});
  g.ints("steps", {INT64_MAX, INT64_MIN}).node("Slice", {"x", "starts", "ends", "axes", "steps"}, {{"y", {1, 1}}});
  check_op(g, "y", make_array({1, 1}, [&](const Index&) { return x.at({12, 2}); }));
}

TEST_CASE("Split into uneven parts from the split input and into equal parts", "[frontend][ops]") {
  const Array x = random_array({7, 13}, 12);
  OpGraph g;
  g.input("x", x).ints("split", {3, 6, 4});
  g.node("Split", {"x", "split"}, {{"a", {7, 3}}, {"b", {7, 6}}, {"c", {7, 4}}}, {{"axis", int64_t{-1}}});
  check_op(g, "b", make_array({7, 6}, [&](const Index& o) { return x.at({o[0], 3 + o[1]}); }));
  check_op(g, "c", make_array({7, 4}, [&](const Index& o) { return x.at({o[0], 9 + o[1]}); }));
  const Array y = random_array({6, 5}, 13);
  OpGraph e;
  e.input("y", y).node("Split", {"y"}, {{"a", {2, 5}}, {"b", {2, 5}}, {"c", {2, 5}}});
  check_op(e, "c", make_array({2, 5}, [&](const Index& o) { return y.at({4 + o[0], o[1]}); }));
  OpGraph old(11);
  old.input("x", x).node("Split", {"x"}, {{"a", {2, 13}}, {"b", {5, 13}}}, {{"split", Index{2, 5}}});
  check_op(old, "b", make_array({5, 13}, [&](const Index& o) { return x.at({2 + o[0], o[1]}); }));
}

TEST_CASE("Gather reads indices from data: runtime int64 indices, negative ones, axes 0 and 1", "[frontend][ops]") {
  SECTION("the embedding lookup out[b, s, h] = W[ids[b, s], h]") {
    const Array w = random_array({61, 13}, 14);
    const Array ids = int_array({2, 7}, {0, 5, 60, -1, -61, 17, 3, 42, -7, 8, 1, 59, 30, -30});
    OpGraph g;
    g.input("W", w).input("ids", ids).node("Gather", {"W", "ids"}, {{"y", {2, 7, 13}}});
    check_op(g, "y", make_array({2, 7, 13}, [&](const Index& o) {
               int64_t i = static_cast<int64_t>(ids.at({o[0], o[1]}));
               return w.at({i < 0 ? i + 61 : i, o[2]});
             }));
  }
  SECTION("axis 1 with a vector of runtime indices") {
    const Array x = random_array({5, 7, 3}, 15);
    const Array idx = int_array({4}, {6, -1, 0, -7});
    OpGraph g;
    g.input("x", x).input("idx", idx).node("Gather", {"x", "idx"}, {{"y", {5, 4, 3}}}, {{"axis", int64_t{1}}});
    check_op(g, "y", make_array({5, 4, 3}, [&](const Index& o) {
               int64_t i = static_cast<int64_t>(idx.at({o[1]}));
               return x.at({o[0], i < 0 ? i + 7 : i, o[2]});
             }));
  }
  SECTION("a constant scalar index is folded: the read stays affine") {
    const Array x = random_array({5, 7, 3}, 16);
    OpGraph g;
    g.input("x", x).ints("i", {-2}).node("Gather", {"x", "i"}, {{"y", {5, 3}}}, {{"axis", int64_t{1}}});
    check_op(g, "y", make_array({5, 3}, [&](const Index& o) { return x.at({o[0], 5, o[1]}); }));
    CHECK(build_subgraph(g, "y").dag.inputs().size() == 1);
  }
  SECTION("constant indices of rank 2 read as data") {
    const Array x = random_array({7, 3}, 17);
    OpGraph g;
    g.input("x", x).ints("i", {1, -1, 3, 0}, {2, 2}).node("Gather", {"x", "i"}, {{"y", {2, 2, 3}}});
    const int64_t rows[] = {1, 6, 3, 0};
    check_op(g, "y", make_array({2, 2, 3}, [&](const Index& o) { return x.at({rows[o[0] * 2 + o[1]], o[2]}); }), {"i"});
  }
  SECTION("int64 data gathered into an int64 result") {
    const Array x = int_array({5}, {10, 20, 30, 40, 50});
    const Array idx = int_array({3}, {4, -5, 2});
    OpGraph g;
    g.input("x", x).input("idx", idx).node("Gather", {"x", "idx"}, {{"y", {3}}}, {}, {DType::Int64});
    check_op(g, "y", int_array({3}, {50, 10, 30}));
  }
}

TEST_CASE("injective ops move int64 and bool tensors", "[frontend][ops]") {
  Array mask_a = make_array(
      {3, 2}, [](const Index& i) { return (i[0] + i[1]) % 2; }, DType::Bool);
  Array mask_b = make_array(
      {3, 5}, [](const Index& i) { return i[1] == 4 || i[0] == 1; }, DType::Bool);
  OpGraph g;
  g.input("a", mask_a)
      .input("b", mask_b)
      .node("Concat", {"a", "b"}, {{"y", {3, 7}}}, {{"axis", int64_t{-1}}}, {DType::Bool});
  check_op(g, "y",
           make_array(
               {3, 7},
               [&](const Index& o) {
                 return o[1] < 2 ? mask_a.at(o) : mask_b.at({o[0], o[1] - 2});
               },
               DType::Bool));
  const Array ids = int_array({2, 3}, {4, -5, 6, 7, 8, 9});
  OpGraph p;
  p.input("ids", ids).ints("pads", {0, 1, 1, 2}).ints("value", {7});
  p.node("Pad", {"ids", "pads", "value"}, {{"y", {3, 6}}}, {}, {DType::Int64});
  check_op(p, "y",
           make_array(
               {3, 6},
               [&](const Index& o) {
                 return o[0] < 2 && o[1] >= 1 && o[1] < 4 ? ids.at({o[0], o[1] - 1}) : 7.0;
               },
               DType::Int64));
  OpGraph s;
  s.input("b", mask_b).ints("starts", {-1}).ints("ends", {-100}).ints("axes", {1}).ints("steps", {-2});
  s.node("Slice", {"b", "starts", "ends", "axes", "steps"}, {{"y", {3, 3}}}, {}, {DType::Bool});
  check_op(s, "y",
           make_array(
               {3, 3},
               [&](const Index& o) {
                 return mask_b.at({o[0], 4 - 2 * o[1]});
               },
               DType::Bool));
}

// Element counts that are multiples of 16 make the default schedule's fused loop split into whole
// vectors: data-dependent reads become gathers, Select's reads masked loads.
TEST_CASE("injective ops in whole vectors: gathers, masked loads, bool vectors", "[frontend][ops]") {
  const Array w = random_array({61, 32}, 40);
  const Array ids = int_array({2, 7}, {0, 5, 60, -1, -61, 17, 3, 42, -7, 8, 1, 59, 30, -30});
  OpGraph g;
  g.input("W", w).input("ids", ids).node("Gather", {"W", "ids"}, {{"y", {2, 7, 32}}});
  check_op(g, "y", make_array({2, 7, 32}, [&](const Index& o) {
             int64_t i = static_cast<int64_t>(ids.at({o[0], o[1]}));
             return w.at({i < 0 ? i + 61 : i, o[2]});
           }));
  const Array x = random_array({5, 7}, 41);
  OpGraph p;
  p.input("x", x).ints("pads", {1, 4, 2, 5}).node("Pad", {"x", "pads"}, {{"y", {8, 16}}});
  check_op(p, "y", make_array({8, 16}, [&](const Index& o) {
             return o[0] >= 1 && o[0] < 6 && o[1] >= 4 && o[1] < 11 ? x.at({o[0] - 1, o[1] - 4}) : 0.0;
           }));
  Array a = make_array(
      {4, 4}, [](const Index& i) { return i[0] == i[1]; }, DType::Bool);
  Array b = make_array(
      {4, 12}, [](const Index& i) { return i[1] % 3 == 0; }, DType::Bool);
  OpGraph c;
  c.input("a", a).input("b", b).node("Concat", {"a", "b"}, {{"y", {4, 16}}}, {{"axis", int64_t{1}}}, {DType::Bool});
  check_op(c, "y",
           make_array(
               {4, 16},
               [&](const Index& o) {
                 return o[1] < 4 ? a.at(o) : b.at({o[0], o[1] - 4});
               },
               DType::Bool));
}

// The interpreter stores every tensor in double; Gather's index (an Int64 read) and a copy of an
// Int64 or Bool tensor read it back as an exact integer.
TEST_CASE("the reference interpreter reads int64 tensors as indices", "[frontend][ops]") {
  const Array w = random_array({7, 3}, 20);
  OpGraph g;
  g.input("W", w).input("ids", int_array({2}, {6, -1})).node("Gather", {"W", "ids"}, {{"y", {2, 3}}});
  const Built b = build_subgraph(g, "y");
  CHECK(first_difference(run_reference(g, b), make_array({2, 3}, [&](const Index& o) {
                           return w.at({6, o[1]});
                         })) == "");
}

TEST_CASE("Pad: constant (with a value and negative pads), reflect and edge modes", "[frontend][ops]") {
  const Array x = random_array({5, 7}, 18);
  auto padded = [&](const std::string& mode, Index pads, Index shape) {
    OpGraph g;
    g.input("x", x).ints("pads", pads).floats("value", {1.5f});
    g.node("Pad", {"x", "pads", "value"}, {{"y", shape}}, {{"mode", mode}});
    const int64_t top = pads[0], left = pads[1];
    check_op(g, "y", make_array(shape, [&](const Index& o) {
               int64_t i = o[0] - top, j = o[1] - left;
               if (mode == "reflect") return x.at({reflect_index(i, 5), reflect_index(j, 7)});
               if (mode == "edge") return x.at({std::clamp<int64_t>(i, 0, 4), std::clamp<int64_t>(j, 0, 6)});
               return i >= 0 && i < 5 && j >= 0 && j < 7 ? x.at({i, j}) : 1.5;
             }));
  };
  padded("constant", {1, 2, 0, 3}, {6, 12});
  padded("constant", {-1, 2, -2, 0}, {2, 9});
  padded("reflect", {2, 3, 4, 1}, {11, 11});
  padded("reflect", {0, 9, 0, 8}, {5, 24});  // pads longer than the axis reflect again (numpy)
  padded("edge", {3, 0, 1, 5}, {9, 12});
}

TEST_CASE("injective ops refuse what they cannot compile, naming the node", "[frontend][ops]") {
  const Array x = random_array({3, 5}, 19);
  auto refused = [](const OpGraph& g, const std::string& message) {
    CHECK_THROWS_WITH(build_subgraph(g, "y"),
                      Catch::Contains("(" + g.graph.nodes.back().op_type + ")") && Catch::Contains(message));
  };
  OpGraph shape_from_data;
  shape_from_data.input("x", x).input("s", int_array({2}, {5, 3}));
  shape_from_data.node("Reshape", {"x", "s"}, {{"y", {5, 3}}});
  refused(shape_from_data, "must be a constant (tessel compiles static shapes)");
  OpGraph wrong_shape;
  wrong_shape.input("x", x).ints("s", {-1}).node("Reshape", {"x", "s"}, {{"y", {16}}});
  refused(wrong_shape, "shape inference gave [16]");
  OpGraph zero_step;
  zero_step.input("x", x).ints("a", {0}).ints("b", {2}).ints("ax", {0}).ints("st", {0});
  zero_step.node("Slice", {"x", "a", "b", "ax", "st"}, {{"y", {2, 5}}});
  refused(zero_step, "a step is 0");
  OpGraph empty_slice;
  empty_slice.input("x", x).ints("a", {2}).ints("b", {1}).node("Slice", {"x", "a", "b"}, {{"y", {1, 5}}});
  refused(empty_slice, "empty tensors are not supported");
  OpGraph bad_perm;
  bad_perm.input("x", x).node("Transpose", {"x"}, {{"y", {5, 3}}}, {{"perm", Index{1, 1}}});
  refused(bad_perm, "not a permutation");
  OpGraph wrap;
  wrap.input("x", x)
      .ints("pads", {1, 1, 1, 1})
      .node("Pad", {"x", "pads"}, {{"y", {5, 7}}}, {{"mode", std::string("wrap")}});
  refused(wrap, "mode 'wrap' is not supported");
  OpGraph index_out;
  index_out.input("x", x).ints("i", {3}).node("Gather", {"x", "i"}, {{"y", {5}}});
  refused(index_out, "index 3 is outside an axis of extent 3");
  OpGraph uneven;
  uneven.input("x", x).node("Split", {"x"}, {{"a", {1, 5}}, {"y", {1, 5}}});
  refused(uneven, "does not split into 2 equal parts");
  OpGraph shape_op;
  shape_op.input("x", x).node("Shape", {"x"}, {{"y", {2}}}, {}, {DType::Int64});
  refused(shape_op, "must be folded into a constant");
  OpGraph range;
  range.input("n", int_array({1}, {4})).ints("a", {0}).ints("d", {1});
  range.node("Range", {"a", "n", "d"}, {{"y", {4}}}, {}, {DType::Int64});
  refused(range, "input 1 ('n') is not a constant");
}
