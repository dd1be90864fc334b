// `tessel tasks` and `tessel tune MODEL.onnx` through the real binary, on small models from ONNX's
// test data (Debian's libonnx-testdata): the task table, a tuning session sharing one budget that
// resumes from the log, bad models and options refused with exit 2 before anything is recorded, and
// `tessel run` of a built model on any number of threads, and its profile by task.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "../skip.h"
#include "subprocess.h"

namespace tessel_test {
std::string demo_cnn_bytes();                            // demo_model_file.cpp
void write_demo_image(const std::string& path);         // an input of the demo CNN as a .pb
std::vector<float> npy_floats(const std::string& path);  // an .npy file's values as floats
}

using tessel_test::demo_cnn_bytes;
using tessel_test::export_records;
using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;

namespace {

const std::string kData = "/usr/share/libonnx-testdata/data/";

// An ONNX test model, or "" (and the test skipped) when the test data is not installed.
std::string test_model(const std::string& name) {
  const std::string path = kData + name + "/model.onnx";
  if (!std::filesystem::exists(path)) {
    tessel_test::skip_test("ONNX's test data is not installed (Debian: libonnx-testdata)");
    return "";
  }
  return path;
}

}  // namespace

TEST_CASE("tasks lists a model's fused subgraphs by workload", "[cli][model]") {
  const std::string model = test_model("pytorch-converted/test_Conv2d_depthwise_padded");
  if (model.empty()) return;
  RunResult table = tessel({"tasks", model});
  INFO(table.out << table.err);
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("fused subgraphs") && Catch::Contains("Conv") &&
                            Catch::Contains("estimated model latency"));
  RunResult json = tessel({"tasks", model, "--json", "--target", "cuda"});
  REQUIRE(json.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(json.out);
  CHECK(j["target"] == "cuda");
  REQUIRE(j["tasks"].size() >= 1);
  int weights = 0;
  double shares = 0;
  for (const nlohmann::json& t : j["tasks"]) {
    weights += t["weight"].get<int>();
    shares += t["share"].get<double>();
    CHECK(t["key"].get<std::string>().size() == 16);
  }
  CHECK(weights == j["subgraphs"].get<int>());
  CHECK(shares == Approx(1.0));
}

TEST_CASE("tasks on the CPU: convolutions in channel blocks by default, as the model has them with --cpu-layout nchw",
          "[cli][model]") {
  TempDir dir;
  const std::string model = dir.file("cnn.onnx");
  std::ofstream(model, std::ios::binary) << demo_cnn_bytes();
  // The rank of each conv task's output: [N, C/b, H, W, b] in blocks, [N, C, H, W] in NCHW.
  auto conv_ranks = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"tasks", model, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = tessel(args);
    INFO(r.command << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    std::set<size_t> ranks;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    for (const nlohmann::json& t : j["tasks"])
      if (t["name"].get<std::string>().rfind("Conv", 0) == 0) ranks.insert(t["output_shape"].size());
    return ranks;
  };
  CHECK(conv_ranks({}) == std::set<size_t>{5});
  CHECK(conv_ranks({"--cpu-layout", "blocked"}) == std::set<size_t>{5});
  CHECK(conv_ranks({"--cpu-layout", "nchw"}) == std::set<size_t>{4});
  CHECK(conv_ranks({"--target", "cuda"}) == std::set<size_t>{4});  // the GPU keeps the model's layout
}

TEST_CASE("tune MODEL shares one budget over the model's tasks and resumes from the log", "[cli][model]") {
  const std::string model = test_model("pytorch-converted/test_Conv2d_depthwise_padded");
  if (model.empty()) return;
  TempDir dir;
  const std::string db = dir.file("log.db");
  RunResult first = tessel({"tune", model, "--trials", "6", "--db", db, "--min-time-ms", "2", "-v"});
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK_THAT(first.err, Catch::Contains("6 trials in all") && Catch::Contains("model latency"));
  CHECK_THAT(first.out, Catch::Contains("model latency (each task's best times its weight)"));
  size_t trials = 0;
  for (const nlohmann::json& r : export_records(db)) trials += r.value("purpose", "trial") == "trial" ? 1 : 0;
  CHECK(trials == 6);
  RunResult again = tessel({"tune", model, "--trials", "6", "--db", db, "--min-time-ms", "2"});
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("0 candidates measured this session"));
}

