// CudaRuntime over the CUDA driver API, opened with dlopen("libcuda.so.1") so that one binary runs
// on machines without a GPU; the driver entry points used are declared here by hand (stable C ABI).
// Everything runs on one stream of device 0's primary context, except the work of callers that make
// streams of their own (create_stream).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <type_traits>
#include <mutex>

#include "codegen/cuda/cuda_backend.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

CudaDeviceInfo default_cuda_device_info() {
  CudaDeviceInfo info;
  info.name = "NVIDIA H100 (assumed: no device queried)";
  info.cc_major = 9;
  info.cc_minor = 0;
  info.arch = "sm_90";
  info.max_threads_per_block = 1024;
  info.max_shared_per_block = 48 * 1024;
  info.max_shared_per_block_optin = 227 * 1024;
  info.sm_count = 132;
  info.l2_bytes = 50 * 1024 * 1024;
  return info;
}

namespace {

using CUresult = int;  // 0 is CUDA_SUCCESS
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctxOpaque*;
using CUmodule = struct CUmodOpaque*;
using CUfunction = struct CUfuncOpaque*;
using CUstream = struct CUstreamOpaque*;
using CUevent = struct CUeventOpaque*;
using CUgraph = struct CUgraphOpaque*;
using CUgraphExec = struct CUgraphExecOpaque*;

// CUdevice_attribute / CUfunction_attribute values from cuda.h.
enum : int {
  kAttrMaxThreadsPerBlock = 1, kAttrMaxBlockDimX = 2, kAttrMaxGridDimX = 5, kAttrMaxSharedPerBlock = 8,
  kAttrSmCount = 16, kAttrL2Size = 38, kAttrCcMajor = 75, kAttrCcMinor = 76, kAttrMaxSharedPerBlockOptin = 97,
};
constexpr int kFuncAttrMaxDynamicShared = 8;
constexpr int kCaptureModeThreadLocal = 1;  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
constexpr unsigned kStreamNonBlocking = 1;   // CU_STREAM_NON_BLOCKING
constexpr unsigned kNanBits = 0x7fc00000u;
constexpr size_t kMaxTimingSamples = 10000;

struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*driver_version)(int*);
  CUresult (*device_count)(int*);
  CUresult (*device_get)(CUdevice*, int);
  CUresult (*device_name)(char*, int, CUdevice);
  CUresult (*device_attribute)(int*, int, CUdevice);
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*stream_create)(CUstream*, unsigned);
  CUresult (*stream_synchronize)(CUstream);
  CUresult (*mem_alloc)(CUdeviceptr*, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*memset_d32)(CUdeviceptr, unsigned, size_t, CUstream);
  CUresult (*module_load_data)(CUmodule*, const void*);
  CUresult (*module_unload)(CUmodule);
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*);
  CUresult (*func_set_attribute)(CUfunction, int, int);
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void**, void**);
  CUresult (*event_create)(CUevent*, unsigned);
  CUresult (*event_record)(CUevent, CUstream);
  CUresult (*event_synchronize)(CUevent);
  CUresult (*event_elapsed)(float*, CUevent, CUevent);
  CUresult (*event_destroy)(CUevent);
  CUresult (*error_name)(CUresult, const char**);
  // CUDA graphs (optional: without them a batch is timed as plain back-to-back launches).
  CUresult (*stream_begin_capture)(CUstream, int);
  CUresult (*stream_end_capture)(CUstream, CUgraph*);
  CUresult (*graph_instantiate)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*graph_launch)(CUgraphExec, CUstream);
  CUresult (*graph_exec_destroy)(CUgraphExec);
  CUresult (*graph_destroy)(CUgraph);
  // Optional too: only streams of a caller's own (CudaStream) use them.
  CUresult (*stream_destroy)(CUstream);
  CUresult (*memcpy_dtod)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  bool has_graphs() const { return stream_begin_capture && stream_end_capture && graph_instantiate && graph_launch &&
                                   graph_exec_destroy && graph_destroy; }
};

