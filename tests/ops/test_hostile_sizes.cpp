// Hostile sizes and expressions through the library: extents whose element, byte or iteration counts
// overflow or exceed the limits (schedule/te/tensor_size.h), workloads beyond this machine's memory
// (schedule/interpreter/host_memory.h), conv2d parameters whose arithmetic would wrap, and
// elementwise expressions nested or chained beyond the parser's limits. Every one is an InputError
// that names the tensor, the parameter or the column, raised before anything is allocated, and in
// bounded time.
#include <catch2/catch.hpp>

#include <limits>
#include <regex>
#include <string>

#include "schedule/interpreter/host_memory.h"
#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/ops/elementwise_parser.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/checked_math.h"
#include "schedule/te/dag_parser.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

using namespace tessel;

namespace {

// The message of the InputError `f` throws; fails the test when it throws nothing or something else.
template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("no InputError");
  return "";
}

// A size printed as a wrapped (negative) number would read "-92233...": no message may hold one.
bool has_negative_number(const std::string& text) { return std::regex_search(text, std::regex("-[0-9]{4,}")); }

void require_contains(const std::string& text, std::initializer_list<const char*> parts) {
  INFO("message: " << text);
  for (const char* p : parts) CHECK(text.find(p) != std::string::npos);
  CHECK_FALSE(has_negative_number(text));
}

ComputeDAG op(const std::string& name, const OpParams& params) { return build_op(name, params); }

std::string nested(const std::string& open, const std::string& inner, const std::string& close, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += open;
  s += inner;
  for (int i = 0; i < n; ++i) s += close;
  return s;
}

ComputeDAG elementwise(const std::string& expr, const std::string& shape = "8") {
  return op("elementwise", {{"shape", shape}, {"expr", expr}});
}

}  // namespace

TEST_CASE("checked size arithmetic reports overflow instead of wrapping", "[hostile][sizes]") {
  const int64_t max = std::numeric_limits<int64_t>::max();
  CHECK(checked_mul(int64_t{1} << 31, int64_t{1} << 31) == (int64_t{1} << 62));
  CHECK_FALSE(checked_mul(int64_t{1} << 32, int64_t{1} << 31).has_value());
  CHECK_FALSE(checked_mul(-1, std::numeric_limits<int64_t>::min()).has_value());
  CHECK_FALSE(checked_add(max, 1).has_value());
  CHECK(checked_add(max - 1, 1) == max);
  require_contains(input_error_of([&] { mul_or_throw(max, 2, "the padded height"); }),
                   {"the padded height", "beyond the int64 range", "9223372036854775807 x 2"});
  CHECK(format_bytes(512) == "512 bytes");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(static_cast<double>(kMaxTensorBytes)) == "256 TiB");
  CHECK(format_bytes(1e30).find("EiB") != std::string::npos);
}

TEST_CASE("tensors beyond 256 TiB or int64 are refused when the DAG is built, naming the tensor", "[hostile][sizes]") {
  require_contains(input_error_of([] { op("matmul", {{"M", "4294967296"}, {"N", "4294967296"}, {"K", "4294967296"}}); }),
                   {"tensor A[4294967296, 4294967296]", "too large", "EiB", "256 TiB"});
  require_contains(input_error_of([] { op("reduce_sum", {{"rows", "9223372036854775807"}, {"cols", "4"}}); }),
                   {"tensor X[9223372036854775807, 4]", "too large"});
  require_contains(input_error_of([] { elementwise("x", "99999999999x99999999999"); }),
                   {"tensor x[99999999999, 99999999999]", "1e+22 elements"});
  // Just beyond the limit: 2^46 float32 elements are 256 TiB exactly, one more row is too many.
  CHECK_NOTHROW(elementwise("x", "70368744177664"));
  require_contains(input_error_of([] { elementwise("x", "70368744177665"); }),
                   {"tensor x[70368744177665]", "70368744177665 elements of float32 = 281474976710660 bytes"});
}

TEST_CASE("loop nests beyond 2^62 iterations are refused, naming the operation and its extents", "[hostile][sizes]") {
  // Every tensor is 16 TiB, within the limit; the reduction loops 2^63 times.
  require_contains(input_error_of([] { op("matmul", {{"M", "2097152"}, {"N", "2097152"}, {"K", "2097152"}}); }),
                   {"operation C", "2097152 x 2097152 x 2097152", "2^62"});
}

