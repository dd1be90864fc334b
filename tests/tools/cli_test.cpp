// End-to-end tests of the `tessel` command line: exit codes (0 success, 1 a check failed, 2 bad
// input with an `error:` message on standard error), and what the success paths print.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "subprocess.h"
#include "tests/skip.h"

namespace tessel_test {
std::string demo_cnn_bytes();  // demo_model_file.cpp
}

using tessel_test::RunResult;
using tessel_test::source_file;
using tessel_test::TempDir;
using tessel_test::tessel;
using tessel_test::skip_test;

namespace {

using Args = std::vector<std::string>;

// A small matmul, cheap to build and check.
Args matmul(const std::string& m = "64", const std::string& n = "64", const std::string& k = "64") {
  return {"--op", "matmul", "--param", "M=" + m, "--param", "N=" + n, "--param", "K=" + k};
}

Args concat(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Args cmd(const std::string& sub, const Args& workload, const Args& extra = {}) {
  return concat(concat({sub}, workload), extra);
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The last line of `text`, or "" when there is none.
std::string last_line(const std::string& text) {
  std::vector<std::string> lines = lines_of(text);
  return lines.empty() ? std::string() : lines.back();
}

void describe(const RunResult& r) {
  UNSCOPED_INFO("command: " << r.command);
  UNSCOPED_INFO("exit code: " << r.exit_code);
  UNSCOPED_INFO("stdout:\n" << r.out);
  UNSCOPED_INFO("stderr:\n" << r.err);
}

// Bad input: exit code 2, nothing on stdout, and a message on stderr that starts with `error:` and
// mentions every one of `needles` (what was wrong and where).
void require_bad_input(const Args& args, const std::vector<std::string>& needles) {
  RunResult r = tessel(args);
  describe(r);
  CHECK(r.exit_code == 2);
  CHECK(starts_with(r.err, "error:"));
  CHECK(r.out.empty());
  for (const std::string& n : needles) {
    INFO("stderr should mention: " << n);
    CHECK(contains(r.err, n));
  }
}

// Success: exit code 0 and nothing on stderr.
RunResult require_ok(const Args& args) {
  RunResult r = tessel(args);
  describe(r);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  return r;
}

// A schedule file: `steps` is the JSON array of steps.
std::string schedule_json(const std::string& steps) { return "{\"version\": 1, \"steps\": " + steps + "}"; }

}  // namespace

// ---- bad workloads --------------------------------------------------------------------------------

TEST_CASE("an unknown op is bad input and the message names it and the known ops", "[cli][input]") {
  require_bad_input({"show", "--op", "matmull", "--param", "M=8"}, {"matmull", "matmul", "softmax"});
  require_bad_input({"check", "--op", "no_such_op"}, {"no_such_op"});
}

TEST_CASE("a missing required param is bad input that names the param", "[cli][input]") {
  require_bad_input({"show", "--op", "matmul", "--param", "M=64", "--param", "N=64"}, {"K", "missing"});
  require_bad_input({"show", "--op", "elementwise", "--param", "shape=8x8"}, {"expr"});
}

TEST_CASE("malformed param values are bad input that names the param and the value", "[cli][input]") {
  SECTION("not a number") { require_bad_input(cmd("show", matmul("abc")), {"param M", "abc"}); }
  SECTION("negative") { require_bad_input(cmd("show", matmul("-3")), {"param M", "-3"}); }
  SECTION("zero") { require_bad_input(cmd("show", matmul("64", "0")), {"param N", "0"}); }
  SECTION("fractional") { require_bad_input(cmd("show", matmul("64", "64", "1.5")), {"param K", "1.5"}); }
  SECTION("empty") { require_bad_input(cmd("show", matmul("")), {"param M"}); }
  SECTION("too large for 64 bits") {
    require_bad_input(cmd("show", matmul("99999999999999999999")), {"param M", "99999999999999999999"});
  }
  SECTION("a choice outside its list") {
    require_bad_input({"show", "--op", "dense", "--param", "M=8", "--param", "N=8", "--param", "K=8", "--param",
                       "act=tanhh"},
                      {"act", "tanhh", "relu"});
  }
  SECTION("a malformed shape") {
    require_bad_input({"show", "--op", "elementwise", "--param", "shape=8xx8", "--param", "expr=x"}, {"shape"});
  }
  SECTION("a negative epsilon") {
    require_bad_input({"show", "--op", "layernorm", "--param", "rows=4", "--param", "cols=8", "--param", "eps=-1"},
                      {"eps"});
  }
}

TEST_CASE("an unknown param name is bad input that lists the op's params", "[cli][input]") {
  require_bad_input(concat(cmd("show", matmul()), {"--param", "Q=4"}), {"'Q'", "M, N, K"});
}

TEST_CASE("a param without '=' or with an empty name is bad input", "[cli][input]") {
  require_bad_input({"show", "--op", "matmul", "--param", "M64", "--param", "N=64", "--param", "K=64"},
                    {"M64", "NAME=VALUE"});
  require_bad_input({"show", "--op", "matmul", "--param", "=64", "--param", "N=64", "--param", "K=64"},
                    {"=64", "NAME=VALUE"});
}

TEST_CASE("a param given twice is bad input", "[cli][input]") {
  require_bad_input(concat(cmd("show", matmul()), {"--param", "M=32"}), {"M", "twice"});
}

TEST_CASE("a workload needs exactly one of --op and --suite", "[cli][input]") {
  std::string suite = source_file("suites/operators.json");
  SECTION("both") {
    require_bad_input({"show", "--op", "matmul", "--suite", suite, "--case", "gelu_tanh_1024"}, {"--op", "--suite"});
  }
  SECTION("neither") { require_bad_input({"show"}, {"--op", "--suite"}); }
  SECTION("neither, with run") { require_bad_input({"run"}, {"--op", "--suite"}); }
  SECTION("--suite without --case") { require_bad_input({"show", "--suite", suite}, {"--case"}); }
  SECTION("--case without --suite") { require_bad_input(concat(cmd("show", matmul()), {"--case", "x"}), {"--case"}); }
  SECTION("--param with --suite") {
    require_bad_input({"show", "--suite", suite, "--case", "gelu_tanh_1024", "--param", "M=3"}, {"--param"});
  }
}

TEST_CASE("suite files that cannot be used are bad input", "[cli][input]") {
  TempDir dir;
  SECTION("a missing file") {
    std::string missing = dir.file("no_such_suite.json");
    require_bad_input({"show", "--suite", missing, "--case", "a"}, {missing});
  }
  SECTION("malformed JSON") {
    std::string path = dir.write("broken.json", "{\"cases\": [ {\"name\": \"a\", ");
    require_bad_input({"show", "--suite", path, "--case", "a"}, {path, "malformed JSON"});
  }
  SECTION("JSON that is not a suite") {
    std::string path = dir.write("list.json", "[1, 2, 3]");
    require_bad_input({"show", "--suite", path, "--case", "a"}, {path, "cases"});
  }
  SECTION("an unknown case lists the suite's cases") {
    std::string suite = source_file("suites/operators.json");
    require_bad_input({"show", "--suite", suite, "--case", "no_such_case"},
                      {"no_such_case", "elemwise_chain_4096", "gelu_tanh_1024"});
  }
  SECTION("a case with bad params names the file and the case") {
    std::string path = dir.write(
        "bad_case.json",
        R"({"cases": [{"name": "tiny", "op": "matmul", "params": {"M": 4, "N": 4, "K": 0}}]})");
    require_bad_input({"show", "--suite", path, "--case", "tiny"}, {path, "tiny", "param K"});
  }
}

TEST_CASE("malformed elementwise expressions are bad input that says where", "[cli][input]") {
  auto elementwise = [](const std::string& expr) {
    return Args{"show", "--op", "elementwise", "--param", "shape=16x16", "--param", "expr=" + expr, "--emit", "te"};
  };
  SECTION("an unclosed parenthesis") { require_bad_input(elementwise("sigmoid(x"), {"expr", "column", "')'"}); }
  SECTION("an unknown function") { require_bad_input(elementwise("foo(x)"), {"expr", "foo"}); }
  SECTION("a dangling operator") { require_bad_input(elementwise("x+"), {"expr", "column"}); }
  SECTION("an input beyond the inputs param") { require_bad_input(elementwise("x+y"), {"expr", "'y'"}); }
}

// ---- bad options ----------------------------------------------------------------------------------

TEST_CASE("an unknown --target is bad input for show, check and run", "[cli][input]") {
  require_bad_input(cmd("show", matmul(), {"--target", "tpu"}), {"tpu", "llvm", "cuda"});
  require_bad_input(cmd("check", matmul(), {"--target", "tpu"}), {"tpu"});
  require_bad_input(cmd("run", matmul(), {"--target", "tpu"}), {"tpu"});
}

// --target cuda: CUDA C is printed and compiled through NVRTC on any machine; measuring needs a GPU.
TEST_CASE("cuda: show prints kernels, mismatched --emit is bad input", "[cli][cuda]") {
  RunResult r = tessel(cmd("show", matmul("33", "17", "29"), {"--target", "cuda", "--emit", "cuda"}));
  describe(r);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "__global__"));
  CHECK(contains(r.out, "// launch kernel_0 grid("));
  require_bad_input(cmd("show", matmul(), {"--target", "cuda", "--emit", "llvm"}), {"--emit"});
  require_bad_input(cmd("show", matmul(), {"--emit", "cuda"}), {"--target cuda"});
}