// Returns false when libcuda.so.1 is missing or lacks a symbol.
bool load_driver(Driver& d) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  bool ok = true;
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    ok = ok && fn != nullptr;
  };
  bind(d.init, "cuInit");
  bind(d.driver_version, "cuDriverGetVersion");
  bind(d.device_count, "cuDeviceGetCount");
  bind(d.device_get, "cuDeviceGet");
  bind(d.device_name, "cuDeviceGetName");
  bind(d.device_attribute, "cuDeviceGetAttribute");
  bind(d.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  bind(d.ctx_set_current, "cuCtxSetCurrent");
  bind(d.stream_create, "cuStreamCreate");
  bind(d.stream_synchronize, "cuStreamSynchronize");
  bind(d.mem_alloc, "cuMemAlloc_v2");
  bind(d.mem_free, "cuMemFree_v2");
  bind(d.memcpy_htod, "cuMemcpyHtoDAsync_v2");
  bind(d.memcpy_dtoh, "cuMemcpyDtoHAsync_v2");
  bind(d.memset_d32, "cuMemsetD32Async");
  bind(d.module_load_data, "cuModuleLoadData");
  bind(d.module_unload, "cuModuleUnload");
  bind(d.module_get_function, "cuModuleGetFunction");
  bind(d.func_set_attribute, "cuFuncSetAttribute");
  bind(d.launch_kernel, "cuLaunchKernel");
  bind(d.event_create, "cuEventCreate");
  bind(d.event_record, "cuEventRecord");
  bind(d.event_synchronize, "cuEventSynchronize");
  bind(d.event_elapsed, "cuEventElapsedTime");
  bind(d.event_destroy, "cuEventDestroy_v2");
  bind(d.error_name, "cuGetErrorName");
  auto bind_optional = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
  };
  bind_optional(d.stream_begin_capture, "cuStreamBeginCapture_v2");
  bind_optional(d.stream_end_capture, "cuStreamEndCapture");
  bind_optional(d.graph_instantiate, "cuGraphInstantiateWithFlags");
  bind_optional(d.graph_launch, "cuGraphLaunch");
  bind_optional(d.graph_exec_destroy, "cuGraphExecDestroy");
  bind_optional(d.graph_destroy, "cuGraphDestroy");
  bind_optional(d.stream_destroy, "cuStreamDestroy_v2");
  bind_optional(d.memcpy_dtod, "cuMemcpyDtoDAsync_v2");
  return ok;
}

// Errors after which the context is corrupt and every later call fails (the process must restart).
bool is_sticky(CUresult r) { return r == 700 || r == 702 || (r >= 714 && r <= 719); }

// A sample without L2 flush lasts about this long (see time()).
constexpr float kBatchTargetMs = 0.2f;

class DriverRuntime;

class DriverModule final : public CudaModule {
 public:
  // Without `own_scratch` the module runs only through run_on (the caller's scratch).
  DriverModule(DriverRuntime& rt, const CudaProgram& program, const std::vector<char>& cubin, bool own_scratch);
  ~DriverModule() override;
  void run(const std::vector<uint64_t>& device_args) override;
  void run_on(CudaStream& stream, const std::vector<uint64_t>& device_args,
              const std::vector<uint64_t>& scratch) override;

 private:
  void launch_all(CUstream stream, const std::vector<uint64_t>& device_args, const std::vector<uint64_t>& scratch);

  DriverRuntime& rt_;
  bool own_scratch_;
  CUmodule module_ = nullptr;
  std::vector<CudaLaunch> launches_;
  std::vector<CUfunction> functions_;
  std::vector<std::string> scratch_names_;
  std::vector<uint64_t> scratch_;
};

class DriverRuntime final : public CudaRuntime {
 public:
  explicit DriverRuntime(const Driver& d) : d_(d) {
    check(d_.device_get(&device_, 0), "cuDeviceGet");
    char name[256] = {};
    check(d_.device_name(name, sizeof name - 1, device_), "cuDeviceGetName");
    info_.name = name;
    info_.cc_major = attribute(kAttrCcMajor);
    info_.cc_minor = attribute(kAttrCcMinor);
    info_.arch = "sm_" + std::to_string(info_.cc_major) + std::to_string(info_.cc_minor);
    info_.max_threads_per_block = attribute(kAttrMaxThreadsPerBlock);
    info_.max_shared_per_block = attribute(kAttrMaxSharedPerBlock);
    info_.max_shared_per_block_optin = attribute(kAttrMaxSharedPerBlockOptin);
    for (int i = 0; i < 3; ++i) {
      info_.max_grid[i] = attribute(kAttrMaxGridDimX + i);
      info_.max_block[i] = attribute(kAttrMaxBlockDimX + i);
    }
    info_.sm_count = attribute(kAttrSmCount);
    info_.l2_bytes = attribute(kAttrL2Size);
    int version = 0;
    check(d_.driver_version(&version), "cuDriverGetVersion");
    info_.driver_version = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
    check(d_.primary_ctx_retain(&context_, device_), "cuDevicePrimaryCtxRetain");
    make_current();
    check(d_.stream_create(&stream_, 0), "cuStreamCreate");
    check(d_.event_create(&start_, 0), "cuEventCreate");
    check(d_.event_create(&stop_, 0), "cuEventCreate");
  }

