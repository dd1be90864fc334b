// Small model files for the runtime's tests, built in the test itself: ComputeDAGs scheduled with the
// default CPU (or GPU) schedule, compiled, placed in a hand-written plan, written with
// write_model_artifact; and their expected outputs from the reference interpreter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model_artifact.h"
#include "schedule/interpreter/reference_interpreter.h"

namespace tessel_test {

// A fresh directory under /tmp, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A plan and its blobs, ready for write_model_artifact.
struct TestModel {
  tessel::ModelArtifact artifact;
  std::vector<std::vector<uint8_t>> blobs;
  void write(const std::string& path) const;
};

// The two-kernel model: h = relu(x) * 2 + 1 (an elementwise kernel writing h into the arena), then
// y = h @ w (a matmul kernel reading h from the arena, w a weight). x: float32[M, K], y: float32[M, N].
struct TwoKernelModel {
  static constexpr int64_t M = 8, K = 24, N = 20;
  TestModel model;
  std::vector<float> w;
  // y for input x, from the reference interpreter.
  std::vector<double> reference(const std::vector<float>& x) const;
};
// Compiled once per process (LLVM takes a while), copied out each time.
TwoKernelModel cpu_two_kernel_model();

// A one-kernel model over every dtype: y = m ? x * float(n) : -1, with x float32[4, 8], n
// int64[4, 8], m bool[4, 8] (inputs in that order) and y float32[4, 8].
TestModel cpu_typed_model();
std::vector<double> typed_reference(const std::vector<float>& x, const std::vector<int64_t>& n,
                                    const std::vector<uint8_t>& m);

// The two-kernel model compiled for the GPU (sm of this machine's GPU); needs NVRTC and a GPU.
TwoKernelModel gpu_two_kernel_model(const std::string& arch);

// Deterministic values in [-1, 1).
std::vector<float> random_floats(int64_t n, uint64_t seed);

// Reads and writes a whole file.
std::vector<uint8_t> read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

// Runs `command` through the shell; its exit status (-1 when it did not exit), and what it printed
// on both streams in `output`.
int run_command(const std::string& command, std::string& output);

// The first value where `got` and `want` differ beyond the reference interpreter's tolerance, as
// "y[3]: got 1.5, want 1.25"; "" when all agree.
std::string first_mismatch(const std::vector<float>& got, const std::vector<double>& want);

}  // namespace tessel_test