TEST_CASE("cuda: run without a GPU says so and exits 2", "[cli][cuda]") {
  RunResult probe = tessel(cmd("run", matmul("8", "8", "8"), {"--target", "cuda", "--min-time", "0.01"}));
  if (probe.exit_code == 0) {
    skip_test("a CUDA device is present; this checks the message on a machine without one");
    return;
  }
  describe(probe);
  CHECK(probe.exit_code == 2);
  CHECK(starts_with(probe.err, "error: no CUDA device"));
}

// `tessel check --compile-only` of `op` with `extra` options and `random` random schedules besides
// the default: all of them built through NVRTC. False (the test skipped) where NVRTC is missing.
static bool check_compile_only(const Args& op, const Args& extra, int random) {
  RunResult r = tessel(cmd("check", op, concat({"--target", "cuda", "--compile-only", "--random-schedules",
                                                std::to_string(random)}, extra)));
  describe(r);
  if (contains(r.out, "NVRTC not available")) {
    skip_test("NVRTC not available on this machine");
    return false;
  }
  CHECK(r.exit_code == 0);
  const std::string n = std::to_string(random + 1);
  CHECK(contains(last_line(r.out), "checked " + n + " schedules: " + n + " correct"));
  return true;
}

TEST_CASE("cuda: check --compile-only builds default and random GPU schedules through NVRTC", "[cli][cuda]") {
  check_compile_only(matmul("33", "17", "29"), {}, 3);
}