  const CudaDeviceInfo& device() const override { return info_; }

  uint64_t alloc(int64_t bytes) override {
    make_current();
    CUdeviceptr ptr = 0;
    check(d_.mem_alloc(&ptr, static_cast<size_t>(std::max<int64_t>(bytes, 16))), "cuMemAlloc");
    return ptr;
  }
  void free(uint64_t ptr) override {
    if (!usable() || ptr == 0) return;  // freeing in a corrupt context would only fail again
    make_current();
    check(d_.mem_free(ptr), "cuMemFree");
  }
  void copy_to_device(uint64_t dst, const void* src, int64_t bytes) override {
    make_current();
    check(d_.memcpy_htod(dst, src, static_cast<size_t>(bytes), stream_), "cuMemcpyHtoDAsync");
    synchronize();  // the host buffer may go away as soon as we return
  }
  void copy_to_host(void* dst, uint64_t src, int64_t bytes) override {
    make_current();
    check(d_.memcpy_dtoh(dst, src, static_cast<size_t>(bytes), stream_), "cuMemcpyDtoHAsync");
    synchronize();
  }
  void fill_nan(uint64_t ptr, int64_t floats) override {
    make_current();
    check(d_.memset_d32(ptr, kNanBits, static_cast<size_t>(floats), stream_), "cuMemsetD32Async");
  }
  void synchronize() override {
    make_current();
    check(d_.stream_synchronize(stream_), "cuStreamSynchronize");
  }

  std::unique_ptr<CudaModule> load(const CudaProgram& program, const std::vector<char>& cubin) override {
    make_current();
    return std::make_unique<DriverModule>(*this, program, cubin, true);
  }
  std::unique_ptr<CudaModule> load_for_streams(const CudaProgram& program, const std::vector<char>& cubin) override {
    make_current();
    return std::make_unique<DriverModule>(*this, program, cubin, false);
  }
  std::unique_ptr<CudaStream> create_stream() override;

  CudaTiming time(const std::function<void()>& fn, double min_total_s, bool flush_l2) override {
    make_current();
    if (flush_l2 && !flush_buffer_) {
      flush_floats_ = std::max<int64_t>(info_.l2_bytes, 8 << 20) * 2 / 4;
      flush_buffer_ = alloc(flush_floats_ * 4);
    }
    for (int i = 0; i < 3; ++i) fn();
    synchronize();
    // Without a flush, a sample times `batch` back-to-back runs and reports their mean, the batch
    // replayed as one CUDA graph where the driver has them: the way the torch baselines are timed
    // (triton's do_bench_cudagraph), so a kernel of a few microseconds is measured as itself, not
    // as the host's launch latency. With a flush every run starts cold, one run per sample.
    int batch = 1;
    std::unique_ptr<CUgraphExecOpaque, std::function<void(CUgraphExec)>> graph;
    if (!flush_l2) {
      check(d_.event_record(start_, stream_), "cuEventRecord");
      fn();
      check(d_.event_record(stop_, stream_), "cuEventRecord");
      check(d_.event_synchronize(stop_), "cuEventSynchronize");
      float once = 0;
      check(d_.event_elapsed(&once, start_, stop_), "cuEventElapsedTime");
      batch = static_cast<int>(std::clamp(kBatchTargetMs / std::max(once, 1e-4f), 1.0f, 100.0f));
      graph = {capture(stream_, fn, batch), [this](CUgraphExec g) { d_.graph_exec_destroy(g); }};
    }
    CudaTiming timing;
    timing.graph_replay = graph != nullptr;
    double total_s = 0;
    while (timing.samples_s.size() < 5 || (total_s < min_total_s && timing.samples_s.size() < kMaxTimingSamples)) {
      if (flush_l2)
        check(d_.memset_d32(flush_buffer_, 0, static_cast<size_t>(flush_floats_), stream_), "cuMemsetD32Async");
      check(d_.event_record(start_, stream_), "cuEventRecord");
      if (graph) {
        check(d_.graph_launch(graph.get(), stream_), "cuGraphLaunch");
      } else {
        for (int b = 0; b < batch; ++b) fn();
      }
      check(d_.event_record(stop_, stream_), "cuEventRecord");
      check(d_.event_synchronize(stop_), "cuEventSynchronize");
      float ms = 0;
      check(d_.event_elapsed(&ms, start_, stop_), "cuEventElapsedTime");
      timing.samples_s.push_back(ms * 1e-3 / batch);  // CUDA events tell milliseconds
      total_s += ms * 1e-3;
    }
    std::vector<double> sorted = timing.samples_s;
    std::sort(sorted.begin(), sorted.end());
    size_t n = sorted.size();
    timing.median_s = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    return timing;
  }

