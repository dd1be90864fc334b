// Real exported models end to end on this CPU: ResNet-18 and MobileNetV2 from torchvision and a
// BERT-style encoder built from torch.nn layers, exported with random weights by
// scripts/export_models.py (Debian's python3-torch, at test time: nothing is committed), run through
// import → fusion → default schedules → LLVM and compared with torch's outputs at
// max |error| <= 1e-3 * max |reference| + 1e-5.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "frontend/onnx_tensor.h"
#include "model_runner.h"
#include "skip.h"

using namespace tessel;
namespace fs = std::filesystem;

namespace {

// The exported models' folder, removed when the test program ends.
struct ExportFolder {
  fs::path path;  // empty when torch could not export
  ~ExportFolder() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// Exports the models into a folder of its own once per test program; empty when torch is missing.
const fs::path& exported() {
  static const ExportFolder folder{[] {
    fs::path d = fs::temp_directory_path() / ("tessel-models-" + std::to_string(::getpid()));
    fs::create_directories(d);
    const std::string command = "/usr/bin/python3 " + std::string(TESSEL_SOURCE_DIR) + "/scripts/export_models.py " +
                                d.string() + " resnet18 mobilenet_v2 bert_tiny > " + (d / "export.log").string() + " 2>&1";
    if (std::system(command.c_str()) != 0) {
      std::cerr << "export_models.py failed; its log (kept): " << (d / "export.log") << "\n";
      return fs::path();
    }
    return d;
  }()};
  return folder.path;
}

void check_model(const std::string& name) {
  const fs::path& dir = exported();
  if (dir.empty()) {
    tessel_test::skip_test("python3-torch / python3-torchvision could not export " + name);
    return;
  }
  const fs::path folder = dir / name;
  const Model model = load_model((folder / "model.onnx").string(), ImportOptions{}, TargetKind::Llvm);
  INFO(name << ": " << model.partition.subgraphs.size() << " subgraphs, " << model.tasks.size() << " tasks");
  std::map<std::string, TensorData> inputs;
  inputs.emplace(model.graph.inputs.at(0), read_tensor_pb((folder / "test_data_set_0" / "input_0.pb").string()));
  const std::map<std::string, TensorData> got = tessel_test::run_model_cpu(model, inputs);
  const TensorData want = read_tensor_pb((folder / "test_data_set_0" / "output_0.pb").string());
  const std::string wrong = tessel_test::compare_tensors(got.at(model.graph.outputs.at(0)), want, 1e-3, 1e-5);
  INFO(wrong);
  CHECK(wrong.empty());
}

}  // namespace

TEST_CASE("exported ResNet-18 matches torch", "[frontend][models]") { check_model("resnet18"); }
TEST_CASE("exported MobileNetV2 matches torch", "[frontend][models]") { check_model("mobilenet_v2"); }
TEST_CASE("exported BERT-style encoder matches torch", "[frontend][models]") { check_model("bert_tiny"); }