TEST_CASE("bad models and model options are refused with exit 2 and nothing recorded", "[cli][model][hostile]") {
  const std::string model = test_model("pytorch-converted/test_Conv2d");
  if (model.empty()) return;
  TempDir dir;
  const std::string db = dir.file("log.db");
  std::string truncated = dir.file("truncated.onnx");
  {
    std::ifstream in(model, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : {
           Case{{"tasks", dir.file("missing.onnx")}, "missing.onnx"},
           Case{{"tasks", truncated}, "truncated.onnx"},
           Case{{"tasks", kData + "node/test_top_k/model.onnx"}, "TopK"},
           Case{{"tasks", model, "--input-shape", "0=1x"}, "input shape '0=1x'"},
           Case{{"tasks", model, "--input-shape", "nosuchinput=1x2"}, "nosuchinput"},
           Case{{"tasks", model, "--cpu-layout", "nhwc"}, "'nhwc' is neither blocked nor nchw"},
           Case{{"tune", model, "--trials", "4", "--db", db, "--op", "matmul"}, "not both"},
           Case{{"tune", "--op", "matmul", "--param", "M=4", "--param", "N=4", "--param", "K=4", "--trials", "4",
                 "--db", db, "--input-shape", "x=1x2"},
                "--input-shape is for a model"},
           Case{{"tune", truncated, "--trials", "4", "--db", db}, "truncated.onnx"},
           Case{{"build", model, "--memory-target", "-o", dir.file("m.tsl")}, "--memory-target applies to cuda"},
           Case{{"build", model, "--no-memory-target", "-o", dir.file("m.tsl")}, "--no-memory-target applies to cuda"},
           Case{{"build", model, "--target", "cuda", "--memory-target", "--no-memory-target", "-o", dir.file("m.tsl")},
                "one or the other"},
       }) {
    RunResult r = tessel(c.args);
    INFO(r.command << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error:") && Catch::Contains(c.says));
  }
  CHECK_FALSE(std::filesystem::exists(db));
}

TEST_CASE("run MODEL.tsl runs on the threads --threads or TESSEL_NUM_THREADS asks for, with the same outputs",
          "[cli][model]") {
  const std::string model = test_model("pytorch-converted/test_Conv2d_depthwise_padded");
  if (model.empty()) return;
  TempDir dir;
  const std::string built = dir.file("model.tsl");
  RunResult build = tessel({"build", model, "--target", "llvm", "-o", built});
  INFO(build.out << build.err);
  REQUIRE(build.exit_code == 0);
  const std::string input = std::filesystem::path(model).parent_path().string() + "/test_data_set_0/input_0.pb";
  auto run = [&](const std::string& out, std::vector<std::string> extra, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args = {"run", built, "--input", input, "--output", dir.file(out)};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = tessel(args, env);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    std::ifstream f(dir.file(out), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  auto threads_used = [&](std::vector<std::string> extra, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args = {"run", built, "--input", input, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = tessel(args, env);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out).at("threads").get<int>();
  };
  CHECK(threads_used({"--threads", "1"}) == 1);
  CHECK(threads_used({"--threads", "3"}) == 3);
  CHECK(threads_used({}, {{"TESSEL_NUM_THREADS", "2"}}) == 2);
  CHECK(threads_used({"--threads", "1"}, {{"TESSEL_NUM_THREADS", "2"}}) == 1);  // the option wins
  CHECK(threads_used({}, {{"TESSEL_NUM_THREADS", "lots"}}) >= 1);               // not a count: the default
  const std::string one = run("one.pb", {"--threads", "1"});
  CHECK(!one.empty());
  CHECK(run("two.pb", {"--threads", "2"}) == one);
  CHECK(run("env.pb", {}, {{"TESSEL_NUM_THREADS", "3"}}) == one);
  CHECK(tessel({"run", built, "--input", input, "--threads", "0"}).exit_code == 2);
}

TEST_CASE("run MODEL.tsl --profile times every kernel in the run and lists the time by task", "[cli][model]") {
  TempDir dir;
  const std::string model = dir.file("cnn.onnx");
  std::ofstream(model, std::ios::binary) << demo_cnn_bytes();
  const std::string built = dir.file("cnn.tsl");
  RunResult build = tessel({"build", model, "--target", "llvm", "-o", built, "--json"});
  INFO(build.out << build.err);
  REQUIRE(build.exit_code == 0);
  const std::string input = dir.file("image.pb");
  tessel_test::write_demo_image(input);

  RunResult r = tessel({"run", built, "--input", input, "--profile", "--json", "--threads", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json p = nlohmann::json::parse(r.out).at("profile");
  const nlohmann::json& kernels = p.at("kernels");
  REQUIRE(kernels.size() >= 5);  // three convolutions, a pool and the classifier at least
  CHECK(p.at("runs").get<size_t>() >= 10);
  double sum = 0;
  for (const nlohmann::json& k : kernels) {
    CHECK(k.at("median_s").get<double>() > 0);
    CHECK(k.at("record_id").get<int64_t>() == -1);  // built without a log: every kernel on its default
    sum += k.at("median_s").get<double>();
  }
  CHECK(p.at("sum_s").get<double>() == Approx(sum));
  // Tasks: every kernel in one, their times the kernels' sums, the slowest first, named by ops and shape.
  size_t kernels_in_tasks = 0;
  double task_sum = 0, previous = 1e30;
  std::set<std::string> names;
  for (const nlohmann::json& t : p.at("tasks")) {
    kernels_in_tasks += t.at("kernels").get<size_t>();
    const double s = t.at("seconds").get<double>();
    CHECK(s <= previous);
    previous = s;
    task_sum += s;
    const std::string name = t.at("summary").get<std::string>();
    CHECK_THAT(name, Catch::Matches("[A-Za-z+]+ [0-9x]+"));
    names.insert(name);
  }
  CHECK(kernels_in_tasks == kernels.size());
  CHECK(task_sum == Approx(sum));
  CHECK(names.count("Gemm 1x10") == 1);

  RunResult text = tessel({"run", built, "--input", input, "--profile"});
  INFO(text.out << text.err);
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("profile: " + std::to_string(kernels.size()) + " kernels in " +
                                       std::to_string(p.at("tasks").size()) + " tasks"));
  CHECK_THAT(text.out, Catch::Contains("default") && Catch::Contains("Gemm 1x10"));

  // --profile, like --bench, --input and --output, is for a built model.
  RunResult op = tessel({"run", "--op", "matmul", "--param", "M=4", "--param", "N=4", "--param", "K=4", "--profile"});
  CHECK(op.exit_code == 2);
  CHECK_THAT(op.err, Catch::StartsWith("error: ") && Catch::Contains("--profile"));
}


TEST_CASE("build --dtype bf16|fp16 stores a model's weights in half the bytes, its outputs near float32's",
          "[cli][model]") {
  TempDir dir;
  const std::string model = dir.file("cnn.onnx");
  std::ofstream(model, std::ios::binary) << demo_cnn_bytes();
  const std::string input = dir.file("image.pb");
  tessel_test::write_demo_image(input);
  auto build_and_run = [&](const std::string& dtype) {
    std::vector<std::string> args = {"build", model, "-o", dir.file(dtype + ".tsl"), "--json"};
    if (dtype != "default") args.insert(args.end(), {"--dtype", dtype});
    RunResult b = tessel(args);
    INFO(b.out << b.err);
    REQUIRE(b.exit_code == 0);
    RunResult r = tessel({"run", dir.file(dtype + ".tsl"), "--input", input, "--output", dir.file(dtype + ".npy")});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return std::make_pair(nlohmann::json::parse(b.out).at("weight_bytes").get<int64_t>(),
                          tessel_test::npy_floats(dir.file(dtype + ".npy")));
  };
  const auto [wide_bytes, want] = build_and_run("default");
  REQUIRE(!want.empty());
  // torch.testing's tolerances for the types (bf16 rtol 1.6e-2, fp16 1e-3), taken over the largest
  // output: the error of several layers of 16-bit values.
  for (const auto& [dtype, tolerance] : {std::pair<std::string, float>{"bf16", 1.6e-2f}, {"fp16", 1e-3f}}) {
    INFO(dtype);
    const auto [bytes, got] = build_and_run(dtype);
    CHECK(bytes * 2 == wide_bytes);
    REQUIRE(got.size() == want.size());
    float biggest = 0, error = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      biggest = std::max(biggest, std::abs(want[i]));
      error = std::max(error, std::abs(got[i] - want[i]));
    }
    CHECK(error <= tolerance * biggest + 1e-5f);
    CHECK(error > 0);  // stored in 16 bits, not float32 under another name
  }
  RunResult bad = tessel({"build", model, "--dtype", "fp8", "-o", dir.file("bad.tsl")});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--dtype fp8"));
}

TEST_CASE("gpu: a model built for cuda within its memory target gives its llvm build's outputs", "[cli][model][gpu]") {
  RunResult probe = tessel({"run", "--op", "matmul", "--param", "M=8", "--param", "N=8", "--param", "K=8", "--target",
                            "cuda", "--min-time", "0.01"});
  if (probe.exit_code != 0) {
    tessel_test::skip_test("no usable CUDA device: " + probe.err);
    return;
  }
  TempDir dir;
  const std::string model = dir.file("cnn.onnx");
  std::ofstream(model, std::ios::binary) << demo_cnn_bytes();
  const std::string input = dir.file("image.pb");
  tessel_test::write_demo_image(input);
  RunResult gpu = tessel({"build", model, "--target", "cuda", "-o", dir.file("gpu.tsl"), "--json"});
  INFO(gpu.out << gpu.err);
  REQUIRE(gpu.exit_code == 0);
  const nlohmann::json report = nlohmann::json::parse(gpu.out);
  // Whatever the default schedules keep in scratch (split-K partial sums) fits beside the values
  // within 1.2x the values' liveness bound.
  CHECK(report.at("arena_bytes").get<int64_t>() <= report.at("live_bound_bytes").get<int64_t>() * 6 / 5);
  RunResult cpu = tessel({"build", model, "--target", "llvm", "-o", dir.file("cpu.tsl")});
  INFO(cpu.out << cpu.err);
  REQUIRE(cpu.exit_code == 0);
  for (const std::string& side : {std::string("gpu"), std::string("cpu")}) {
    RunResult r = tessel({"run", dir.file(side + ".tsl"), "--input", input, "--output", dir.file(side + ".npy")});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
  }
  const std::vector<float> want = tessel_test::npy_floats(dir.file("cpu.npy"));
  const std::vector<float> got = tessel_test::npy_floats(dir.file("gpu.npy"));
  REQUIRE(got.size() == want.size());
  REQUIRE(!want.empty());
  float biggest = 0, error = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    biggest = std::max(biggest, std::abs(want[i]));
    error = std::max(error, std::abs(got[i] - want[i]));
  }
  CHECK(error <= 1e-3f * biggest + 1e-5f);
}
