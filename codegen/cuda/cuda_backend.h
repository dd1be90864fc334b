// The GPU backend: LoweredFunc (lowered for LowerTarget::Gpu) -> readable CUDA C -> NVRTC -> cubin,
// and a CUDA driver-API runtime opened with dlopen("libcuda.so.1"), so one binary runs (and compiles
// through NVRTC) on machines without a GPU and says so clearly when asked to measure.
//
// How a LoweredFunc maps to kernels: every Allocate at the top of the function body (outside all
// loops) is a device scratch buffer; each statement of the top-level sequence inside them is one
// kernel, launched in order. In a kernel, loops marked ThreadBound with tag blockIdx.{x,y,z} /
// threadIdx.{x,y,z} become the grid / block indices (their extents are the launch dimensions; a tag
// used twice in one kernel is an error); "vthread" loops run serially inside the thread; Shared
// allocations become __shared__ arrays (dynamic shared memory, opted in at load, when they and the static warp-combine arrays pass 48 KiB); Local ones
// per-thread arrays; Barrier is __syncthreads().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "schedule/ir/stmt.h"

namespace tessel {

struct CudaLaunch {
  std::string kernel_name;
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t dynamic_shared_bytes = 0;
  std::vector<std::string> args;  // buffer names, in the kernel's parameter order
};

struct CudaProgram {
  std::string source;                  // one translation unit with every kernel
  std::vector<CudaLaunch> launches;    // in execution order
  std::vector<BufferParam> scratch;    // device buffers the program allocates itself
  bool warpgroup_mma = false;          // uses Hopper's wgmma: compiled for sm_90a
};

// Readable CUDA C for `func` (what `tessel show --target cuda --emit cuda` prints). Throws
// CompileError naming the loop or buffer when the function cannot map to kernels.
CudaProgram emit_cuda(const LoweredFunc& func);

// Compiles with NVRTC for `arch` (e.g. "sm_90"; a program with warpgroup operations for its
// architecture-specific form, "sm_90a", which only sm_90 has). Throws CompileError carrying the NVRTC log and the
// offending source line(s) on failure.
std::vector<char> nvrtc_compile(const CudaProgram& program, const std::string& arch);

// The GPU as the driver reports it.
struct CudaDeviceInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  std::string arch;  // "sm_90"
  int max_threads_per_block = 1024;
  int64_t max_shared_per_block = 48 * 1024;         // without opt-in
  int64_t max_shared_per_block_optin = 227 * 1024;  // sm_90 opt-in
  int64_t max_grid[3] = {2147483647, 65535, 65535};
  int64_t max_block[3] = {1024, 1024, 64};
  int sm_count = 0;
  std::string driver_version;
  int64_t l2_bytes = 0;
};

// The limits NVRTC compiles for when there is no GPU to ask (an H100: sm_90).
CudaDeviceInfo default_cuda_device_info();

class CudaRuntime;

// A stream of one caller's own, so that several callers (the contexts of a deployed model) use the
// device at once; what is enqueued on it runs in order. Copies are asynchronous: a host buffer must
// stay valid until synchronize(). Throws Error with the CUDA error name on failure.
class CudaStream {
 public:
  virtual ~CudaStream() = default;
  virtual void copy_to_device(uint64_t dst, const void* src, int64_t bytes) = 0;
  virtual void copy_on_device(uint64_t dst, uint64_t src, int64_t bytes) = 0;
  virtual void copy_to_host(void* dst, uint64_t src, int64_t bytes) = 0;
  virtual void synchronize() = 0;
  // Records what `enqueue` puts on this stream (kernel launches; nothing runs) into a CUDA graph that
  // replay() launches, replacing any earlier one. False, with nothing recorded, where the driver has
  // no graphs or the capture fails: the caller then enqueues the work itself every time.
  virtual bool capture(const std::function<void()>& enqueue) = 0;
  virtual void replay() = 0;
  // Enqueues step(0), ..., step(n - 1) with a CUDA event before the first and after each, waits for
  // them, and returns each step's seconds between its two events.
  virtual std::vector<double> time_steps(size_t n, const std::function<void(size_t)>& step) = 0;
};

// A compiled program loaded on the device, with its scratch buffers allocated (unless loaded with
// CudaRuntime::load_for_streams).
class CudaModule {
 public:
  virtual ~CudaModule() = default;
  // Launches every kernel in order on the runtime's stream; device pointers in `args` follow the
  // LoweredFunc's params. Throws Error with the CUDA error name on a launch or runtime failure.
  virtual void run(const std::vector<uint64_t>& device_args) = 0;
  // The same on `stream`, with the caller's `scratch` (a device buffer per scratch buffer of the
  // program, in its order, of BufferParam size) in place of the module's own.
  virtual void run_on(CudaStream& stream, const std::vector<uint64_t>& device_args,
                      const std::vector<uint64_t>& scratch) = 0;
};

struct CudaTiming {
  std::vector<double> samples_s;
  double median_s = 0;
  bool graph_replay = false;  // each sample one replay of a CUDA graph of `batch` runs
};

// How many GPUs this process can see (CUDA_VISIBLE_DEVICES applies), without making a context on
// any; 0 with `why` set when there is no driver or no device.
int cuda_device_count(std::string* why = nullptr);

class CudaRuntime {
 public:
  // The runtime for device 0, or nullptr with `why` set ("no CUDA driver (libcuda.so.1 not found)",
  // "no CUDA device") when none can be used.
  static CudaRuntime* get(std::string* why = nullptr);
  virtual ~CudaRuntime() = default;

  virtual const CudaDeviceInfo& device() const = 0;
  virtual uint64_t alloc(int64_t bytes) = 0;  // throws Error on failure
  virtual void free(uint64_t ptr) = 0;
  virtual void copy_to_device(uint64_t dst, const void* src, int64_t bytes) = 0;
  virtual void copy_to_host(void* dst, uint64_t src, int64_t bytes) = 0;
  virtual void fill_nan(uint64_t ptr, int64_t floats) = 0;  // poisons outputs before a checked run
  virtual void synchronize() = 0;  // throws Error with the CUDA error name on a sticky error
  virtual std::unique_ptr<CudaModule> load(const CudaProgram& program, const std::vector<char>& cubin) = 0;
  // As load(), but the module allocates no scratch: it runs only through run_on(), each stream with
  // its own scratch, so that one loaded module serves concurrent callers.
  virtual std::unique_ptr<CudaModule> load_for_streams(const CudaProgram& program, const std::vector<char>& cubin) = 0;
  virtual std::unique_ptr<CudaStream> create_stream() = 0;
  // Times `fn` with CUDA events: warm-up, then samples until `min_total_s`; with `flush_l2`, a
  // buffer larger than L2 is overwritten before every sample (outside the timed region).
  virtual CudaTiming time(const std::function<void()>& fn, double min_total_s, bool flush_l2) = 0;
};

}  // namespace tessel
