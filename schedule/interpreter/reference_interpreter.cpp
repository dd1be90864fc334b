// The reference interpreter. Each op body is first compiled into a small tree of Nodes whose
// variables are slots in an int64 array and whose tensor reads carry precomputed strides, so the
// per-element walk does no string lookups. Floats are evaluated in double, indices in int64.
#include "schedule/interpreter/reference_interpreter.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <sstream>
#include <system_error>
#include <thread>

#include "schedule/interpreter/host_memory.h"
#include "schedule/te/error.h"
#include "schedule/te/half_float.h"

namespace tessel {

namespace {

// Runs f(begin, end, chunk) on `chunks` contiguous chunks of [0, size), each on its own thread when
// there is more than one (the caller's thread takes chunk 0; a thread that cannot be started leaves
// its chunks to the caller). The first exception a chunk threw is rethrown once all have finished.
template <typename F>
void for_chunks(size_t size, size_t chunks, F&& f) {
  chunks = std::max<size_t>(1, std::min(chunks, std::max<size_t>(size, 1)));
  const size_t step = (size + chunks - 1) / chunks;
  std::vector<std::exception_ptr> errors(chunks);
  auto run = [&f, &errors, step, size](size_t c) {
    try {
      f(std::min(size, c * step), std::min(size, (c + 1) * step), c);
    } catch (...) {
      errors[c] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(chunks);  // no allocation while threads run: only starting one can fail
  size_t c = 1;
  try {
    for (; c < chunks; ++c) threads.emplace_back(run, c);
  } catch (const std::system_error&) {
  }
  run(0);
  for (size_t rest = c; rest < chunks; ++rest) run(rest);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

struct Node {
  ExprOp op = ExprOp::IntImm;
  bool is_float = false;  // any float type: evaluated as a double
  bool is_bool = false;
  DType dtype = DType::Float32;
  MathFn fn = MathFn::Exp;
  int64_t int_value = 0;
  double float_value = 0;
  int slot = -1;                  // Var: index into the variable array; TensorRead: tensor index
  std::vector<int64_t> shape;     // TensorRead: extents of the tensor read
  std::vector<int64_t> strides;   // TensorRead: row-major strides
  std::vector<Node> args;
};

struct TensorView {
  std::string name;
  const std::vector<double>* data = nullptr;
};

class Compiler {
 public:
  Compiler(const Operation& op, const std::map<std::string, int>& tensor_index,
           const std::vector<std::vector<int64_t>>& shapes)
      : op_(op), tensor_index_(tensor_index), shapes_(shapes) {
    for (const Axis& a : op.axes) slots_[a.name] = static_cast<int>(slots_.size());
    for (const Axis& a : op.reduce_axes) slots_[a.name] = static_cast<int>(slots_.size());
  }

  Node compile(const Expr& e) {
    if (e->type.lanes != 1)
      throw InputError("reference interpreter: " + op_.name + " holds a vector expression; it takes TE bodies only");
    Node n;
    n.op = e->op;
    n.is_float = e->type.is_float();
    n.is_bool = e->type.is_bool();
    n.dtype = e->type.dtype;
    n.int_value = e->int_value;
    n.float_value = e->float_value;
    switch (e->op) {
      case ExprOp::Var: {
        auto it = slots_.find(e->name);
        if (it == slots_.end()) throw InputError("reference interpreter: " + op_.name + " uses unknown axis " + e->name);
        n.slot = it->second;
        break;
      }
      case ExprOp::Call:
        n.fn = e->math_fn();
        break;
      case ExprOp::TensorRead: {
        auto it = tensor_index_.find(e->name);
        if (it == tensor_index_.end())
          throw InputError("reference interpreter: " + op_.name + " reads unknown tensor " + e->name);
        n.slot = it->second;
        n.shape = shapes_[it->second];
        n.strides.assign(n.shape.size(), 1);
        for (int d = static_cast<int>(n.shape.size()) - 2; d >= 0; --d) n.strides[d] = n.strides[d + 1] * n.shape[d + 1];
        break;
      }
      case ExprOp::Load: case ExprOp::Ramp: case ExprOp::Broadcast:
        throw InputError("reference interpreter: " + op_.name + " holds a " + to_string(e->op) +
                         " node; it takes TE bodies only");
      default:
        break;
    }
    for (const Expr& a : e->args) n.args.push_back(compile(a));
    return n;
  }

 private:
  const Operation& op_;
  const std::map<std::string, int>& tensor_index_;
  const std::vector<std::vector<int64_t>>& shapes_;
  std::map<std::string, int> slots_;
};

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw InputError("reference interpreter: integer division by zero");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

class Evaluator {
 public:
  Evaluator(const std::vector<TensorView>& tensors, const int64_t* vars) : tensors_(tensors), vars_(vars) {}

  // Float-typed nodes.
  double real(const Node& n) const {
    switch (n.op) {
      case ExprOp::FloatImm: return n.float_value;
      case ExprOp::Add: return real(n.args[0]) + real(n.args[1]);
      case ExprOp::Sub: return real(n.args[0]) - real(n.args[1]);
      case ExprOp::Mul: return real(n.args[0]) * real(n.args[1]);
      case ExprOp::Div: return real(n.args[0]) / real(n.args[1]);
      case ExprOp::Min: return std::fmin(real(n.args[0]), real(n.args[1]));
      case ExprOp::Max: return std::fmax(real(n.args[0]), real(n.args[1]));
      case ExprOp::Select: return integer(n.args[0]) ? real(n.args[1]) : real(n.args[2]);
      case ExprOp::Cast: {
        // Casts between floats are exact except to a 16-bit float, which rounds as a kernel's store does.
        double v = n.args[0].is_float ? real(n.args[0]) : static_cast<double>(integer(n.args[0]));
        return n.dtype == DType::Float32 ? v : round_to_dtype(v, n.dtype);
      }
      case ExprOp::TensorRead: return read(n);
      case ExprOp::Call: return call(n);
      default:
        throw InputError(std::string("reference interpreter: unsupported float node ") + to_string(n.op));
    }
  }

  // Int64- and Bool-typed nodes (Bool as 0 / 1).
  int64_t integer(const Node& n) const {
    switch (n.op) {
      case ExprOp::IntImm: return n.int_value;
      case ExprOp::Var: return vars_[n.slot];
      case ExprOp::Add: return integer(n.args[0]) + integer(n.args[1]);
      case ExprOp::Sub: return integer(n.args[0]) - integer(n.args[1]);
      case ExprOp::Mul: return integer(n.args[0]) * integer(n.args[1]);
      case ExprOp::FloorDiv: case ExprOp::Div: return floor_div(integer(n.args[0]), integer(n.args[1]));
      case ExprOp::FloorMod: return floor_mod(integer(n.args[0]), integer(n.args[1]));
      case ExprOp::Min: return std::min(integer(n.args[0]), integer(n.args[1]));
      case ExprOp::Max: return std::max(integer(n.args[0]), integer(n.args[1]));
      case ExprOp::EQ: case ExprOp::NE: case ExprOp::LT: case ExprOp::LE: case ExprOp::GT: case ExprOp::GE:
        return compare(n);
      case ExprOp::And: return integer(n.args[0]) && integer(n.args[1]);
      case ExprOp::Or: return integer(n.args[0]) || integer(n.args[1]);
      case ExprOp::Not: return !integer(n.args[0]);
      case ExprOp::Select: return integer(n.args[0]) ? integer(n.args[1]) : integer(n.args[2]);
      case ExprOp::Cast:
        // To bool: any non-zero value is true (as the code generators cast); to int64: truncation.
        if (n.is_bool) return n.args[0].is_float ? real(n.args[0]) != 0 : integer(n.args[0]) != 0;
        return n.args[0].is_float ? static_cast<int64_t>(real(n.args[0])) : integer(n.args[0]);
      // An Int64 or Bool tensor holds exact integers in its float64 storage (up to 2^53).
      case ExprOp::TensorRead: return static_cast<int64_t>(read(n));
      default:
        throw InputError(std::string("reference interpreter: unsupported integer node ") + to_string(n.op));
    }
  }

 private:
  int64_t compare(const Node& n) const {
    const Node& a = n.args[0];
    const Node& b = n.args[1];
    return a.is_float ? compare_values(n.op, real(a), real(b)) : compare_values(n.op, integer(a), integer(b));
  }

  template <typename T>
  static int64_t compare_values(ExprOp op, T x, T y) {
    switch (op) {
      case ExprOp::EQ: return x == y;
      case ExprOp::NE: return x != y;
      case ExprOp::LT: return x < y;
      case ExprOp::LE: return x <= y;
      case ExprOp::GT: return x > y;
      default: return x >= y;
    }
  }

  double read(const Node& n) const {
    int64_t flat = 0;
    for (size_t d = 0; d < n.args.size(); ++d) {
      int64_t i = integer(n.args[d]);
      if (i < 0 || i >= n.shape[d]) out_of_bounds(n);
      flat += i * n.strides[d];
    }
    return (*tensors_[n.slot].data)[flat];
  }

  [[noreturn]] void out_of_bounds(const Node& n) const {
    std::ostringstream msg;
    msg << "reference interpreter: out-of-bounds read of " << tensors_[n.slot].name << "[";
    for (size_t d = 0; d < n.args.size(); ++d) msg << (d ? ", " : "") << integer(n.args[d]);
    msg << "]; its shape is [";
    for (size_t d = 0; d < n.shape.size(); ++d) msg << (d ? ", " : "") << n.shape[d];
    msg << "] (a broken op template?)";
    throw InputError(msg.str());
  }

  double call(const Node& n) const {
    double x = real(n.args[0]);
    switch (n.fn) {
      case MathFn::Exp: return std::exp(x);
      case MathFn::Log: return std::log(x);
      case MathFn::Sqrt: return std::sqrt(x);
      case MathFn::Rsqrt: return 1.0 / std::sqrt(x);
      case MathFn::Tanh: return std::tanh(x);
      case MathFn::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
      case MathFn::Erf: return std::erf(x);
      case MathFn::Abs: return std::fabs(x);
      case MathFn::Pow: return std::pow(x, real(n.args[1]));
    }
    return 0;
  }

  const std::vector<TensorView>& tensors_;
  const int64_t* vars_;
};

// Advances the odometer `idx` over `axes` starting at `first`; false once it wraps around.
bool advance(std::vector<int64_t>& vars, size_t first, const std::vector<Axis>& axes) {
  for (size_t d = axes.size(); d-- > 0;) {
    if (++vars[first + d] < axes[d].extent) return true;
    vars[first + d] = 0;
  }
  return false;
}

// Output elements [begin, end) of `op`. A reduction runs over blocks of consecutive output elements
// with the reduction loop outside the block: each element still accumulates its terms in the same
// order (so the values are the same as one element at a time), but the block's reads of one
// reduction step are neighbours in memory. A matmul read one element at a time walks a column of B
// with a cache miss per term; a 4096^3 one took minutes on 16 cores before.
void evaluate_range(const Operation& op, const Node& body, const std::vector<TensorView>& tensors,
                    std::vector<double>& out, size_t begin, size_t end) {
  const size_t num_axes = op.axes.size();
  std::vector<int64_t> vars(num_axes + op.reduce_axes.size(), 0);
  for (size_t d = num_axes, rest = begin; d-- > 0;) {  // the odometer at `begin`
    vars[d] = static_cast<int64_t>(rest % static_cast<size_t>(op.axes[d].extent));
    rest /= static_cast<size_t>(op.axes[d].extent);
  }
  Evaluator eval(tensors, vars.data());
  auto value = [&] { return body.is_float ? eval.real(body) : static_cast<double>(eval.integer(body)); };
  if (op.reduce == ReduceKind::None) {
    for (size_t flat = begin; flat < end; ++flat) {
      out[flat] = value();
      advance(vars, 0, op.axes);
    }
    return;
  }
  constexpr size_t kBlock = 128;
  std::vector<int64_t> block_vars(kBlock * num_axes);  // the output index of each element of a block
  std::vector<double> acc(kBlock);
  for (size_t first = begin; first < end; first += kBlock) {
    const size_t n = std::min(kBlock, end - first);
    for (size_t e = 0; e < n; ++e) {
      std::copy(vars.begin(), vars.begin() + static_cast<std::ptrdiff_t>(num_axes), block_vars.begin() + e * num_axes);
      advance(vars, 0, op.axes);
    }
    std::vector<int64_t> next(vars.begin(), vars.begin() + static_cast<std::ptrdiff_t>(num_axes));
    std::fill(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(n), reduce_init(op.reduce));
    std::fill(vars.begin() + static_cast<std::ptrdiff_t>(num_axes), vars.end(), 0);
    do {
      for (size_t e = 0; e < n; ++e) {
        std::copy_n(block_vars.begin() + e * num_axes, num_axes, vars.begin());
        double v = value();
        switch (op.reduce) {
          case ReduceKind::Sum: acc[e] += v; break;
          case ReduceKind::Max: acc[e] = std::fmax(acc[e], v); break;
          case ReduceKind::Min: acc[e] = std::fmin(acc[e], v); break;
          case ReduceKind::None: break;
        }
      }
    } while (advance(vars, num_axes, op.reduce_axes));
    std::copy_n(acc.begin(), n, out.begin() + static_cast<std::ptrdiff_t>(first));
    std::copy(next.begin(), next.end(), vars.begin());
  }
}

// Every element is computed the same way whichever thread computes it, so the result does not
// depend on the thread count. Large ops (a 1024^3 matmul) are split over every core.
void evaluate_op(const Operation& op, const Node& body, const std::vector<TensorView>& tensors,
                 std::vector<double>& out) {
  out.assign(static_cast<size_t>(op.num_elements()), 0.0);
  int64_t work = op.num_elements();
  for (const Axis& r : op.reduce_axes) work *= r.extent;
  const size_t threads = work < (int64_t(1) << 22) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  for_chunks(out.size(), threads, [&](size_t begin, size_t end, size_t) {
    evaluate_range(op, body, tensors, out, begin, end);
  });
}

std::string format_index(const std::string& name, const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = name + "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string format_number(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

}  // namespace

ReferenceTensors evaluate_reference(const ComputeDAG& dag, const HostTensors& inputs) {
  require_host_memory(dag);
  const std::vector<Operation>& ops = dag.ops();
  std::map<std::string, int> tensor_index;
  std::vector<std::vector<int64_t>> shapes;
  for (const Operation& op : ops) {
    tensor_index[op.name] = static_cast<int>(shapes.size());
    shapes.push_back(op.shape);
  }

  // Placeholders converted to double once; computed tensors filled in op order.
  std::vector<std::vector<double>> storage(ops.size());
  std::vector<TensorView> views(ops.size());
  ReferenceTensors results;
  for (size_t t = 0; t < ops.size(); ++t) {
    const Operation& op = ops[t];
    views[t].name = op.name;
    if (!op.is_placeholder) continue;
    auto it = inputs.find(op.name);
    if (it == inputs.end()) throw InputError("reference interpreter: no value given for input " + op.name);
    if (static_cast<int64_t>(it->second.size()) != op.num_elements())
      throw InputError("reference interpreter: input " + op.name + " has " + std::to_string(it->second.size()) +
                       " elements; its shape needs " + std::to_string(op.num_elements()));
    storage[t].assign(it->second.begin(), it->second.end());
    if (Type{op.dtype, 1}.is_half())  // the values its buffer can hold
      for (double& v : storage[t]) v = round_to_dtype(v, op.dtype);
    views[t].data = &storage[t];
  }
  for (size_t t = 0; t < ops.size(); ++t) {
    const Operation& op = ops[t];
    if (op.is_placeholder) continue;
    Node body = Compiler(op, tensor_index, shapes).compile(op.body);
    evaluate_op(op, body, views, storage[t]);
    views[t].data = &storage[t];
  }
  for (size_t t = 0; t < ops.size(); ++t)
    if (!ops[t].is_placeholder) results[ops[t].name] = std::move(storage[t]);
  return results;
}

HostTensors make_random_inputs(const ComputeDAG& dag, uint64_t seed) {
  // splitmix64, one stream per placeholder (seeded by position), so adding a tensor does not shift
  // the values of the ones before it.
  require_host_memory(dag);
  HostTensors out;
  uint64_t stream = 0;
  for (const Operation& op : dag.ops()) {
    if (!op.is_placeholder) continue;
    uint64_t state = seed * 0x9E3779B97F4A7C15ULL + (++stream) * 0xD1B54A32D192ED03ULL;
    std::vector<float> values(static_cast<size_t>(op.num_elements()));
    for (float& v : values) {
      uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z ^= z >> 31;
      // 24 random bits: exactly representable in float, uniform on [-1, 1) in steps of 2^-23.
      v = static_cast<float>(static_cast<double>(z >> 40) * (1.0 / 8388608.0) - 1.0);
    }
    // A 16-bit float input holds the nearest value of its type, the value its buffer will hold.
    if (Type{op.dtype, 1}.is_half())
      for (float& v : values) v = static_cast<float>(round_to_dtype(v, op.dtype));
    out[op.name] = std::move(values);
  }
  return out;
}

std::string mismatch_summary(const std::string& tensor, const CompareResult& c) {
  return std::to_string(c.mismatches) + " wrong values in " + tensor + ", first " + c.first_mismatch;
}

CompareResult compare_with_reference(const Operation& op, const std::vector<float>& got,
                                     const std::vector<double>& want, double rtol, double atol) {
  if (static_cast<int64_t>(want.size()) != op.num_elements() || got.size() != want.size())
    throw InputError("compare_with_reference: " + op.name + " has " + std::to_string(op.num_elements()) +
                     " elements, got " + std::to_string(got.size()) + " results and " +
                     std::to_string(want.size()) + " reference values");
  return compare_with_reference(op.name, op.shape, got.data(), want.data(), rtol, atol);
}

CompareResult compare_with_reference(const std::string& name, const std::vector<int64_t>& shape, const float* got,
                                     const double* want, double rtol, double atol, int chunks) {
  size_t size = 1;
  for (int64_t e : shape) size *= static_cast<size_t>(e);
  // Chunks of at least 1M values, one per core unless told (at most kMaxChunks): checking a large
  // output (90M values) element by element is slow.
  constexpr size_t kMaxChunks = 8, kMinChunk = size_t{1} << 20;
  const size_t wanted = chunks > 0 ? static_cast<size_t>(chunks) : std::max(1u, std::thread::hardware_concurrency());
  const size_t n_chunks = std::min({wanted, kMaxChunks, std::max<size_t>(1, (size + kMinChunk - 1) / kMinChunk)});
  // The tolerance scales with the largest finite reference value.
  std::vector<double> scales(kMaxChunks, 1.0);
  for_chunks(size, n_chunks, [&](size_t begin, size_t end, size_t c) {
    double m = 1.0;
    for (size_t i = begin; i < end; ++i)
      if (std::isfinite(want[i])) m = std::max(m, std::fabs(want[i]));
    scales[c] = m;
  });
  const double scale = *std::max_element(scales.begin(), scales.end());

  // Each chunk counts its mismatches and keeps its first; the first chunk with one names it.
  std::vector<CompareResult> parts(kMaxChunks);
  std::vector<size_t> first(kMaxChunks, size);
  for_chunks(size, n_chunks, [&](size_t begin, size_t end, size_t c) {
    CompareResult& part = parts[c];
    for (size_t i = begin; i < end; ++i) {
      double g = got[i], w = want[i];
      bool ok;
      if (std::isnan(w)) {
        ok = std::isnan(g);
      } else if (std::isinf(w)) {
        ok = g == w;
      } else if (!std::isfinite(g)) {
        ok = false;
        part.max_abs_error = INFINITY;
      } else {
        double err = std::fabs(g - w);
        part.max_abs_error = std::max(part.max_abs_error, err);
        ok = err <= atol * scale + rtol * std::fabs(w);
      }
      if (!ok && part.mismatches++ == 0) first[c] = i;
    }
  });
  CompareResult result;
  size_t first_bad = size;
  for (size_t c = 0; c < parts.size(); ++c) {
    result.mismatches += parts[c].mismatches;
    result.max_abs_error = std::max(result.max_abs_error, parts[c].max_abs_error);
    first_bad = std::min(first_bad, first[c]);
  }
  if (first_bad < size)
    result.first_mismatch = format_index(name, shape, static_cast<int64_t>(first_bad)) + ": got " +
                            format_number(got[first_bad]) + ", want " + format_number(want[first_bad]);
  return result;
}

}  // namespace tessel
