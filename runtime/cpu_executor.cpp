// The CPU executor. Per model: each kernel's shared object loaded once from its blob (blobs shared by
// kernels of one task are loaded once), and the weights copied once into 64-byte aligned memory (the
// kernels are compiled assuming every buffer is 64-byte aligned, and a file read into a vector is not
// aligned so). Per context: the arena of intermediates and the outputs, allocated when it is made,
// and each kernel's argument array, filled then; a run only writes the inputs' pointers into the
// arrays and runs the kernels in order.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>

#include "runtime/cpu_support.h"
#include "runtime/executor.h"
#include "runtime/kernel_library.h"

namespace tessel {
namespace {

constexpr int64_t kAlign = 64;

int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Zeroed, 64-byte aligned host memory.
class HostBlock {
 public:
  HostBlock() = default;
  explicit HostBlock(int64_t bytes) : bytes_(bytes) {
    const size_t size = static_cast<size_t>(aligned(std::max<int64_t>(bytes, 1)));
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlign, size)));
    if (!data_) throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    std::memset(data_.get(), 0, size);
  }
  uint8_t* data() const { return data_.get(); }
  int64_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  int64_t bytes_ = 0;
};

class CpuModel final : public ModelExecutor {
 public:
  CpuModel(const ModelArtifact& a, const std::vector<uint8_t>& bytes, const std::string& path) : a_(a) {
    check_cpu_can_run(a, path);
    copy_weights(bytes);
    std::map<int64_t, KernelLibrary*> by_blob;
    for (size_t k = 0; k < a.kernels.size(); ++k) {
      const PlanKernel& kernel = a.kernels[k];
      KernelLibrary*& library = by_blob[kernel.blob];
      if (!library) {
        const Blob& blob = a.blobs[kernel.blob];
        libraries_.push_back(
            KernelLibrary::load(bytes.data() + blob.offset, static_cast<size_t>(blob.size), kernel_where(a, k, path)));
        library = libraries_.back().get();
      }
      entries_.push_back(library->entry(kernel.entry));
    }
  }

  MemoryKind memory() const override { return MemoryKind::Host; }
  int64_t weight_bytes() const override { return weights_.bytes(); }
  std::unique_ptr<ContextExecutor> create_context() const override;

  const ModelArtifact& artifact() const { return a_; }
  void* weight(size_t buffer) const { return weights_.data() + weight_offset_.at(buffer); }
  void run_kernel(size_t k, void** args) const { entries_[k](args); }

 private:
  void copy_weights(const std::vector<uint8_t>& bytes) {
    int64_t total = 0;
    for (size_t i = 0; i < a_.buffers.size(); ++i)
      if (a_.buffers[i].kind == PlanBuffer::Kind::Weight) {
        weight_offset_[i] = total;
        total += aligned(a_.buffers[i].bytes());
      }
    weights_ = HostBlock(total);
    for (const auto& [buffer, offset] : weight_offset_) {
      const Blob& blob = a_.blobs[a_.buffers[buffer].blob];
      std::memcpy(weights_.data() + offset, bytes.data() + blob.offset, static_cast<size_t>(blob.size));
    }
  }

  const ModelArtifact& a_;
  HostBlock weights_;
  std::map<size_t, int64_t> weight_offset_;  // buffer index -> offset in weights_
  std::vector<std::unique_ptr<KernelLibrary>> libraries_;
  std::vector<KernelLibrary::Entry> entries_;  // per kernel
};

