#include "search/tuning_machine.h"

#include <algorithm>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "codegen/llvm/llvm_backend.h"
#include "schedule/te/error.h"
#include "schedule/te/parallel.h"

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

// A batch spread over several GPUs: candidate i goes to GPU i mod n, each GPU's share measured by its
// own Measurer (its runner on that GPU, its builders a share of the cores) in a thread of its own.
// Results come back in the batch's order, each with the settings (its GPU) it ran under.
class SpreadMeasurer : public CandidateMeasurer {
 public:
  explicit SpreadMeasurer(std::vector<std::unique_ptr<Measurer>> parts) : parts_(std::move(parts)) {}

  std::vector<MeasureResult> measure(const std::vector<Candidate>& candidates,
                                     const std::function<void(size_t, const MeasureResult&)>& on_result) override {
    const size_t n = parts_.size();
    std::vector<MeasureResult> results(candidates.size());
    std::vector<std::vector<size_t>> share(n);
    for (size_t i = 0; i < candidates.size(); ++i) share[i % n].push_back(i);
    std::mutex report;
    std::vector<size_t> built(n, 0);
    std::vector<std::exception_ptr> errors(n);
    auto run = [&](size_t p) {
      try {
        std::vector<Candidate> mine;
        for (size_t i : share[p]) mine.push_back(candidates[i]);
        parts_[p]->on_build_progress([&, p](size_t done, size_t) {
          std::lock_guard<std::mutex> lock(report);
          built[p] = done;
          size_t all = 0;
          for (size_t b : built) all += b;
          if (build_progress_) build_progress_(all, candidates.size());
        });
        std::vector<MeasureResult> got = parts_[p]->measure(mine, [&, p](size_t k, const MeasureResult& r) {
          std::lock_guard<std::mutex> lock(report);
          if (on_result) on_result(share[p][k], r);
        });
        parts_[p]->on_build_progress(nullptr);
        for (size_t k = 0; k < got.size(); ++k) {
          got[k].settings_json = parts_[p]->settings_json();
          results[share[p][k]] = std::move(got[k]);
        }
      } catch (...) {
        errors[p] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    for (size_t p = 1; p < n; ++p) threads.emplace_back(run, p);
    run(0);
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    return results;
  }

  void on_build_progress(std::function<void(size_t, size_t)> callback) override { build_progress_ = callback; }
  void set_run_timeout(double seconds) override {
    for (auto& p : parts_) p->set_run_timeout(seconds);
  }
  // The first GPU's: the settings every part shares but the GPU's index.
  const std::string& settings_json() const override { return parts_.front()->settings_json(); }
  const CudaDeviceInfo& device() const { return parts_.front()->device(); }

 private:
  std::vector<std::unique_ptr<Measurer>> parts_;
  std::function<void(size_t, size_t)> build_progress_;
};

class LocalMachine : public TuningMachine {
 public:
  LocalMachine(TargetKind kind, std::vector<int> gpus) : kind_(kind), gpus_(std::move(gpus)) {}

  std::unique_ptr<CandidateMeasurer> measurer(const ComputeDAG& dag, const MeasureOptions& options) override {
    if (kind_ != TargetKind::Cuda || gpus_.size() <= 1) {
      MeasureOptions on_this_gpu = options;
      if (kind_ == TargetKind::Cuda && !gpus_.empty()) on_this_gpu.gpu = gpus_.front();
      auto m = std::make_unique<Measurer>(dag, on_this_gpu);
      if (!device_) device_ = m->device();
      return m;
    }
    std::vector<std::unique_ptr<Measurer>> parts;
    const int builders = options.builders > 0 ? options.builders : available_cores();
    for (int gpu : gpus_) {
      MeasureOptions part = options;
      part.gpu = gpu;
      part.builders = std::max(1, builders / static_cast<int>(gpus_.size()));
      parts.push_back(std::make_unique<Measurer>(dag, part));
      if (parts.back()->device().name != parts.front()->device().name ||
          parts.back()->device().arch != parts.front()->device().arch)
        throw InputError("--devices: GPU " + std::to_string(gpu) + " is a " + parts.back()->device().name + ", GPU " +
                         std::to_string(gpus_.front()) + " a " + parts.front()->device().name +
                         "; one session tunes for one kind of GPU");
    }
    auto m = std::make_unique<SpreadMeasurer>(std::move(parts));
    if (!device_) device_ = m->device();
    return m;
  }

  std::optional<CudaDeviceInfo> device() const override { return device_; }

  TargetInfo target() const override {
    if (kind_ == TargetKind::Llvm) return host_llvm_target();
    TESSEL_CHECK(device_.has_value(), "the GPU's target is known once a measurer has started");
    return cuda_target(*device_);
  }

 private:
  TargetKind kind_;
  std::vector<int> gpus_;
  std::optional<CudaDeviceInfo> device_;
};

}  // namespace

std::unique_ptr<TuningMachine> local_machine(TargetKind kind, const std::vector<int>& gpus) {
  return std::make_unique<LocalMachine>(kind, gpus);
}

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

GpuTargetSpec gpu_target_spec(const CudaDeviceInfo& device, GpuTargetSpec base) {
  base.max_threads_per_block = device.max_threads_per_block;
  base.max_shared_bytes = device.max_shared_per_block;
  base.max_shared_bytes_tensor_core = std::min(base.max_shared_bytes_tensor_core, device.max_shared_per_block_optin);
  base.warpgroup_mma = device.arch == "sm_90";
  if (device.sm_count > 0) base.multiprocessors = device.sm_count;
  return base;
}

}  // namespace tessel