// Contractions at the shapes the GPU host checks by running in 16 bits (experiments/gpu/check_random.sh
// with DTYPE), no size a multiple of 16, so the tiles take their guarded edges; the default and 40
// random schedules of each.
static void check_contractions_compile(const std::string& dtype) {
  const std::vector<Args> ops = {
      {"--op", "matmul", "--param", "M=197", "--param", "N=771", "--param", "K=61"},
      {"--op", "dense", "--param", "M=7", "--param", "N=1000", "--param", "K=197", "--param", "bias=1", "--param",
       "act=gelu"},
      {"--op", "batch_matmul", "--param", "B=3", "--param", "M=61", "--param", "N=197", "--param", "K=7"}};
  for (const Args& op : ops)
    if (!check_compile_only(op, {"--dtype", dtype}, 40)) return;
}

TEST_CASE("cuda: check --compile-only builds bf16 contractions at odd sizes through NVRTC", "[cli][cuda][half]") {
  check_contractions_compile("bf16");
}

TEST_CASE("cuda: check --compile-only builds fp16 contractions at odd sizes through NVRTC", "[cli][cuda][half]") {
  check_contractions_compile("fp16");
}

TEST_CASE("cuda: check --compile-only builds float32 contractions at odd sizes through NVRTC, their staged tiles in "
          "up to four copies", "[cli][cuda]") {
  check_contractions_compile("fp32");
}

TEST_CASE("an unknown --emit is bad input", "[cli][input]") {
  require_bad_input(cmd("show", matmul(), {"--emit", "ptx"}), {"ptx"});
}

TEST_CASE("out-of-range numeric options are bad input", "[cli][input]") {
  require_bad_input(cmd("check", matmul(), {"--random-schedules", "-1"}), {"--random-schedules"});
  require_bad_input(cmd("check", matmul(), {"--random-schedules", "many"}), {"--random-schedules"});
  require_bad_input(cmd("run", matmul(), {"--min-time", "0"}), {"--min-time"});
  require_bad_input(cmd("run", matmul(), {"--threads", "-2"}), {"--threads"});
}

TEST_CASE("an unknown option, a stray argument or no subcommand at all is bad input", "[cli][input]") {
  require_bad_input(cmd("show", matmul(), {"--no-such-flag"}), {"--no-such-flag"});
  require_bad_input(cmd("show", matmul(), {"stray"}), {"stray"});
  require_bad_input({}, {"subcommand"});
}

TEST_CASE("an unknown subcommand is bad input whose message names it", "[cli][input]") {
  require_bad_input({"frobnicate"}, {"frobnicate"});
}

