// Vectorizable exp / log / tanh / sigmoid / erf / pow in LLVM IR.
//
// Every function is branch-free: all paths are computed and the right one chosen with `select`, which
// is what a vector unit wants. Special values (±0, ±inf, NaN) follow the C library.
//
//  exp(x):  n = round(x / ln2), r = x - n*ln2 split in two constants (Cody–Waite, n*ln2_hi exact),
//           exp(r) by its Taylor polynomial on |r| <= ln2/2, then the scale 2^n applied as two factors
//           2^(n/2) * 2^(n - n/2) built from exponent bits, so that results that overflow become inf
//           and results in the subnormal range round only once.
//  log(x):  x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s) with s = (m-1)/(m+1),
//           |s| <= 0.172, summed as an odd series; subnormal inputs are scaled by 2^mant first.
//  tanh:    |x| < 0.625: x * P(x^2) (Chebyshev fit, rel. error 4e-8); else 1 - 2/(exp(2|x|)+1).
//  sigmoid: with e = exp(-|x|): 1/(1+e) for x >= 0 and e/(1+e) otherwise (no overflow, keeps
//           subnormal results for very negative x).
//  erf:     |x| < 0.75: x * P(x^2); else 1 - exp(-x^2) * erfcx(x) with erfcx fitted in t = 1/(1+x)
//           on [0.75, 4] (rel. error 5e-8); 1 beyond 4 (erfc(4) < 2^-25).
//  pow:     exp(y * log|x|) evaluated in double (so the error of log is not amplified by y), plus
//           C's sign and special-value rules.
// The polynomial coefficients were computed by Chebyshev interpolation in long double.
#include "codegen/llvm/vector_math.h"

#include <cmath>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "codegen/llvm/llvm_backend.h"
#include "schedule/te/error.h"

namespace tessel::llvm_backend {

namespace {

using llvm::Value;

// Emits IR for one floating-point format (float or double), scalar or vector.
class MathEmitter {
 public:
  MathEmitter(llvm::IRBuilder<>& b, llvm::Type* fp_type) : b_(b), ft_(fp_type) {
    llvm::Type* scalar = fp_type->getScalarType();
    is_double_ = scalar->isDoubleTy();
    mant_bits_ = is_double_ ? 52 : 23;
    bias_ = is_double_ ? 1023 : 127;
    llvm::Type* int_scalar = b.getIntNTy(is_double_ ? 64 : 32);
    if (auto* vt = llvm::dyn_cast<llvm::VectorType>(fp_type))
      it_ = llvm::VectorType::get(int_scalar, vt->getElementCount());
    else
      it_ = int_scalar;
  }

