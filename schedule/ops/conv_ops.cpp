// conv2d in NCHW with PyTorch semantics: an optional zero-padding stage, the Sum reduction over
// (input channel of the group, kernel row, kernel column), and an optional bias / activation stage;
// or the same with channels in blocks (layout=nchw8c / nchw16c), or reading an NCHW input into an
// output in blocks (layout=nchw-to-nchw8c / nchw-to-nchw16c: a model's first convolution, whose few
// input channels would fill a block mostly with padding), or an input in the other block size than
// the output's (nchw8c-to-nchw16c / nchw16c-to-nchw8c: 24 channels into 144 in a model's layout).
// dtype=float16 / bfloat16 reads 16-bit inputs and weights as float32, accumulates in float32 and
// stores a 16-bit output.
#include <optional>

#include "schedule/ops/op_builders.h"
#include "schedule/te/checked_math.h"

namespace tessel::ops_detail {

namespace {

// a * k, leaving out a multiplication by one so the canonical text stays readable.
Expr scaled(const Expr& a, int64_t k) { return k == 1 ? a : a * make_int(k); }

struct BlockedConv {
  int64_t n, c, h, w, f, kh, kw, stride, pad, dilation, oh, ow, block;
  int64_t in_block;  // the input's block: `block`, the other size, or 0 for X[N, C, H, W] as it comes
  bool depthwise;    // groups = C = F: W[C/b, KH, KW, b], each channel its own window
};

int64_t blocks(int64_t channels, int64_t block) { return (channels + block - 1) / block; }

// Zero padding in the input's own type: the padded input stays 16-bit when the input is.
Expr zero_of(DType dt) { return make_cast(Type{dt, 1}, f32(0)); }

// The reduction's name: "conv" before an epilogue; else the output "Y" itself, or "Y_acc" when a
// 16-bit output is stored from it by one more stage.
std::string conv_stage_name(bool epilogue, DType dt) {
  return epilogue ? "conv" : dt == DType::Float32 ? "Y" : "Y_acc";
}

// The same convolution with channels in blocks of `block` (oneDNN's nChw16c and OIhw16o, TVM's
// NCHWc): X[N, C/b, H, W, b], W[F/b, C, KH, KW, b], b[F/b, b] and Y[N, F/b, H', W', b], each
// channel count rounded up to whole blocks. Y's last axis is a block of output channels, so a
// register tile vectorizes along it with unit-stride weight loads, one input value broadcast per
// output column, whatever the stride. Lanes past F compute with whatever the padded weights hold;
// nothing reads them as channels (a blocked input's lanes past C are never read either). A
// depthwise convolution keeps each channel in its lane: W[C/b, KH, KW, b], and the input read at
// the output's own block and lane, so a vector of lanes loads contiguously from input and weights.
ComputeDAG blocked_conv2d(const BlockedConv& s, bool bias, const std::string& act, DType dt) {
  const bool plain_input = s.in_block == 0;
  const int64_t cb = plain_input ? 0 : blocks(s.c, s.in_block), fb = blocks(s.f, s.block);
  std::vector<Operation> ops;
  if (plain_input)
    ops.push_back(placeholder("X", {s.n, s.c, s.h, s.w}, dt));
  else
    ops.push_back(placeholder("X", {s.n, cb, s.h, s.w, s.in_block}, dt));
  if (s.depthwise)
    ops.push_back(placeholder("W", {fb, s.kh, s.kw, s.block}, dt));
  else
    ops.push_back(placeholder("W", {fb, s.c, s.kh, s.kw, s.block}, dt));
  if (bias) ops.push_back(placeholder("b", {fb, s.block}, dt));
  std::string source = "X";
  if (s.pad > 0) {
    Axis pn{"pn", s.n}, pc{"pc", plain_input ? s.c : cb}, ph{"ph", s.h + 2 * s.pad}, pw{"pw", s.w + 2 * s.pad};
    Expr y = var(ph), x = var(pw), lo = make_int(s.pad);
    Expr inside =
        logical_and(logical_and(y >= lo, y < make_int(s.h + s.pad)), logical_and(x >= lo, x < make_int(s.w + s.pad)));
    Expr yy = min(max(y - s.pad, make_int(0)), make_int(s.h - 1));
    Expr xx = min(max(x - s.pad, make_int(0)), make_int(s.w - 1));
    if (plain_input) {
      Expr value = make_tensor_read("X", {var(pn), var(pc), yy, xx}, Type{dt, 1});
      ops.push_back(compute("pad", {pn, pc, ph, pw}, make_select(inside, value, zero_of(dt))));
    } else {
      Axis pl{"pl", s.in_block};
      Expr value = make_tensor_read("X", {var(pn), var(pc), yy, xx, var(pl)}, Type{dt, 1});
      ops.push_back(compute("pad", {pn, pc, ph, pw, pl}, make_select(inside, value, zero_of(dt))));
    }
    source = "pad";
  }
  const bool epilogue = bias || act != "none";
  Axis an{"n", s.n}, afo{"fo", fb}, ay{"oh", s.oh}, ax{"ow", s.ow}, afi{"fi", s.block};
  Axis rc{"rc", s.c}, rh{"rh", s.kh}, rw{"rw", s.kw};
  const Expr lanes_in = make_int(std::max<int64_t>(s.in_block, 1));
  Expr iy = scaled(var(ay), s.stride) + scaled(var(rh), s.dilation);
  Expr ix = scaled(var(ax), s.stride) + scaled(var(rw), s.dilation);
  const std::string conv_name = conv_stage_name(epilogue, dt);
  if (s.depthwise) {
    Expr term = read_float(source, {var(an), var(afo), iy, ix, var(afi)}, dt) * read_float("W", {afo, rh, rw, afi}, dt);
    ops.push_back(reduce(conv_name, {an, afo, ay, ax, afi}, ReduceKind::Sum, {rh, rw}, term));
  } else {
    Expr input = plain_input ? read_float(source, {var(an), var(rc), iy, ix}, dt)
                             : read_float(source, {var(an), var(rc) / lanes_in, iy, ix, var(rc) % lanes_in}, dt);
    Expr term = input * read_float("W", {afo, rc, rh, rw, afi}, dt);
    ops.push_back(reduce(conv_name, {an, afo, ay, ax, afi}, ReduceKind::Sum, {rc, rh, rw}, term));
  }
  if (epilogue) {
    Axis n1{"n1", s.n}, fo1{"fo1", fb}, y1{"oh1", s.oh}, x1{"ow1", s.ow}, fi1{"fi1", s.block};
    Expr v = read("conv", {n1, fo1, y1, x1, fi1});
    if (bias) v = v + read_float("b", {fo1, fi1}, dt);
    ops.push_back(compute("Y", {n1, fo1, y1, x1, fi1}, make_cast(Type{dt, 1}, apply_activation(v, act))));
  } else if (dt != DType::Float32) {
    append_store_cast(ops, conv_name, "Y", dt);
  }
  return ComputeDAG(std::move(ops));
}

}  // namespace

ComputeDAG build_conv2d(const ParamReader& p) {
  int64_t n = p.positive_int("N"), c = p.positive_int("C"), h = p.positive_int("H"), w = p.positive_int("W");
  int64_t f = p.positive_int("F"), kh = p.positive_int("KH"), kw = p.positive_int("KW");
  int64_t stride = p.positive_int("stride"), pad = p.non_negative_int("pad");
  int64_t dilation = p.positive_int("dilation"), groups = p.positive_int("groups");
  bool bias = p.flag("bias");
  const std::string& act = p.choice("act");
  const DType dt = param_dtype(p);

  if (c % groups != 0)
    p.fail("groups",
           "input channels C=" + std::to_string(c) + " are not divisible by groups=" + std::to_string(groups));
  if (f % groups != 0)
    p.fail("groups",
           "output channels F=" + std::to_string(f) + " are not divisible by groups=" + std::to_string(groups));
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
  const std::string& layout = p.choice("layout");
  if (layout != "nchw") {
    const bool depthwise = groups == c && groups == f;
    // "OUT" (the input in the output's blocks) or "IN-to-OUT", each nchw (input only), nchw8c or nchw16c.
    const size_t to = layout.find("-to-");
    auto block_of = [](const std::string& l) -> int64_t { return l == "nchw16c" ? 16 : l == "nchw8c" ? 8 : 0; };
    const int64_t block = block_of(to == std::string::npos ? layout : layout.substr(to + 4));
    const int64_t in_block = to == std::string::npos ? block : block_of(layout.substr(0, to));
    if (groups != 1 && (!depthwise || in_block != block)) {
      const char* rule = in_block == 0       ? "an NCHW input into blocks takes groups=1"
                         : in_block != block ? "an input in other blocks than the output's takes groups=1"
                                             : "a blocked layout takes groups=1 or a depthwise convolution "
                                               "(groups = C = F)";
      p.fail("layout", std::string(rule) + "; other grouped convolutions stay NCHW");
    }
    return blocked_conv2d({n, c, h, w, f, kh, kw, stride, pad, dilation, oh, ow, block, in_block, depthwise}, bias,
                          act, dt);
  }

  std::vector<Operation> ops;
  ops.push_back(placeholder("X", {n, c, h, w}, dt));
  ops.push_back(placeholder("W", {f, cg, kh, kw}, dt));
  if (bias) ops.push_back(placeholder("b", {f}, dt));

  std::string source = "X";
  if (pad > 0) {
    Axis pn{"pn", n}, pc{"pc", c}, ph{"ph", padded_h}, pw{"pw", padded_w};
    Expr y = var(ph), x = var(pw), lo = make_int(pad);
    Expr inside = logical_and(logical_and(y >= lo, y < make_int(h + pad)), logical_and(x >= lo, x < make_int(w + pad)));
    // The select guards the read; the clamp keeps it in bounds even under eager evaluation.
    Expr yy = min(max(y - pad, make_int(0)), make_int(h - 1));
    Expr xx = min(max(x - pad, make_int(0)), make_int(w - 1));
    Expr value = make_tensor_read("X", {var(pn), var(pc), yy, xx}, Type{dt, 1});
    ops.push_back(compute("pad", {pn, pc, ph, pw}, make_select(inside, value, zero_of(dt))));
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
  Expr term = read_float(source, {var(an), channel, iy, ix}, dt) * read_float("W", {af, rc, rh, rw}, dt);
  const std::string conv_name = conv_stage_name(epilogue, dt);
  ops.push_back(reduce(conv_name, {an, af, ay, ax}, ReduceKind::Sum, {rc, rh, rw}, term));

  if (epilogue) {
    Axis n1{"n1", n}, f1{"f1", f}, y1{"oh1", oh}, x1{"ow1", ow};
    Expr v = read("conv", {n1, f1, y1, x1});
    if (bias) v = v + read_float("b", {f1}, dt);
    ops.push_back(compute("Y", {n1, f1, y1, x1}, make_cast(Type{dt, 1}, apply_activation(v, act))));
  } else if (dt != DType::Float32) {
    append_store_cast(ops, conv_name, "Y", dt);
  }
  return ComputeDAG(std::move(ops));
}

}  // namespace tessel::ops_detail