TEST_CASE("unusable schedule files are bad input that names the file and what is wrong", "[cli][input]") {
  TempDir dir;
  SECTION("a missing file") {
    std::string missing = dir.file("missing_schedule.json");
    require_bad_input(cmd("show", matmul(), {"--schedule", missing}), {missing});
    require_bad_input(cmd("check", matmul(), {"--schedule", missing}), {missing});
    require_bad_input(cmd("run", matmul(), {"--schedule", missing}), {missing});
  }
  SECTION("a JSON syntax error") {
    std::string path = dir.write("syntax.json", "{\"version\": 1, \"steps\": [");
    require_bad_input(cmd("show", matmul(), {"--schedule", path}), {path, "malformed JSON"});
    require_bad_input(cmd("check", matmul(), {"--schedule", path}), {path, "malformed JSON"});
  }
  SECTION("an unknown step kind") {
    std::string path = dir.write("kind.json", schedule_json(R"([{"kind": "tile", "stage": "C"}])"));
    require_bad_input(cmd("show", matmul(), {"--schedule", path}), {path, "step 0", "tile"});
  }
  SECTION("a step with a missing field") {
    std::string path =
        dir.write("field.json", schedule_json(R"([{"kind": "split", "stage": "C", "loop": "i"}])"));
    require_bad_input(cmd("show", matmul(), {"--schedule", path}), {path, "step 0", "factors"});
  }
  SECTION("a field of the wrong type") {
    std::string path = dir.write(
        "type.json", schedule_json(R"([{"kind": "split", "stage": "C", "loop": "i", "factors": "8"}])"));
    require_bad_input(cmd("show", matmul(), {"--schedule", path}), {path, "step 0", "factors"});
  }
  SECTION("an unsupported version") {
    std::string path = dir.write("version.json", R"({"version": 999, "steps": []})");
    require_bad_input(cmd("show", matmul(), {"--schedule", path}), {path, "999"});
  }
}

TEST_CASE("a schedule step that names a missing loop is bad input naming the step and the loop",
          "[cli][input]") {
  TempDir dir;
  // Step 0 is valid; step 1 names a loop that the stage does not have.
  std::string path = dir.write(
      "loop.json", schedule_json(R"([{"kind": "split", "stage": "C", "loop": "i", "factors": [8]},
                                      {"kind": "annotate", "stage": "C", "loop": "no_such_loop",
                                       "annotation": "parallel"}])"));
  require_bad_input(cmd("show", matmul(), {"--schedule", path}), {"step 1", "no_such_loop"});
  require_bad_input(cmd("check", matmul(), {"--schedule", path}), {"step 1", "no_such_loop"});
  require_bad_input(cmd("run", matmul(), {"--schedule", path}), {"step 1", "no_such_loop"});
}

TEST_CASE("a schedule step that is not legal is bad input naming the step", "[cli][input]") {
  TempDir dir;
  std::string path = dir.write(
      "parallel_k.json", schedule_json(R"([{"kind": "annotate", "stage": "C", "loop": "k",
                                            "annotation": "parallel"}])"));
  require_bad_input(cmd("check", matmul(), {"--schedule", path}), {"step 0", "'k'"});
}

// ---- success paths ------------------------------------------------------------------------------

TEST_CASE("tessel ops lists every op template with its params", "[cli][ops]") {
  RunResult r = require_ok({"ops"});
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"matmul", {"M", "N", "K", "dtype"}},
      {"dense", {"M", "N", "K", "bias", "act", "dtype"}},
      {"batch_matmul", {"B", "M", "N", "K", "dtype"}},
      {"conv2d",
       {"N", "C", "H", "W", "F", "KH", "KW", "stride", "pad", "dilation", "groups", "bias", "act", "layout", "dtype"}},
      {"softmax", {"rows", "cols"}},
      {"layernorm", {"rows", "cols", "eps"}},
      {"rmsnorm", {"rows", "cols", "eps"}},
      {"reduce_sum", {"rows", "cols"}},
      {"bias_residual_layernorm", {"rows", "cols", "eps"}},
      {"elementwise", {"shape", "inputs", "expr"}},
  };
  // Each template is a line that starts with its name, followed by one indented line per param.
  std::vector<std::string> lines = lines_of(r.out);
  for (const auto& [op, params] : expected) {
    INFO("op " << op);
    size_t at = lines.size();
    for (size_t i = 0; i < lines.size(); ++i)
      if (starts_with(lines[i], op + " ")) at = i;
    REQUIRE(at < lines.size());
    std::vector<std::string> listed;
    for (size_t i = at + 1; i < lines.size() && starts_with(lines[i], " "); ++i) {
      std::istringstream words(lines[i]);
      std::string name;
      words >> name;
      listed.push_back(name);
    }
    CHECK(listed == params);
  }
  size_t templates = 0;
  for (const std::string& line : lines)
    if (!line.empty() && line[0] != ' ') ++templates;
  CHECK(templates == expected.size());
}

