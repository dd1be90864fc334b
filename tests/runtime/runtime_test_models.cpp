#include "tests/runtime/runtime_test_models.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "codegen/llvm/llvm_backend.h"
#include "measure/cuda_kernel.h"
#include "schedule/lower/lower.h"
#include "schedule/ops/op_library.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"

using namespace tessel;

namespace tessel_test {
namespace {

ComputeDAG elementwise_dag(int64_t m, int64_t k) {
  return build_op("elementwise", {{"shape", std::to_string(m) + "x" + std::to_string(k)}, {"expr", "relu(x)*2+1"}});
}

ComputeDAG matmul_dag(int64_t m, int64_t k, int64_t n) {
  return build_op("matmul", {{"M", std::to_string(m)}, {"K", std::to_string(k)}, {"N", std::to_string(n)}});
}

// y[i, j] = m[i, j] ? x[i, j] * float(n[i, j]) : -1
ComputeDAG typed_dag() {
  const std::vector<int64_t> shape = {4, 8};
  const std::vector<Axis> axes = {{"i", 4}, {"j", 8}};
  auto read = [&](const std::string& t, Type type) {
    return make_tensor_read(t, {make_var("i"), make_var("j")}, type);
  };
  Operation x{"x", true, DType::Float32, shape};
  Operation n{"n", true, DType::Int64, shape};
  Operation m{"m", true, DType::Bool, shape};
  Operation y{"y", false, DType::Float32, shape, axes};
  y.body = make_select(read("m", kBool), read("x", kFloat32) * make_cast(kFloat32, read("n", kInt64)), make_float(-1));
  return ComputeDAG({x, n, m, y});
}

// The default CPU schedule of `dag`, compiled as a shared object exporting `entry`; its bytes.
std::vector<uint8_t> compile_cpu(const ComputeDAG& dag, const std::string& entry) {
  const Trace trace = default_schedule(dag, CpuTargetSpec{host_vector_lanes(), 2});
  const LoweredFunc func = lower(replay(dag, trace), entry);
  const std::string path = "/tmp/tessel_test_runtime_" + std::to_string(getpid()) + "_" + entry + ".so";
  write_shared_object(func, path);
  std::vector<uint8_t> bytes = read_bytes(path);
  std::filesystem::remove(path);
  return bytes;
}

PlanBuffer buffer(const std::string& name, DType dtype, std::vector<int64_t> shape, PlanBuffer::Kind kind) {
  PlanBuffer b;
  b.name = name;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.kind = kind;
  return b;
}

PlanKernel kernel(const std::string& name, int64_t blob, std::vector<int64_t> args) {
  PlanKernel k;
  k.name = name;
  k.entry = "tessel_" + name;
  k.blob = blob;
  k.args = std::move(args);
  k.summary = name;
  return k;
}

// The plan of the two-kernel model, without code: buffers x (input), h (intermediate at 0), w
// (weight, blob 0), y (output); kernels k0 (blob 1) and k1 (blob 2). On the GPU x and y follow h in
// the arena.
TwoKernelModel two_kernel_plan(TargetKind target) {
  using K = PlanBuffer::Kind;
  constexpr int64_t M = TwoKernelModel::M, KK = TwoKernelModel::K, N = TwoKernelModel::N;
  TwoKernelModel t;
  ModelArtifact& a = t.model.artifact;
  a.target = target;
  a.tool_version = "tessel test";
  a.model = "two_kernel.onnx";
  a.buffers = {buffer("x", DType::Float32, {M, KK}, K::Input), buffer("h", DType::Float32, {M, KK}, K::Intermediate),
               buffer("w", DType::Float32, {KK, N}, K::Weight), buffer("y", DType::Float32, {M, N}, K::Output)};
  a.buffers[2].blob = 0;
  a.inputs = {0};
  a.outputs = {3};
  a.kernels = {kernel("k0", 1, {0, 1}), kernel("k1", 2, {1, 2, 3})};
  auto rounded = [](int64_t bytes) { return (bytes + 63) / 64 * 64; };
  a.arena_bytes = rounded(a.buffers[1].bytes());
  a.liveness_bound_bytes = a.buffers[1].bytes();
  if (target == TargetKind::Cuda) {  // the input's copy and the output in the arena too, after h
    for (int b : {0, 3}) {
      a.buffers[b].offset = a.arena_bytes;
      a.arena_bytes += rounded(a.buffers[b].bytes());
    }
    a.liveness_bound_bytes = rounded(a.buffers[0].bytes()) + rounded(a.buffers[1].bytes()) + a.buffers[3].bytes();
  }
  t.w = random_floats(KK * N, 7);
  const auto* w = reinterpret_cast<const uint8_t*>(t.w.data());
  t.model.blobs = {std::vector<uint8_t>(w, w + t.w.size() * sizeof(float))};
  return t;
}

}  // namespace

TempDir::TempDir() {
  std::string pattern = "/tmp/tessel_test_runtime_XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot make a temporary directory");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void TestModel::write(const std::string& path) const { write_model_artifact(path, artifact, blobs); }

std::vector<double> TwoKernelModel::reference(const std::vector<float>& x) const {
  const ReferenceTensors h = evaluate_reference(elementwise_dag(M, K), {{"x", x}});
  const std::vector<float> hf(h.at("Y").begin(), h.at("Y").end());
  return evaluate_reference(matmul_dag(M, K, N), {{"A", hf}, {"B", w}}).at("C");
}

TwoKernelModel cpu_two_kernel_model() {
  static std::once_flag once;
  static std::vector<uint8_t> k0, k1;
  std::call_once(once, [] {
    k0 = compile_cpu(elementwise_dag(TwoKernelModel::M, TwoKernelModel::K), "tessel_k0");
    k1 = compile_cpu(matmul_dag(TwoKernelModel::M, TwoKernelModel::K, TwoKernelModel::N), "tessel_k1");
  });
  TwoKernelModel t = two_kernel_plan(TargetKind::Llvm);
  t.model.artifact.arch = host_target().cpu;
  t.model.artifact.cpu_features = host_target().features;
  t.model.artifact.device = "this machine's CPU";
  t.model.blobs.push_back(k0);
  t.model.blobs.push_back(k1);
  return t;
}

TestModel cpu_typed_model() {
  static std::once_flag once;
  static std::vector<uint8_t> code;
  std::call_once(once, [] { code = compile_cpu(typed_dag(), "tessel_k0"); });
  using K = PlanBuffer::Kind;
  TestModel t;
  ModelArtifact& a = t.artifact;
  a.target = TargetKind::Llvm;
  a.arch = host_target().cpu;
  a.cpu_features = host_target().features;
  a.buffers = {buffer("x", DType::Float32, {4, 8}, K::Input), buffer("n", DType::Int64, {4, 8}, K::Input),
               buffer("m", DType::Bool, {4, 8}, K::Input), buffer("y", DType::Float32, {4, 8}, K::Output)};
  a.inputs = {0, 1, 2};
  a.outputs = {3};
  a.kernels = {kernel("k0", 0, {0, 1, 2, 3})};
  t.blobs = {code};
  return t;
}

std::vector<double> typed_reference(const std::vector<float>& x, const std::vector<int64_t>& n,
                                    const std::vector<uint8_t>& m) {
  HostTensors in{
      {"x", x}, {"n", std::vector<float>(n.begin(), n.end())}, {"m", std::vector<float>(m.begin(), m.end())}};
  return evaluate_reference(typed_dag(), in).at("y");
}

TwoKernelModel gpu_two_kernel_model(const std::string& arch) {
  TwoKernelModel t = two_kernel_plan(TargetKind::Cuda);
  t.model.artifact.arch = arch;
  t.model.artifact.device = "this machine's GPU";
  const ComputeDAG dags[2] = {elementwise_dag(TwoKernelModel::M, TwoKernelModel::K),
                              matmul_dag(TwoKernelModel::M, TwoKernelModel::K, TwoKernelModel::N)};
  for (int k = 0; k < 2; ++k) {
    const CudaBuild build = build_cuda_kernel(dags[k], default_gpu_schedule(dags[k], GpuTargetSpec{}), arch);
    t.model.blobs.emplace_back(build.cubin.begin(), build.cubin.end());
    t.model.artifact.kernels[k].launches = build.program.launches;
    PlanKernel& kernel = t.model.artifact.kernels[k];
    kernel.scratch = build.program.scratch;
    for (const BufferParam& s : kernel.scratch) {  // after the intermediates, as a plan without reuse would
      kernel.scratch_offsets.push_back(t.model.artifact.arena_bytes);
      t.model.artifact.arena_bytes += (buffer_bytes(s) + 63) / 64 * 64;
    }
  }
  return t;
}

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& v : out) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 24) * 2.0 - 1.0);
  }
  return out;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

int run_command(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string first_mismatch(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size())
    return "got " + std::to_string(got.size()) + " values, want " + std::to_string(want.size());
  const CompareResult c =
      compare_with_reference("y", {static_cast<int64_t>(got.size())}, got.data(), want.data(), 1e-4, 1e-5, 1);
  return c.mismatches ? mismatch_summary("y", c) : "";
}

}  // namespace tessel_test
