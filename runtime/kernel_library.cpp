#include "runtime/kernel_library.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "codegen/llvm/parallel_runtime.h"
#include "runtime/model_artifact.h"

namespace tessel {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kThisMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kThisMachine = EM_AARCH64;
#else
constexpr uint16_t kThisMachine = EM_NONE;
#endif

// A shared object of this machine's kind: 64-bit ELF, ET_DYN, this instruction set. dlopen would
// refuse the others too, but with a message that does not say which kernel or why.
void check_elf(const uint8_t* data, size_t size, const std::string& what) {
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(data, ELFMAG, SELFMAG) != 0 || data[EI_CLASS] != ELFCLASS64)
    throw ArtifactError(what + ": its code is not a 64-bit ELF shared object");
  Elf64_Ehdr header;
  std::memcpy(&header, data, sizeof header);
  if (header.e_type != ET_DYN) throw ArtifactError(what + ": its code is not a shared object");
  if (kThisMachine != EM_NONE && header.e_machine != kThisMachine)
    throw ArtifactError(what + ": its code is for another instruction set (ELF machine " +
                        std::to_string(header.e_machine) + ", this machine " + std::to_string(kThisMachine) +
                        "); rebuild the model on this machine with `tessel build`");
}

// Where the runtime is a shared library opened with RTLD_LOCAL (Python's ctypes, a plugin), its
// symbols are not in the global scope that a kernel's undefined tessel_parallel_for is looked up
// in; reopening it with RTLD_NOLOAD | RTLD_GLOBAL puts it there. The handle is kept for good.
void make_parallel_runtime_visible() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&tessel_parallel_for), &info) != 0 && info.dli_fname)
      dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  });
}

bool write_all(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// dlopen of the bytes through an in-memory file, whose descriptor `fd` stays open while the code is
// loaded: dlopen knows a loaded object by its path, so a path /proc/self/fd/N must not be reused
// for other code while it is. nullptr with `error` set when that fails.
void* open_in_memory(const uint8_t* data, size_t size, int& fd, std::string& error) {
  fd = memfd_create("tessel-kernel", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = nullptr;
  if (!write_all(fd, data, size)) {
    error = std::string("writing an in-memory file: ") + std::strerror(errno);
  } else if (void* stale = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(stale);  // code that was never unloaded holds the name: the caller takes another way
    error = path + " names other code still loaded";
  } else {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) error = dlerror();
  }
  if (!handle) {
    close(fd);
    fd = -1;
  }
  return handle;
}

// dlopen of the bytes through a temporary file, removed once loaded.
void* open_through_file(const uint8_t* data, size_t size, std::string& error) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/tessel-kernel-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) {
    error = "cannot create a temporary file in " + path.substr(0, path.rfind('/')) + ": " + std::strerror(errno);
    return nullptr;
  }
  void* handle = nullptr;
  if (write_all(fd, data, size)) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) error = dlerror();
  } else {
    error = "cannot write " + path + ": " + std::strerror(errno);
  }
  close(fd);
  unlink(path.c_str());
  return handle;
}

}  // namespace

std::unique_ptr<KernelLibrary> KernelLibrary::load(const uint8_t* data, size_t size, const std::string& what) {
  check_elf(data, size, what);
  make_parallel_runtime_visible();
  std::string error;
  int fd = -1;
  void* handle = open_in_memory(data, size, fd, error);
  // A system may forbid executable in-memory files (vm.memfd_noexec) or have no /proc; a missing
  // symbol, though, would be missing from a file too.
  if (!handle && error.find("undefined symbol") == std::string::npos) handle = open_through_file(data, size, error);
  if (!handle) {
    std::string hint;
    if (error.find("tessel_parallel_for") != std::string::npos)
      hint =
          " (a program linking the tessel runtime statically must export tessel_parallel_for: link it with "
          "-Wl,--export-dynamic-symbol=tessel_parallel_for, or use libtessel_runtime.so)";
    throw ArtifactError(what + ": its code cannot be loaded: " + error + hint);
  }
  return std::unique_ptr<KernelLibrary>(new KernelLibrary(handle, fd, what));
}

KernelLibrary::~KernelLibrary() {
  dlclose(handle_);
  if (fd_ >= 0) close(fd_);
}

KernelLibrary::Entry KernelLibrary::entry(const std::string& name) const {
  dlerror();
  void* symbol = dlsym(handle_, name.c_str());
  if (!symbol) throw ArtifactError(what_ + ": its code has no function '" + name + "'");
  return reinterpret_cast<Entry>(symbol);
}

}  // namespace tessel
