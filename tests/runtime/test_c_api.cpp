// The C API (tessel_runtime.h) of the runtime linked into this program.
#include <catch2/catch.hpp>

#include "tests/runtime/c_api_checks.h"
#include "tests/runtime/runtime_test_models.h"

using namespace tessel_test;

TEST_CASE("the C API loads, describes and runs a model and reports bad inputs", "[runtime][c_api]") {
  TempDir dir;
  cpu_two_kernel_model().model.write(dir.file("model.tsl"));
  const CApi api{tessel_api_version,
                 tessel_last_error,
                 tessel_load,
                 tessel_model_free,
                 tessel_model_target,
                 tessel_model_num_inputs,
                 tessel_model_num_outputs,
                 tessel_model_input_info,
                 tessel_model_output_info,
                 tessel_model_input_index,
                 tessel_context_create,
                 tessel_context_free,
                 tessel_set_input,
                 tessel_run,
                 tessel_get_output,
                 tessel_copy_output,
                 tessel_context_memory};
  check_c_api(api, dir.file("model.tsl"));
}
