#include "search/tuning_machine.h"

#include <fstream>
#include <optional>

#include "codegen/llvm/llvm_backend.h"
#include "schedule/te/error.h"

namespace tessel {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "";
}

class LocalMachine : public TuningMachine {
 public:
  explicit LocalMachine(TargetKind kind) : kind_(kind) {}

  std::unique_ptr<CandidateMeasurer> measurer(const ComputeDAG& dag, const MeasureOptions& options) override {
    auto m = std::make_unique<Measurer>(dag, options);
    if (!device_) device_ = m->device();
    return m;
  }

  TargetInfo target() const override {
    if (kind_ == TargetKind::Llvm) return host_llvm_target();
    TESSEL_CHECK(device_.has_value(), "the GPU's target is known once a measurer has started");
    return cuda_target(*device_);
  }

 private:
  TargetKind kind_;
  std::optional<CudaDeviceInfo> device_;
};

}  // namespace

std::unique_ptr<TuningMachine> local_machine(TargetKind kind) { return std::make_unique<LocalMachine>(kind); }

TargetInfo host_llvm_target() {
  const HostTarget& host = host_target();
  TargetInfo t;
  t.kind = "llvm";
  t.arch = host.cpu;
  t.device_name = cpu_model_name();
  t.toolkit_version = "LLVM 19";
  t.cpu_features = host.features;
  return t;
}

TargetInfo cuda_target(const CudaDeviceInfo& d) {
  TargetInfo t;
  t.kind = "cuda";
  t.arch = d.arch;
  t.device_name = d.name;
  t.driver_version = d.driver_version;
  t.toolkit_version = "NVRTC";
  return t;
}

}  // namespace tessel
