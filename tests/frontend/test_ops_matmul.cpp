// Gemm and MatMul (frontend/ops/nn.cpp) on hand-built graphs at odd shapes: transposes, alpha and
// beta, C broadcast or left out, numpy matmul with 1-D operands and broadcast batch axes; each
// checked with the reference interpreter and the compiled default schedule against loops written
// here, each one Sum stage the schedules recognise as a contraction; and MatMul + bias + erf-GELU
// built in one subgraph.
#include <catch2/catch.hpp>
#include <cmath>

#include "frontend/op_library.h"
#include "schedule/te/error.h"
#include "search/schedule_patterns.h"
#include "tests/frontend/inline_build.h"

using namespace tessel;
using namespace tessel_test;

namespace {

using Index = std::vector<int64_t>;

// numpy matmul: a 1-D a is a row, a 1-D b a column, their axis dropped from the result; batch
// axes broadcast.
Array naive_matmul(const Array& a, const Array& b) {
  const Index as = a.shape.size() == 1 ? Index{1, a.shape[0]} : a.shape;
  const Index bs = b.shape.size() == 1 ? Index{b.shape[0], 1} : b.shape;
  const size_t batch = std::max(as.size(), bs.size()) - 2;
  Index shape(batch, 1);
  for (size_t d = 0; d < batch; ++d) {
    const int64_t ea = d + as.size() >= batch + 2 ? as[d + as.size() - batch - 2] : 1;
    const int64_t eb = d + bs.size() >= batch + 2 ? bs[d + bs.size() - batch - 2] : 1;
    shape[d] = std::max(ea, eb);
  }
  const int64_t m = as[as.size() - 2], n = bs.back(), k = as.back();
  Index full = shape;
  full.push_back(m);
  full.push_back(n);
  // Row-major reads of the promoted operands, batch axes of extent 1 broadcast.
  auto read = [](const Array& x, const Index& promoted, const Index& batch_index, int64_t r, int64_t c) {
    int64_t flat = 0;
    const size_t nb = promoted.size() - 2;
    for (size_t d = 0; d < nb; ++d) {
      const int64_t i = promoted[d] == 1 ? 0 : batch_index[batch_index.size() - nb + d];
      flat = flat * promoted[d] + i;
    }
    flat = (flat * promoted[nb] + r) * promoted[nb + 1] + c;
    return x.values[flat];
  };
  Array out = make_array(full, [&](const Index& i) {
    const Index bi(i.begin(), i.end() - 2);
    double sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) sum += read(a, as, bi, i[batch], kk) * read(b, bs, bi, kk, i[batch + 1]);
    return sum;
  });
  if (a.shape.size() == 1) full.erase(full.end() - 2);
  if (b.shape.size() == 1) full.pop_back();
  out.shape = full;
  return out;
}

Array transpose(const Array& x) {
  return make_array({x.shape[1], x.shape[0]}, [&](const Index& i) { return x.at({i[1], i[0]}); });
}

void check_matmul(const Array& a, const Array& b) {
  const Array want = naive_matmul(a, b);
  OpGraph g;
  g.input("a", a).input("b", b).node("MatMul", {"a", "b"}, {{"y", want.shape}});
  const Built built = build_inlined(g, "y");
  CHECK(built.dag.ops().size() == 3);  // two placeholders, one Sum stage
  check_built(g, built, want);
  // A matrix-vector product has no axis for register tiling; every matrix product is a contraction.
  if (a.shape.size() > 1 && b.shape.size() > 1) CHECK(find_contraction(built.dag) != nullptr);
}

}  // namespace

TEST_CASE("MatMul: 2-D, batched with broadcast batch axes, 1-D operands", "[frontend][ops]") {
  check_matmul(random_array({7, 13}, 1), random_array({13, 61}, 2));
  check_matmul(random_array({3, 7, 13}, 3), random_array({13, 5}, 4));
  check_matmul(random_array({2, 1, 7, 13}, 5), random_array({3, 13, 5}, 6));
  check_matmul(random_array({13}, 7), random_array({3, 13, 5}, 8));
  check_matmul(random_array({3, 7, 13}, 9), random_array({13}, 10));
  check_matmul(random_array({61}, 11), random_array({61}, 12));
}

TEST_CASE("MatMul refuses inner extents that differ and batch axes that do not broadcast", "[frontend][ops]") {
  OpGraph g;
  g.input("a", random_array({7, 13}, 13)).input("b", random_array({12, 5}, 14));
  g.node("MatMul", {"a", "b"}, {{"y", {7, 5}}});
  CHECK_THROWS_WITH(build_inlined(g, "y"), Catch::Contains("node 'MatMul_0' (MatMul)") && Catch::Contains("inner"));
  OpGraph h;
  h.input("a", random_array({2, 7, 13}, 15)).input("b", random_array({3, 13, 5}, 16));
  h.node("MatMul", {"a", "b"}, {{"y", {3, 7, 5}}});
  CHECK_THROWS_WITH(build_inlined(h, "y"), Catch::Contains("do not broadcast"));
}