TEST_CASE("show --emit te prints the tensor expression", "[cli][show]") {
  RunResult r = require_ok(cmd("show", matmul("61", "7", "13"), {"--emit", "te"}));
  CHECK(r.out ==
        "A = placeholder(float32[61, 13])\n"
        "B = placeholder(float32[13, 7])\n"
        "C[i:61, j:7] = sum(k:13; (A[i, k] * B[k, j]))  : float32\n");
}

TEST_CASE("show --emit schedule prints the schedule JSON and the resulting state", "[cli][show]") {
  RunResult r = require_ok(cmd("show", matmul(), {"--emit", "schedule", "--schedule", "none"}));
  // The JSON comes first, followed by a blank line and the state.
  size_t gap = r.out.find("\n\n");
  REQUIRE(gap != std::string::npos);
  nlohmann::json j = nlohmann::json::parse(r.out.substr(0, gap));
  CHECK(j["steps"].empty());
  CHECK(j["version"].is_number_integer());
}

TEST_CASE("show --emit lowered prints one loop per line with the annotations", "[cli][show]") {
  TempDir dir;
  std::string path = dir.write(
      "tiled.json", schedule_json(R"([
        {"kind": "split", "stage": "C", "loop": "i", "factors": [8]},
        {"kind": "split", "stage": "C", "loop": "j", "factors": [8]},
        {"kind": "reorder", "stage": "C", "loops": ["i.0", "j.0", "k", "i.1", "j.1"]},
        {"kind": "annotate", "stage": "C", "loop": "i.0", "annotation": "parallel"},
        {"kind": "annotate", "stage": "C", "loop": "j.1", "annotation": "vectorize"}])"));
  RunResult r = require_ok(cmd("show", matmul(), {"--schedule", path, "--emit", "lowered"}));
  std::vector<std::string> lines = lines_of(r.out);
  int loop_lines = 0;
  bool parallel = false, vector = false;
  for (const std::string& line : lines) {
    std::smatch m;
    // No two loop headers on one line.
    static const std::regex loop_header(R"(\b(for|parallel|vectorized|unrolled)\s*\()");
    auto begin = std::sregex_iterator(line.begin(), line.end(), loop_header);
    long headers = std::distance(begin, std::sregex_iterator());
    CHECK(headers <= 1);
    loop_lines += headers;
    parallel = parallel || contains(line, "parallel");
    vector = vector || contains(line, "vectorized") || contains(line, "ramp");
  }
  CHECK(loop_lines >= 2);
  CHECK(parallel);
  CHECK(vector);
}

TEST_CASE("show --emit llvm prints LLVM IR with vector types", "[cli][show]") {
  RunResult r = require_ok(cmd("show", matmul(), {"--emit", "llvm"}));
  CHECK(contains(r.out, "define"));
  static const std::regex vector_type(R"(<(4|8|16|32) x float>)");
  CHECK(std::regex_search(r.out, vector_type));
}

TEST_CASE("show --dump-passes prints one section per lowering pass", "[cli][show]") {
  RunResult r = require_ok(cmd("show", matmul(), {"--dump-passes"}));
  std::vector<std::string> sections;
  for (const std::string& line : lines_of(r.out))
    if (starts_with(line, "// ---- after ")) sections.push_back(line);
  // The passes of schedule/lower/lower.cpp, in order, each exactly once.
  const std::vector<std::string> passes = {"schedule_ops", "storage_flatten", "simplify",
                                           "loop_partition", "vectorize", "unroll"};
  REQUIRE(sections.size() == passes.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    INFO("section " << i << ": " << sections[i]);
    CHECK(starts_with(sections[i], "// ---- after " + passes[i]));
  }
  // Every section holds a whole function.
  size_t functions = 0;
  for (const std::string& line : lines_of(r.out)) functions += starts_with(line, "func kernel(") ? 1 : 0;
  CHECK(functions == passes.size());
}

