// ONNX's own test models (Debian's libonnx-testdata): each either imports into a graph whose values
// all have static shapes and supported dtypes, or is refused with an InputError; the refusals are
// counted by reason. The test data sets' .pb tensors are read back and matched to the graph inputs.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>
#include <map>

#include "frontend/constant_fold.h"
#include "frontend/onnx_import.h"
#include "frontend/onnx_tensor.h"
#include "frontend/simplify.h"
#include "schedule/te/error.h"
#include "tests/skip.h"

namespace fs = std::filesystem;
using namespace tessel;

namespace {

const std::string kTestData = "/usr/share/libonnx-testdata/data";

std::vector<std::string> model_dirs(const std::string& suite) {
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(kTestData + "/" + suite))
    if (fs::exists(entry.path() / "model.onnx")) dirs.push_back(entry.path().string());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// A refusal's reason, from the stable part of its message.
std::string reason_of(const std::string& message) {
  const std::pair<const char*, const char*> reasons[] = {
      {"is a graph", "graph attribute (control flow)"},
      {"is a sequence", "sequence value"},
      {"is an optional", "optional value"},
      {"is a map", "map value"},
      {"sparse", "sparse tensor"},
      {"which tessel does not support", "attribute type (strings)"},
      {"strings and sparse tensors", "string constant"},
      {"not static after shape inference", "shape not static after inference"},
      {"could not be inferred", "type or rank not inferred"},
      {"ONNX checker", "ONNX checker"},
      {"shape inference fails", "ONNX shape inference"},
      {"domain '", "op of another domain"},
      {"opset", "opset"},
      {"is symbolic", "symbolic input dimension (needs an input shape)"},
  };
  const size_t type_at = message.find("element type ");
  if (type_at != std::string::npos) {
    const size_t end = message.find(' ', type_at + 13);
    return "element type " + message.substr(type_at + 13, end - type_at - 13);
  }
  for (const auto& [needle, reason] : reasons)
    if (message.find(needle) != std::string::npos) return reason;
  return message;
}

// What a successful import promises: every value typed with a static shape, constants holding
// exactly their shape's data, every node input and output a value of the graph.
void check_graph(const Graph& graph, const std::string& model) {
  INFO(model);
  CHECK(graph.opset >= 1);
  for (const auto& [name, value] : graph.values()) {
    for (int64_t d : value.info.shape) CHECK(d >= 0);
    if (value.constant) {
      CHECK(value.constant->shape() == value.info.shape);
      CHECK(value.constant->dtype() == value.info.dtype);
    }
  }
  for (const Node& node : graph.nodes) {
    for (const std::string& in : node.inputs) CHECK((in.empty() || graph.has_value(in)));
    for (const std::string& out : node.outputs) CHECK((out.empty() || graph.has_value(out)));
  }
  for (const std::string& out : graph.outputs) CHECK(graph.has_value(out));
}

// The first test data set's inputs match the graph's inputs in order, shape and dtype.
void check_test_data(const Graph& graph, const std::string& dir) {
  const std::string set = dir + "/test_data_set_0";
  for (size_t k = 0; fs::exists(set + "/input_" + std::to_string(k) + ".pb"); ++k) {
    std::string name;
    const TensorData data = read_tensor_pb(set + "/input_" + std::to_string(k) + ".pb", &name);
    INFO(dir << " input " << k << " '" << name << "'");
    REQUIRE(k < graph.inputs.size());
    if (!name.empty()) CHECK(name == graph.inputs[k]);
    const Value& value = graph.value(graph.inputs[k]);
    CHECK(data.shape() == value.info.shape);
    CHECK(data.dtype() == value.info.dtype);
  }
  for (size_t k = 0; fs::exists(set + "/output_" + std::to_string(k) + ".pb"); ++k) {
    const TensorData data = read_tensor_pb(set + "/output_" + std::to_string(k) + ".pb");
    INFO(dir << " output " << k);
    REQUIRE(k < graph.outputs.size());
    CHECK(data.shape() == graph.value(graph.outputs[k]).info.shape);
  }
}

// Outputs that simplify() folded to constants must equal ONNX's expected outputs: a check of the
// constant folds against ONNX's reference results. Returns how many outputs it compared.
int check_constant_outputs(const Graph& graph, const std::string& dir) {
  int compared = 0;
  for (size_t k = 0; k < graph.outputs.size(); ++k) {
    const std::string file = dir + "/test_data_set_0/output_" + std::to_string(k) + ".pb";
    if (!graph.is_constant(graph.outputs[k]) || !fs::exists(file)) continue;
    const TensorData& folded = *graph.value(graph.outputs[k]).constant;
    const TensorData expected = read_tensor_pb(file);
    INFO(dir << " output " << k);
    REQUIRE(folded.shape() == expected.shape());
    REQUIRE(folded.dtype() == expected.dtype());
    for (int64_t i = 0; i < expected.num_elements(); ++i)
      CHECK(folded.as_double(i) == Approx(expected.as_double(i)).epsilon(1e-6).margin(1e-6));
    ++compared;
  }
  return compared;
}

// A model made only of ops the constant folds know, its inputs replaced by the test data's: the
// simplified graph must be all constants, equal to ONNX's expected outputs. Returns the outputs
// compared (0 when the model has other ops).
int check_folds_against_test_data(Graph graph, const std::string& dir) {
  for (const Node& node : graph.nodes)
    if (!is_foldable_op(node.op_type)) return 0;
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    Value& input = graph.value(graph.inputs[k]);
    input.constant = read_tensor_pb(dir + "/test_data_set_0/input_" + std::to_string(k) + ".pb");
  }
  graph.inputs.clear();
  simplify(graph);
  INFO(dir);
  CHECK(graph.nodes.empty());
  return check_constant_outputs(graph, dir);
}

