/* The tessel runtime's C API: load a built model (MODEL.tsl, written by `tessel build`), bind its
 * inputs, run it, read its outputs — from C or any language with a C foreign-function interface
 * (tools/python uses it through ctypes). Link libtessel_runtime.so.
 *
 *   TesselModel* model;  TesselContext* ctx;
 *   if (tessel_load("model.tsl", &model) != TESSEL_OK) { puts(tessel_last_error()); return 1; }
 *   tessel_context_create(model, &ctx);
 *   int64_t dims[4] = {1, 3, 224, 224};
 *   tessel_set_input(ctx, 0, TESSEL_FLOAT32, dims, 4, image, 0);
 *   tessel_run(ctx);
 *   tessel_copy_output(ctx, 0, logits, sizeof logits, 0);
 *   tessel_context_free(ctx);  tessel_model_free(model);
 *
 * Conventions. Handles are opaque. Every function that can fail returns a TesselStatus; on failure the
 * reason, naming what was wrong and where, is tessel_last_error() on the same thread. A model is
 * loaded once and shared by any number of contexts; contexts may run at the same time on different
 * threads, but one context is used by one thread at a time. A context keeps its model alive: the two
 * may be freed in either order. Sizes are in bytes, shapes row-major. */
#ifndef TESSEL_RUNTIME_H
#define TESSEL_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a function's meaning changes; a caller may check tessel_api_version() against it. */
#define TESSEL_API_VERSION 2

typedef enum {
  TESSEL_OK = 0,
  TESSEL_ERROR_ARGUMENT = 1, /* a null handle or pointer, an index out of range, a buffer too small */
  TESSEL_ERROR_ARTIFACT = 2, /* the model file: missing, damaged, or built for another CPU or GPU */
  TESSEL_ERROR_INPUT = 3,    /* an input of the wrong dtype or shape, or not set before a run */
  TESSEL_ERROR_DEVICE = 4,   /* the CPU or GPU failed: out of memory, a CUDA error */
} TesselStatus;

typedef enum { TESSEL_FLOAT32 = 0, TESSEL_INT64 = 1, TESSEL_BOOL = 2 /* one byte, 0 or 1 */ } TesselDType;

typedef enum { TESSEL_TARGET_CPU = 0, TESSEL_TARGET_CUDA = 1 } TesselTarget;

typedef struct TesselModel TesselModel;
typedef struct TesselContext TesselContext;

/* What a context holds, in bytes, on the model's target (the GPU's memory for a cuda model). */
typedef struct {
  int64_t weights; /* once per model, shared by its contexts */
  int64_t arena;   /* placed by the build's memory plan: the context's intermediates; on the GPU also the
                      kernels' scratch, the copies of the inputs and the outputs */
  int64_t outputs; /* outside the arena (CPU) */
  int64_t inputs;  /* copies outside the arena (CPU: of inputs not 64-byte aligned, in an output or an
                      output themselves; GPU: where an input is also an output, a block to copy aside) */
  int64_t liveness_bound; /* the most bytes of the arena's values (scratch aside) alive at once */
} TesselMemoryUsage;

int tessel_api_version(void);

/* Why the last failure on this thread happened; "" when there was none. Valid until the next
 * failure on this thread. */
const char* tessel_last_error(void);

/* Loads and checks a model file: magic, version, checksums, every offset and size, and that this
 * machine can run it (the CPU's features, the GPU's architecture); the kernels and weights are loaded
 * (a cuda model's weights copied to the GPU). */
TesselStatus tessel_load(const char* path, TesselModel** model);
void tessel_model_free(TesselModel* model); /* null is ignored */

TesselStatus tessel_model_target(const TesselModel* model, TesselTarget* target);
TesselStatus tessel_model_num_inputs(const TesselModel* model, size_t* count);
TesselStatus tessel_model_num_outputs(const TesselModel* model, size_t* count);
/* Input `index`'s name, dtype and shape; `name` and `dims` point into the model (valid while it
 * lives). Any of the out-pointers may be null. */
TesselStatus tessel_model_input_info(const TesselModel* model, size_t index, const char** name, TesselDType* dtype,
                                     size_t* rank, const int64_t** dims);
TesselStatus tessel_model_output_info(const TesselModel* model, size_t index, const char** name, TesselDType* dtype,
                                      size_t* rank, const int64_t** dims);
/* The index of the input named `name` (TESSEL_ERROR_ARGUMENT, listing the inputs, when none is). */
TesselStatus tessel_model_input_index(const TesselModel* model, const char* name, size_t* index);

/* A context: all memory for a run allocated now (on the GPU the run is also recorded as a graph). */
TesselStatus tessel_context_create(const TesselModel* model, TesselContext** context);
void tessel_context_free(TesselContext* context); /* null is ignored */

/* Binds input `index` to `data`, of `dtype` and shape `dims[0..rank)`, which must equal the model's
 * (else TESSEL_ERROR_INPUT naming the input, the expected and the given). tessel_run reads the data:
 * it must stay valid until then. `on_device` nonzero: `data` is a CUDA device pointer on the GPU the
 * model runs on, its contents already written (cuda models only). */
TesselStatus tessel_set_input(TesselContext* context, size_t index, TesselDType dtype, const int64_t* dims, size_t rank,
                              const void* data, int on_device);

/* Runs the model and returns when its outputs are ready. Every input must be set (else
 * TESSEL_ERROR_INPUT and no kernel runs); inputs stay set for later runs. */
TesselStatus tessel_run(TesselContext* context);

/* Output `index` of the last run, in this context's memory: `*data` is a host pointer for a cpu model
 * and a device pointer for a cuda model (`*on_device` says which; may be null), valid until the next
 * run or tessel_context_free. It may be given back as an input of the next run. */
TesselStatus tessel_get_output(const TesselContext* context, size_t index, const void** data, size_t* bytes,
                               int* on_device);
/* Copies output `index` to `dst`, which holds `bytes` bytes (at least the output's size), in host
 * memory or, with `dst_on_device` nonzero (cuda models only), in the GPU's. */
TesselStatus tessel_copy_output(const TesselContext* context, size_t index, void* dst, size_t bytes, int dst_on_device);

TesselStatus tessel_context_memory(const TesselContext* context, TesselMemoryUsage* usage);

#ifdef __cplusplus
}
#endif

#endif /* TESSEL_RUNTIME_H */
