// ONNX external data: weights in a file beside the model load; a location or byte range that
// escapes the model's folder or its file is refused with an InputError naming the tensor and file.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "frontend/onnx_import.h"
#include "tests/frontend/onnx_test_models.h"

using namespace tessel;
using namespace tessel_test;
using Catch::Matchers::Contains;

namespace {

const std::vector<float> kWeights = [] {
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i);
  return w;
}();

std::string weight_bytes() { return std::string(reinterpret_cast<const char*>(kWeights.data()), kWeights.size() * 4); }

// The small conv net with its weight "w" stored externally at `location`, written to
// dir/model/model.onnx; `offset` and `length` entries are added when not empty.
std::string write_model(const TempDir& dir, const std::string& location, const std::string& offset = "",
                        const std::string& length = "") {
  onnx::ModelProto model = small_conv_model();
  onnx::TensorProto* w = model.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  const auto add_entry = [&](const std::string& key, const std::string& value) {
    auto* entry = w->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add_entry("location", location);
  if (!offset.empty()) add_entry("offset", offset);
  if (!length.empty()) add_entry("length", length);
  std::filesystem::create_directories(dir.file("model"));
  write_file(dir.file("model/model.onnx"), serialize(model));
  return dir.file("model/model.onnx");
}

std::string external_error(const std::string& model_path) {
  return input_error([&] { import_onnx(model_path, {}); });
}

}  // namespace

TEST_CASE("external weights beside the model load", "[frontend][onnx][external]") {
  TempDir dir;
  const std::string path = write_model(dir, "weights.bin", "16", std::to_string(kWeights.size() * 4));
  std::filesystem::create_directories(dir.file("model"));
  write_file(dir.file("model/weights.bin"), std::string(16, 'x') + weight_bytes() + "tail");
  const Graph g = import_onnx(path, {});
  REQUIRE(g.is_constant("w"));
  CHECK(g.value("w").constant->floats() == kWeights);

  // A subfolder, no offset or length (the rest of the file), and a symbolic link that stays inside.
  std::filesystem::create_directories(dir.file("model/data"));
  write_file(dir.file("model/data/w.bin"), weight_bytes());
  CHECK(import_onnx(write_model(dir, "data/w.bin"), {}).value("w").constant->floats() == kWeights);
  std::filesystem::create_symlink("data/w.bin", dir.file("model/link.bin"));
  CHECK(import_onnx(write_model(dir, "./link.bin"), {}).value("w").constant->floats() == kWeights);
}

TEST_CASE("external data outside the model's folder is refused", "[frontend][onnx][external][hostile]") {
  TempDir dir;
  write_file(dir.file("outside.bin"), weight_bytes());
  CHECK_THAT(external_error(write_model(dir, dir.file("outside.bin"))),
             Contains("initializer 'w': external data file '" + dir.file("outside.bin") + "' is an absolute path"));
  CHECK_THAT(external_error(write_model(dir, "../outside.bin")),
             Contains("initializer 'w': external data file '../outside.bin' has a '..' component"));
  CHECK_THAT(external_error(write_model(dir, "data/../../outside.bin")), Contains("has a '..' component"));

  std::filesystem::create_directories(dir.file("model"));
  std::filesystem::create_symlink(dir.file("outside.bin"), dir.file("model/escape.bin"));
  CHECK_THAT(external_error(write_model(dir, "escape.bin")),
             Contains("initializer 'w': external data file 'escape.bin' resolves to " + dir.file("outside.bin") +
                      ", outside the model's folder"));
  std::filesystem::create_directory_symlink(dir.path(), dir.file("model/up"));
  CHECK_THAT(external_error(write_model(dir, "up/outside.bin")), Contains("outside the model's folder"));

  REQUIRE(::link(dir.file("outside.bin").c_str(), dir.file("model/hard.bin").c_str()) == 0);
  CHECK_THAT(external_error(write_model(dir, "hard.bin")),
             Contains("initializer 'w': external data file 'hard.bin' has 2 hard links"));
}

TEST_CASE("external data that is not a regular file is refused", "[frontend][onnx][external][hostile]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("model/folder"));
  CHECK_THAT(external_error(write_model(dir, "folder")),
             Contains("initializer 'w': external data file 'folder' is not a regular file"));
  REQUIRE(::mkfifo(dir.file("model/pipe").c_str(), 0600) == 0);
  CHECK_THAT(external_error(write_model(dir, "pipe")), Contains("external data file 'pipe' is not a regular file"));
  CHECK_THAT(external_error(write_model(dir, "missing.bin")),
             Contains("initializer 'w': external data file 'missing.bin' cannot be opened"));
}

TEST_CASE("external byte ranges must lie inside the file and match the tensor", "[frontend][onnx][external][hostile]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("model"));
  write_file(dir.file("model/w.bin"), weight_bytes());
  const std::string size = std::to_string(kWeights.size() * 4);
  CHECK_THAT(
      external_error(write_model(dir, "w.bin", "8", size)),
      Contains("initializer 'w': external data file 'w.bin': offset 8 + length 216 reaches past its end (216 bytes)"));
  CHECK_THAT(external_error(write_model(dir, "w.bin", "9223372036854775807", "16")),
             Contains("offset 9223372036854775807 + length 16 reaches past its end"));
  CHECK_THAT(external_error(write_model(dir, "w.bin", "0", "100")),
             Contains("initializer 'w': external data file 'w.bin': length 100 differs from the tensor's 216 bytes"));
  CHECK_THAT(external_error(write_model(dir, "w.bin", "-4")),
             Contains("initializer 'w': external data offset '-4' is not a non-negative 64-bit integer"));
  CHECK_THAT(external_error(write_model(dir, "w.bin", "0", "99999999999999999999")),
             Contains("external data length '99999999999999999999' is not a non-negative 64-bit integer"));
}

TEST_CASE("tensors overlapping in one external file cannot multiply its size", "[frontend][onnx][external][hostile]") {
  TempDir dir;
  onnx::ModelProto model = make_model();
  add_input(model, "x", {54});
  std::string previous = "x";
  for (int k = 0; k < 3; ++k) {
    onnx::TensorProto* t = model.mutable_graph()->add_initializer();
    t->set_name("w" + std::to_string(k));
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(54);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* entry = t->add_external_data();
    entry->set_key("location");
    entry->set_value("w.bin");
    add_node(model, "Add", {previous, t->name()}, {"s" + std::to_string(k)});
    previous = "s" + std::to_string(k);
  }
  add_output(model, previous, {54});
  write_file(dir.file("model.onnx"), serialize(model));
  write_file(dir.file("w.bin"), weight_bytes());
  CHECK_THAT(external_error(dir.file("model.onnx")),
             Contains("initializer 'w1': external data file 'w.bin': the model's tensors read more bytes than its "
                      "external files hold"));
}

TEST_CASE("a model given as bytes has no folder for external data", "[frontend][onnx][external][hostile]") {
  TempDir dir;
  const std::string bytes = read_file(write_model(dir, "weights.bin"));
  CHECK_THAT(
      input_error([&] { import_onnx_bytes(bytes, {}); }),
      Contains("initializer 'w': the model stores it in an external file, but was given as bytes without a folder"));
}
