// Every op template at odd shapes: the reference interpreter's output must equal an independent,
// hand-written loop computed here in double.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/ops/op_library.h"

using namespace tessel;

namespace {

struct Run {
  ComputeDAG dag;
  HostTensors in;
  ReferenceTensors out;
};

Run run(const std::string& op, const OpParams& params, uint64_t seed = 7) {
  Run r{build_op(op, params), {}, {}};
  r.in = make_random_inputs(r.dag, seed);
  r.out = evaluate_reference(r.dag, r.in);
  return r;
}

// Input as doubles, to keep the hand-written references free of float rounding.
std::vector<double> in(const Run& r, const std::string& name) {
  const std::vector<float>& v = r.in.at(name);
  return std::vector<double>(v.begin(), v.end());
}

void require_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-9) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    REQUIRE(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i])));
  }
}


double activation(double x, const std::string& act) {
  if (act == "relu") return x > 0 ? x : 0;
  if (act == "sigmoid") return 1 / (1 + std::exp(-x));
  if (act == "silu") return x / (1 + std::exp(-x));
  if (act == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (act == "gelu_tanh") return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  return x;
}

std::vector<double> matmul_ref(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k) {
  std::vector<double> c(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int t = 0; t < k; ++t) s += a[i * k + t] * b[t * n + j];
      c[i * n + j] = s;
    }
  return c;
}

struct ConvCase {
  int n, c, h, w, f, kh, kw, stride, pad, dilation, groups, bias;
  std::string act;
};

std::vector<double> conv_ref(const ConvCase& p, const std::vector<double>& x, const std::vector<double>& wt,
                             const std::vector<double>& b, int& oh, int& ow) {
  oh = (p.h + 2 * p.pad - p.dilation * (p.kh - 1) - 1) / p.stride + 1;
  ow = (p.w + 2 * p.pad - p.dilation * (p.kw - 1) - 1) / p.stride + 1;
  int cg = p.c / p.groups, fg = p.f / p.groups;
  std::vector<double> y(static_cast<size_t>(p.n) * p.f * oh * ow);
  for (int n = 0; n < p.n; ++n)
    for (int f = 0; f < p.f; ++f)
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) {
          double s = 0;
          int g = f / fg;
          for (int rc = 0; rc < cg; ++rc)
            for (int ry = 0; ry < p.kh; ++ry)
              for (int rx = 0; rx < p.kw; ++rx) {
                int iy = oy * p.stride + ry * p.dilation - p.pad;
                int ix = ox * p.stride + rx * p.dilation - p.pad;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                int ci = g * cg + rc;
                s += x[((n * p.c + ci) * p.h + iy) * p.w + ix] * wt[((f * cg + rc) * p.kh + ry) * p.kw + rx];
              }
          if (p.bias) s += b[f];
          y[((n * p.f + f) * oh + oy) * ow + ox] = activation(s, p.act);
        }
  return y;
}

