// The GPU executor. Per model: the weights copied to the device once, in one allocation, and each
// kernel's cubin loaded once (kernels of one task share it) without scratch of its own. Per context:
// a stream and one device allocation, the arena, holding the intermediates, the kernels' scratch, a
// copy of every input and the outputs where the build's memory plan put them, made when the context
// is (and, where an input is also an output, a block to copy inputs aside to); with every pointer
// then fixed, the launches of a whole run are recorded once as a CUDA graph on the context's stream.
// A run copies the inputs in (host to device, or device to device for device pointers: the graph's
// pointers never change), replays the graph (or, where the driver has none, launches the kernels
// one by one) and waits.
#include <algorithm>
#include <map>

#include "codegen/cuda/cuda_backend.h"
#include "runtime/executor.h"

namespace tessel {
namespace {

constexpr int64_t kAlign = 256;  // cuMemAlloc's own alignment, kept for each weight in the weights' block

int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// A device allocation freed with its owner.
class DeviceBlock {
 public:
  DeviceBlock(CudaRuntime& rt, int64_t bytes) : rt_(rt), bytes_(bytes), ptr_(rt.alloc(bytes)) {}
  ~DeviceBlock() {
    try {
      rt_.free(ptr_);
    } catch (const Error&) {
      // Destructors must not throw; a failing device reports itself the next time the runtime is used.
    }
  }
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  uint64_t ptr() const { return ptr_; }
  int64_t bytes() const { return bytes_; }

 private:
  CudaRuntime& rt_;
  int64_t bytes_;
  uint64_t ptr_;
};

CudaRuntime& gpu_for(const ModelArtifact& a, const std::string& path) {
  std::string why;
  CudaRuntime* rt = CudaRuntime::get(&why);
  const std::string built = a.arch + (a.device.empty() ? "" : ", " + a.device);
  if (!rt) throw ArtifactError("'" + path + "' is a cuda model (" + built + ") and this machine cannot run it: " + why);
  if (rt->device().arch != a.arch)
    throw ArtifactError("'" + path + "' was built for " + built + "; this GPU is " + rt->device().arch + " (" +
                        rt->device().name + "); rebuild it on this machine with `tessel build --target cuda`");
  return *rt;
}

class GpuModel final : public ModelExecutor {
 public:
  GpuModel(const ModelArtifact& a, const std::vector<uint8_t>& bytes, const std::string& path)
      : a_(a), rt_(gpu_for(a, path)) {
    int64_t total = 0;
    for (size_t i = 0; i < a.buffers.size(); ++i)
      if (a.buffers[i].kind == PlanBuffer::Kind::Weight) {
        weight_offset_[i] = total;
        total += aligned(a.buffers[i].bytes());
      }
    weights_ = std::make_unique<DeviceBlock>(rt_, total);
    for (const auto& [buffer, offset] : weight_offset_) {
      const Blob& blob = a.blobs[a.buffers[buffer].blob];
      rt_.copy_to_device(weights_->ptr() + offset, bytes.data() + blob.offset, blob.size);
    }
    std::map<int64_t, size_t> by_blob;
    for (size_t k = 0; k < a.kernels.size(); ++k) {
      const PlanKernel& kernel = a.kernels[k];
      if (kernel.launches.empty()) throw ArtifactError(kernel_where(a, k, path) + ": no launches (a CPU kernel?)");
      auto shared = by_blob.find(kernel.blob);
      if (shared != by_blob.end() && same_program(a.kernels[module_kernel_[shared->second]], kernel)) {
        module_of_.push_back(shared->second);
        continue;
      }
      const Blob& blob = a.blobs[kernel.blob];
      const std::vector<char> cubin(bytes.begin() + blob.offset, bytes.begin() + blob.offset + blob.size);
      CudaProgram program;
      program.launches = kernel.launches;
      program.scratch = kernel.scratch;
      try {
        modules_.push_back(rt_.load_for_streams(program, cubin));
      } catch (const Error& e) {
        throw ArtifactError(kernel_where(a, k, path) + ": its code cannot be loaded: " + e.what());
      }
      by_blob[kernel.blob] = modules_.size() - 1;
      module_kernel_.push_back(k);
      module_of_.push_back(modules_.size() - 1);
    }
  }