  Value* c(double v) { return llvm::ConstantFP::get(ft_, v); }
  Value* ci(int64_t v) { return llvm::ConstantInt::get(it_, v, true); }
  Value* add(Value* a, Value* x) { return b_.CreateFAdd(a, x); }
  Value* sub(Value* a, Value* x) { return b_.CreateFSub(a, x); }
  Value* mul(Value* a, Value* x) { return b_.CreateFMul(a, x); }
  Value* div(Value* a, Value* x) { return b_.CreateFDiv(a, x); }
  Value* fma(Value* a, Value* x, Value* y) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft_}, {a, x, y});
  }
  Value* fabs(Value* x) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  Value* minnum(Value* a, Value* x) { return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, x); }
  Value* maxnum(Value* a, Value* x) { return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, x); }
  Value* copysign(Value* mag, Value* sign) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag, sign);
  }
  Value* is_nan(Value* x) { return b_.CreateFCmpUNO(x, x); }
  Value* select(Value* cond, Value* t, Value* f) { return b_.CreateSelect(cond, t, f); }

  // Horner evaluation of sum coeffs[i] * x^i.
  Value* poly(Value* x, const std::vector<double>& coeffs) {
    Value* acc = c(coeffs.back());
    for (size_t i = coeffs.size() - 1; i-- > 0;) acc = fma(acc, x, c(coeffs[i]));
    return acc;
  }

  // 2^k for integer k (in it_) within the normal exponent range.
  Value* exp2_int(Value* k) {
    Value* bits = b_.CreateShl(b_.CreateAdd(k, ci(bias_)), ci(mant_bits_));
    return b_.CreateBitCast(bits, ft_);
  }

  // exp(x) for x clamped into [lo, hi]; NaN passes through.
  Value* exp(Value* x, double lo, double hi) {
    Value* xc = maxnum(minnum(x, c(hi)), c(lo));  // never NaN
    Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, mul(xc, c(1.4426950408889634)));
    double ln2_hi = is_double_ ? 6.93147180369123816490e-01 : 0.693145751953125;
    double ln2_lo = is_double_ ? 1.90821492927058770002e-10 : 1.428606765330187045e-06;
    Value* r = fma(n, c(-ln2_hi), xc);
    r = fma(n, c(-ln2_lo), r);
    int degree = is_double_ ? 11 : 7;
    std::vector<double> taylor(degree + 1);
    double f = 1;
    for (int i = 0; i <= degree; ++i) {
      if (i > 0) f *= i;
      taylor[i] = 1.0 / f;
    }
    Value* p = poly(r, taylor);
    Value* ni = b_.CreateFPToSI(n, it_);
    Value* n1 = b_.CreateAShr(ni, ci(1));
    Value* n2 = b_.CreateSub(ni, n1);
    Value* result = mul(mul(p, exp2_int(n1)), exp2_int(n2));
    return select(is_nan(x), x, result);
  }

  Value* exp(Value* x) {
    if (!is_double_ && lanes() == 16 && host_target().vector_bits >= 512) return exp_avx512(x);
    return is_double_ ? exp(x, -760.0, 710.0) : exp(x, -104.0, 89.0);
  }

  // 16 floats on AVX-512: vscalefps computes p * 2^n with IEEE overflow, underflow and subnormals
  // in one instruction, and compare-selects clamp while letting NaN through (a NaN input gives
  // NaN at every step), so the clamps and scalings of the generic path shrink from ~14
  // instructions to 3. Same polynomial and reduction, same accuracy.
  Value* exp_avx512(Value* x) {
    Value* xc = select(b_.CreateFCmpOGT(x, c(89.0)), c(89.0), x);
    xc = select(b_.CreateFCmpOLT(xc, c(-104.0)), c(-104.0), xc);
    Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, mul(xc, c(1.4426950408889634)));
    Value* r = fma(n, c(-0.693145751953125), xc);
    r = fma(n, c(-1.428606765330187045e-06), r);
    std::vector<double> taylor(8);
    double f = 1;
    for (int i = 0; i <= 7; ++i) {
      if (i > 0) f *= i;
      taylor[i] = 1.0 / f;
    }
    Value* p = poly(r, taylor);
    return b_.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                              {p, n, llvm::PoisonValue::get(ft_), b_.getInt16(0xffff), b_.getInt32(4)});
  }

  int lanes() const {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(ft_);
    return vt ? static_cast<int>(vt->getNumElements()) : 1;
  }

  Value* log(Value* x) {
    double min_normal = is_double_ ? 2.2250738585072014e-308 : 1.1754943508222875e-38;
    Value* tiny = b_.CreateFCmpOLT(x, c(min_normal));
    Value* xs = select(tiny, mul(x, c(std::ldexp(1.0, mant_bits_))), x);
    Value* e_adjust = select(tiny, ci(-mant_bits_), ci(0));
    Value* bits = b_.CreateBitCast(xs, it_);
    Value* e = b_.CreateSub(b_.CreateLShr(bits, ci(mant_bits_)), ci(bias_));
    int64_t mant_mask = (int64_t(1) << mant_bits_) - 1;
    Value* m_bits = b_.CreateOr(b_.CreateAnd(bits, ci(mant_mask)), ci(int64_t(bias_) << mant_bits_));
    Value* m = b_.CreateBitCast(m_bits, ft_);  // [1, 2)
    Value* big = b_.CreateFCmpOGT(m, c(1.4142135623730951));
    m = select(big, mul(m, c(0.5)), m);
    e = b_.CreateAdd(b_.CreateAdd(e, e_adjust), b_.CreateZExt(big, it_));
    Value* f = sub(m, c(1.0));
    Value* s = div(f, add(f, c(2.0)));
    Value* z = mul(s, s);
    int terms = is_double_ ? 8 : 5;  // 1 + z/3 + z^2/5 + ...
    std::vector<double> series(terms);
    for (int i = 0; i < terms; ++i) series[i] = 1.0 / (2 * i + 1);
    Value* log_m = mul(mul(c(2.0), s), poly(z, series));
    Value* ef = b_.CreateSIToFP(e, ft_);
    double ln2_hi = is_double_ ? 6.93147180369123816490e-01 : 0.693145751953125;
    double ln2_lo = is_double_ ? 1.90821492927058770002e-10 : 1.428606765330187045e-06;
    Value* result = fma(ef, c(ln2_hi), fma(ef, c(ln2_lo), log_m));
    result = select(b_.CreateFCmpOEQ(x, c(INFINITY)), c(INFINITY), result);
    result = select(b_.CreateFCmpOEQ(x, c(0.0)), c(-INFINITY), result);
    result = select(b_.CreateFCmpULT(x, c(0.0)), c(NAN), result);  // negative or NaN
    return select(is_nan(x), x, result);
  }

  Value* tanh(Value* x) {
    Value* a = fabs(x);
    Value* z = mul(a, a);
    // Chebyshev fit of tanh(x)/x in u = z * (2 / 0.625^2) - 1.
    Value* u = fma(z, c(5.12), c(-1.0));
    Value* small = mul(a, poly(u, {9.396094952e-01, -5.602212850e-02, 4.048358483e-03, -2.964854903e-04,
                                   2.192048905e-05, -1.607854524e-06}));
    Value* e = exp(add(a, a));
    Value* large = sub(c(1.0), div(c(2.0), add(e, c(1.0))));
    Value* result = select(b_.CreateFCmpOLT(a, c(0.625)), small, large);
    return copysign(result, x);
  }

  Value* sigmoid(Value* x) {
    Value* e = exp(b_.CreateFNeg(fabs(x)));
    Value* s = div(c(1.0), add(c(1.0), e));
    return select(b_.CreateFCmpOGE(x, c(0.0)), s, mul(e, s));
  }

  Value* erf(Value* x) {
    Value* a = fabs(x);
    Value* z = mul(a, a);
    // erf(x)/x in u = z * (2 / 0.75^2) - 1.
    Value* u = fma(z, c(2.0 / 0.5625), c(-1.0));
    Value* small = mul(a, poly(u, {1.030952817e+00, -8.960376716e-02, 7.314458877e-03, -4.808715646e-04,
                                   2.606190821e-05, -1.189003474e-06}));
    Value* ac = maxnum(minnum(a, c(4.0)), c(0.75));
    Value* t = div(c(1.0), add(c(1.0), ac));
    // erfcx(x) in v = (2t - (0.2 + 4/7)) / (4/7 - 0.2).
    const double t_lo = 0.2, t_hi = 4.0 / 7.0;
    Value* v = fma(t, c(2.0 / (t_hi - t_lo)), c(-(t_lo + t_hi) / (t_hi - t_lo)));
    Value* erfcx = poly(v, {3.070628265e-01, 1.876512446e-01, 1.506715791e-02, -2.791555049e-03,
                            -1.490623599e-04, 1.120768270e-04, -1.356223410e-05, -2.669489689e-06,
                            1.194240203e-06});
    Value* large = sub(c(1.0), mul(exp(b_.CreateFNeg(mul(ac, ac))), erfcx));
    Value* result = select(b_.CreateFCmpOLT(a, c(0.75)), small, large);
    result = select(b_.CreateFCmpOGE(a, c(4.0)), c(1.0), result);
    result = copysign(result, x);
    return select(is_nan(x), x, result);
  }

 private:
  llvm::IRBuilder<>& b_;
  llvm::Type* ft_;
  llvm::Type* it_ = nullptr;
  bool is_double_ = false;
  int mant_bits_ = 23;
  int bias_ = 127;
};

