// Hostile input through the real binary: sizes that overflow or do not fit in memory, expressions
// and schedules nested or chained beyond the limits, and JSON numbers such as 1e400 in schedules and
// suites. Every case must end with exit code 2 and one `error:` message that names what and where,
// before any work: in a few seconds, without a crash, and without touching a tuning log.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "subprocess.h"

using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;

namespace {

using Args = std::vector<std::string>;

// Each refusal happens before any allocation, lowering or compilation. A hang is what the bound
// catches, not slowness: a command still running after this long is killed by coreutils' timeout
// (exit code 128 + 9), which fails the exit-code check below.
constexpr const char* kHangBound = "300";

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

Args op(const std::string& name, std::initializer_list<std::string> params) {
  Args a = {"--op", name};
  for (const std::string& p : params) {
    a.push_back("--param");
    a.push_back(p);
  }
  return a;
}

Args cmd(const std::string& sub, const Args& workload, const Args& extra = {}) {
  Args a = {sub};
  a.insert(a.end(), workload.begin(), workload.end());
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Exit code 2, a single `error:` line on stderr mentioning every needle, nothing on stdout, no crash
// and no hang.
void require_refused(const Args& args, const std::vector<std::string>& needles) {
  Args bounded = {"-s", "KILL", kHangBound, tessel_test::tessel_exe()};
  bounded.insert(bounded.end(), args.begin(), args.end());
  RunResult r = tessel_test::run_program("/usr/bin/timeout", bounded);
  INFO("command: " << r.command.substr(0, 300));
  INFO("exit code: " << r.exit_code);
  INFO("stderr: " << r.err.substr(0, 2000));
  INFO("stdout: " << r.out.substr(0, 2000));
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("error:", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.empty());
  for (const std::string& n : needles) {
    INFO("stderr should mention: " << n);
    CHECK(contains(r.err, n));
  }
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string schedule_with_steps(const std::string& steps) { return R"({"version": 1, "steps": [)" + steps + "]}"; }

// A suite of one matmul case whose params object is `params`; `extra` goes into the case.
std::string suite_case(const std::string& params, const std::string& extra = "") {
  return R"({"cases": [{"name": "c", "op": "matmul", "params": )" + params + extra + "}]}";
}

const Args kMatmul64 = op("matmul", {"M=64", "N=64", "K=64"});

}  // namespace

// ---- sizes ----------------------------------------------------------------------------------------

TEST_CASE("hostile sizes: tensors beyond 64-bit or 256 TiB are refused naming the tensor", "[cli][hostile][hostile_input]") {
  require_refused(cmd("run", op("matmul", {"M=4294967296", "N=4294967296", "K=4294967296"})),
                  {"tensor A[4294967296, 4294967296]", "too large", "256 TiB"});
  require_refused(cmd("run", op("reduce_sum", {"rows=9223372036854775807", "cols=4"})),
                  {"tensor X[9223372036854775807, 4]", "too large"});
  require_refused(cmd("check", op("elementwise", {"shape=99999999999x99999999999", "expr=x"})),
                  {"tensor x[99999999999, 99999999999]", "too large"});
  require_refused(cmd("show", op("elementwise", {"shape=99999999999x99999999999", "expr=x"}), {"--emit", "lowered"}),
                  {"tensor x[99999999999, 99999999999]"});
  require_refused(cmd("check", op("matmul", {"M=2097152", "N=2097152", "K=2097152"})),
                  {"operation C", "2097152 x 2097152 x 2097152", "2^62"});
}

TEST_CASE("hostile sizes: conv2d arithmetic that would wrap names the parameter", "[cli][hostile][hostile_input]") {
  const Args base = {"N=1", "C=3", "H=8", "W=8", "F=4", "KW=3"};
  auto conv = [&](std::initializer_list<std::string> extra) {
    Args a = {"--op", "conv2d"};
    for (const std::string& p : base) a.insert(a.end(), {"--param", p});
    for (const std::string& p : extra) a.insert(a.end(), {"--param", p});
    return a;
  };
  require_refused(cmd("check", conv({"KH=3", "pad=4611686018427387904"})), {"param pad", "beyond the int64 range"});
  require_refused(cmd("check", conv({"KH=9223372036854775807", "dilation=4"})), {"param KH", "beyond the int64 range"});
}

TEST_CASE("hostile sizes: workloads beyond this machine's memory are refused before allocating", "[cli][hostile][hostile_input]") {
  // Valid DAGs (every tensor under 256 TiB) that no test machine holds.
  const Args big_matmul = op("matmul", {"M=1000000000000", "N=16", "K=16"});
  const Args big_softmax = op("softmax", {"rows=4294967296", "cols=16"});
  require_refused(cmd("check", big_matmul), {"host memory", "A[1000000000000, 16]", "TiB", "this machine's"});
  require_refused(cmd("run", big_matmul), {"host memory", "A[1000000000000, 16]"});
  require_refused(cmd("check", big_softmax), {"host memory", "X[4294967296, 16]", "GiB"});
  require_refused(cmd("run", big_softmax), {"host memory", "X[4294967296, 16]"});

  // Commands that record refuse before they open the log: it is not even created.
  TempDir dir;
  const std::string db = dir.file("log.db");
  require_refused(cmd("measure", big_matmul, {"--db", db, "--random-schedules", "2"}), {"host memory"});
  require_refused(cmd("run", big_softmax, {"--db", db, "--record"}), {"host memory"});
  require_refused(cmd("tune", big_matmul, {"--db", db, "--trials", "4"}), {"host memory"});
  CHECK_FALSE(std::filesystem::exists(db));
  // Showing and scheduling allocate nothing: they still work.
  RunResult r = tessel(cmd("schedule", big_softmax));
  CHECK(r.exit_code == 0);
}

// ---- expressions ----------------------------------------------------------------------------------

TEST_CASE("hostile expressions: nesting beyond 256 levels and more than 512 operations", "[cli][hostile][hostile_input]") {
  require_refused(cmd("show", op("elementwise", {"shape=8", "expr=" + repeat("(", 20000) + "x" + repeat(")", 20000)}),
                      {"--emit", "te"}),
                  {"param expr", "column 257", "256 levels"});
  require_refused(cmd("check", op("elementwise", {"shape=8", "expr=" + repeat("sigmoid(", 2000) + "x" + repeat(")", 2000)})),
                  {"param expr", "column 2049", "256 levels"});
  require_refused(cmd("check", op("elementwise", {"shape=8", "expr=x" + repeat("+x", 600)})),
                  {"param expr", "column 1026", "512 operators"});
}

// ---- schedules ------------------------------------------------------------------------------------

TEST_CASE("hostile schedules: too many steps or factors, huge factors and 1e400", "[cli][hostile][hostile_input]") {
  TempDir dir;
  std::string chain;
  std::string loop = "i";
  for (int i = 0; i < 5000; ++i) {
    chain += std::string(i ? "," : "") + R"({"kind": "split", "stage": "C", "loop": ")" + loop + R"(", "factors": [1]})";
    loop += ".1";
  }
  const std::string chained = dir.write("chain.json", schedule_with_steps(chain));
  require_refused(cmd("show", kMatmul64, {"--schedule", chained, "--emit", "lowered"}),
                  {chained, "5000 steps", "at most 1000"});

  const std::string many = dir.write(
      "many.json", schedule_with_steps(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [)" +
                                       repeat("1,", 4999) + "1]}"));
  require_refused(cmd("check", kMatmul64, {"--schedule", many}), {many, "step 0", "'factors'", "5000 entries", "16"});

  const std::string huge = dir.write(
      "huge.json", schedule_with_steps(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [4611686018427387904]})"));
  require_refused(cmd("check", kMatmul64, {"--schedule", huge}), {"step 0", "split(C, i, [4611686018427387904])", "pad"});
  require_refused(cmd("run", kMatmul64, {"--schedule", huge}), {"step 0", "pad"});

  const std::string pair = dir.write(
      "pair.json", schedule_with_steps(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [2147483648, 2147483648]})"));
  require_refused(cmd("check", kMatmul64, {"--schedule", pair}), {"step 0", "pad"});

  const std::string e400 = dir.write(
      "e400.json", "{\"version\": 1,\n \"steps\": [{\"kind\": \"split\", \"stage\": \"C\", \"loop\": \"i\", \"factors\": [1e400]}]}");
  require_refused(cmd("show", kMatmul64, {"--schedule", e400, "--emit", "lowered"}), {e400, "1e400", "line 2, column"});

  const std::string align = dir.write(
      "align.json", schedule_with_steps(R"({"kind": "storage_align", "stage": "C", "axis": 0, "factor": 4611686018427387904, "offset": 3})"));
  require_refused(cmd("show", kMatmul64, {"--schedule", align, "--emit", "lowered"}),
                  {align, "step 0", "field 'factor'", "4096"});
}

// ---- suites ---------------------------------------------------------------------------------------

TEST_CASE("hostile suites: 1e400, wrong types and deep nesting name the file, line and field", "[cli][hostile][hostile_input]") {
  TempDir dir;
  const std::string param = dir.write("param.json", "{\"cases\": [\n{\"name\": \"c\", \"op\": \"matmul\",\n"
                                                    " \"params\": {\"M\": 1e400, \"N\": 8, \"K\": 8}}]}");
  require_refused({"show", "--suite", param, "--case", "c"}, {param, "1e400", "line 3, column"});

  const std::string data = dir.write("data.json", suite_case(R"({"M": 8, "N": 8, "K": 8})", R"(, "min_bytes": -1e400)"));
  require_refused({"check", "--suite", data, "--case", "c"}, {data, "-1e400", "line 1"});
  require_refused({"tune", "--suite", data, "--all", "--db", dir.file("log.db"), "--trials", "4"}, {data, "1e400"});
  CHECK_FALSE(std::filesystem::exists(dir.file("log.db")));

  const std::string list = dir.write("list.json", suite_case(R"({"M": [[[8]]], "N": 8, "K": 8})"));
  require_refused({"show", "--suite", list, "--case", "c"}, {list, "cases[0].params.M", "a string or a number"});
  const std::string flag = dir.write("flag.json", suite_case(R"({"M": true, "N": 8, "K": 8})"));
  require_refused({"show", "--suite", flag, "--case", "c"}, {"cases[0].params.M", "not true"});
  const std::string name = dir.write("name.json", R"({"cases": [{"name": "c", "op": 5}]})");
  require_refused({"show", "--suite", name, "--case", "c"}, {"cases[0].op", "must be a string"});
  const std::string huge = dir.write("huge.json", suite_case(R"({"M": 4294967296, "N": 4294967296, "K": 4294967296})"));
  require_refused({"show", "--suite", huge, "--case", "c"}, {huge, "cases[0] (c)", "tensor A[4294967296, 4294967296]"});

  // A million levels of nesting in a param: refused, not a stack overflow.
  const std::string deep = dir.write("deep.json", suite_case(R"({"M": )" + std::string(1000000, '[') +
                                                             std::string(1000000, ']') + R"(, "N": 8, "K": 8})"));
  require_refused({"show", "--suite", deep, "--case", "c"}, {"cases[0].params.M", "an array"});
}
