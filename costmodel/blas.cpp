// OpenBLAS through dlopen: see blas.h.
#include "costmodel/blas.h"

#include <cstdlib>
#include <mutex>

#include <cblas.h>
#include <dlfcn.h>

#include "schedule/te/error.h"

namespace tessel::blas {
namespace {

struct Library {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&openblas_set_num_threads) set_threads = nullptr;
  decltype(&openblas_get_corename) corename = nullptr;
  std::string failure;  // why it did not load ("" when it did)
};

template <typename F>
F symbol(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (p == nullptr) throw Error(std::string("OpenBLAS (libopenblas.so.0) has no ") + name);
  return reinterpret_cast<F>(p);
}

void load(Library& lib) {
  // OpenBLAS reads OPENBLAS_CORETYPE once, as it loads: set for the load alone (a value already set
  // wins), then put back as it was, so that no child process inherits it.
  const std::string core = core_for_this_cpu();
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const bool set_here = before == nullptr && !core.empty();
  if (set_here) setenv("OPENBLAS_CORETYPE", core.c_str(), 0);
  void* handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  const std::string why = handle == nullptr ? dlerror() : "";
  if (set_here) unsetenv("OPENBLAS_CORETYPE");
  if (handle == nullptr)
    throw Error("the neural ranker needs OpenBLAS, which did not load (" + why +
                "): install libopenblas0, or train without the ranker (a neural-ranker weight of 0)");
  lib.sgemm = symbol<decltype(lib.sgemm)>(handle, "cblas_sgemm");
  lib.set_threads = symbol<decltype(lib.set_threads)>(handle, "openblas_set_num_threads");
  lib.corename = symbol<decltype(lib.corename)>(handle, "openblas_get_corename");
}

const Library& library() {
  static Library lib;
  static std::once_flag once;
  std::call_once(once, [] {
    try {
      load(lib);
    } catch (const Error& e) {  // tried once: every later call reports the same failure
      lib = Library{};
      lib.failure = e.what();
    }
  });
  if (!lib.failure.empty()) throw Error(lib.failure);
  return lib;
}

}  // namespace

std::string core_for_this_cpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
           int ldb, float beta, float* c, int ldc) {
  library().sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                  alpha, a, lda, b, ldb, beta, c, ldc);
}

void set_threads(int threads) { library().set_threads(threads); }

std::string core_name() { return library().corename(); }

}  // namespace tessel::blas