llvm::Type* with_element(llvm::Type* like, llvm::Type* element) {
  if (auto* vt = llvm::dyn_cast<llvm::VectorType>(like)) return llvm::VectorType::get(element, vt->getElementCount());
  return element;
}

// C's pow for float operands, computed through double exp/log.
Value* emit_pow(llvm::IRBuilder<>& b, Value* x, Value* y) {
  llvm::Type* ft = x->getType();
  llvm::Type* dt = with_element(ft, b.getDoubleTy());
  llvm::Type* i32 = with_element(ft, b.getInt32Ty());
  MathEmitter f(b, ft);
  MathEmitter d(b, dt);
  Value* ax = b.CreateFPExt(f.fabs(x), dt);
  Value* yd = b.CreateFPExt(y, dt);
  Value* t = d.mul(yd, d.log(ax));
  Value* r = b.CreateFPTrunc(d.exp(t, -110.0, 100.0), ft);

  Value* ay = f.fabs(y);
  Value* y_is_int = b.CreateFCmpOEQ(b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, y), y);
  Value* y_small = b.CreateFCmpOLT(ay, f.c(16777216.0));  // larger floats are all even
  Value* y_int = b.CreateFPToSI(f.select(y_small, y, f.c(0.0)), i32);
  Value* y_odd = b.CreateAnd(b.CreateAnd(y_is_int, y_small),
                             b.CreateICmpNE(b.CreateAnd(y_int, llvm::ConstantInt::get(i32, 1)),
                                            llvm::ConstantInt::get(i32, 0)));
  Value* x_sign = b.CreateICmpSLT(b.CreateBitCast(x, i32), llvm::ConstantInt::get(i32, 0));
  Value* result = f.select(b.CreateAnd(x_sign, y_odd), b.CreateFNeg(r), r);
  Value* x_negative = b.CreateAnd(b.CreateFCmpOLT(x, f.c(0.0)), b.CreateFCmpONE(x, f.c(-INFINITY)));
  result = f.select(b.CreateAnd(x_negative, b.CreateNot(y_is_int)), f.c(NAN), result);
  Value* one = b.CreateOr(b.CreateFCmpOEQ(x, f.c(1.0)), b.CreateFCmpOEQ(y, f.c(0.0)));
  one = b.CreateOr(one, b.CreateAnd(b.CreateFCmpOEQ(x, f.c(-1.0)), b.CreateFCmpOEQ(ay, f.c(INFINITY))));
  return f.select(one, f.c(1.0), result);
}

}  // namespace

Value* emit_math_function(llvm::IRBuilder<>& builder, MathFn fn, const std::vector<Value*>& args) {
  TESSEL_CHECK(!args.empty() && args[0]->getType()->getScalarType()->isFloatTy(),
               "math function on a non-float operand");
  MathEmitter m(builder, args[0]->getType());
  Value* x = args[0];
  switch (fn) {
    case MathFn::Exp: return m.exp(x);
    case MathFn::Log: return m.log(x);
    case MathFn::Sqrt: return builder.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    case MathFn::Rsqrt:
      return m.div(m.c(1.0), builder.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x));
    case MathFn::Tanh: return m.tanh(x);
    case MathFn::Sigmoid: return m.sigmoid(x);
    case MathFn::Erf: return m.erf(x);
    case MathFn::Abs: return m.fabs(x);
    case MathFn::Pow:
      TESSEL_CHECK(args.size() == 2, "pow needs two operands");
      return emit_pow(builder, x, args[1]);
  }
  throw CompileError(std::string("unsupported math function ") + to_string(fn));
}

}  // namespace tessel::llvm_backend
