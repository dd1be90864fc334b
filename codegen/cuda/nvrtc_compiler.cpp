// nvrtc_compile: CUDA C -> cubin through NVRTC, opened with dlopen so that tessel builds and runs
// without the CUDA toolkit; the few NVRTC entry points used are declared here by hand (their C ABI
// is stable across toolkit versions).
#include <dlfcn.h>

#include <cstddef>
#include <regex>
#include <set>
#include <sstream>

#include "codegen/cuda/cuda_backend.h"
#include "schedule/te/error.h"

namespace tessel {

namespace {

using NvrtcProgram = struct NvrtcProgramOpaque*;
using NvrtcResult = int;  // nvrtcResult; 0 is NVRTC_SUCCESS

struct Nvrtc {
  NvrtcResult (*create)(NvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  NvrtcResult (*compile)(NvrtcProgram, int, const char* const*);
  NvrtcResult (*log_size)(NvrtcProgram, size_t*);
  NvrtcResult (*log)(NvrtcProgram, char*);
  NvrtcResult (*cubin_size)(NvrtcProgram, size_t*);
  NvrtcResult (*cubin)(NvrtcProgram, char*);
  NvrtcResult (*destroy)(NvrtcProgram*);
  const char* (*error_string)(NvrtcResult);
  std::string load_error;  // empty when every symbol was found
};

template <typename Fn>
void bind(void* lib, const char* name, Fn& fn, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn && error.empty()) error = std::string("symbol ") + name + " missing";
}

const Nvrtc& nvrtc() {
  // Loaded once; the handle stays open for the life of the process (NVRTC is thread-safe across
  // programs, so parallel builders share it).
  static const Nvrtc lib = [] {
    Nvrtc n{};
    void* handle = nullptr;
    for (const char* name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so",
                             "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12"}) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
    }
    if (!handle) {
      n.load_error = "libnvrtc.so not found (install the CUDA toolkit or add its lib64 to LD_LIBRARY_PATH)";
      return n;
    }
    bind(handle, "nvrtcCreateProgram", n.create, n.load_error);
    bind(handle, "nvrtcCompileProgram", n.compile, n.load_error);
    bind(handle, "nvrtcGetProgramLogSize", n.log_size, n.load_error);
    bind(handle, "nvrtcGetProgramLog", n.log, n.load_error);
    bind(handle, "nvrtcGetCUBINSize", n.cubin_size, n.load_error);
    bind(handle, "nvrtcGetCUBIN", n.cubin, n.load_error);
    bind(handle, "nvrtcDestroyProgram", n.destroy, n.load_error);
    bind(handle, "nvrtcGetErrorString", n.error_string, n.load_error);
    return n;
  }();
  return lib;
}

constexpr const char* kSourceName = "tessel_kernels.cu";

// The log, then every source line it points at (`tessel_kernels.cu(12): error: ...`), quoted.
std::string describe_failure(const std::string& log, const std::string& source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::ostringstream out;
  out << "NVRTC compilation failed:\n" << log;
  if (!log.empty() && log.back() != '\n') out << "\n";
  std::regex location(std::string(kSourceName) + R"(\((\d+)\))");
  std::set<long> quoted;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), location); it != std::sregex_iterator(); ++it) {
    long n = std::stol((*it)[1].str());
    if (n < 1 || n > static_cast<long>(lines.size()) || !quoted.insert(n).second || quoted.size() > 20) continue;
    out << "  line " << n << ": " << lines[n - 1] << "\n";
  }
  return out.str();
}

}  // namespace

std::vector<char> nvrtc_compile(const CudaProgram& program, const std::string& arch) {
  const Nvrtc& n = nvrtc();
  if (!n.load_error.empty()) throw Error("NVRTC not available: " + n.load_error);

  NvrtcProgram prog = nullptr;
  NvrtcResult r = n.create(&prog, program.source.c_str(), kSourceName, 0, nullptr, nullptr);
  if (r != 0) throw CompileError(std::string("nvrtcCreateProgram failed: ") + n.error_string(r));
  // Destroys the program on every path out.
  struct Guard {
    const Nvrtc& n;
    NvrtcProgram& p;
    ~Guard() { n.destroy(&p); }
  } guard{n, prog};

  if (program.warpgroup_mma && arch != "sm_90")
    throw CompileError("warpgroup tensor-core operations (wgmma) need an sm_90 GPU (H100, H200), not " + arch);
  // No fast-math: results are checked against a float64 reference.
  std::string arch_option = "--gpu-architecture=" + arch + (program.warpgroup_mma ? "a" : "");
  const char* options[] = {arch_option.c_str(), "-default-device", "--std=c++17"};
  NvrtcResult compiled = n.compile(prog, 3, options);

  size_t log_size = 0;
  std::string log;
  if (n.log_size(prog, &log_size) == 0 && log_size > 1) {
    log.resize(log_size);
    n.log(prog, log.data());
    log.resize(log_size - 1);  // drop the terminating NUL
  }
  if (compiled != 0) {
    std::string message = describe_failure(log, program.source);
    if (log.empty()) message += std::string("(") + n.error_string(compiled) + ")\n";
    throw CompileError(message);
  }
  size_t size = 0;
  r = n.cubin_size(prog, &size);
  if (r != 0 || size == 0)
    throw CompileError(std::string("nvrtcGetCUBINSize failed for ") + arch + ": " + n.error_string(r));
  std::vector<char> cubin(size);
  r = n.cubin(prog, cubin.data());
  if (r != 0) throw CompileError(std::string("nvrtcGetCUBIN failed: ") + n.error_string(r));
  return cubin;
}

}  // namespace tessel
