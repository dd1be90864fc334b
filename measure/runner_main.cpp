// tessel-runner: the long-lived worker process that loads built candidates and times them. It is
// started by the measurement harness (measure/runner_client.cpp), never by hand:
//
//   tessel-runner --target llvm|cuda --workload FILE [--threads N] [--no-pin] [--gpu N]
//
// Protocol (one JSON object per line): on start it prints {"ready": true, ...} (with the device for
// cuda) or {"ready": false, "error": ...}; then for every request {"artifact": PATH, "settings": {...}}
// on stdin it prints {"event": "checked"} once the candidate ran once, then one result
// {"result": "ok", "samples_s": [...]} / {"result": "wrong_answer" | "runtime_error", "message": ...}.
// A crash or a hang ends the process; the harness records the candidate and starts a new runner.
// After a CUDA error that poisons the context it answers with "poisoned": true and exits.
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/llvm/parallel_runtime.h"
#include "measure/artifact.h"
#include "measure/device_buffers.h"
#include "measure/run_settings.h"
#include "measure/timer.h"
#include "measure/typed_values.h"
#include "measure/workload_data.h"
#include "schedule/te/error.h"

namespace tessel {
namespace {

using Json = nlohmann::json;

void reply(const Json& j) { std::cout << j.dump() << "\n" << std::flush; }

// Compares every output of `params` (read through `read`) with the workload's reference; "" when all
// agree, else the first mismatch.
std::string compare(const WorkloadData& data, const std::vector<BufferParam>& params,
                    const std::function<const float*(size_t)>& read) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].is_output) continue;
    const WorkloadData::Tensor* t = data.find(params[i].name);
    if (!t || !t->is_output) return "no reference for output " + params[i].name;
    CompareResult c = compare_with_reference(t->name, t->shape, read(i), t->reference, t->tolerance.rtol,
                                             t->tolerance.atol);
    if (c.mismatches > 0) return mismatch_summary(t->name, c);
  }
  return "";
}

const float* input_of(const WorkloadData& data, const BufferParam& p) {
  const WorkloadData::Tensor* t = data.find(p.name);
  if (!t || t->is_output || t->elements != num_elements(p))
    throw Error("the workload data has no input " + p.name + " of " + std::to_string(num_elements(p)) + " values");
  return t->input;
}

