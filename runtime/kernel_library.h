// A kernel's shared object (an artifact's blob) loaded into this process from its bytes: through an
// anonymous in-memory file (memfd_create, then dlopen of /proc/self/fd/N) so nothing is written to
// disk, or a temporary file that is removed at once where the system offers no such file. The
// kernels use tessel_parallel_for, which they find in this process (codegen/llvm/parallel_runtime.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tessel {

class KernelLibrary {
 public:
  using Entry = void (*)(void** args);

  // Loads `size` bytes at `data`. Throws ArtifactError naming `what` ("kernel k3 of 'model.tsl'") when
  // they are not a shared object for this machine, or the system refuses it (with dlopen's reason).
  static std::unique_ptr<KernelLibrary> load(const uint8_t* data, size_t size, const std::string& what);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // The exported function `name`; throws ArtifactError when there is none.
  Entry entry(const std::string& name) const;

 private:
  KernelLibrary(void* handle, int fd, std::string what) : handle_(handle), fd_(fd), what_(std::move(what)) {}
  void* handle_;
  int fd_;  // the in-memory file the code was loaded from (-1: a temporary file, removed)
  std::string what_;
};

}  // namespace tessel
