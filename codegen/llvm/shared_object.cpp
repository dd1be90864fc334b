// Loading kernels written by write_shared_object: dlopen, look the entry point up, call it. No LLVM
// here, so processes that only run kernels stay small.
#include <dlfcn.h>

#include "codegen/llvm/llvm_backend.h"
#include "schedule/te/error.h"

namespace tessel {
namespace {

class SharedObjectKernel : public CompiledKernel {
 public:
  SharedObjectKernel(void* handle, void (*entry)(void**)) : handle_(handle), entry_(entry) {}
  ~SharedObjectKernel() override { dlclose(handle_); }
  void run(void** args) const override { entry_(args); }

 private:
  void* handle_;
  void (*entry_)(void**);
};

}  // namespace

std::unique_ptr<CompiledKernel> load_shared_object(const std::string& path, const std::string& name) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw CompileError("cannot load " + path + ": " + dlerror());
  void* symbol = dlsym(handle, name.c_str());
  if (!symbol) {
    std::string error = dlerror();
    dlclose(handle);
    throw CompileError("no kernel '" + name + "' in " + path + ": " + error);
  }
  return std::make_unique<SharedObjectKernel>(handle, reinterpret_cast<void (*)(void**)>(symbol));
}

}  // namespace tessel