TEST_CASE("the schedule command prints a trace that check accepts", "[cli][schedule]") {
  TempDir dir;
  for (const Args& extra : {Args{}, Args{"--random-seed", "3"}}) {
    RunResult s = require_ok(concat(cmd("schedule", matmul("48", "40", "24")), extra));
    nlohmann::json trace = nlohmann::json::parse(s.out);
    CHECK(trace.contains("version"));
    REQUIRE(trace["steps"].is_array());
    std::string path = dir.write("trace.json", s.out);
    RunResult c = require_ok(cmd("check", matmul("48", "40", "24"), {"--schedule", path}));
    CHECK(contains(c.out, "checked 2 schedules: 2 correct"));
  }
}

TEST_CASE("the default schedule printed by schedule is the one show uses", "[cli][schedule]") {
  TempDir dir;
  RunResult s = require_ok(cmd("schedule", matmul()));
  std::string path = dir.write("default.json", s.out);
  RunResult from_file = require_ok(cmd("show", matmul(), {"--schedule", path}));
  RunResult by_default = require_ok(cmd("show", matmul(), {"--schedule", "default"}));
  CHECK(from_file.out == by_default.out);
}

TEST_CASE("check with random schedules at an odd shape reports every schedule correct", "[cli][check]") {
  RunResult r = require_ok(cmd("check", matmul("33", "17", "29"), {"--random-schedules", "5", "--seed", "7"}));
  std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(!lines.empty());
  CHECK(lines.back() == "checked 6 schedules: 6 correct");
}

TEST_CASE("check of an elementwise suite case", "[cli][check]") {
  RunResult r = require_ok(
      {"check", "--suite", source_file("suites/operators.json"), "--case", "gelu_tanh_1024", "--random-schedules", "2"});
  CHECK(last_line(r.out) == "checked 3 schedules: 3 correct");
}

TEST_CASE("check --verbose prints a line per schedule", "[cli][check]") {
  RunResult r = require_ok(cmd("check", matmul("16", "16", "16"), {"--random-schedules", "2", "--verbose"}));
  std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "ok   default");
  CHECK(lines[3] == "checked 3 schedules: 3 correct");
}

TEST_CASE("run --json --check prints one JSON object with the timing and the verdict", "[cli][run]") {
  RunResult r = require_ok(cmd("run", matmul(), {"--json", "--check", "--min-time", "0.05", "--threads", "2"}));
  std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 1);
  nlohmann::json j = nlohmann::json::parse(lines[0]);
  REQUIRE(j.is_object());
  REQUIRE(j["median_ms"].is_number());
  CHECK(j["median_ms"].get<double>() > 0);
  REQUIRE(j["samples_ms"].is_array());
  CHECK(!j["samples_ms"].empty());
  for (const auto& s : j["samples_ms"]) CHECK(s.get<double>() > 0);
  REQUIRE(j["gflops"].is_number());
  CHECK(j["gflops"].get<double>() >= 0);
  REQUIRE(j["correct"].is_boolean());
  CHECK(j["correct"].get<bool>());
  CHECK(j["threads"] == 2);
}

TEST_CASE("run --json without --check leaves correct null", "[cli][run]") {
  RunResult r = require_ok(cmd("run", matmul("32", "32", "32"), {"--json", "--min-time", "0.02"}));
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j.contains("correct"));
  CHECK(j["correct"].is_null());
}

TEST_CASE("run without --json prints a readable summary", "[cli][run]") {
  RunResult r = require_ok(cmd("run", matmul("32", "32", "32"), {"--check", "--min-time", "0.02"}));
  CHECK(contains(r.out, "median"));
  CHECK(contains(r.out, "GFLOP/s"));
  CHECK(contains(r.out, "correct"));
}

TEST_CASE("run with no schedule at all still computes the right result", "[cli][run]") {
  RunResult r = require_ok(cmd("run", matmul("24", "20", "12"), {"--schedule", "none", "--check", "--json",
                                                                  "--min-time", "0.02"}));
  CHECK(nlohmann::json::parse(r.out)["correct"] == true);
}

TEST_CASE("a suite case works as a workload", "[cli][suite]") {
  RunResult r = require_ok(
      {"show", "--suite", source_file("suites/operators.json"), "--case", "gelu_tanh_1024", "--emit", "te"});
  CHECK(contains(r.out, "tanh"));
  CHECK(contains(r.out, "1024"));
}

