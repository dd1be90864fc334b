// Running a built model (MODEL.tsl, runtime/model_artifact.h) in this process. A LoadedModel is
// loaded and checked once — its kernels' code, its weights (on the GPU copied to the device once) —
// and is shared by any number of ExecutionContexts; a context holds one run's state (the inputs
// bound, the intermediates' arena, the outputs), allocated when it is made (on the CPU, copies of
// inputs the kernels cannot read where they are given at their first need), so contexts on
// separate threads run one model at once. One context is used by one thread at a time.
//
//   LoadedModel model = LoadedModel::load("model.tsl");
//   ExecutionContext ctx(model);
//   ctx.set_input(0, DType::Float32, {1, 3, 224, 224}, data);
//   ctx.run();
//   ctx.copy_output(0, out, MemoryKind::Host);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model_artifact.h"

namespace tessel {

// Where a tensor's bytes are: this process's memory, or the GPU's (a CUDA device pointer).
enum class MemoryKind { Host, Device };

// A model input or output, as the plan has it.
struct ModelTensor {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // [] for a scalar
  int64_t bytes = 0;
};

// What a model and one of its contexts hold, in bytes, in `memory` (the GPU's for a cuda model).
struct MemoryUsage {
  MemoryKind memory = MemoryKind::Host;
  int64_t weights = 0;  // once per model, shared by its contexts
  int64_t arena = 0;    // placed by the memory plan: intermediates (GPU: also scratch, input copies, outputs)
  int64_t outputs = 0;  // this context's outputs outside the arena (CPU)
  int64_t inputs = 0;   // copies of inputs outside the arena: CPU, of those its kernels cannot read
                        // where given; GPU, where an input is also an output, a block to copy aside to
  int64_t context_bytes() const { return arena + outputs + inputs; }
};

class ExecutionContext;
struct ModelState;

class LoadedModel {
 public:
  // Reads and checks `path` and loads its kernels and weights. Throws ArtifactError when the file is
  // missing, damaged or not a tessel model, or built for a target this machine cannot run (another
  // CPU's features, another GPU architecture, no GPU), naming the file and what is wrong; Error for a
  // device failure.
  static LoadedModel load(const std::string& path);

  TargetKind target() const;
  // Host for an llvm model, Device for a cuda model: where outputs live after a run.
  MemoryKind memory() const;
  const std::vector<ModelTensor>& inputs() const;
  const std::vector<ModelTensor>& outputs() const;
  std::optional<size_t> input_index(const std::string& name) const;
  std::optional<size_t> output_index(const std::string& name) const;
  // The plan and provenance as read from the file (kernels, their log records, arena_bytes,
  // liveness_bound_bytes).
  const ModelArtifact& artifact() const;
  int64_t weight_bytes() const;  // resident once, in memory()

 private:
  explicit LoadedModel(std::shared_ptr<const ModelState> state) : state_(std::move(state)) {}
  std::shared_ptr<const ModelState> state_;
  friend class ExecutionContext;
};

class ContextExecutor;
struct BoundInput;

class ExecutionContext {
 public:
  // Allocates what a run needs (and, on the GPU, records the run as a CUDA graph). The context
  // keeps the model alive. Throws Error when memory or the device fails.
  explicit ExecutionContext(const LoadedModel& model);
  ~ExecutionContext();
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  // Binds input `index` (or the input named `name`) to `data`, which run() reads: it must stay valid
  // and unchanged until run() returns. `memory` Device passes a device pointer of the GPU the model
  // runs on (its data already written). Throws InputError naming the input, the expected and the
  // given dtype and shape when they differ, or the input when there is none of that index or name;
  // the input is then left unbound.
  void set_input(size_t index, DType dtype, const std::vector<int64_t>& shape, const void* data,
                 MemoryKind memory = MemoryKind::Host);
  void set_input(const std::string& name, DType dtype, const std::vector<int64_t>& shape, const void* data,
                 MemoryKind memory = MemoryKind::Host);

  // Runs the model on the bound inputs and returns when the outputs are ready. Throws InputError,
  // before any kernel runs, naming every unbound input; Error when a kernel launch or the device
  // fails. Inputs stay bound for the next run.
  void run();
  // Runs as run() does, one kernel at a time with each timed, and returns the seconds of every kernel
  // of the plan (artifact().kernels, in order). For a profile: on the GPU the kernels are launched
  // one by one, not replayed as one graph, so their sum exceeds a run's time by launch gaps.
  std::vector<double> run_profiled();

  // Output `index` of the last run, in the model's memory(): valid until the next run or the
  // context's end. Any output may be given back as an input of the next run. Throws InputError for
  // an index out of range.
  const void* output_data(size_t index) const;
  // Copies output `index` (outputs()[index].bytes bytes) to `dst` in `memory`.
  void copy_output(size_t index, void* dst, MemoryKind memory) const;

  const LoadedModel& model() const { return model_; }
  MemoryUsage memory_usage() const;
  // Whether a run replays one CUDA graph (a cuda model, where the driver has graphs) rather than
  // launching its kernels one by one.
  bool replays_graph() const;

 private:
  // Every input's binding; throws InputError naming the unbound ones.
  std::vector<BoundInput> bound_inputs() const;

  LoadedModel model_;
  std::unique_ptr<ContextExecutor> executor_;
  struct Binding;
  std::vector<Binding> bound_;
};

}  // namespace tessel