TEST_CASE("conv2d sizes are computed checked: a pad or kernel near 2^63 names the parameter", "[hostile][sizes]") {
  const OpParams base = {{"N", "1"}, {"C", "3"}, {"H", "8"}, {"W", "8"}, {"F", "4"}, {"KH", "3"}, {"KW", "3"}};
  auto with = [&](std::initializer_list<std::pair<const std::string, std::string>> extra) {
    OpParams p = base;
    for (const auto& [k, v] : extra) p[k] = v;
    return p;
  };
  require_contains(input_error_of([&] { op("conv2d", with({{"pad", "4611686018427387904"}})); }),
                   {"op conv2d: param pad", "padded height", "beyond the int64 range"});
  require_contains(input_error_of([&] { op("conv2d", with({{"KH", "9223372036854775807"}, {"dilation", "4"}})); }),
                   {"op conv2d: param KH", "dilated kernel", "beyond the int64 range"});
  require_contains(input_error_of([&] { op("conv2d", with({{"KW", "9223372036854775807"}})); }),
                   {"op conv2d: param KW", "larger than the padded input (8 columns)"});
  // A pad that fits int64 but makes the padded tensor absurd is refused by the tensor's size.
  require_contains(input_error_of([&] { op("conv2d", with({{"pad", "1000000000"}})); }),
                   {"tensor pad[1, 3, 2000000008, 2000000008]", "too large"});
}

TEST_CASE("a workload beyond this machine's memory is refused before anything is allocated", "[hostile][memory]") {
  const ComputeDAG big = op("matmul", {{"M", "1000000000000"}, {"N", "16"}, {"K", "16"}});  // a valid DAG
  const HostMemoryNeed need = host_memory_need(big);
  CHECK(need.largest == "A[1000000000000, 16]");
  CHECK(need.largest_bytes == int64_t{1000000000000} * 16 * (2 * 4 + 8));
  require_contains(input_error_of([&] { require_host_memory(big, int64_t{16} << 30); }),
                   {"needs 407.5 TiB", "the largest tensor, A[1000000000000, 16]", "this machine's 16 GiB"});
  CHECK_NOTHROW(require_host_memory(op("matmul", {{"M", "64"}, {"N", "64"}, {"K", "64"}}), int64_t{16} << 30));

  // Three inputs of 128 TiB each: no machine holds that, so the interpreter's own entry points
  // refuse it against the real physical memory, before allocating.
  const ComputeDAG huge = op("elementwise", {{"shape", "35184372088832"}, {"inputs", "3"}, {"expr", "x+y*z"}});
  require_contains(input_error_of([&] { make_random_inputs(huge, 1); }), {"host memory", "PiB", "this machine's"});
  require_contains(input_error_of([&] { evaluate_reference(huge, {}); }), {"host memory", "PiB"});
}

TEST_CASE("elementwise expressions nested too deep are refused at the column where the limit is crossed",
          "[hostile][expr]") {
  // 20,000 parentheses used to overflow the stack; the 257th opens one level too many.
  require_contains(input_error_of([] { elementwise(nested("(", "x", ")", 20000)); }),
                   {"param expr", "column 257", "more than 256 levels"});
  // 2,000 nested calls used to take minutes; the 257th call starts at column 256 * 8 + 1.
  require_contains(input_error_of([] { elementwise(nested("sigmoid(", "x", ")", 2000)); }),
                   {"column 2049", "more than 256 levels"});
  require_contains(input_error_of([] { elementwise(nested("-", "x", "", 300)); }), {"column 257", "256 levels"});
}

TEST_CASE("elementwise expressions with more than 512 operations are refused", "[hostile][expr]") {
  std::string chain = "x";
  for (int i = 0; i < 600; ++i) chain += "+x";
  // The 513th '+' is at column 2 * 513.
  require_contains(input_error_of([&] { elementwise(chain); }), {"column 1026", "more than 512 operators"});
  std::string calls = "x";
  for (int i = 0; i < 300; ++i) calls += "+exp(x)";
  require_contains(input_error_of([&] { elementwise(calls); }), {"more than 512 operators"});
}

TEST_CASE("an expression at the limits parses in linear time and round-trips through the DAG text",
          "[hostile][expr]") {
  // 256 nested calls (the most allowed) and a 255-operator chain inside: the deepest and longest
  // expression a user can write. Its tree is far below the DAG's depth limit, so the canonical text
  // parses back.
  std::string chain = "x";
  for (int i = 0; i < 255; ++i) chain += "*x";
  const std::string expr = nested("sigmoid(", chain, ")", 256);
  const ComputeDAG dag = elementwise(expr);
  CHECK(parse_dag_text(dag.to_text()).to_text() == dag.to_text());
  const ComputeDAG& d = dag;
  CHECK(expr_depth(d.op("Y").body) <= 256 + 256 + 1);
}

TEST_CASE("ComputeDAG refuses an expression deeper than the passes can recurse", "[hostile][expr]") {
  Expr deep = make_tensor_read("x", {make_var("i")});
  for (int i = 0; i < kMaxExprDepth + 10; ++i) deep = make_call(MathFn::Exp, {deep});
  Operation x;
  x.name = "x";
  x.is_placeholder = true;
  x.shape = {4};
  Operation y;
  y.name = "Y";
  y.shape = {4};
  y.axes = {{"i", 4}};
  y.body = deep;
  require_contains(input_error_of([&] { ComputeDAG({x, y}); }), {"operation Y", "1012 levels deep", "at most 1000"});

  // expr_depth visits each shared node once: a doubling DAG of 2^200 paths is measured at once.
  Expr doubling = make_float(1);
  for (int i = 0; i < 200; ++i) doubling = doubling + doubling;
  CHECK(expr_depth(doubling) == 201);
}
