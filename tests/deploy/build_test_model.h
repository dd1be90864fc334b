// A test's ONNX model built by the build's library, as `tessel build` does with no log (default
// schedules): written to DIR/m.onnx, imported for the target and built into DIR/m.tsl.
#pragma once

#include <string>

#include "codegen/cuda/cuda_backend.h"
#include "deploy/model_builder.h"
#include "tests/frontend/onnx_test_models.h"
#include "tests/skip.h"

namespace tessel_test {

// Builds `proto` for `target` (cuda: for `device`) into dir.file("m.tsl"). False, with the test
// reported skipped, where cuda code cannot be compiled here (no NVRTC).
inline bool build_test_model(const onnx::ModelProto& proto, tessel::TargetKind target, const TempDir& dir,
                             const tessel::CudaDeviceInfo& device = tessel::default_cuda_device_info()) {
  write_file(dir.file("m.onnx"), serialize(proto));
  const tessel::Model model = tessel::load_model(dir.file("m.onnx"), {}, target);
  tessel::BuildOptions o;
  o.target = target;
  o.device = device;
  o.device_name = target == tessel::TargetKind::Cuda ? device.name : "this CPU";
  try {
    tessel::build_model(model, o, dir.file("m.tsl"));
  } catch (const tessel::Error& e) {
    if (std::string(e.what()).find("NVRTC not available") == std::string::npos) throw;
    skip_test(e.what());
    return false;
  }
  return true;
}

}  // namespace tessel_test
