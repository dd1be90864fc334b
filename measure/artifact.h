// What a builder hands a runner: the compiled kernel (a shared object for llvm, a cubin for cuda) and
// a JSON manifest saying how to call it (parameters in order, and for cuda the kernel launches and
// scratch buffers). Also the JSON forms of the device description runners report.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "schedule/ir/stmt.h"
#include "schedule/target_kind.h"

namespace tessel {

struct Artifact {
  TargetKind target = TargetKind::Llvm;
  std::string kernel_name;  // llvm: the exported function
  std::string binary_path;  // the .so or .cubin file
  std::vector<BufferParam> params;
  std::vector<CudaLaunch> launches;  // cuda
  std::vector<BufferParam> scratch;  // cuda
};

std::string artifact_to_json(const Artifact& artifact);
// Throws Error naming `what` on malformed JSON.
Artifact artifact_from_json(const std::string& text, const std::string& what);

// A file read or written whole; throws Error naming the path.
std::vector<char> read_binary_file(const std::string& path);
void write_binary_file(const std::string& path, const char* data, size_t size);

std::string device_info_to_json(const CudaDeviceInfo& device);
CudaDeviceInfo device_info_from_json(const std::string& text);

}  // namespace tessel