TEST_CASE("every op template builds, lowers and checks at a small odd shape", "[cli][ops]") {
  const std::vector<Args> workloads = {
      {"--op", "dense", "--param", "M=9", "--param", "N=7", "--param", "K=5", "--param", "bias=1", "--param",
       "act=gelu"},
      {"--op", "batch_matmul", "--param", "B=2", "--param", "M=5", "--param", "N=7", "--param", "K=3"},
      {"--op", "conv2d", "--param", "N=1", "--param", "C=3", "--param", "H=7", "--param", "W=9", "--param", "F=4",
       "--param", "KH=3", "--param", "KW=3", "--param", "pad=1", "--param", "stride=2"},
      {"--op", "softmax", "--param", "rows=3", "--param", "cols=37"},
      {"--op", "layernorm", "--param", "rows=3", "--param", "cols=37"},
      {"--op", "rmsnorm", "--param", "rows=3", "--param", "cols=37"},
      {"--op", "reduce_sum", "--param", "rows=3", "--param", "cols=37"},
      {"--op", "bias_residual_layernorm", "--param", "rows=3", "--param", "cols=37"},
      {"--op", "elementwise", "--param", "shape=5x13", "--param", "inputs=2", "--param", "expr=sigmoid(x)*y-1"},
  };
  for (const Args& w : workloads) {
    RunResult r = require_ok(cmd("check", w, {"--random-schedules", "1"}));
    CHECK(last_line(r.out) == "checked 2 schedules: 2 correct");
  }
}

// ---- exit code 1 -------------------------------------------------------------------------------------
// A check fails (exit 1) when a schedule computes a wrong result or does not build for the target.
// Every schedule step that applies yields a correct program, but a step may bind a loop to a GPU
// index (blockIdx.x), which the llvm target cannot lower: check reports that schedule as failed.

namespace {

std::string gpu_bound_schedule(const TempDir& dir) {
  return dir.write("gpu.json", schedule_json(R"([{"kind": "annotate", "stage": "C", "loop": "i",
                                                 "annotation": "blockIdx.x"}])"));
}

}  // namespace

// A schedule the user gives that does not fit the target is bad input for every command.
TEST_CASE("show, run and check with a schedule the target cannot build are bad input", "[cli][input]") {
  TempDir dir;
  std::string path = gpu_bound_schedule(dir);
  require_bad_input(cmd("check", matmul(), {"--schedule", path, "--random-schedules", "1"}), {"blockIdx.x"});
  require_bad_input(cmd("show", matmul(), {"--schedule", path}), {"blockIdx.x"});
  require_bad_input(cmd("run", matmul(), {"--schedule", path, "--min-time", "0.01"}), {"blockIdx.x"});
}


TEST_CASE("a passing check exits 0, never 1", "[cli][check]") {
  RunResult r = tessel(cmd("check", matmul("8", "8", "8")));
  describe(r);
  CHECK(r.exit_code == 0);
  CHECK(last_line(r.out) == "checked 1 schedules: 1 correct");
}

// ---- tessel db ------------------------------------------------------------------------------------

TEST_CASE("db without --db or with an unknown command is bad input", "[cli][db]") {
  require_bad_input({"db", "info"}, {"--db"});
  require_bad_input({"db", "frobnicate", "--db", "x.db"}, {"frobnicate"});
  require_bad_input({"db"}, {"missing command"});
  require_bad_input({"db", "info", "--db"}, {"--db"});
  require_bad_input({"db", "info", "--db", "x.db", "--bogus"}, {"--bogus"});
}

TEST_CASE("db help prints the usage", "[cli][db]") {
  RunResult r = require_ok({"db", "help"});
  for (const char* c : {"info", "best", "check", "export", "import", "merge", "migrate"}) CHECK(contains(r.out, c));
}

TEST_CASE("db check of a file that is not a tuning log exits 1", "[cli][db]") {
  TempDir dir;
  std::string path = dir.write("garbage.db", std::string(4096, 'x') + "this is not an SQLite database\n");
  RunResult r = tessel({"db", "check", "--db", path});
  describe(r);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, path));
}

TEST_CASE("db check of a missing file is bad input", "[cli][db]") {
  TempDir dir;
  std::string path = dir.file("missing.db");
  require_bad_input({"db", "check", "--db", path}, {path});
}

TEST_CASE("db info on a path that does not exist is bad input and creates nothing", "[cli][db]") {
  TempDir dir;
  std::string path = dir.file("new.db");
  require_bad_input({"db", "info", "--db", path, "--json"}, {path, "does not exist"});
  CHECK(!std::filesystem::exists(path));
}