std::vector<double> layernorm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                                  const std::vector<double>& beta, int rows, int cols, double eps) {
  std::vector<double> y(x.size());
  for (int i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (int j = 0; j < cols; ++j) mean += x[i * cols + j];
    mean /= cols;
    for (int j = 0; j < cols; ++j) var += (x[i * cols + j] - mean) * (x[i * cols + j] - mean);
    var /= cols;
    for (int j = 0; j < cols; ++j) y[i * cols + j] = (x[i * cols + j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
  }
  return y;
}

}  // namespace

TEST_CASE("matmul matches a naive triple loop", "[ops][numerics]") {
  Run r = run("matmul", {{"M", "7"}, {"N", "13"}, {"K", "61"}});
  require_close(r.out.at("C"), matmul_ref(in(r, "A"), in(r, "B"), 7, 13, 61));
}

TEST_CASE("matmul at odd sizes over many output blocks and threads matches a naive triple loop", "[ops][numerics]") {
  // 131 x 129 outputs: the interpreter's blocks of 128 outputs end mid-row and its thread chunks
  // (work 131 * 129 * 257 > 2^22 is split over the cores) end mid-block.
  Run r = run("matmul", {{"M", "131"}, {"N", "129"}, {"K", "257"}});
  require_close(r.out.at("C"), matmul_ref(in(r, "A"), in(r, "B"), 131, 129, 257));
}

TEST_CASE("dense matches matmul + bias + activation for every activation", "[ops][numerics]") {
  for (std::string act : {"none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid"})
    for (std::string bias : {"0", "1"}) {
      INFO("act=" << act << " bias=" << bias);
      Run r = run("dense", {{"M", "5"}, {"N", "13"}, {"K", "7"}, {"bias", bias}, {"act", act}});
      std::vector<double> want = matmul_ref(in(r, "X"), in(r, "W"), 5, 13, 7);
      for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 13; ++j) {
          double v = want[i * 13 + j] + (bias == "1" ? in(r, "b")[j] : 0.0);
          want[i * 13 + j] = activation(v, act);
        }
      require_close(r.out.at("Y"), want);
    }
}

TEST_CASE("gelu variants differ from each other and match their closed forms at known points", "[ops][numerics]") {
  // Independent spot checks: gelu(1) = 0.8413447460685429, gelu_tanh(1) = 0.8411919906082768.
  ComputeDAG exact = build_op("dense", {{"M", "1"}, {"N", "1"}, {"K", "1"}, {"act", "gelu"}});
  ComputeDAG tanh_form = build_op("dense", {{"M", "1"}, {"N", "1"}, {"K", "1"}, {"act", "gelu_tanh"}});
  HostTensors ones{{"X", {1.0f}}, {"W", {1.0f}}};
  REQUIRE(evaluate_reference(exact, ones).at("Y")[0] == Approx(0.8413447460685429).epsilon(1e-12));
  REQUIRE(evaluate_reference(tanh_form, ones).at("Y")[0] == Approx(0.8411919906082768).epsilon(1e-12));
}

TEST_CASE("batch_matmul matches a naive loop per batch", "[ops][numerics]") {
  Run r = run("batch_matmul", {{"B", "3"}, {"M", "7"}, {"N", "5"}, {"K", "13"}});
  std::vector<double> a = in(r, "A"), b = in(r, "B"), want;
  for (int t = 0; t < 3; ++t) {
    std::vector<double> at(a.begin() + t * 7 * 13, a.begin() + (t + 1) * 7 * 13);
    std::vector<double> bt(b.begin() + t * 13 * 5, b.begin() + (t + 1) * 13 * 5);
    std::vector<double> c = matmul_ref(at, bt, 7, 5, 13);
    want.insert(want.end(), c.begin(), c.end());
  }
  require_close(r.out.at("C"), want);
}

