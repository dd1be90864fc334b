// conv2d in NCHW with PyTorch semantics: an optional zero-padding stage, the Sum reduction over
// (input channel of the group, kernel row, kernel column), and an optional bias / activation stage.
#include <optional>

#include "schedule/ops/op_builders.h"
#include "schedule/te/checked_math.h"

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
  // Every size is computed checked: a pad or dilation near 2^63 is an error, never a wrapped size.
  auto checked = [&](const char* param, std::optional<int64_t> value, const std::string& what) {
    if (!value) p.fail(param, what + " is beyond the int64 range");
    return *value;
  };
  auto padded = [&](int64_t in, const char* dim) {
    std::optional<int64_t> twice = checked_mul(2, pad);
    return checked("pad", twice ? checked_add(in, *twice) : std::nullopt,
                   std::string("the padded ") + dim + " " + (dim[0] == 'h' ? "H" : "W") + " + 2 * pad");
  };
  auto dilated = [&](int64_t k, const char* param) {
    std::optional<int64_t> span = checked_mul(dilation, k - 1);
    return checked(param, span ? checked_add(*span, 1) : std::nullopt,
                   std::string("the dilated kernel dilation * (") + param + " - 1) + 1");
  };
  const int64_t padded_h = padded(h, "height"), padded_w = padded(w, "width");
  const int64_t kernel_h = dilated(kh, "KH"), kernel_w = dilated(kw, "KW");
  if (kernel_h > padded_h)
    p.fail("KH", "the dilated kernel (" + std::to_string(kernel_h) + " rows) is larger than the padded input (" +
                     std::to_string(padded_h) + " rows): the output would be empty");
  if (kernel_w > padded_w)
    p.fail("KW", "the dilated kernel (" + std::to_string(kernel_w) + " columns) is larger than the padded input (" +
                     std::to_string(padded_w) + " columns): the output would be empty");
  int64_t oh = (padded_h - kernel_h) / stride + 1, ow = (padded_w - kernel_w) / stride + 1;
  int64_t cg = c / groups, fg = f / groups;

  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {n, c, h, w}));
  ops.push_back(placeholder("W", {f, cg, kh, kw}));
  if (bias) ops.push_back(placeholder("b", {f}));

  std::string source = "X";
  if (pad > 0) {
    Axis pn{"pn", n}, pc{"pc", c}, ph{"ph", padded_h}, pw{"pw", padded_w};
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
