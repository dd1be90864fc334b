// libtessel_runtime.so opened with dlopen(RTLD_LOCAL), as a plugin host or Python's ctypes opens it:
// the C API through dlsym, and the kernels it loads find tessel_parallel_for in it (this program
// has its own copy, linked in for building the test model, but does not export it).
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include "tests/runtime/c_api_checks.h"
#include "tests/runtime/runtime_test_models.h"

using namespace tessel_test;

namespace {

template <typename Fn>
void bind(void* library, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  INFO(name);
  REQUIRE(fn != nullptr);
}

}  // namespace

TEST_CASE("libtessel_runtime.so opened with dlopen runs a model through its C API", "[runtime][c_api]") {
  void* library = dlopen(TESSEL_RUNTIME_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  INFO((library ? "" : dlerror()));
  REQUIRE(library);
  CApi api{};
  bind(library, api.api_version, "tessel_api_version");
  bind(library, api.last_error, "tessel_last_error");
  bind(library, api.load, "tessel_load");
  bind(library, api.model_free, "tessel_model_free");
  bind(library, api.model_target, "tessel_model_target");
  bind(library, api.model_num_inputs, "tessel_model_num_inputs");
  bind(library, api.model_num_outputs, "tessel_model_num_outputs");
  bind(library, api.model_input_info, "tessel_model_input_info");
  bind(library, api.model_output_info, "tessel_model_output_info");
  bind(library, api.model_input_index, "tessel_model_input_index");
  bind(library, api.context_create, "tessel_context_create");
  bind(library, api.context_free, "tessel_context_free");
  bind(library, api.set_input, "tessel_set_input");
  bind(library, api.run, "tessel_run");
  bind(library, api.get_output, "tessel_get_output");
  bind(library, api.copy_output, "tessel_copy_output");
  bind(library, api.context_memory, "tessel_context_memory");
  TempDir dir;
  cpu_two_kernel_model().model.write(dir.file("model.tsl"));
  check_c_api(api, dir.file("model.tsl"));
  // Not closed: the kernels' pool threads and the promoted global scope stay for the process.
}
