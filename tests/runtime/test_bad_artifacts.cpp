// Bad model files and bad inputs: each refused with an error that says what is wrong, and no kernel
// runs on bad data (a context's outputs stay as they were).
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "runtime/cpu_support.h"
#include "runtime/model.h"
#include "tests/runtime/runtime_test_models.h"
#include "tests/skip.h"

using namespace tessel;
using namespace tessel_test;
using Catch::Matchers::Contains;

namespace {

constexpr int64_t M = TwoKernelModel::M, K = TwoKernelModel::K, N = TwoKernelModel::N;
constexpr size_t kHeaderBytes = 28;

// The message of the ArtifactError that loading `path` throws ("" when it loads).
std::string load_error(const std::string& path) {
  try {
    LoadedModel::load(path);
  } catch (const ArtifactError& e) {
    return e.what();
  }
  return "";
}

// Rewrites the manifest of the file at `path` through `edit`, with a correct manifest checksum, so
// that only what `edit` changed is wrong.
void edit_manifest(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  std::vector<uint8_t> bytes = read_bytes(path);
  uint64_t size = 0;
  std::memcpy(&size, bytes.data() + 12, 8);
  nlohmann::json j = nlohmann::json::parse(bytes.begin() + kHeaderBytes, bytes.begin() + kHeaderBytes + size);
  edit(j);
  std::string text = j.dump();
  REQUIRE(text.size() <= size);
  text.resize(size, ' ');
  std::memcpy(bytes.data() + kHeaderBytes, text.data(), size);
  const uint64_t sum = fnv1a64(bytes.data() + kHeaderBytes, size);
  std::memcpy(bytes.data() + 20, &sum, 8);
  write_bytes(path, bytes);
}

// A feature LLVM can compile for that this CPU lacks, or "" when it has them all.
std::string missing_feature() {
  for (const char* f : {"amx-tile", "avx512fp16", "avx512vp2intersect", "fma4", "xop", "tbm", "sse4a", "avx512f"})
    if (cpu_has_feature(f) == std::optional<bool>(false)) return f;
  return "";
}

struct Fixture {
  TempDir dir;
  TwoKernelModel t = cpu_two_kernel_model();
  std::string path = dir.file("model.tsl");
  Fixture() { t.model.write(path); }
};

}  // namespace

TEST_CASE("a good file loads (the baseline of the cases below)", "[runtime][bad]") {
  Fixture f;
  CHECK(load_error(f.path) == "");
}

TEST_CASE("a missing, truncated or foreign file is refused", "[runtime][bad]") {
  Fixture f;
  CHECK_THAT(load_error(f.dir.file("none.tsl")), Contains("cannot read") && Contains("none.tsl"));

  std::vector<uint8_t> bytes = read_bytes(f.path);
  write_bytes(f.path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 20));
  CHECK_THAT(load_error(f.path), Contains("not a tessel model"));
  write_bytes(f.path, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 200));
  CHECK_THAT(load_error(f.path), Contains("truncated"));
  write_bytes(f.path, std::vector<uint8_t>(bytes.begin(), bytes.end() - 100));  // a blob cut off
  CHECK_THAT(load_error(f.path), Contains("outside the file") && Contains("truncated"));

  std::vector<uint8_t> magic = bytes;
  magic[0] = 'X';
  write_bytes(f.path, magic);
  CHECK_THAT(load_error(f.path), Contains("not a tessel model"));
  std::vector<uint8_t> version = bytes;
  version[8] = 9;
  write_bytes(f.path, version);
  CHECK_THAT(load_error(f.path), Contains("format 9"));
}

TEST_CASE("a flipped byte in a blob or in the manifest fails its checksum", "[runtime][bad]") {
  Fixture f;
  const std::vector<uint8_t> bytes = read_bytes(f.path);
  std::vector<uint8_t> blob = bytes;
  blob[bytes.size() - 700] ^= 0x10;  // inside the last kernel's code
  write_bytes(f.path, blob);
  CHECK_THAT(load_error(f.path), Contains("damaged") && Contains("checksum of blob"));
  std::vector<uint8_t> manifest = bytes;
  manifest[kHeaderBytes + 10] ^= 0x01;
  write_bytes(f.path, manifest);
  CHECK_THAT(load_error(f.path), Contains("damaged") && Contains("manifest"));
}