  MemoryKind memory() const override { return MemoryKind::Device; }
  int64_t weight_bytes() const override { return weights_->bytes(); }
  std::unique_ptr<ContextExecutor> create_context() const override;

  const ModelArtifact& artifact() const { return a_; }
  CudaRuntime& runtime() const { return rt_; }
  uint64_t weight(size_t buffer) const { return weights_->ptr() + weight_offset_.at(buffer); }
  CudaModule& module(size_t kernel) const { return *modules_[module_of_[kernel]]; }

 private:
  static bool same_program(const PlanKernel& x, const PlanKernel& y) {
    if (x.launches.size() != y.launches.size() || x.scratch.size() != y.scratch.size()) return false;
    for (size_t i = 0; i < x.launches.size(); ++i) {
      const CudaLaunch &p = x.launches[i], &q = y.launches[i];
      if (p.kernel_name != q.kernel_name || p.args != q.args || p.dynamic_shared_bytes != q.dynamic_shared_bytes ||
          !std::equal(p.grid, p.grid + 3, q.grid) || !std::equal(p.block, p.block + 3, q.block))
        return false;
    }
    for (size_t i = 0; i < x.scratch.size(); ++i)
      if (x.scratch[i].name != y.scratch[i].name || buffer_bytes(x.scratch[i]) != buffer_bytes(y.scratch[i]))
        return false;
    return true;
  }

  const ModelArtifact& a_;
  CudaRuntime& rt_;
  std::unique_ptr<DeviceBlock> weights_;
  std::map<size_t, int64_t> weight_offset_;  // buffer index -> offset in weights_
  std::vector<std::unique_ptr<CudaModule>> modules_;
  std::vector<size_t> module_kernel_;  // per module, the first kernel loaded with it
  std::vector<size_t> module_of_;      // per kernel
};

class GpuContext final : public ContextExecutor {
 public:
  explicit GpuContext(const GpuModel& m) : m_(m) {
    const ModelArtifact& a = m.artifact();
    // One allocation, the arena: intermediates, kernels' scratch, the inputs' copies and the
    // outputs, each where the build's memory plan put it.
    usage_.arena = a.arena_bytes;
    block_ = std::make_unique<DeviceBlock>(m.runtime(), std::max(a.arena_bytes, kAlign));
    pointer_.assign(a.buffers.size(), 0);
    for (size_t b = 0; b < a.buffers.size(); ++b)
      pointer_[b] = a.buffers[b].kind == PlanBuffer::Kind::Weight ? m.weight(b) : block_->ptr() + a.buffers[b].offset;
    args_.resize(a.kernels.size());
    scratch_.resize(a.kernels.size());
    for (size_t k = 0; k < a.kernels.size(); ++k) {
      for (int64_t b : a.kernels[k].args) args_[k].push_back(pointer_[b]);
      for (int64_t o : a.kernels[k].scratch_offsets) scratch_[k].push_back(block_->ptr() + o);
    }
    for (int64_t b : a.inputs)
      places_.push_back({pointer_[b], pointer_[b] + static_cast<uint64_t>(a.buffers[b].bytes())});
    // An input that is also an output can be given back as another input: the block such sources
    // are copied aside to (copy_inputs) is made now, with the rest.
    for (int64_t b : a.inputs)
      if (std::find(a.outputs.begin(), a.outputs.end(), b) != a.outputs.end()) make_aside_block();
    stream_ = m.runtime().create_stream();
    graph_ = stream_->capture([this] { launch_all(); });
  }

  void run(const std::vector<BoundInput>& inputs) override {
    copy_inputs(inputs);
    if (graph_)
      stream_->replay();
    else
      launch_all();
    stream_->synchronize();  // the inputs may go away once run() returns
  }

  std::vector<double> run_timed(const std::vector<BoundInput>& inputs) override {
    copy_inputs(inputs);
    std::vector<double> seconds = stream_->time_steps(args_.size(), [this](size_t k) { launch(k); });
    stream_->synchronize();
    return seconds;
  }

