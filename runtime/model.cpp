#include "runtime/model.h"

#include "runtime/executor.h"

namespace tessel {

// What a LoadedModel shares with its contexts. The executor refers into `artifact`, so it is
// declared after it (and destroyed first).
struct ModelState {
  std::string path;
  ModelArtifact artifact;
  std::vector<ModelTensor> inputs, outputs;
  std::unique_ptr<ModelExecutor> executor;
};

struct ExecutionContext::Binding {
  BoundInput input;
  bool bound = false;
};

namespace {

std::vector<ModelTensor> tensors_of(const ModelArtifact& a, const std::vector<int64_t>& buffers) {
  std::vector<ModelTensor> out;
  for (int64_t b : buffers)
    out.push_back({a.buffers[b].name, a.buffers[b].dtype, a.buffers[b].shape, a.buffers[b].bytes()});
  return out;
}

std::optional<size_t> index_named(const std::vector<ModelTensor>& tensors, const std::string& name) {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return i;
  return std::nullopt;
}

// "float32[1, 3, 224, 224]"; a scalar is "float32[]".
std::string describe(DType dtype, const std::vector<int64_t>& shape) {
  std::string out = to_string(dtype) + "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// What the executors rely on beyond what read_model_artifact checks: every value in the arena
// 64-byte aligned (CPU kernels are compiled assuming 64-byte aligned buffers, GPU launches need 16).
void check_plan(const ModelArtifact& a, const std::string& path) {
  for (const PlanBuffer& b : a.buffers)
    if (in_arena(b, a.target) && b.offset % 64 != 0)
      throw ArtifactError("'" + path + "': " + to_string(b.kind) + " '" + b.name + "' is at arena offset " +
                          std::to_string(b.offset) + ", not a multiple of 64 as the kernels assume");
}

}  // namespace

LoadedModel LoadedModel::load(const std::string& path) {
  auto state = std::make_shared<ModelState>();
  state->path = path;
  std::vector<uint8_t> bytes;
  state->artifact = read_model_artifact(path, bytes);
  const ModelArtifact& a = state->artifact;
  check_plan(a, path);
  state->inputs = tensors_of(a, a.inputs);
  state->outputs = tensors_of(a, a.outputs);
  state->executor =
      a.target == TargetKind::Cuda ? load_gpu_executor(a, bytes, path) : load_cpu_executor(a, bytes, path);
  return LoadedModel(std::move(state));
}

TargetKind LoadedModel::target() const { return state_->artifact.target; }
MemoryKind LoadedModel::memory() const { return state_->executor->memory(); }
const std::vector<ModelTensor>& LoadedModel::inputs() const { return state_->inputs; }
const std::vector<ModelTensor>& LoadedModel::outputs() const { return state_->outputs; }
std::optional<size_t> LoadedModel::input_index(const std::string& name) const {
  return index_named(state_->inputs, name);
}
std::optional<size_t> LoadedModel::output_index(const std::string& name) const {
  return index_named(state_->outputs, name);
}
const ModelArtifact& LoadedModel::artifact() const { return state_->artifact; }
int64_t LoadedModel::weight_bytes() const { return state_->executor->weight_bytes(); }

ExecutionContext::ExecutionContext(const LoadedModel& model)
    : model_(model), executor_(model.state_->executor->create_context()), bound_(model.inputs().size()) {}

ExecutionContext::~ExecutionContext() = default;

void ExecutionContext::set_input(size_t index, DType dtype, const std::vector<int64_t>& shape, const void* data,
                                 MemoryKind memory) {
  const std::vector<ModelTensor>& inputs = model_.inputs();
  if (index >= inputs.size())
    throw InputError("no input " + std::to_string(index) + ": the model has " + std::to_string(inputs.size()));
  const ModelTensor& want = inputs[index];
  bound_[index] = Binding{};
  const std::string which = "input " + std::to_string(index) + " ('" + want.name + "')";
  if (dtype != want.dtype || shape != want.shape)
    throw InputError(which + ": expected " + describe(want.dtype, want.shape) + ", got " + describe(dtype, shape));
  if (!data) throw InputError(which + ": no data (a null pointer)");
  if (memory == MemoryKind::Device && model_.memory() != MemoryKind::Device)
    throw InputError(which + ": a device pointer was given, but the model runs on the CPU");
  bound_[index] = Binding{{data, memory}, true};
}

void ExecutionContext::set_input(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                 const void* data, MemoryKind memory) {
  const std::optional<size_t> index = model_.input_index(name);
  if (!index) {
    std::string names;
    for (const ModelTensor& t : model_.inputs()) names += (names.empty() ? "'" : ", '") + t.name + "'";
    throw InputError("the model has no input '" + name + "' (its inputs: " + names + ")");
  }
  set_input(*index, dtype, shape, data, memory);
}

void ExecutionContext::run() { executor_->run(bound_inputs()); }

std::vector<double> ExecutionContext::run_profiled() { return executor_->run_timed(bound_inputs()); }

std::vector<BoundInput> ExecutionContext::bound_inputs() const {
  std::string unbound;
  std::vector<BoundInput> inputs;
  for (size_t i = 0; i < bound_.size(); ++i) {
    if (!bound_[i].bound)
      unbound += (unbound.empty() ? "" : ", ") + std::to_string(i) + " ('" + model_.inputs()[i].name + "')";
    inputs.push_back(bound_[i].input);
  }
  if (!unbound.empty()) throw InputError("inputs not set: " + unbound + "; nothing was run");
  return inputs;
}

const void* ExecutionContext::output_data(size_t index) const {
  if (index >= model_.outputs().size())
    throw InputError("no output " + std::to_string(index) + ": the model has " +
                     std::to_string(model_.outputs().size()));
  return executor_->output(index);
}

void ExecutionContext::copy_output(size_t index, void* dst, MemoryKind memory) const {
  output_data(index);  // the range check
  if (!dst) throw InputError("output " + std::to_string(index) + ": no destination (a null pointer)");
  executor_->copy_output(index, dst, memory);
}

MemoryUsage ExecutionContext::memory_usage() const { return executor_->memory_usage(); }
bool ExecutionContext::replays_graph() const { return executor_->replays_graph(); }

}  // namespace tessel