TEST_CASE("a manifest whose offsets or indices point outside the file or the arena is refused", "[runtime][bad]") {
  Fixture f;
  const std::vector<uint8_t> good = read_bytes(f.path);
  edit_manifest(f.path, [&](nlohmann::json& j) { j["blobs"][1]["offset"] = static_cast<int64_t>(good.size()) + 64; });
  CHECK_THAT(load_error(f.path), Contains("blobs[1]"));
  write_bytes(f.path, good);
  edit_manifest(f.path,
                [](nlohmann::json& j) { j["blobs"][0]["offset"] = j["blobs"][0]["offset"].get<int64_t>() + 8; });
  CHECK_THAT(load_error(f.path), Contains("blobs[0]"));  // not 64-byte aligned
  write_bytes(f.path, good);
  edit_manifest(f.path, [](nlohmann::json& j) { j["buffers"][1]["offset"] = 64; });  // h past the arena's end
  CHECK_THAT(load_error(f.path), Contains("outside the arena"));
  write_bytes(f.path, good);
  edit_manifest(f.path, [](nlohmann::json& j) {
    j["arena_bytes"] = 1024;
    j["buffers"][1]["offset"] = 8;
  });
  CHECK_THAT(load_error(f.path), Contains("intermediate 'h' is at arena offset 8, not a multiple of 64"));
  write_bytes(f.path, good);
  for (const int64_t offset : {int64_t{0}, int64_t{8}}) {  // past the arena, then misaligned
    edit_manifest(f.path, [&](nlohmann::json& j) {
      const int64_t floats = offset == 0 ? j["arena_bytes"].get<int64_t>() / 4 + 1 : 1;
      j["kernels"][0]["scratch"] = {{{"name", "T"}, {"dtype", "float32"}, {"shape", {floats}}, {"offset", offset}}};
    });
    CHECK_THAT(load_error(f.path), Contains("kernels[0].scratch") && Contains("scratch 'T' at arena offset " +
                                                                              std::to_string(offset)));
    write_bytes(f.path, good);
  }
  edit_manifest(f.path, [](nlohmann::json& j) {
    j["kernels"][0]["scratch"] = {{{"name", "T"}, {"dtype", "float32"}, {"shape", {1}}}};
  });
  CHECK_THAT(load_error(f.path), Contains("kernels[0].scratch") && Contains("offset"));
  write_bytes(f.path, good);
  edit_manifest(f.path, [](nlohmann::json& j) {  // 16-bit floats are storage, never what a caller passes
    for (nlohmann::json& b : j["buffers"])
      if (b["kind"] == "input") b["dtype"] = "bfloat16";
  });
  CHECK_THAT(load_error(f.path), Contains("an input or output of bfloat16"));
  write_bytes(f.path, good);
  edit_manifest(f.path, [](nlohmann::json& j) { j["kernels"][1]["args"][2] = 17; });
  CHECK_THAT(load_error(f.path), Contains("kernels[1]") && Contains("index outside"));
  write_bytes(f.path, good);
  edit_manifest(f.path, [](nlohmann::json& j) { j["kernels"][0]["entry"] = "no_such_function"; });
  CHECK_THAT(load_error(f.path), Contains("kernel 0 (k0)") && Contains("no function 'no_such_function'"));
  write_bytes(f.path, good);
  edit_manifest(f.path, [](nlohmann::json& j) { j["kernels"][0]["blob"] = 0; });  // the weights as code
  CHECK_THAT(load_error(f.path), Contains("kernel 0 (k0)") && Contains("not a 64-bit ELF"));
}

TEST_CASE("a model built for another CPU is refused before its code is loaded", "[runtime][bad]") {
  Fixture f;
  const std::string feature = missing_feature();
  if (feature.empty()) {
    skip_test("this CPU has every feature the check could ask for");
    return;
  }
  TwoKernelModel other = f.t;
  other.model.artifact.cpu_features += ",+" + feature;
  other.model.write(f.path);
  CHECK_THAT(load_error(f.path), Contains("built for a CPU with " + feature) && Contains("rebuild"));
  other.model.artifact.cpu_features = "";
  other.model.artifact.arch = "x86-64-v4";
  other.model.write(f.path);
  if (host_x86_64_level() != "x86-64-v4") CHECK_THAT(load_error(f.path), Contains("built for x86-64-v4 CPUs"));
}

