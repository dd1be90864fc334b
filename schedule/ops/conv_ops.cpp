// conv2d in NCHW with PyTorch semantics: an optional zero-padding stage, the Sum reduction over
// (input channel of the group, kernel row, kernel column), and an optional bias / activation stage.
#include "schedule/ops/op_builders.h"

namespace tessel::ops_detail {

namespace {

// a * k, leaving out a multiplication by one so the canonical text stays readable.
Expr scaled(const Expr& a, int64_t k) { return k == 1 ? a : a * make_int(k); }

}  // namespace

ComputeDAG build_conv2d(const ParamReader& p) {
  int64_t n = p.positive_int("N"), c = p.positive_int("C"), h = p.positive_int("H"), w = p.positive_int("W");
  int64_t f = p.positive_int("F"), kh = p.positive_int("KH"), kw = p.positive_int("KW");
  int64_t stride = p.positive_int("stride"), pad = p.non_negative_int("pad");
  int64_t dilation = p.positive_int("dilation"), groups = p.positive_int("groups");
  bool bias = p.flag("bias");
  const std::string& act = p.choice("act");

  if (c % groups != 0)
    p.fail("groups", "input channels C=" + std::to_string(c) + " are not divisible by groups=" + std::to_string(groups));
  if (f % groups != 0)
    p.fail("groups", "output channels F=" + std::to_string(f) + " are not divisible by groups=" + std::to_string(groups));
  // PyTorch: out = (in + 2 pad - dilation (k - 1) - 1) / stride + 1, empty when the numerator < 0.
  int64_t span_h = h + 2 * pad - dilation * (kh - 1) - 1;
  int64_t span_w = w + 2 * pad - dilation * (kw - 1) - 1;
  if (span_h < 0)
    p.fail("KH", "the dilated kernel (" + std::to_string(dilation * (kh - 1) + 1) + " rows) is larger than the padded input (" +
                     std::to_string(h + 2 * pad) + " rows): the output would be empty");
  if (span_w < 0)
    p.fail("KW", "the dilated kernel (" + std::to_string(dilation * (kw - 1) + 1) + " columns) is larger than the padded input (" +
                     std::to_string(w + 2 * pad) + " columns): the output would be empty");
  int64_t oh = span_h / stride + 1, ow = span_w / stride + 1;
  int64_t cg = c / groups, fg = f / groups;

  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {n, c, h, w}));
  ops.push_back(placeholder("W", {f, cg, kh, kw}));
  if (bias) ops.push_back(placeholder("b", {f}));

  std::string source = "X";
  if (pad > 0) {
    Axis pn{"pn", n}, pc{"pc", c}, ph{"ph", h + 2 * pad}, pw{"pw", w + 2 * pad};
    Expr y = var(ph), x = var(pw), lo = make_int(pad);
    Expr inside = logical_and(logical_and(y >= lo, y < make_int(h + pad)), logical_and(x >= lo, x < make_int(w + pad)));
    // The select guards the read; the clamp keeps it in bounds even under eager evaluation.
    Expr yy = min(max(y - pad, make_int(0)), make_int(h - 1));
    Expr xx = min(max(x - pad, make_int(0)), make_int(w - 1));
    Expr value = make_tensor_read("X", {var(pn), var(pc), yy, xx});
    ops.push_back(compute("pad", {pn, pc, ph, pw}, make_select(inside, value, f32(0))));
    source = "pad";
  }

  bool epilogue = bias || act != "none";
  Axis an{"n", n}, af{"f", f}, ay{"oh", oh}, ax{"ow", ow};
  Axis rc{"rc", cg}, rh{"rh", kh}, rw{"rw", kw};
  Expr channel = var(rc);
  if (groups > 1) {
    Expr group = fg == 1 ? var(af) : var(af) / make_int(fg);
    channel = scaled(group, cg) + var(rc);
  }
  Expr iy = scaled(var(ay), stride) + scaled(var(rh), dilation);
  Expr ix = scaled(var(ax), stride) + scaled(var(rw), dilation);
  Expr term = make_tensor_read(source, {var(an), channel, iy, ix}) * read("W", {af, rc, rh, rw});
  const char* conv_name = epilogue ? "conv" : "Y";
  ops.push_back(reduce(conv_name, {an, af, ay, ax}, ReduceKind::Sum, {rc, rh, rw}, term));

  if (epilogue) {
    Axis n1{"n1", n}, f1{"f1", f}, y1{"oh1", oh}, x1{"ow1", ow};
    Expr v = read("conv", {n1, f1, y1, x1});
    if (bias) v = v + read("b", {f1});
    ops.push_back(compute("Y", {n1, f1, y1, x1}, apply_activation(v, act)));
  }
  return ComputeDAG(std::move(ops));
}

}  // namespace tessel::ops_detail