class CpuContext final : public ContextExecutor {
 public:
  explicit CpuContext(const CpuModel& m) : m_(m) {
    const ModelArtifact& a = m.artifact();
    arena_ = HostBlock(a.arena_bytes);
    std::vector<void*> pointer(a.buffers.size(), nullptr);
    std::vector<int64_t> input_of(a.buffers.size(), -1);
    for (size_t i = 0; i < a.inputs.size(); ++i) input_of[a.inputs[i]] = static_cast<int64_t>(i);
    for (size_t b = 0; b < a.buffers.size(); ++b) {
      const PlanBuffer& buffer = a.buffers[b];
      if (buffer.kind == PlanBuffer::Kind::Weight) pointer[b] = m.weight(b);
      if (buffer.kind == PlanBuffer::Kind::Intermediate) pointer[b] = arena_.data() + buffer.offset;
      if (buffer.kind == PlanBuffer::Kind::Output) {
        outputs_[b] = HostBlock(buffer.bytes());
        pointer[b] = outputs_[b].data();
      }
    }
    args_.resize(a.kernels.size());
    for (size_t k = 0; k < a.kernels.size(); ++k)
      for (size_t slot = 0; slot < a.kernels[k].args.size(); ++slot) {
        const int64_t b = a.kernels[k].args[slot];
        args_[k].push_back(pointer[b]);
        if (input_of[b] >= 0) input_slots_.push_back({k, slot, static_cast<size_t>(input_of[b])});
      }
    staging_.resize(a.inputs.size());
    inputs_.assign(a.inputs.size(), nullptr);
    for (size_t i = 0; i < a.inputs.size(); ++i)
      is_output_.push_back(std::find(a.outputs.begin(), a.outputs.end(), a.inputs[i]) != a.outputs.end());
  }

  void run(const std::vector<BoundInput>& inputs) override {
    bind(inputs);
    for (size_t k = 0; k < args_.size(); ++k) m_.run_kernel(k, args_[k].data());
  }

  std::vector<double> run_timed(const std::vector<BoundInput>& inputs) override {
    bind(inputs);
    std::vector<double> seconds(args_.size());
    auto t0 = std::chrono::steady_clock::now();
    for (size_t k = 0; k < args_.size(); ++k) {
      m_.run_kernel(k, args_[k].data());
      const auto t1 = std::chrono::steady_clock::now();
      seconds[k] = std::chrono::duration<double>(t1 - t0).count();
      t0 = t1;
    }
    return seconds;
  }

  const void* output(size_t i) const override {
    const ModelArtifact& a = m_.artifact();
    const int64_t b = a.outputs[i];
    switch (a.buffers[b].kind) {
      case PlanBuffer::Kind::Output:
        return outputs_.at(b).data();
      case PlanBuffer::Kind::Weight:
        return m_.weight(b);
      case PlanBuffer::Kind::Input:  // the context's copy of that input (bind)
        for (size_t k = 0; k < a.inputs.size(); ++k)
          if (a.inputs[k] == b) return inputs_[k];
        break;
      case PlanBuffer::Kind::Intermediate:
        break;
    }
    return nullptr;
  }

  void copy_output(size_t i, void* dst, MemoryKind memory) const override {
    if (memory != MemoryKind::Host)
      throw InputError("this model runs on the CPU: its outputs copy to host memory only");
    const void* src = output(i);
    if (!src) throw InputError("output " + std::to_string(i) + " has no data before the first run");
    std::memcpy(dst, src, static_cast<size_t>(m_.artifact().buffers[m_.artifact().outputs[i]].bytes()));
  }

  MemoryUsage memory_usage() const override {
    MemoryUsage u;
    u.memory = MemoryKind::Host;
    u.weights = m_.weight_bytes();
    u.arena = arena_.bytes();
    for (const auto& [b, block] : outputs_) u.outputs += block.bytes();
    for (const HostBlock& s : staging_) u.inputs += s.bytes();
    u.inputs += aside_.bytes();
    return u;
  }