TEST_CASE("conv2d matches a naive convolution with padding stride dilation and groups", "[ops][numerics]") {
  std::vector<ConvCase> cases = {
      {2, 3, 11, 13, 5, 3, 3, 1, 0, 1, 1, 0, "none"},       // plain
      {1, 3, 13, 11, 4, 3, 3, 2, 1, 1, 1, 1, "relu"},       // pad + stride + bias
      {1, 2, 13, 13, 3, 3, 3, 1, 2, 2, 1, 0, "none"},       // dilation with padding
      {1, 2, 7, 9, 3, 3, 5, 3, 2, 1, 1, 1, "gelu"},         // non-square kernel, stride 3
      {2, 6, 7, 7, 9, 3, 3, 1, 1, 1, 3, 1, "silu"},         // 3 groups, F / groups = 3
      {1, 4, 9, 7, 4, 3, 3, 1, 1, 1, 4, 0, "none"},         // depthwise
      {1, 4, 9, 7, 8, 3, 3, 2, 1, 1, 4, 1, "sigmoid"},      // depthwise with multiplier 2
      {1, 3, 5, 5, 2, 5, 5, 1, 0, 1, 1, 0, "none"},         // kernel as large as the input: 1x1 output
  };
  for (const ConvCase& p : cases) {
    OpParams params{{"N", std::to_string(p.n)},          {"C", std::to_string(p.c)},
                    {"H", std::to_string(p.h)},          {"W", std::to_string(p.w)},
                    {"F", std::to_string(p.f)},          {"KH", std::to_string(p.kh)},
                    {"KW", std::to_string(p.kw)},        {"stride", std::to_string(p.stride)},
                    {"pad", std::to_string(p.pad)},      {"dilation", std::to_string(p.dilation)},
                    {"groups", std::to_string(p.groups)}, {"bias", std::to_string(p.bias)},
                    {"act", p.act}};
    INFO("C=" << p.c << " F=" << p.f << " stride=" << p.stride << " pad=" << p.pad << " dilation=" << p.dilation
              << " groups=" << p.groups);
    Run r = run("conv2d", params);
    int oh = 0, ow = 0;
    std::vector<double> want =
        conv_ref(p, in(r, "X"), in(r, "W"), p.bias ? in(r, "b") : std::vector<double>{}, oh, ow);
    const Operation& y = r.dag.ops().back();
    REQUIRE(y.name == "Y");
    REQUIRE(y.shape == std::vector<int64_t>{p.n, p.f, oh, ow});
    REQUIRE(r.dag.op("W").shape == std::vector<int64_t>{p.f, p.c / p.groups, p.kh, p.kw});
    require_close(r.out.at("Y"), want);
  }
}

