#include "model_runner.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "codegen/llvm/llvm_backend.h"
#include "measure/cpu_kernel.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"

using namespace tessel;

namespace tessel_test {

namespace {

// A value's bytes from a 64-byte boundary, as kernels are built to assume of their buffers, zeroed
// past its end (slack for vector loads).
class AlignedBytes {
 public:
  void resize(size_t n) {
    if (n <= size_) return;
    std::vector<uint8_t> fresh(n + 2 * kAlignment, 0);
    if (size_) std::memcpy(align(fresh.data()), data(), size_);
    raw_.swap(fresh);
    size_ = n;
  }
  uint8_t* data() { return align(raw_.data()); }
  const uint8_t* data() const { return align(const_cast<uint8_t*>(raw_.data())); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static constexpr uintptr_t kAlignment = 64;
  static uint8_t* align(uint8_t* p) { return p + (kAlignment - reinterpret_cast<uintptr_t>(p) % kAlignment) % kAlignment; }
  std::vector<uint8_t> raw_;
  size_t size_ = 0;
};

}  // namespace
std::map<std::string, TensorData> run_model_cpu(const Model& model, const std::map<std::string, TensorData>& inputs) {
  std::map<std::string, AlignedBytes> values;
  auto store = [&](const std::string& name, const TensorData& data) {
    AlignedBytes& b = values[name];
    b.resize(data.byte_size());
    if (data.byte_size() > 0) std::memcpy(b.data(), data.bytes(), data.byte_size());
  };
  for (const auto& [name, data] : inputs) store(name, data);
  for (const auto& [name, value] : model.graph.values())
    if (value.constant) store(name, *value.constant);
  const CpuTargetSpec spec{host_vector_lanes(), 2};
  for (const Subgraph& s : model.partition.subgraphs) {
    CpuKernel kernel = build_cpu_kernel(s.dag, default_schedule(s.dag, spec));
    std::vector<void*> args;
    for (const BufferParam& p : kernel.func.params) {
      const size_t bytes = static_cast<size_t>(num_elements(p) * dtype_bytes(p.dtype));
      // A placeholder p<k> stands for the subgraph's input k.
      const std::string& value =
          p.is_output ? s.output : s.inputs.at(static_cast<size_t>(std::stoll(p.name.substr(1))));
      AlignedBytes& b = values[value];
      if (!p.is_output && b.empty()) throw Error("no data for '" + value + "', read by " + s.summary);
      if (b.size() < bytes + 64) b.resize(bytes + 64);  // slack past the end for vector loads
      args.push_back(b.data());
    }
    kernel.kernel->run(args.data());
  }
  std::map<std::string, TensorData> out;
  for (const std::string& name : model.graph.outputs) {
    const TensorInfo& info = model.graph.value(name).info;
    const int64_t n = [&] {
      int64_t e = 1;
      for (int64_t d : info.shape) e *= d;
      return e;
    }();
    const AlignedBytes& b = values.at(name);
    std::vector<uint8_t> bytes(b.data(), b.data() + n * dtype_bytes(info.dtype));
    out.emplace(name, TensorData(info.dtype, info.shape, std::move(bytes), name));
  }
  return out;
}

std::string compare_tensors(const TensorData& got, const TensorData& want, double rtol, double atol) {
  if (got.shape() != want.shape())
    return "shape " + shape_string(got.shape()) + " instead of " + shape_string(want.shape());
  double scale = 0, worst = 0;
  int64_t at = -1;
  for (int64_t i = 0; i < want.num_elements(); ++i) scale = std::max(scale, std::abs(want.as_double(i)));
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.as_double(i), w = want.as_double(i);
    const double err = std::isnan(w) ? (std::isnan(g) ? 0 : INFINITY) : std::isnan(g) ? INFINITY : std::abs(g - w);
    if (err > worst || at < 0) {
      worst = err;
      at = i;
    }
  }
  if (worst <= rtol * scale + atol) return "";
  std::ostringstream msg;
  msg << "max |error| " << worst << " at element " << at << " (got " << got.as_double(at) << ", want "
      << want.as_double(at) << "), allowed " << rtol * scale + atol;
  return msg.str();
}

}  // namespace tessel_test
