// The two places a model runs — this CPU (cpu_executor.cpp) and the GPU (gpu_executor.cpp) — behind
// one interface: a ModelExecutor holds what is loaded once per model (code, weights), a
// ContextExecutor one context's memory. ExecutionContext (model.h) checks every input before an
// executor is asked to run, so executors trust what they are given.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model.h"

namespace tessel {

struct BoundInput {
  const void* data = nullptr;
  MemoryKind memory = MemoryKind::Host;
};

class ContextExecutor {
 public:
  virtual ~ContextExecutor() = default;
  // Runs every kernel in order, `inputs[i]` being the model's input i, and returns when the outputs
  // are ready.
  virtual void run(const std::vector<BoundInput>& inputs) = 0;
  // Runs as run() does, but one kernel at a time, each timed: the seconds of every kernel of the
  // plan, in its order (CPU: the wall time of its call; GPU: CUDA events around its launches,
  // launched one by one rather than replayed as a graph).
  virtual std::vector<double> run_timed(const std::vector<BoundInput>& inputs) = 0;
  // Where the model's output i is (in the model's memory kind).
  virtual const void* output(size_t i) const = 0;
  virtual void copy_output(size_t i, void* dst, MemoryKind memory) const = 0;
  virtual MemoryUsage memory_usage() const = 0;
  virtual bool replays_graph() const { return false; }
};

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;
  virtual MemoryKind memory() const = 0;
  virtual int64_t weight_bytes() const = 0;
  // A context of this model; the model outlives it.
  virtual std::unique_ptr<ContextExecutor> create_context() const = 0;
};

// Loads `artifact` (read from `path`, its bytes in `bytes`, which need not outlive the executor) for
// this CPU or the GPU. Throw ArtifactError when it cannot run here, naming `path`.
std::unique_ptr<ModelExecutor> load_cpu_executor(const ModelArtifact& artifact, const std::vector<uint8_t>& bytes,
                                                 const std::string& path);
std::unique_ptr<ModelExecutor> load_gpu_executor(const ModelArtifact& artifact, const std::vector<uint8_t>& bytes,
                                                 const std::string& path);

// The addresses [begin, end) of a block of memory; empty when begin == end.
struct ByteRange {
  uintptr_t begin = 0, end = 0;
  bool empty() const { return begin == end; }
};

// A run copies its inputs to their places (`places[i]` for input i; empty where input i is used
// where it is). An input's source may lie in a place itself -- on the GPU, an earlier run's output
// that is also an input, fed back as another input. The inputs whose sources must be copied aside
// before any input is copied to its place: those overlapping another input's place, or their own
// without being exactly it (that one needs no copy). Then every input gets the bytes it had when
// the run began, whatever order the copies run in.
std::vector<bool> sources_to_set_aside(const std::vector<ByteRange>& sources, const std::vector<ByteRange>& places);

// "kernel 3 (k3) of 'model.tsl'": how errors name a kernel.
std::string kernel_where(const ModelArtifact& artifact, size_t k, const std::string& path);

}  // namespace tessel