TEST_CASE("a cuda model where there is no GPU, or another GPU, is refused", "[runtime][bad]") {
  Fixture f;
  TwoKernelModel other = f.t;
  other.model.artifact.target = TargetKind::Cuda;
  other.model.artifact.arch = "sm_10";
  other.model.write(f.path);
  std::string why;
  const std::string error = load_error(f.path);
  if (CudaRuntime::get(&why))
    CHECK_THAT(error, Contains("built for sm_10") && Contains("this GPU is sm_"));
  else
    CHECK_THAT(error, Contains("cuda model (sm_10") && Contains(why));
}

TEST_CASE("a cuda model's input or output placed outside the arena, or off its alignment, is refused",
          "[runtime][bad]") {
  // On the GPU the inputs' copies and the outputs live in the arena; the file is refused before any
  // GPU is looked for.
  Fixture f;
  TwoKernelModel cuda = f.t;
  ModelArtifact& a = cuda.model.artifact;
  a.target = TargetKind::Cuda;
  a.arch = "sm_90";
  a.buffers[0].offset = a.arena_bytes;  // x, the input, past the arena's end
  cuda.model.write(f.path);
  CHECK_THAT(load_error(f.path), Contains("buffers[0]") && Contains("outside the arena"));
  a.arena_bytes += 1024;
  a.buffers[3].offset = a.arena_bytes - 1024 + 8;  // y, the output, inside but misaligned
  a.buffers[0].offset = 0;
  cuda.model.write(f.path);
  CHECK_THAT(load_error(f.path), Contains("output 'y' is at arena offset") && Contains("not a multiple of 64"));
}

TEST_CASE("inputs of the wrong shape or dtype, or none, are refused and no kernel runs", "[runtime][bad]") {
  Fixture f;
  const LoadedModel model = LoadedModel::load(f.path);
  ExecutionContext ctx(model);
  auto output = [&] {
    std::vector<float> out(M * N);
    ctx.copy_output(0, out.data(), MemoryKind::Host);
    return out;
  };
  const std::vector<float> zeros = output();  // outputs start zeroed
  REQUIRE(zeros == std::vector<float>(M * N, 0.0f));
  CHECK_THROWS_WITH(ctx.run(), Contains("inputs not set: 0 ('x')") && Contains("nothing was run"));
  CHECK(output() == zeros);

  const std::vector<float> x = random_floats(M * K, 1);
  ctx.set_input(0, DType::Float32, {M, K}, x.data());
  ctx.run();
  const std::vector<float> before = output();
  REQUIRE(before != zeros);

  const std::vector<float> other = random_floats(M * K, 2);
  CHECK_THROWS_WITH(ctx.set_input(0, DType::Float32, {M, K + 1}, other.data()),
                    "input 0 ('x'): expected float32[8, 24], got float32[8, 25]");
  CHECK_THROWS_AS(ctx.run(), InputError);  // a refused input is unbound, not left as it was
  CHECK_THROWS_WITH(ctx.set_input(0, DType::Int64, {M, K}, other.data()),
                    "input 0 ('x'): expected float32[8, 24], got int64[8, 24]");
  CHECK_THROWS_WITH(ctx.set_input(0, DType::Float32, {M * K}, other.data()), Contains("got float32[192]"));
  CHECK_THROWS_WITH(ctx.set_input("X", DType::Float32, {M, K}, other.data()),
                    Contains("no input 'X'") && Contains("'x'"));
  CHECK_THROWS_WITH(ctx.set_input(1, DType::Float32, {M, K}, other.data()), Contains("no input 1"));
  CHECK_THROWS_WITH(ctx.set_input(0, DType::Float32, {M, K}, nullptr), Contains("null"));
  CHECK_THROWS_WITH(ctx.set_input(0, DType::Float32, {M, K}, other.data(), MemoryKind::Device),
                    Contains("runs on the CPU"));
  CHECK_THROWS_AS(ctx.run(), InputError);
  CHECK(output() == before);
  CHECK_THROWS_AS(ctx.output_data(1), InputError);
}