struct SuiteResult {
  int imported = 0;
  std::map<std::string, int> refused;  // by reason
  int64_t nodes = 0, simplified_nodes = 0;
  int folded_outputs = 0;  // compared with ONNX's expected outputs
  int fold_checks = 0;     // outputs of fold-only models fed the test data
};

SuiteResult import_suite(const std::string& suite) {
  SuiteResult result;
  for (const std::string& dir : model_dirs(suite)) {
    Graph graph;
    try {
      graph = import_onnx(dir + "/model.onnx", {});
    } catch (const InputError& e) {
      ++result.refused[reason_of(e.what())];
      continue;
    }
    ++result.imported;
    check_graph(graph, dir);
    try {
      check_test_data(graph, dir);
      result.nodes += static_cast<int64_t>(graph.nodes.size());
      simplify(graph);
      result.simplified_nodes += static_cast<int64_t>(graph.nodes.size());
      result.fold_checks += check_folds_against_test_data(graph, dir);
      result.folded_outputs += check_constant_outputs(graph, dir);
    } catch (const InputError& e) {
      FAIL_CHECK(dir << ": " << e.what());
    }
    check_graph(graph, dir + " (simplified)");
  }
  std::cout << "ONNX test data, " << suite << ": " << result.imported << " imported (" << result.nodes << " nodes, "
            << result.simplified_nodes << " after simplify, " << result.folded_outputs
            << " outputs folded and equal to ONNX's; with the test data as constants, " << result.fold_checks
            << " outputs of fold-only models equal ONNX's)";
  for (const auto& [reason, count] : result.refused) std::cout << "; " << count << " refused: " << reason;
  std::cout << "\n";
  return result;
}

int total(const std::map<std::string, int>& counts) {
  int n = 0;
  for (const auto& [reason, count] : counts) n += count;
  return n;
}

}  // namespace

TEST_CASE("every PyTorch-converted test model imports", "[frontend][onnx][testdata]") {
  if (!fs::exists(kTestData)) return tessel_test::skip_test("no ONNX test data at " + kTestData);
  const SuiteResult converted = import_suite("pytorch-converted");
  CHECK(converted.imported >= 80);
  const SuiteResult operators = import_suite("pytorch-operator");
  CHECK(operators.imported >= 20);
  const SuiteResult simple = import_suite("simple");
  CHECK(simple.imported >= 1);
}

TEST_CASE("ONNX's node test models import or are refused with a reason", "[frontend][onnx][testdata]") {
  if (!fs::exists(kTestData)) return tessel_test::skip_test("no ONNX test data at " + kTestData);
  const SuiteResult node = import_suite("node");
  CHECK(node.imported >= 500);
  CHECK(total(node.refused) + node.imported == static_cast<int>(model_dirs("node").size()));
}