  // `count` runs of fn captured on `stream` into one executable graph; nullptr where the driver
  // has no graphs or the capture fails (the caller then launches the runs one by one).
  CUgraphExec capture(CUstream stream, const std::function<void()>& fn, int count) {
    make_current();
    if (!d_.has_graphs() || d_.stream_begin_capture(stream, kCaptureModeThreadLocal) != 0) return nullptr;
    bool captured = true;
    try {
      for (int i = 0; i < count; ++i) fn();
    } catch (const Error&) {
      captured = false;  // the launch is retried, uncaptured, by the caller
    }
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    if (d_.stream_end_capture(stream, &graph) != 0) captured = false;
    if (captured && graph && d_.graph_instantiate(&exec, graph, 0) != 0) exec = nullptr;
    if (graph) d_.graph_destroy(graph);
    return captured ? exec : nullptr;
  }

  // Throws Error("CUDA error NAME in call"); a sticky error also marks the runtime unusable.
  void check(CUresult r, const char* call) {
    if (r == 0) return;
    const char* name = nullptr;
    if (d_.error_name(r, &name) != 0 || !name) name = "CUDA_ERROR_UNKNOWN";
    std::string message = std::string("CUDA error ") + name + " in " + call;
    if (is_sticky(r)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (poisoned_.empty()) poisoned_ = message;
      sticky_.store(true);
    }
    throw Error(message);
  }
  bool usable() const { return !sticky_.load(); }
  std::string poisoned_reason() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return poisoned_;
  }
  const Driver& driver() const { return d_; }
  CUstream stream() const { return stream_; }

  // Every public call makes the context current: callers may come from any thread, and after a
  // sticky error nothing else may touch the device.
  void make_current() {
    if (!usable())
      throw Error("CUDA context unusable after " + poisoned_reason() + "; the process must restart");
    check(d_.ctx_set_current(context_), "cuCtxSetCurrent");
  }

 private:
  int attribute(int attr) {
    int v = 0;
    check(d_.device_attribute(&v, attr, device_), "cuDeviceGetAttribute");
    return v;
  }

  Driver d_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr, stop_ = nullptr;
  CudaDeviceInfo info_;
  uint64_t flush_buffer_ = 0;
  int64_t flush_floats_ = 0;
  mutable std::mutex mutex_;
  std::atomic<bool> sticky_{false};
  std::string poisoned_;
};

// A stream of a caller's own, with at most one captured graph.
class DriverStream final : public CudaStream {
 public:
  explicit DriverStream(DriverRuntime& rt) : rt_(rt) {
    const Driver& d = rt_.driver();
    if (!d.stream_destroy || !d.memcpy_dtod)
      throw Error("this CUDA driver lacks cuStreamDestroy_v2 or cuMemcpyDtoDAsync_v2 (too old?)");
    rt_.make_current();
    // Non-blocking: no implicit ordering with the legacy default stream, which another library in
    // the process (torch) may be using while this stream records a graph.
    rt_.check(d.stream_create(&stream_, kStreamNonBlocking), "cuStreamCreate");
  }
  ~DriverStream() override {
    if (!rt_.usable()) return;  // a corrupt context: releasing would only fail again
    try {
      rt_.make_current();
      if (graph_) rt_.driver().graph_exec_destroy(graph_);
      for (CUevent e : events_) rt_.driver().event_destroy(e);
      rt_.driver().stream_destroy(stream_);
    } catch (const Error&) {
      // Destructors must not throw; the failure surfaces through the runtime's next call.
    }
  }