 private:
  // Points the kernels' input arguments at the inputs. An input is copied into a block of this
  // context's own (staging_) where the kernels cannot read it as given: not 64-byte aligned (NumPy
  // gives 16), lying in an output's block (a kernel would write it while others read it), or an
  // output itself (that output stays this context's until the next run). A source lying in another
  // input's block (that output given back) is first copied aside, so no input's copy overwrites
  // what another still reads.
  void bind(const std::vector<BoundInput>& inputs) {
    const ModelArtifact& a = m_.artifact();
    const size_t n = inputs.size();
    std::vector<ByteRange> sources(n), places(n);
    std::vector<bool> staged(n);
    for (size_t i = 0; i < n; ++i) {
      const uintptr_t data = reinterpret_cast<uintptr_t>(inputs[i].data);
      const int64_t bytes = a.buffers[a.inputs[i]].bytes();
      sources[i] = {data, data + static_cast<uintptr_t>(bytes)};
      staged[i] = data % kAlign != 0 || is_output_[i] || in_an_output(sources[i]);
      if (!staged[i]) continue;
      if (!staging_[i].data()) staging_[i] = HostBlock(bytes);
      const uintptr_t place = reinterpret_cast<uintptr_t>(staging_[i].data());
      places[i] = {place, place + static_cast<uintptr_t>(bytes)};
    }
    const std::vector<bool> aside = sources_to_set_aside(sources, places);
    std::vector<const void*> from(n);
    int64_t next_aside = 0;
    for (size_t i = 0; i < n; ++i) {
      from[i] = inputs[i].data;
      if (!aside[i]) continue;
      if (!aside_.data()) {
        int64_t total = 0;
        for (int64_t b : a.inputs) total += aligned(a.buffers[b].bytes());
        aside_ = HostBlock(total);
      }
      const int64_t bytes = a.buffers[a.inputs[i]].bytes();
      std::memcpy(aside_.data() + next_aside, from[i], static_cast<size_t>(bytes));
      from[i] = aside_.data() + next_aside;
      next_aside += aligned(bytes);
    }
    for (size_t i = 0; i < n; ++i) {
      inputs_[i] = staged[i] ? staging_[i].data() : from[i];
      if (staged[i] && from[i] != inputs_[i])  // equal: that output given back as itself
        std::memcpy(staging_[i].data(), from[i], static_cast<size_t>(a.buffers[a.inputs[i]].bytes()));
    }
    // The kernels never write their inputs; the const is dropped only for the uniform void** ABI.
    for (const InputSlot& s : input_slots_) args_[s.kernel][s.slot] = const_cast<void*>(inputs_[s.input]);
  }

  bool in_an_output(const ByteRange& r) const {
    for (const auto& [b, block] : outputs_) {
      const uintptr_t begin = reinterpret_cast<uintptr_t>(block.data());
      if (r.begin < begin + static_cast<uintptr_t>(block.bytes()) && begin < r.end) return true;
    }
    return false;
  }

  struct InputSlot {
    size_t kernel, slot, input;
  };
  const CpuModel& m_;
  HostBlock arena_;
  std::map<int64_t, HostBlock> outputs_;  // buffer index -> its memory, for every Output buffer
  std::vector<HostBlock> staging_;        // per input: where a misaligned input is copied
  std::vector<std::vector<void*>> args_;  // per kernel, a pointer per parameter
  std::vector<InputSlot> input_slots_;    // the argument slots that take an input
  std::vector<const void*> inputs_;       // per input, what the last run read
  std::vector<bool> is_output_;           // per input: also an output of the model
  HostBlock aside_;                       // inputs read from staging_ blocks, copied aside first
};

std::unique_ptr<ContextExecutor> CpuModel::create_context() const { return std::make_unique<CpuContext>(*this); }

}  // namespace

std::string kernel_where(const ModelArtifact& artifact, size_t k, const std::string& path) {
  return "kernel " + std::to_string(k) + " (" + artifact.kernels[k].name + ") of '" + path + "'";
}

std::unique_ptr<ModelExecutor> load_cpu_executor(const ModelArtifact& artifact, const std::vector<uint8_t>& bytes,
                                                 const std::string& path) {
  return std::make_unique<CpuModel>(artifact, bytes, path);
}

}  // namespace tessel