// A host buffer whose end abuts an inaccessible guard region (and whose start follows one), so that
// most out-of-bounds writes fault at once instead of corrupting the runner.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(int64_t bytes) {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t want = (static_cast<size_t>(std::max<int64_t>(bytes, 1)) + 63) / 64 * 64;
    body_ = (want + page - 1) / page * page;
    size_ = body_ + 2 * kGuard;
    base_ = static_cast<char*>(mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (base_ == MAP_FAILED || mprotect(base_ + kGuard, body_, PROT_READ | PROT_WRITE) != 0)
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes for a buffer");
    data_ = base_ + kGuard + body_ - want;
  }
  ~GuardedBuffer() { munmap(base_, size_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  void* data() const { return data_; }

 private:
  // Address space only (never backed by memory): wide enough that a write 16 Mi floats past the end
  // (the injected `oob` fault) still lands in it.
  static constexpr size_t kGuard = size_t{256} << 20;
  char* base_;
  size_t body_, size_;
  char* data_;
};

// Evicts a candidate's inputs from every cache level before each sample, so that the sample reads
// them from memory, as a model's kernel reads weights last touched a whole run ago and an input
// written by the kernel before it on other cores. Timed again and again without it, a kernel finds
// its operands in the caches of the cores that read them, which favours schedules whose parallel
// tasks each re-read a whole operand. Outputs are left alone. One cache-line flush per 64 bytes,
// spread over the kernels' thread pool: a flush from any core evicts the line from every core's
// caches, the pool's threads do it in parallel, and they are still awake (spinning) when the timed
// kernel starts, as they are between a model's kernels. Flushed by one thread, a few megabytes take
// longer than the pool's threads spin, and every sample would then time their wake-up as well.
class InputEvictor {
 public:
  void add(const void* data, int64_t bytes) {
    for (int64_t offset = 0; offset < bytes; offset += kChunk)
      chunks_.push_back({static_cast<const char*>(data) + offset, static_cast<size_t>(std::min(kChunk, bytes - offset))});
  }

#if defined(__x86_64__) || defined(__i386__)
  void evict() { tessel_parallel_for(static_cast<int64_t>(chunks_.size()), flush_chunk, this); }

 private:
  static void flush_chunk(int64_t i, void* self) {
    const auto& [data, bytes] = static_cast<const InputEvictor*>(self)->chunks_[static_cast<size_t>(i)];
    for (size_t offset = 0; offset < bytes; offset += 64) _mm_clflush(data + offset);
    _mm_mfence();
  }
#else
  // No cache-line flush here: write a buffer twice the last-level cache's size instead.
  void evict() {
    if (spill_.empty()) spill_.assign(spill_bytes(), 0);
    std::memset(spill_.data(), ++spill_value_, spill_.size());
  }

 private:
  static size_t spill_bytes() {
    int64_t bytes = 64 << 20;
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
    std::string size;
    if (in >> size && !size.empty()) {
      int64_t scale = size.back() == 'K' ? 1024 : size.back() == 'M' ? 1 << 20 : 1;
      bytes = std::max<int64_t>(bytes, std::atoll(size.c_str()) * scale * 2);
    }
    return static_cast<size_t>(bytes);
  }
  std::vector<char> spill_;
  char spill_value_ = 0;
#endif
  static constexpr int64_t kChunk = 64 << 10;  // bytes a pool thread flushes per iteration
  std::vector<std::pair<const char*, size_t>> chunks_;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Json hello() = 0;
  // Runs the artifact once (calling `checked` afterwards), compares, then times it.
  virtual Json run(const Artifact& a, const RunSettings& s, const WorkloadData& data,
                   const std::function<void()>& checked) = 0;
};

class CpuBackend : public Backend {
 public:
  CpuBackend(int threads, bool pin) {
    if (threads > 0) set_num_threads(threads);
    pinned_ = pin && pin_threads();
  }

  Json hello() override { return {{"ready", true}, {"threads", num_threads()}, {"pinned", pinned_}}; }

  Json run(const Artifact& a, const RunSettings& s, const WorkloadData& data,
           const std::function<void()>& checked) override {
    std::unique_ptr<CompiledKernel> kernel = load_shared_object(a.binary_path, a.kernel_name);
    std::vector<std::unique_ptr<GuardedBuffer>> buffers;
    std::vector<void*> args;
    InputEvictor evictor;
    for (const BufferParam& p : a.params) {
      int64_t n = num_elements(p);
      buffers.push_back(std::make_unique<GuardedBuffer>(n * element_bytes(p.dtype)));
      void* d = buffers.back()->data();
      if (p.is_output) poison_values(p.dtype, n, d);
      else store_values(p.dtype, input_of(data, p), n, d);
      if (s.flush && !p.is_output) evictor.add(d, n * element_bytes(p.dtype));
      args.push_back(d);
    }
    auto start = std::chrono::steady_clock::now();
    kernel->run(args.data());
    double checked_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    checked();
    std::vector<std::vector<float>> results(a.params.size());
    for (size_t i = 0; i < a.params.size(); ++i)
      if (a.params[i].is_output) results[i] = load_values(a.params[i].dtype, buffers[i]->data(), num_elements(a.params[i]));
    std::string wrong = compare(data, a.params, [&](size_t i) { return results[i].data(); });
    if (!wrong.empty()) return {{"result", "wrong_answer"}, {"message", wrong}};

    TimingOptions timing;
    timing.min_total_s = s.min_time_s;
    // A kernel slower than the whole sampling time was warmed by its checked run; more warm-up runs
    // would only spend a search's time on a candidate that will not win.
    timing.warmup_runs = checked_s > s.min_time_s ? 0 : s.warmup;
    timing.min_samples = s.min_samples;
    timing.max_samples = s.max_samples;
    timing.budget_s = s.budget_s;
    if (s.flush) timing.before_sample = [&evictor] { evictor.evict(); };
    TimingResult t = time_function([&] { kernel->run(args.data()); }, timing);
    return {{"result", "ok"}, {"samples_s", t.samples_s}};
  }

 private:
  bool pinned_ = false;
};

class CudaBackend : public Backend {
 public:
  CudaBackend() { rt_ = CudaRuntime::get(&why_); }

  Json hello() override {
    if (!rt_) return {{"ready", false}, {"no_device", true}, {"error", "no CUDA device: " + why_}};
    return {{"ready", true}, {"device", Json::parse(device_info_to_json(rt_->device()))}};
  }

  Json run(const Artifact& a, const RunSettings& s, const WorkloadData& data,
           const std::function<void()>& checked) override {
    std::vector<char> cubin = read_binary_file(a.binary_path);
    CudaProgram program;
    program.launches = a.launches;
    program.scratch = a.scratch;
    std::unique_ptr<CudaModule> module = rt_->load(program, cubin);
    DeviceBuffers buffers(*rt_, a.params);
    for (size_t i = 0; i < a.params.size(); ++i)
      if (!a.params[i].is_output) buffers.set_input(i, input_of(data, a.params[i]));
    buffers.poison_outputs();
    module->run(buffers.args());
    rt_->synchronize();
    checked();
    std::vector<std::vector<float>> host(a.params.size());
    for (size_t i = 0; i < a.params.size(); ++i)
      if (a.params[i].is_output) host[i] = buffers.read(a.params[i].name);
    std::string wrong = compare(data, a.params, [&](size_t i) { return host[i].data(); });
    if (!wrong.empty()) return {{"result", "wrong_answer"}, {"message", wrong}};
    CudaTiming t = rt_->time([&] { module->run(buffers.args()); }, s.min_time_s, s.flush);
    rt_->synchronize();
    return {{"result", "ok"}, {"samples_s", t.samples_s}};
  }

  // False once a fault has poisoned the context.
  bool usable() const {
    std::string why;
    return CudaRuntime::get(&why) != nullptr;
  }

 private:
  CudaRuntime* rt_ = nullptr;
  std::string why_;
};

// Makes the GPU of index `gpu` among those visible to this process the only one its CUDA driver
// sees (it is then device 0), before the driver starts: CUDA_VISIBLE_DEVICES narrowed to its entry.
void select_gpu(int gpu) {
  std::vector<std::string> visible;
  const char* set = std::getenv("CUDA_VISIBLE_DEVICES");
  if (set && *set) {
    std::string list = set;
    for (size_t start = 0; start <= list.size();) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      visible.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
    if (gpu >= static_cast<int>(visible.size()))
      throw Error("--gpu " + std::to_string(gpu) + ": CUDA_VISIBLE_DEVICES=" + list + " names " +
                  std::to_string(visible.size()) + " GPU(s)");
    setenv("CUDA_VISIBLE_DEVICES", visible[static_cast<size_t>(gpu)].c_str(), 1);
  } else {
    setenv("CUDA_VISIBLE_DEVICES", std::to_string(gpu).c_str(), 1);
  }
}

int serve(int argc, char** argv) {
  TargetKind target = TargetKind::Llvm;
  std::string workload;
  int threads = 0;
  bool pin = true;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--target") target = parse_target_kind(value());
    else if (arg == "--workload") workload = value();
    else if (arg == "--threads") threads = std::stoi(value());
    else if (arg == "--no-pin") pin = false;
    else if (arg == "--gpu") select_gpu(std::stoi(value()));
    else throw Error("unknown argument " + arg);
  }
  WorkloadData data = WorkloadData::map(workload);

  std::unique_ptr<Backend> backend;
  CudaBackend* cuda = nullptr;
  if (target == TargetKind::Cuda) {
    auto b = std::make_unique<CudaBackend>();
    cuda = b.get();
    backend = std::move(b);
  } else {
    backend = std::make_unique<CpuBackend>(threads, pin);
  }
  Json hello = backend->hello();
  reply(hello);
  if (!hello.value("ready", false)) return 1;

  std::string line;
  while (std::getline(std::cin, line)) {
    Json result;
    try {
      Json request = Json::parse(line);
      std::string path = request.at("artifact").get<std::string>();
      std::vector<char> manifest = read_binary_file(path);
      Artifact a = artifact_from_json(std::string(manifest.begin(), manifest.end()), path);
      RunSettings s = run_settings_from_json(request.at("settings").dump());
      result = backend->run(a, s, data, [] { reply({{"event", "checked"}}); });
    } catch (const std::exception& e) {
      result = {{"result", "runtime_error"}, {"message", e.what()}};
    }
    if (cuda && !cuda->usable()) result["poisoned"] = true;
    reply(result);
    if (result.value("poisoned", false)) return 3;
  }
  return 0;
}

}  // namespace
}  // namespace tessel

int main(int argc, char** argv) {
  try {
    return tessel::serve(argc, argv);
  } catch (const std::exception& e) {
    tessel::reply({{"ready", false}, {"error", e.what()}});
    return 1;
  }
}