  void copy_to_device(uint64_t dst, const void* src, int64_t bytes) override {
    rt_.make_current();
    rt_.check(rt_.driver().memcpy_htod(dst, src, static_cast<size_t>(bytes), stream_), "cuMemcpyHtoDAsync");
  }
  void copy_on_device(uint64_t dst, uint64_t src, int64_t bytes) override {
    rt_.make_current();
    rt_.check(rt_.driver().memcpy_dtod(dst, src, static_cast<size_t>(bytes), stream_), "cuMemcpyDtoDAsync");
  }
  void copy_to_host(void* dst, uint64_t src, int64_t bytes) override {
    rt_.make_current();
    rt_.check(rt_.driver().memcpy_dtoh(dst, src, static_cast<size_t>(bytes), stream_), "cuMemcpyDtoHAsync");
  }
  void synchronize() override {
    rt_.make_current();
    rt_.check(rt_.driver().stream_synchronize(stream_), "cuStreamSynchronize");
  }
  bool capture(const std::function<void()>& enqueue) override {
    if (graph_) rt_.driver().graph_exec_destroy(graph_);
    graph_ = rt_.capture(stream_, enqueue, 1);
    return graph_ != nullptr;
  }
  void replay() override {
    if (!graph_) throw Error("cuda stream: replay() without a captured graph");
    rt_.make_current();
    rt_.check(rt_.driver().graph_launch(graph_, stream_), "cuGraphLaunch");
  }
  std::vector<double> time_steps(size_t n, const std::function<void(size_t)>& step) override {
    const Driver& d = rt_.driver();
    rt_.make_current();
    while (events_.size() < n + 1) {
      CUevent e = nullptr;
      rt_.check(d.event_create(&e, 0), "cuEventCreate");
      events_.push_back(e);
    }
    rt_.check(d.event_record(events_[0], stream_), "cuEventRecord");
    for (size_t i = 0; i < n; ++i) {
      step(i);
      rt_.check(d.event_record(events_[i + 1], stream_), "cuEventRecord");
    }
    rt_.check(d.event_synchronize(events_[n]), "cuEventSynchronize");
    std::vector<double> seconds(n);
    for (size_t i = 0; i < n; ++i) {
      float ms = 0;
      rt_.check(d.event_elapsed(&ms, events_[i], events_[i + 1]), "cuEventElapsedTime");
      seconds[i] = ms * 1e-3;
    }
    return seconds;
  }
  CUstream handle() const { return stream_; }

 private:
  DriverRuntime& rt_;
  CUstream stream_ = nullptr;
  CUgraphExec graph_ = nullptr;
  std::vector<CUevent> events_;  // time_steps' events, made on first use and kept
};

std::unique_ptr<CudaStream> DriverRuntime::create_stream() { return std::make_unique<DriverStream>(*this); }