TEST_CASE("conv2d in blocked channels computes the NCHW convolution on every real channel", "[ops][numerics]") {
  // The NCHW op's random inputs, laid out in blocks: X[n, c / b, y, x, c % b], W[f / b, c, ky, kx,
  // f % b], b[f / b, f % b]. Lanes past C and F hold garbage (NaN): no real output may read them.
  // With an NCHW input (layout nchw-to-*), X is the NCHW op's own; with the input in the other
  // block size (nchw8c-to-nchw16c, nchw16c-to-nchw8c), X[n, c / ib, y, x, c % ib].
  struct Case {
    int64_t c, f, stride, pad, dilation, block;
    bool depthwise;           // groups = C = F: W[C/b, KH, KW, b]
    bool plain_input = false;
    int64_t input_block = 0;  // the input's block when it differs from the output's
  };
  for (const Case& k : std::vector<Case>{{3, 5, 1, 1, 1, 8, false},
                                         {11, 13, 2, 2, 2, 8, false},
                                         {17, 20, 2, 0, 1, 16, false},
                                         {16, 16, 1, 1, 1, 16, false},
                                         {13, 13, 2, 2, 2, 8, true},
                                         {16, 16, 1, 1, 1, 16, true},
                                         {3, 20, 2, 3, 1, 16, false, true},
                                         {5, 13, 1, 1, 2, 8, false, true},
                                         {3, 16, 2, 0, 1, 16, false, true},
                                         {24, 20, 1, 1, 1, 16, false, false, 8},
                                         {17, 13, 2, 1, 1, 8, false, false, 16}}) {
    const int64_t n = 2, h = 9, w = 7, kh = 3, kw = 3, b = k.block, cg = k.depthwise ? 1 : k.c;
    OpParams params{{"N", std::to_string(n)},          {"C", std::to_string(k.c)},
                    {"H", std::to_string(h)},          {"W", std::to_string(w)},
                    {"F", std::to_string(k.f)},        {"KH", std::to_string(kh)},
                    {"KW", std::to_string(kw)},        {"stride", std::to_string(k.stride)},
                    {"pad", std::to_string(k.pad)},    {"dilation", std::to_string(k.dilation)},
                    {"bias", "1"},                     {"act", "relu"},
                    {"groups", k.depthwise ? std::to_string(k.c) : "1"}};
    INFO("C=" << k.c << " F=" << k.f << " stride=" << k.stride << " block=" << b << " depthwise=" << k.depthwise
              << " NCHW input=" << k.plain_input << " input block=" << k.input_block);
    Run plain = run("conv2d", params);
    const int64_t ib = k.input_block ? k.input_block : b;
    params["layout"] = std::string(k.plain_input    ? "nchw-to-"
                                   : k.input_block ? (ib == 8 ? "nchw8c-to-" : "nchw16c-to-")
                                                   : "") +
                       (b == 8 ? "nchw8c" : "nchw16c");
    ComputeDAG blocked = build_op("conv2d", params);
    const int64_t cb = (k.c + ib - 1) / ib, fb = (k.f + b - 1) / b;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    HostTensors in{{"X", std::vector<float>(static_cast<size_t>(n * cb * h * w * ib), nan)},
                   {"W", std::vector<float>(static_cast<size_t>(fb * cg * kh * kw * b), nan)},
                   {"b", std::vector<float>(static_cast<size_t>(fb * b), nan)}};
    const std::vector<float>&x = plain.in.at("X"), &wt = plain.in.at("W"), &bias = plain.in.at("b");
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < k.c; ++c)
        for (int64_t y = 0; y < h * w; ++y)
          in["X"][static_cast<size_t>((((i * cb + c / ib) * h * w) + y) * ib + c % ib)] =
              x[static_cast<size_t>((i * k.c + c) * h * w + y)];
    if (k.plain_input) in["X"] = x;
    for (int64_t f = 0; f < k.f; ++f) {
      for (int64_t c = 0; c < cg * kh * kw; ++c)
        in["W"][static_cast<size_t>(((f / b) * cg * kh * kw + c) * b + f % b)] =
            wt[static_cast<size_t>(f * cg * kh * kw + c)];
      in["b"][static_cast<size_t>(f)] = bias[static_cast<size_t>(f)];
    }
    const std::vector<double>& want = plain.out.at("Y");
    std::vector<double> got = evaluate_reference(blocked, in).at("Y");
    const std::vector<int64_t>& shape = plain.dag.ops().back().shape;  // N F OH OW
    REQUIRE(blocked.ops().back().shape == std::vector<int64_t>{n, fb, shape[2], shape[3], b});
    const int64_t pixels = shape[2] * shape[3];
    std::vector<double> real;  // the blocked output's real channels, in NCHW order
    for (int64_t i = 0; i < n; ++i)
      for (int64_t f = 0; f < k.f; ++f)
        for (int64_t y = 0; y < pixels; ++y)
          real.push_back(got[static_cast<size_t>(((i * fb + f / b) * pixels + y) * b + f % b)]);
    require_close(real, want);
  }
  // Grouped convolutions other than depthwise keep NCHW.
  CHECK_THROWS_WITH(build_op("conv2d", {{"N", "1"}, {"C", "4"}, {"H", "5"}, {"W", "5"}, {"F", "4"}, {"KH", "3"},
                                        {"KW", "3"}, {"groups", "2"}, {"layout", "nchw8c"}}),
                    Catch::Contains("groups=1"));
  CHECK_THROWS_WITH(build_op("conv2d", {{"N", "1"}, {"C", "4"}, {"H", "5"}, {"W", "5"}, {"F", "4"}, {"KH", "3"},
                                        {"KW", "3"}, {"groups", "4"}, {"layout", "nchw-to-nchw8c"}}),
                    Catch::Contains("an NCHW input into blocks takes groups=1"));
  CHECK_THROWS_WITH(build_op("conv2d", {{"N", "1"}, {"C", "16"}, {"H", "5"}, {"W", "5"}, {"F", "16"}, {"KH", "3"},
                                        {"KW", "3"}, {"groups", "16"}, {"layout", "nchw8c-to-nchw16c"}}),
                    Catch::Contains("an input in other blocks than the output's takes groups=1"));
}