TEST_CASE("an empty log (an import of nothing) is one that info, best, check, export and migrate read", "[cli][db]") {
  TempDir dir;
  std::string path = dir.file("fresh.db");
  RunResult m = require_ok({"db", "import", "--db", path, dir.write("nothing.jsonl", "")});
  CHECK(contains(m.out, "imported 0"));
  REQUIRE(std::filesystem::exists(path));
  CHECK(contains(require_ok({"db", "migrate", "--db", path}).out, "schema is current"));

  RunResult info = require_ok({"db", "info", "--db", path, "--json"});
  nlohmann::json j = nlohmann::json::parse(info.out);
  for (const char* key : {"workloads", "targets", "sessions", "records", "error_records"}) {
    INFO("key " << key);
    REQUIRE(j.contains(key));
    CHECK(j[key] == 0);
  }
  RunResult best = require_ok({"db", "best", "--db", path, "--json"});
  CHECK(nlohmann::json::parse(best.out) == nlohmann::json::array());
  RunResult check = require_ok({"db", "check", "--db", path});
  CHECK(check.out == "ok\n");
  RunResult exported = require_ok({"db", "export", "--db", path});
  CHECK(exported.out.empty());
}

TEST_CASE("db import of a file that does not exist is bad input", "[cli][db]") {
  TempDir dir;
  std::string missing = dir.file("records.jsonl");
  require_bad_input({"db", "import", "--db", dir.file("log.db"), missing}, {missing});
}

// ---- smaller input-handling gaps ------------------------------------------------------------------

TEST_CASE("a directory given as a suite or schedule file is bad input reported as a directory", "[cli][input]") {
  TempDir dir;
  std::string d = dir.path().string();
  require_bad_input({"show", "--suite", d, "--case", "a"}, {d, "directory"});
  require_bad_input(cmd("show", matmul(), {"--schedule", d}), {d, "directory"});
}

TEST_CASE("negative seeds are bad input", "[cli][input]") {
  require_bad_input(cmd("schedule", matmul(), {"--random-seed", "-5"}), {"--random-seed"});
  require_bad_input(cmd("check", matmul(), {"--seed", "-1", "--random-schedules", "1"}), {"--seed"});
}

// ---- 16-bit element types -----------------------------------------------------------------------

TEST_CASE("the dtype option gives an op or a suite case 16-bit inputs and outputs, and refuses what has none",
          "[cli][half]") {
  RunResult te = require_ok(cmd("show", matmul("7", "61", "13"), {"--dtype", "bf16", "--emit", "te"}));
  CHECK(contains(te.out, "A = placeholder(bfloat16[7, 13])"));
  CHECK(contains(te.out, "= bfloat16(C_acc["));
  RunResult ok = require_ok(cmd("check", matmul("7", "61", "13"), {"--dtype", "fp16", "--random-schedules", "5"}));
  CHECK(contains(ok.out, "6 correct"));
  // --dtype and --param dtype= agree or the command is refused.
  require_ok(cmd("show", matmul("7", "61", "13"), {"--param", "dtype=float16", "--dtype", "fp16"}));
  require_bad_input(cmd("show", matmul("7", "61", "13"), {"--param", "dtype=float16", "--dtype", "bf16"}),
                    {"--dtype bf16", "dtype=float16"});
  require_bad_input(cmd("show", matmul(), {"--dtype", "fp8"}), {"fp8", "fp16", "bf16"});
  require_bad_input({"show", "--op", "softmax", "--param", "rows=4", "--param", "cols=8", "--dtype", "bf16"},
                    {"softmax", "no dtype parameter"});
  require_bad_input({"show", "--suite", source_file("suites/operators.json"), "--case", "softmax_8192x8192",
                     "--dtype", "fp16"},
                    {"softmax_8192x8192", "no dtype parameter"});
}

TEST_CASE("a model's dtype: an unknown one is refused before anything is recorded, and run takes none",
          "[cli][half]") {
  TempDir dir;
  const std::string db = dir.file("log.db");
  const std::string model = dir.file("cnn.onnx");
  std::ofstream(model, std::ios::binary) << tessel_test::demo_cnn_bytes();
  for (const char* command : {"tune", "tasks", "build"}) {
    std::vector<std::string> args = {command, model, "--dtype", "fp8"};
    if (std::string(command) == "tune") args.insert(args.end(), {"--trials", "4", "--db", db});
    if (std::string(command) == "build") args.insert(args.end(), {"-o", dir.file("m.tsl")});
    require_bad_input(args, {"--dtype fp8", "fp32, fp16 or bf16"});
  }
  CHECK_FALSE(std::filesystem::exists(db));
  CHECK_FALSE(std::filesystem::exists(dir.file("m.tsl")));
  require_bad_input({"run", "model.tsl", "--dtype", "fp16"}, {"--dtype", "built model"});
}