DriverModule::DriverModule(DriverRuntime& rt, const CudaProgram& program, const std::vector<char>& cubin,
                           bool own_scratch)
    : rt_(rt), own_scratch_(own_scratch), launches_(program.launches) {
  const Driver& d = rt_.driver();
  rt_.check(d.module_load_data(&module_, cubin.data()), "cuModuleLoadData");
  try {
    for (const CudaLaunch& launch : launches_) {
      CUfunction f = nullptr;
      rt_.check(d.module_get_function(&f, module_, launch.kernel_name.c_str()),
                ("cuModuleGetFunction(" + launch.kernel_name + ")").c_str());
      // The printer uses dynamic shared memory only when the kernel's whole shared memory (with its
      // static arrays, which the launch does not count) is over the 48 KiB every launch may use:
      // opt in whenever there is any, or 48 KiB of buffers plus a static array fail to launch.
      if (launch.dynamic_shared_bytes > 0)
        rt_.check(d.func_set_attribute(f, kFuncAttrMaxDynamicShared, static_cast<int>(launch.dynamic_shared_bytes)),
                  "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
      functions_.push_back(f);
    }
    for (const BufferParam& s : program.scratch) {
      int64_t bytes = dtype_bytes(s.dtype);
      for (int64_t e : s.shape) bytes *= e;
      scratch_names_.push_back(s.name);
      if (own_scratch_) scratch_.push_back(rt_.alloc(bytes));
    }
  } catch (...) {
    for (uint64_t p : scratch_) rt_.free(p);
    if (rt_.usable()) d.module_unload(module_);
    throw;
  }
}

DriverModule::~DriverModule() {
  if (!rt_.usable()) return;
  try {
    for (uint64_t p : scratch_) rt_.free(p);
    rt_.make_current();
    rt_.driver().module_unload(module_);
  } catch (const Error&) {
    // Destructors must not throw; a failure here already surfaced (or will) through synchronize().
  }
}

void DriverModule::run(const std::vector<uint64_t>& device_args) {
  if (!own_scratch_ && !scratch_names_.empty())
    throw Error("cuda run: a module loaded for streams has no scratch of its own; run it with run_on");
  launch_all(rt_.stream(), device_args, scratch_);
}

void DriverModule::run_on(CudaStream& stream, const std::vector<uint64_t>& device_args,
                          const std::vector<uint64_t>& scratch) {
  if (scratch.size() != scratch_names_.size())
    throw Error("cuda run: the program has " + std::to_string(scratch_names_.size()) + " scratch buffers, got " +
                std::to_string(scratch.size()));
  launch_all(dynamic_cast<DriverStream&>(stream).handle(), device_args, scratch);
}

void DriverModule::launch_all(CUstream stream, const std::vector<uint64_t>& device_args,
                              const std::vector<uint64_t>& scratch) {
  rt_.make_current();
  const Driver& d = rt_.driver();
  for (size_t k = 0; k < launches_.size(); ++k) {
    const CudaLaunch& launch = launches_[k];
    // Kernel parameters are the function's buffers in order, then the scratch buffers.
    std::vector<CUdeviceptr> values;
    size_t next_param = 0;
    for (const std::string& name : launch.args) {
      auto s = std::find(scratch_names_.begin(), scratch_names_.end(), name);
      if (s != scratch_names_.end()) {
        values.push_back(scratch[s - scratch_names_.begin()]);
        continue;
      }
      if (next_param >= device_args.size())
        throw Error("cuda run: " + launch.kernel_name + " needs buffer '" + name + "' but only " +
                    std::to_string(device_args.size()) + " device pointers were passed");
      uint64_t ptr = device_args[next_param++];
      if (ptr % 16 != 0) throw Error("cuda run: device pointer for '" + name + "' is not 16-byte aligned");
      values.push_back(ptr);
    }
    if (next_param != device_args.size())
      throw Error("cuda run: " + launch.kernel_name + " takes " + std::to_string(next_param) +
                  " buffers, got " + std::to_string(device_args.size()));
    std::vector<void*> params;
    for (CUdeviceptr& v : values) params.push_back(&v);
    rt_.check(d.launch_kernel(functions_[k], static_cast<unsigned>(launch.grid[0]),
                              static_cast<unsigned>(launch.grid[1]), static_cast<unsigned>(launch.grid[2]),
                              static_cast<unsigned>(launch.block[0]), static_cast<unsigned>(launch.block[1]),
                              static_cast<unsigned>(launch.block[2]),
                              static_cast<unsigned>(launch.dynamic_shared_bytes), stream, params.data(), nullptr),
              ("cuLaunchKernel(" + launch.kernel_name + ")").c_str());
  }
}

}  // namespace

CudaRuntime* CudaRuntime::get(std::string* why) {
  // Created once and never destroyed: tearing down a CUDA context from a static destructor races
  // the driver's own exit handlers.
  static std::mutex mutex;
  static DriverRuntime* instance = nullptr;
  static std::string failure;
  std::lock_guard<std::mutex> lock(mutex);
  auto fail = [&](const std::string& reason) -> CudaRuntime* {
    if (why) *why = reason;
    return nullptr;
  };
  if (instance) {
    if (!instance->usable())
      return fail("CUDA context unusable after " + instance->poisoned_reason() + "; the process must restart");
    return instance;
  }
  if (!failure.empty()) return fail(failure);

  Driver d{};
  if (!load_driver(d)) return fail(failure = "no CUDA driver (libcuda.so.1 not found)");
  const char* name = nullptr;
  CUresult r = d.init(0);
  if (r != 0) {
    if (d.error_name(r, &name) != 0 || !name) name = "unknown error";
    return fail(failure = std::string("no CUDA device (cuInit: ") + name + ")");
  }
  int count = 0;
  if (d.device_count(&count) != 0 || count == 0) return fail(failure = "no CUDA device");
  try {
    instance = new DriverRuntime(d);
  } catch (const Error& e) {
    return fail(failure = std::string("no CUDA device usable: ") + e.what());
  }
  return instance;
}

int cuda_device_count(std::string* why) {
  Driver d{};
  if (!load_driver(d)) {
    if (why) *why = "no CUDA driver (libcuda.so.1 not found)";
    return 0;
  }
  int count = 0;
  if (d.init(0) != 0 || d.device_count(&count) != 0) {
    if (why) *why = "no CUDA device";
    return 0;
  }
  return count;
}

}  // namespace tessel
