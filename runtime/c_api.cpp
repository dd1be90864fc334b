// The C API (tessel_runtime.h) over LoadedModel / ExecutionContext: every function catches what the C++
// side throws and turns it into a status and this thread's error message.
#include <new>

#include "runtime/model.h"
#include "runtime/tessel_runtime.h"

struct TesselModel {
  tessel::LoadedModel model;
};

struct TesselContext {
  std::unique_ptr<tessel::ExecutionContext> context;
};

namespace {

using namespace tessel;

thread_local std::string t_last_error;

// Far above any model's rank: a bound on what tessel_set_input reads from `dims`.
constexpr size_t kMaxRank = 64;

TesselStatus fail(TesselStatus status, const std::string& message) {
  t_last_error = message;
  return status;
}

// Runs `body`, mapping what it throws to a status: the file's problems, the caller's inputs, and
// everything else (memory, the device).
template <typename Body>
TesselStatus guarded(Body&& body) {
  try {
    body();
    return TESSEL_OK;
  } catch (const ArtifactError& e) {
    return fail(TESSEL_ERROR_ARTIFACT, e.what());
  } catch (const InputError& e) {
    return fail(TESSEL_ERROR_INPUT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(TESSEL_ERROR_DEVICE, "out of host memory");
  } catch (const std::exception& e) {
    return fail(TESSEL_ERROR_DEVICE, e.what());
  }
}

TesselStatus null_argument(const char* function, const char* what) {
  return fail(TESSEL_ERROR_ARGUMENT, std::string(function) + ": " + what + " is null");
}

TesselDType c_dtype(DType d) {
  switch (d) {
    case DType::Float32:
      return TESSEL_FLOAT32;
    case DType::Int64:
      return TESSEL_INT64;
    case DType::Bool:
      return TESSEL_BOOL;
    case DType::Float16:
    case DType::BFloat16:
      break;  // a model's inputs and outputs are float32, int64 or bool: the reader refuses 16-bit ones
  }
  return TESSEL_FLOAT32;
}

TesselStatus tensor_info(const char* function, const TesselModel* model, size_t index, bool input, const char** name,
                         TesselDType* dtype, size_t* rank, const int64_t** dims) {
  if (!model) return null_argument(function, "the model");
  const std::vector<ModelTensor>& tensors = input ? model->model.inputs() : model->model.outputs();
  if (index >= tensors.size())
    return fail(TESSEL_ERROR_ARGUMENT, std::string(function) + ": no " + (input ? "input " : "output ") +
                                           std::to_string(index) + "; the model has " + std::to_string(tensors.size()));
  const ModelTensor& t = tensors[index];
  if (name) *name = t.name.c_str();
  if (dtype) *dtype = c_dtype(t.dtype);
  if (rank) *rank = t.shape.size();
  if (dims) *dims = t.shape.data();
  return TESSEL_OK;
}

}  // namespace

extern "C" {

int tessel_api_version(void) { return TESSEL_API_VERSION; }

const char* tessel_last_error(void) { return t_last_error.c_str(); }

TesselStatus tessel_load(const char* path, TesselModel** model) {
  if (!path) return null_argument("tessel_load", "the path");
  if (!model) return null_argument("tessel_load", "the model out-pointer");
  *model = nullptr;
  return guarded([&] { *model = new TesselModel{LoadedModel::load(path)}; });
}

void tessel_model_free(TesselModel* model) { delete model; }

TesselStatus tessel_model_target(const TesselModel* model, TesselTarget* target) {
  if (!model || !target) return null_argument("tessel_model_target", model ? "the target out-pointer" : "the model");
  *target = model->model.target() == TargetKind::Cuda ? TESSEL_TARGET_CUDA : TESSEL_TARGET_CPU;
  return TESSEL_OK;
}

TesselStatus tessel_model_num_inputs(const TesselModel* model, size_t* count) {
  if (!model || !count) return null_argument("tessel_model_num_inputs", model ? "the count out-pointer" : "the model");
  *count = model->model.inputs().size();
  return TESSEL_OK;
}

TesselStatus tessel_model_num_outputs(const TesselModel* model, size_t* count) {
  if (!model || !count) return null_argument("tessel_model_num_outputs", model ? "the count out-pointer" : "the model");
  *count = model->model.outputs().size();
  return TESSEL_OK;
}

TesselStatus tessel_model_input_info(const TesselModel* model, size_t index, const char** name, TesselDType* dtype,
                                     size_t* rank, const int64_t** dims) {
  return tensor_info("tessel_model_input_info", model, index, true, name, dtype, rank, dims);
}

TesselStatus tessel_model_output_info(const TesselModel* model, size_t index, const char** name, TesselDType* dtype,
                                      size_t* rank, const int64_t** dims) {
  return tensor_info("tessel_model_output_info", model, index, false, name, dtype, rank, dims);
}

TesselStatus tessel_model_input_index(const TesselModel* model, const char* name, size_t* index) {
  if (!model || !name || !index)
    return null_argument("tessel_model_input_index", !model  ? "the model"
                                                     : !name ? "the name"
                                                             : "the index out-pointer");
  if (std::optional<size_t> i = model->model.input_index(name)) {
    *index = *i;
    return TESSEL_OK;
  }
  std::string names;
  for (const ModelTensor& t : model->model.inputs()) names += (names.empty() ? "'" : ", '") + t.name + "'";
  return fail(TESSEL_ERROR_ARGUMENT, std::string("the model has no input '") + name + "' (its inputs: " + names + ")");
}

TesselStatus tessel_context_create(const TesselModel* model, TesselContext** context) {
  if (!model || !context)
    return null_argument("tessel_context_create", model ? "the context out-pointer" : "the model");
  *context = nullptr;
  return guarded([&] { *context = new TesselContext{std::make_unique<ExecutionContext>(model->model)}; });
}

void tessel_context_free(TesselContext* context) { delete context; }

TesselStatus tessel_set_input(TesselContext* context, size_t index, TesselDType dtype, const int64_t* dims, size_t rank,
                              const void* data, int on_device) {
  if (!context) return null_argument("tessel_set_input", "the context");
  if (rank > 0 && !dims) return null_argument("tessel_set_input", "dims (with a rank above 0)");
  if (rank > kMaxRank)  // a garbage rank would read that many dims
    return fail(TESSEL_ERROR_ARGUMENT,
                "tessel_set_input: rank " + std::to_string(rank) + " (at most " + std::to_string(kMaxRank) + ")");
  if (dtype != TESSEL_FLOAT32 && dtype != TESSEL_INT64 && dtype != TESSEL_BOOL)
    return fail(TESSEL_ERROR_ARGUMENT, "tessel_set_input: unknown dtype " + std::to_string(static_cast<int>(dtype)));
  if (index >= context->context->model().inputs().size())
    return fail(TESSEL_ERROR_ARGUMENT, "tessel_set_input: no input " + std::to_string(index) + "; the model has " +
                                           std::to_string(context->context->model().inputs().size()));
  const DType d = dtype == TESSEL_FLOAT32 ? DType::Float32 : dtype == TESSEL_INT64 ? DType::Int64 : DType::Bool;
  return guarded([&] {
    context->context->set_input(index, d, std::vector<int64_t>(dims, dims + rank), data,
                                on_device ? MemoryKind::Device : MemoryKind::Host);
  });
}

TesselStatus tessel_run(TesselContext* context) {
  if (!context) return null_argument("tessel_run", "the context");
  return guarded([&] { context->context->run(); });
}

TesselStatus tessel_get_output(const TesselContext* context, size_t index, const void** data, size_t* bytes,
                               int* on_device) {
  if (!context || !data) return null_argument("tessel_get_output", context ? "the data out-pointer" : "the context");
  const std::vector<ModelTensor>& outputs = context->context->model().outputs();
  if (index >= outputs.size())
    return fail(TESSEL_ERROR_ARGUMENT, "tessel_get_output: no output " + std::to_string(index) + "; the model has " +
                                           std::to_string(outputs.size()));
  return guarded([&] {
    *data = context->context->output_data(index);
    if (bytes) *bytes = static_cast<size_t>(outputs[index].bytes);
    if (on_device) *on_device = context->context->model().memory() == MemoryKind::Device;
  });
}

TesselStatus tessel_copy_output(const TesselContext* context, size_t index, void* dst, size_t bytes,
                                int dst_on_device) {
  if (!context || !dst) return null_argument("tessel_copy_output", context ? "the destination" : "the context");
  const std::vector<ModelTensor>& outputs = context->context->model().outputs();
  if (index >= outputs.size())
    return fail(TESSEL_ERROR_ARGUMENT, "tessel_copy_output: no output " + std::to_string(index) + "; the model has " +
                                           std::to_string(outputs.size()));
  if (bytes < static_cast<size_t>(outputs[index].bytes))
    return fail(TESSEL_ERROR_ARGUMENT, "tessel_copy_output: output " + std::to_string(index) + " ('" +
                                           outputs[index].name + "') has " + std::to_string(outputs[index].bytes) +
                                           " bytes; the destination holds " + std::to_string(bytes));
  return guarded(
      [&] { context->context->copy_output(index, dst, dst_on_device ? MemoryKind::Device : MemoryKind::Host); });
}

TesselStatus tessel_context_memory(const TesselContext* context, TesselMemoryUsage* usage) {
  if (!context || !usage)
    return null_argument("tessel_context_memory", context ? "the usage out-pointer" : "the context");
  const MemoryUsage u = context->context->memory_usage();
  *usage = TesselMemoryUsage{u.weights, u.arena, u.outputs, u.inputs,
                             context->context->model().artifact().liveness_bound_bytes};
  return TESSEL_OK;
}

}  // extern "C"
