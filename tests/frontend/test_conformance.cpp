// Conformance against a suite tessel did not write: ONNX's backend tests as Debian ships them
// (libonnx-testdata: data/node, data/pytorch-converted, data/pytorch-operator — model.onnx with
// test_data_set_*/input_*.pb and output_*.pb), each run through import → simplify → fusion → tensor
// expressions → default schedules → LLVM on this CPU, its outputs compared with ONNX's at rtol 1e-3,
// atol 1e-5. A model whose ops (or dtypes, or dynamic shapes) tessel does not support is counted as
// unsupported with the reason; every supported one must pass.
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "frontend/onnx_tensor.h"
#include "model_runner.h"
#include "schedule/te/error.h"
#include "skip.h"

using namespace tessel;
namespace fs = std::filesystem;

namespace {

const char* kTestData = "/usr/share/libonnx-testdata/data";

struct Outcome {
  enum Kind { Passed, Failed, Unsupported } kind;
  std::string detail;
};

Outcome run_case(const fs::path& dir) {
  Model model;
  try {
    model = load_model((dir / "model.onnx").string(), ImportOptions{}, TargetKind::Llvm);
  } catch (const InputError& e) {
    return {Outcome::Unsupported, e.what()};
  }
  const fs::path data = dir / "test_data_set_0";
  std::map<std::string, TensorData> inputs;
  for (size_t k = 0; k < model.graph.inputs.size(); ++k) {
    const fs::path file = data / ("input_" + std::to_string(k) + ".pb");
    if (!fs::exists(file)) return {Outcome::Unsupported, "no input_" + std::to_string(k) + ".pb"};
    inputs.emplace(model.graph.inputs[k], read_tensor_pb(file.string()));
  }
  std::map<std::string, TensorData> got;
  try {
    got = tessel_test::run_model_cpu(model, inputs);
  } catch (const Error& e) {
    return {Outcome::Failed, std::string("run: ") + e.what()};
  }
  for (size_t k = 0; k < model.graph.outputs.size(); ++k) {
    const TensorData want = read_tensor_pb((data / ("output_" + std::to_string(k) + ".pb")).string());
    const std::string wrong = tessel_test::compare_tensors(got.at(model.graph.outputs[k]), want, 1e-3, 1e-5);
    if (!wrong.empty()) return {Outcome::Failed, "output " + std::to_string(k) + ": " + wrong};
  }
  return {Outcome::Passed, ""};
}

// The op types a refusal names ("... not support at opset 13 (Foo, Bar): ..."), or the reason.
std::string reason_of(const std::string& message) {
  const std::string marker = "does not support at opset ";
  const size_t at = message.find(marker);
  if (at == std::string::npos)
    return message.substr(message.find(": ") == std::string::npos ? 0 : message.find(": ") + 2, 90);
  const size_t open = message.find('(', at), close = message.find(')', open);
  return "ops: " + message.substr(open + 1, close - open - 1);
}

}  // namespace

TEST_CASE("ONNX backend tests: every model whose ops tessel supports matches ONNX's outputs",
          "[frontend][conformance]") {
  if (!fs::exists(kTestData)) {
    tessel_test::skip_test(std::string("ONNX's test data is not installed (") + kTestData +
                           "; Debian: libonnx-testdata)");
    return;
  }
  std::vector<fs::path> cases;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator"})
    for (const auto& entry : fs::directory_iterator(fs::path(kTestData) / suite))
      if (fs::exists(entry.path() / "model.onnx")) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  int passed = 0, failed = 0, unsupported = 0;
  std::map<std::string, int> reasons;
  std::vector<std::string> failures;
  for (const fs::path& dir : cases) {
    const Outcome o = run_case(dir);
    if (o.kind == Outcome::Passed) ++passed;
    if (o.kind == Outcome::Failed) {
      ++failed;
      failures.push_back(dir.parent_path().filename().string() + "/" + dir.filename().string() + ": " + o.detail);
    }
    if (o.kind == Outcome::Unsupported) {
      ++unsupported;
      ++reasons[reason_of(o.detail)];
    }
  }
  std::cout << "ONNX backend tests: " << passed << " passed, " << failed << " failed, " << unsupported
            << " unsupported (of " << cases.size() << ")\n";
  for (const auto& [reason, count] : reasons) std::cout << "  unsupported " << count << ": " << reason << "\n";
  for (const std::string& f : failures) std::cout << "  FAILED " << f << "\n";
  CHECK(failed == 0);
  CHECK(passed > 0);
}
