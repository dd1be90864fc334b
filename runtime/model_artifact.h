// A deployable model: what `tessel build` writes and the runtime loads, in one file (MODEL.tsl).
//
//   bytes 0..7    magic "TSLMODEL"
//   bytes 8..11   format version (little-endian u32, 1)
//   bytes 12..19  manifest length N (u64)            bytes 20..27  FNV-1a 64 of the manifest
//   bytes 28..    the manifest: N bytes of JSON (below)
//   then blobs, each at a 64-byte aligned offset the manifest gives, each with its own checksum
//
// The manifest holds the execution plan — buffers (model inputs and outputs, weights, intermediates
// placed in one arena by the memory plan), kernels in the order they run, each with its parameters'
// buffers — and provenance (tool version, target, device, the tuning-log record of every kernel).
// Blobs hold the weights and the kernels' code (a shared object per kernel on the CPU, a cubin per
// kernel on the GPU). A reader checks everything before anything runs: magic, version, checksums,
// that every offset and size lies inside the file, that buffers and kernels agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"  // CudaLaunch, BufferParam
#include "schedule/target_kind.h"
#include "schedule/te/error.h"
#include "schedule/te/expr.h"

namespace tessel {

// A problem with an artifact file: not one, damaged, from a newer tessel, built for another target.
class ArtifactError : public Error {
 public:
  explicit ArtifactError(const std::string& message) : Error(message) {}
};

struct PlanBuffer {
  enum class Kind { Input, Output, Weight, Intermediate };
  std::string name;  // the model's tensor name
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // as the model has it ([] for a scalar)
  Kind kind = Kind::Intermediate;
  int64_t offset = 0;     // in the arena (see in_arena): its byte offset there
  int64_t blob = -1;      // Weight: its data's blob
  int64_t bytes() const;  // element count times element size (a scalar: one element)
};

// Whether a buffer lives in a context's arena: every intermediate, and on the GPU the context's
// copies of the inputs and its outputs too (on the CPU, inputs are read where the caller has them).
inline bool in_arena(const PlanBuffer& b, TargetKind target) {
  return b.kind == PlanBuffer::Kind::Intermediate ||
         (target == TargetKind::Cuda && (b.kind == PlanBuffer::Kind::Input || b.kind == PlanBuffer::Kind::Output));
}

struct PlanKernel {
  std::string name;                  // "k7"
  std::string entry;                 // the function (CPU) or, on the GPU, unused (launches name kernels)
  int64_t blob = -1;                 // its code
  std::vector<int64_t> args;         // a buffer per parameter, in the kernel's parameter order
  std::vector<CudaLaunch> launches;  // GPU: kernels of the program, in order
  std::vector<BufferParam> scratch;  // GPU: buffers between the program's launches, alive during this kernel only
  std::vector<int64_t> scratch_offsets;  // one per scratch buffer: its byte offset in the arena
  // Provenance: the task's workload key, its name (the fused ops and the output shape, "Conv+Relu
  // 1x64x56x56"), and the log record its schedule came from (-1: the default schedule, no record).
  std::string workload_key;
  std::string summary;
  int64_t record_id = -1;
};

struct Blob {
  int64_t offset = 0;
  int64_t size = 0;
  uint64_t checksum = 0;  // FNV-1a 64 of its bytes
};

struct ModelArtifact {
  TargetKind target = TargetKind::Llvm;
  std::string arch;          // "x86-64-v3" / "sm_90"
  std::string cpu_features;  // llvm: the LLVM feature string the kernels were compiled with ("+avx2,+fma,-sse4a,...")
  std::string device;        // the CPU model or GPU name it was built for
  std::string tool_version;
  std::string model;  // the ONNX file it was built from
  std::vector<PlanBuffer> buffers;
  std::vector<int64_t> inputs;       // buffer indices, in the model's input order
  std::vector<int64_t> outputs;      // buffer indices, in the model's output order
  std::vector<PlanKernel> kernels;   // in the order they run
  int64_t arena_bytes = 0;           // the values in_arena() and GPU scratch, reused by liveness
  int64_t liveness_bound_bytes = 0;  // the most bytes of those values alive at once (scratch aside)
  std::vector<Blob> blobs;
};

// Writes `artifact` with the blobs' bytes (blob i's data at `blob_data[i]`; offsets, sizes and
// checksums are filled in) to `path`, atomically (a temporary file renamed). Throws Error on I/O
// failure.
void write_model_artifact(const std::string& path, ModelArtifact artifact,
                          const std::vector<std::vector<uint8_t>>& blob_data);

// Reads and checks an artifact; `bytes` receives the whole file (the blobs are views into it).
// Throws ArtifactError naming the file and the problem.
ModelArtifact read_model_artifact(const std::string& path, std::vector<uint8_t>& bytes);

uint64_t fnv1a64(const uint8_t* data, size_t size);
int64_t element_size(DType d);
int64_t buffer_bytes(const BufferParam& p);  // its elements times the element size
const char* to_string(PlanBuffer::Kind kind);

}  // namespace tessel
