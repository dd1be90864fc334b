// The C API's checks, written once over a table of its functions, so that they run both against the
// runtime linked into the test program (test_c_api.cpp) and against libtessel_runtime.so opened with
// dlopen (test_runtime_shared.cpp), as another language would use it.
#pragma once

#include <string>

#include "runtime/tessel_runtime.h"

namespace tessel_test {

struct CApi {
  decltype(&tessel_api_version) api_version;
  decltype(&tessel_last_error) last_error;
  decltype(&tessel_load) load;
  decltype(&tessel_model_free) model_free;
  decltype(&tessel_model_target) model_target;
  decltype(&tessel_model_num_inputs) model_num_inputs;
  decltype(&tessel_model_num_outputs) model_num_outputs;
  decltype(&tessel_model_input_info) model_input_info;
  decltype(&tessel_model_output_info) model_output_info;
  decltype(&tessel_model_input_index) model_input_index;
  decltype(&tessel_context_create) context_create;
  decltype(&tessel_context_free) context_free;
  decltype(&tessel_set_input) set_input;
  decltype(&tessel_run) run;
  decltype(&tessel_get_output) get_output;
  decltype(&tessel_copy_output) copy_output;
  decltype(&tessel_context_memory) context_memory;
};

// Runs the two-kernel model (runtime_test_models.h) written to `path` through `api`: its description,
// a run against the reference interpreter, the errors of bad inputs and of a bad file, the memory a
// context reports, a context outliving its model, and contexts run from several threads.
void check_c_api(const CApi& api, const std::string& path);

}  // namespace tessel_test