TEST_CASE("Gemm: transA, transB, alpha, beta, C broadcast, scalar or left out", "[frontend][ops]") {
  const Array a = random_array({7, 13}, 17), b = random_array({13, 61}, 18);
  const Array product = naive_matmul(a, b);
  struct Case {
    bool ta, tb;
    double alpha, beta;
    Index c_shape;  // empty: no C
  };
  for (const Case& k : {Case{false, false, 1, 1, {61}}, Case{true, false, 0.5, 2, {7, 1}}, Case{false, true, 1, 1, {}},
                        Case{true, true, 2, 0.25, {7, 61}}, Case{false, true, 0.5, 1, {}}}) {
    INFO("transA " << k.ta << " transB " << k.tb << " alpha " << k.alpha << " beta " << k.beta);
    const Array c = random_array(k.c_shape.empty() ? Index{1} : k.c_shape, 19);
    OpGraph g;
    g.input("a", k.ta ? transpose(a) : a).input("b", k.tb ? transpose(b) : b);
    std::vector<std::string> inputs = {"a", "b"};
    if (!k.c_shape.empty()) {
      g.input("c", c);
      inputs.push_back("c");
    }
    g.node("Gemm", inputs, {{"y", {7, 61}}},
           {{"transA", int64_t{k.ta}}, {"transB", int64_t{k.tb}}, {"alpha", k.alpha}, {"beta", k.beta}});
    const Built built = build_inlined(g, "y");
    CHECK(find_contraction(built.dag) != nullptr);
    check_built(g, built, make_array({7, 61}, [&](const Index& i) {
                  Index ci;  // C broadcast: right-aligned, unit axes read at 0
                  for (size_t d = 0; d < k.c_shape.size(); ++d)
                    ci.push_back(k.c_shape[d] == 1 ? 0 : i[2 - k.c_shape.size() + d]);
                  return k.alpha * product.at(i) + (k.c_shape.empty() ? 0.0 : k.beta * c.at(ci));
                }));
  }
  SECTION("a one-element C constant is an immediate") {
    OpGraph g;
    g.input("a", a).input("b", b).floats("c", {0.75f});
    g.node("Gemm", {"a", "b", "c"}, {{"y", {7, 61}}});
    const Built built = build_inlined(g, "y");
    CHECK(built.input_values == std::vector<std::string>{"a", "b"});
    check_built(g, built, make_array({7, 61}, [&](const Index& i) { return product.at(i) + 0.75; }));
  }
}

TEST_CASE("a one-row Gemm with B stored [N, K] is N dot products, and a computed operand becomes a stage",
          "[frontend][ops]") {
  const Array x = random_array({1, 61}, 23), w = random_array({13, 61}, 24), bias = random_array({13}, 25);
  for (int64_t ta : {0, 1}) {
    OpGraph g;
    g.input("x", ta ? transpose(x) : x).input("w", w).input("bias", bias);
    g.node("Gemm", {"x", "w", "bias"}, {{"y", {1, 13}}}, {{"transA", ta}, {"transB", int64_t{1}}});
    const Built b = build_inlined(g, "y");
    CHECK(b.dag.op("gemv0").shape == Index{13});
    const Array product = naive_matmul(x, transpose(w));
    check_built(g, b, make_array({1, 13}, [&](const Index& i) { return product.at(i) + bias.at({i[1]}); }));
  }
  // Relu(a) read by the matmul would hide the product of two reads: it is computed first.
  const Array a = random_array({7, 13}, 26), m = random_array({13, 5}, 27);
  OpGraph g;
  g.input("a", a).input("m", m);
  g.node("Relu", {"a"}, {{"r", {7, 13}}}).node("MatMul", {"r", "m"}, {{"y", {7, 5}}});
  const Built b = build_inlined(g, "y");
  CHECK(find_contraction(b.dag) == &b.dag.op("matmul1"));
  check_built(g, b, naive_matmul(make_array({7, 13}, [&](const Index& i) { return std::max(a.at(i), 0.0); }), m));
}

TEST_CASE("MatMul -> Add(bias) -> erf-GELU pieces in one subgraph: one matmul stage and one output stage",
          "[frontend][ops]") {
  const Array x = random_array({3, 7, 13}, 20), w = random_array({13, 61}, 21), bias = random_array({61}, 22);
  OpGraph g;
  g.input("x", x).input("w", w).input("bias", bias);
  g.floats("sqrt2", {1.41421356f}).floats("one", {1.0f}).floats("half", {0.5f});
  g.node("MatMul", {"x", "w"}, {{"m", {3, 7, 61}}})
      .node("Add", {"m", "bias"}, {{"h", {3, 7, 61}}})
      .node("Div", {"h", "sqrt2"}, {{"s", {3, 7, 61}}})
      .node("Erf", {"s"}, {{"e", {3, 7, 61}}})
      .node("Add", {"e", "one"}, {{"e1", {3, 7, 61}}})
      .node("Mul", {"h", "e1"}, {{"p", {3, 7, 61}}})
      .node("Mul", {"p", "half"}, {{"y", {3, 7, 61}}});
  const Built b = build_inlined(g, "y");
  CHECK(b.input_values == std::vector<std::string>{"x", "w", "bias"});
  CHECK(b.dag.ops().size() == 5);  // three placeholders, the matmul, the output
  CHECK(find_contraction(b.dag) == &b.dag.op("matmul0"));
  const Array m = naive_matmul(x, w);
  check_built(g, b, make_array(m.shape, [&](const Index& i) {
                const double h = m.at(i) + bias.at({i[2]});
                return h * (std::erf(h / static_cast<double>(1.41421356f)) + 1) * 0.5;
              }));
}

TEST_CASE("a broadcast epilogue may give the output more axes than the matmul", "[frontend][ops]") {
  const Array a = random_array({7, 13}, 28), b = random_array({13, 5}, 29), r = random_array({3, 7, 5}, 30);
  OpGraph g;
  g.input("a", a).input("b", b).input("r", r);
  g.node("MatMul", {"a", "b"}, {{"m", {7, 5}}}).node("Add", {"m", "r"}, {{"y", {3, 7, 5}}});
  const Array m = naive_matmul(a, b);
  check_inlined(g, "y", make_array({3, 7, 5}, [&](const Index& i) { return m.at({i[1], i[2]}) + r.at(i); }));
}