TEST_CASE("softmax matches a stable row softmax", "[ops][numerics]") {
  Run r = run("softmax", {{"rows", "7"}, {"cols", "61"}});
  std::vector<double> x = in(r, "X"), want(x.size());
  for (int i = 0; i < 7; ++i) {
    double m = -INFINITY, s = 0;
    for (int j = 0; j < 61; ++j) m = std::max(m, x[i * 61 + j]);
    for (int j = 0; j < 61; ++j) s += std::exp(x[i * 61 + j] - m);
    for (int j = 0; j < 61; ++j) want[i * 61 + j] = std::exp(x[i * 61 + j] - m) / s;
  }
  require_close(r.out.at("Y"), want);
  // Large inputs stay finite thanks to the max stage.
  HostTensors big{{"X", std::vector<float>(7 * 61, 1000.0f)}};
  ReferenceTensors flat = evaluate_reference(r.dag, big);
  for (double v : flat.at("Y")) REQUIRE(v == Approx(1.0 / 61).epsilon(1e-12));
}

TEST_CASE("layernorm matches a two-pass loop", "[ops][numerics]") {
  Run r = run("layernorm", {{"rows", "7"}, {"cols", "13"}, {"eps", "1e-3"}});
  require_close(r.out.at("Y"), layernorm_ref(in(r, "X"), in(r, "gamma"), in(r, "beta"), 7, 13, 1e-3));
  Run d = run("layernorm", {{"rows", "3"}, {"cols", "61"}});  // default eps 1e-5
  require_close(d.out.at("Y"), layernorm_ref(in(d, "X"), in(d, "gamma"), in(d, "beta"), 3, 61, 1e-5));
}

TEST_CASE("rmsnorm matches x * rsqrt(mean(x^2) + eps) * w", "[ops][numerics]") {
  Run r = run("rmsnorm", {{"rows", "7"}, {"cols", "13"}, {"eps", "0.01"}});
  std::vector<double> x = in(r, "X"), g = in(r, "gamma"), want(x.size());
  for (int i = 0; i < 7; ++i) {
    double s = 0;
    for (int j = 0; j < 13; ++j) s += x[i * 13 + j] * x[i * 13 + j];
    double scale = 1 / std::sqrt(s / 13 + 0.01);
    for (int j = 0; j < 13; ++j) want[i * 13 + j] = x[i * 13 + j] * scale * g[j];
  }
  require_close(r.out.at("Y"), want);
}

TEST_CASE("reduce_sum matches a row sum", "[ops][numerics]") {
  Run r = run("reduce_sum", {{"rows", "13"}, {"cols", "7"}});
  std::vector<double> x = in(r, "X"), want(13, 0.0);
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 7; ++j) want[i] += x[i * 7 + j];
  require_close(r.out.at("Y"), want);
}

TEST_CASE("bias_residual_layernorm matches layernorm(x + b + r)", "[ops][numerics]") {
  Run r = run("bias_residual_layernorm", {{"rows", "5"}, {"cols", "13"}});
  std::vector<double> x = in(r, "X"), b = in(r, "b"), res = in(r, "R");
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 13; ++j) x[i * 13 + j] += b[j] + res[i * 13 + j];
  require_close(r.out.at("Y"), layernorm_ref(x, in(r, "gamma"), in(r, "beta"), 5, 13, 1e-5));
}

TEST_CASE("elementwise evaluates its expression on every element", "[ops][numerics]") {
  Run r = run("elementwise", {{"shape", "3x5x7"}, {"inputs", "3"}, {"expr", "sigmoid(relu(x)*2+1) - max(y, z) / 3"}});
  std::vector<double> x = in(r, "x"), y = in(r, "y"), z = in(r, "z"), want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = 1 / (1 + std::exp(-(std::max(x[i], 0.0) * 2 + 1))) - std::max(y[i], z[i]) / 3;
  require_close(r.out.at("Y"), want);
}