  const void* output(size_t i) const override {
    return reinterpret_cast<const void*>(pointer_[m_.artifact().outputs[i]]);
  }

  void copy_output(size_t i, void* dst, MemoryKind memory) const override {
    const int64_t b = m_.artifact().outputs[i];
    const int64_t bytes = m_.artifact().buffers[b].bytes();
    if (memory == MemoryKind::Device)
      stream_->copy_on_device(reinterpret_cast<uint64_t>(dst), pointer_[b], bytes);
    else
      stream_->copy_to_host(dst, pointer_[b], bytes);
    stream_->synchronize();
  }

  bool replays_graph() const override { return graph_; }

  MemoryUsage memory_usage() const override {
    MemoryUsage u = usage_;
    u.memory = MemoryKind::Device;
    u.weights = m_.weight_bytes();
    return u;
  }

 private:
  // Copies the inputs into their places in the arena, where the recorded launches read them. A
  // device input may lie in another input's place (an earlier run's output that is also an input,
  // given back as another input): such sources are copied aside first, so no input's copy
  // overwrites what another still has to read.
  void copy_inputs(const std::vector<BoundInput>& inputs) {
    const ModelArtifact& a = m_.artifact();
    std::vector<ByteRange> sources(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].memory == MemoryKind::Device)
        sources[i] = {reinterpret_cast<uintptr_t>(inputs[i].data),
                      reinterpret_cast<uintptr_t>(inputs[i].data) + (places_[i].end - places_[i].begin)};
    const std::vector<bool> aside = sources_to_set_aside(sources, places_);
    uint64_t next_aside = aside_ ? aside_->ptr() : 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!aside[i]) continue;
      if (!aside_) {  // a source in the arena not given by output_data(): made at its first need
        make_aside_block();
        next_aside = aside_->ptr();
      }
      const int64_t bytes = a.buffers[a.inputs[i]].bytes();
      stream_->copy_on_device(next_aside, sources[i].begin, bytes);
      sources[i] = {next_aside, next_aside + static_cast<uint64_t>(bytes)};
      next_aside += static_cast<uint64_t>(aligned(bytes));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t b = a.inputs[i];
      if (inputs[i].memory == MemoryKind::Host)
        stream_->copy_to_device(pointer_[b], inputs[i].data, a.buffers[b].bytes());
      else if (sources[i].begin != places_[i].begin)  // already in its place: an output fed back as itself
        stream_->copy_on_device(pointer_[b], sources[i].begin, a.buffers[b].bytes());
    }
  }

  void make_aside_block() {
    if (aside_) return;
    int64_t total = 0;
    for (int64_t b : m_.artifact().inputs) total += aligned(m_.artifact().buffers[b].bytes());
    aside_ = std::make_unique<DeviceBlock>(m_.runtime(), std::max(total, kAlign));
    usage_.inputs = aside_->bytes();
  }

  void launch(size_t k) { m_.module(k).run_on(*stream_, args_[k], scratch_[k]); }
  void launch_all() {
    for (size_t k = 0; k < args_.size(); ++k) launch(k);
  }

  const GpuModel& m_;
  std::unique_ptr<DeviceBlock> block_;
  std::unique_ptr<DeviceBlock> aside_;          // inputs read from the arena, copied aside first
  std::vector<uint64_t> pointer_;               // per buffer, its device address
  std::vector<ByteRange> places_;               // per input, where its copy goes in the arena
  std::vector<std::vector<uint64_t>> args_;     // per kernel, a pointer per parameter
  std::vector<std::vector<uint64_t>> scratch_;  // per kernel, its scratch buffers
  std::unique_ptr<CudaStream> stream_;
  bool graph_ = false;
  MemoryUsage usage_;
};

std::unique_ptr<ContextExecutor> GpuModel::create_context() const { return std::make_unique<GpuContext>(*this); }

}  // namespace

std::unique_ptr<ModelExecutor> load_gpu_executor(const ModelArtifact& artifact, const std::vector<uint8_t>& bytes,
                                                 const std::string& path) {
  return std::make_unique<GpuModel>(artifact, bytes, path);
}

}  // namespace tessel
