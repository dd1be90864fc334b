#include "tests/frontend/op_check.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "codegen/llvm/llvm_backend.h"
#include "frontend/op_library.h"
#include "measure/cpu_kernel.h"
#include "schedule/interpreter/reference_interpreter.h"
#include "schedule/te/error.h"
#include "search/default_schedule.h"

using namespace tessel;

namespace tessel_test {
namespace {

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t flat_of(const std::vector<int64_t>& shape, const std::vector<int64_t>& index) {
  REQUIRE(index.size() == shape.size());
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    REQUIRE(index[d] >= 0);
    REQUIRE(index[d] < shape[d]);
    flat = flat * shape[d] + index[d];
  }
  return flat;
}

std::string index_text(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::ostringstream s;
  s << "[";
  for (size_t d = 0; d < idx.size(); ++d) s << (d ? ", " : "") << idx[d];
  s << "]";
  return s.str();
}

TensorData to_tensor_data(const Array& a) {
  switch (a.dtype) {
    case DType::Float32:
      return TensorData::of_floats(a.shape, std::vector<float>(a.values.begin(), a.values.end()));
    case DType::Int64:
      return TensorData::of_ints(a.shape, std::vector<int64_t>(a.values.begin(), a.values.end()));
    case DType::Bool: {
      std::vector<bool> b;
      for (double v : a.values) b.push_back(v != 0);
      return TensorData::of_bools(a.shape, b);
    }
  }
  return {};
}

// The values of the graph value behind each placeholder: a feed, or a constant's data.
const Array& feed_of(const OpGraph& g, const std::string& value) {
  auto it = g.feeds.find(value);
  if (it == g.feeds.end()) FAIL("no values for " << value);
  return it->second;
}

// Kernel buffers typed by each parameter's dtype (float32, int64, one byte per bool), 64-byte
// aligned as compiled kernels assume (LLVM may emit aligned vector loads from it), with a vector's
// worth of slack past the end as tessel's own host buffers have.
struct TypedBuffer {
  static constexpr size_t kAlignmentWords = 8;  // 64 bytes
  std::vector<uint64_t> words;
  void* data() {
    const auto address = reinterpret_cast<uintptr_t>(words.data());
    const size_t skip = (kAlignmentWords - address / 8 % kAlignmentWords) % kAlignmentWords;
    return words.data() + skip;
  }
};

TypedBuffer make_buffer(const BufferParam& p, const Array* values) {
  const int64_t n = num_elements(p);
  TypedBuffer b;
  b.words.assign(static_cast<size_t>(n + 16) + TypedBuffer::kAlignmentWords, 0);
  auto* f = static_cast<float*>(b.data());
  auto* i = static_cast<int64_t*>(b.data());
  auto* c = static_cast<uint8_t*>(b.data());
  for (int64_t k = 0; k < n; ++k) {
    // Outputs are poisoned: NaN, an unlikely integer, an invalid bool.
    const double v = values ? values->values[k] : NAN;
    if (p.dtype == DType::Float32)
      f[k] = static_cast<float>(v);
    else if (p.dtype == DType::Int64)
      i[k] = values ? static_cast<int64_t>(v) : INT64_MIN + 7;
    else
      c[k] = values ? static_cast<uint8_t>(v != 0) : 2;
  }
  return b;
}

std::vector<double> read_buffer(const BufferParam& p, TypedBuffer& b) {
  std::vector<double> out;
  for (int64_t k = 0; k < num_elements(p); ++k) {
    if (p.dtype == DType::Float32)
      out.push_back(static_cast<float*>(b.data())[k]);
    else if (p.dtype == DType::Int64)
      out.push_back(static_cast<double>(static_cast<int64_t*>(b.data())[k]));
    else
      out.push_back(static_cast<uint8_t*>(b.data())[k]);
  }
  return out;
}

}  // namespace

double& Array::at(const std::vector<int64_t>& index) { return values[flat_of(shape, index)]; }
double Array::at(const std::vector<int64_t>& index) const { return values[flat_of(shape, index)]; }

void for_each_index(const std::vector<int64_t>& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  const int64_t n = count_of(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

Array make_array(const std::vector<int64_t>& shape, const std::function<double(const std::vector<int64_t>&)>& f,
                 DType dtype) {
  Array a{dtype, shape, {}};
  for_each_index(shape, [&](const std::vector<int64_t>& i) { a.values.push_back(f(i)); });
  return a;
}

Array random_array(const std::vector<int64_t>& shape, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ULL + 1;
  return make_array(shape, [&](const std::vector<int64_t>&) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 40) / 8388608.0 - 1.0;
  });
}

Array int_array(const std::vector<int64_t>& shape, const std::vector<int64_t>& values) {
  REQUIRE(count_of(shape) == static_cast<int64_t>(values.size()));
  return Array{DType::Int64, shape, std::vector<double>(values.begin(), values.end())};
}

OpGraph& OpGraph::input(const std::string& name, const Array& values) {
  graph.set_value(Value{name, TensorInfo{values.dtype, values.shape}, std::nullopt});
  graph.inputs.push_back(name);
  feeds[name] = values;
  return *this;
}

OpGraph& OpGraph::ints(const std::string& name, const std::vector<int64_t>& values, std::vector<int64_t> shape) {
  if (shape.empty() && values.size() != 1) shape = {static_cast<int64_t>(values.size())};
  Array a = int_array(shape, values);
  graph.set_value(Value{name, TensorInfo{DType::Int64, shape}, to_tensor_data(a)});
  feeds[name] = a;
  return *this;
}

OpGraph& OpGraph::floats(const std::string& name, const std::vector<float>& values, std::vector<int64_t> shape) {
  if (shape.empty() && values.size() != 1) shape = {static_cast<int64_t>(values.size())};
  Array a{DType::Float32, shape, std::vector<double>(values.begin(), values.end())};
  graph.set_value(Value{name, TensorInfo{DType::Float32, shape}, to_tensor_data(a)});
  feeds[name] = a;
  return *this;
}

OpGraph& OpGraph::node(const std::string& op_type, std::vector<std::string> inputs,
                       std::vector<std::pair<std::string, std::vector<int64_t>>> outputs,
                       std::map<std::string, Attribute> attributes, std::vector<DType> dtypes) {
  Node n{op_type + "_" + std::to_string(graph.nodes.size()), op_type, std::move(inputs), {}, std::move(attributes)};
  for (size_t k = 0; k < outputs.size(); ++k) {
    n.outputs.push_back(outputs[k].first);
    if (outputs[k].first.empty()) continue;
    const DType dtype = k < dtypes.size() ? dtypes[k] : DType::Float32;
    graph.set_value(Value{outputs[k].first, TensorInfo{dtype, outputs[k].second}, std::nullopt});
  }
  graph.nodes.push_back(std::move(n));
  return *this;
}

std::map<std::string, LazyTensor> build_nodes(const OpGraph& g, SubgraphBuilder& builder,
                                              const std::set<std::string>& data_constants) {
  std::map<std::string, LazyTensor> made;
  for (const Node& node : g.graph.nodes) {
    const OpSpec* spec = find_op(node.op_type);
    if (!spec) throw InputError(node.where() + ": not in the op table");
    std::vector<LazyTensor> inputs;
    for (const std::string& name : node.inputs) {
      if (name.empty())
        inputs.emplace_back();
      else if (made.count(name))
        inputs.push_back(made.at(name));
      else if (!g.graph.is_constant(name) || data_constants.count(name))
        inputs.push_back(builder.input(name, g.graph.value(name).info));
      else
        inputs.emplace_back();  // a parameter: read through OpContext::constant_input
    }
    OpContext ctx{g.graph, node, builder};
    std::vector<LazyTensor> outs = spec->build(ctx, inputs);
    if (outs.size() != node.outputs.size()) throw InputError(node.where() + ": wrong number of outputs");
    for (size_t k = 0; k < outs.size(); ++k) made[node.outputs[k]] = outs[k];
  }
  return made;
}

Built build_subgraph(const OpGraph& g, const std::string& output, const std::set<std::string>& data_constants) {
  SubgraphBuilder builder;
  std::map<std::string, LazyTensor> made = build_nodes(g, builder, data_constants);
  Built b;
  b.dag = builder.finish(made.at(output));
  b.input_values = builder.input_values();
  return b;
}

std::vector<double> run_reference(const OpGraph& g, const Built& b) {
  HostTensors inputs;
  for (size_t k = 0; k < b.input_values.size(); ++k) {
    const Array& a = feed_of(g, b.input_values[k]);
    inputs["p" + std::to_string(k)] = std::vector<float>(a.values.begin(), a.values.end());
  }
  return evaluate_reference(b.dag, inputs).at(b.dag.ops().back().name);
}

std::vector<double> run_default_cpu(const OpGraph& g, const Built& b) {
  const Trace trace = default_schedule(b.dag, CpuTargetSpec{host_vector_lanes(), 2});
  CpuKernel kernel = build_cpu_kernel(b.dag, trace);
  std::vector<TypedBuffer> buffers;
  std::vector<void*> args;
  for (const BufferParam& p : kernel.func.params) {
    const int index = b.dag.index_of(p.name);
    const bool input = !p.is_output && index >= 0 && b.dag.ops()[index].is_placeholder;
    buffers.push_back(make_buffer(p, input ? &feed_of(g, b.input_values[std::stoul(p.name.substr(1))]) : nullptr));
  }
  for (TypedBuffer& buffer : buffers) args.push_back(buffer.data());
  kernel.kernel->run(args.data());
  const std::string& out = b.dag.ops().back().name;
  for (size_t k = 0; k < kernel.func.params.size(); ++k)
    if (kernel.func.params[k].name == out) return read_buffer(kernel.func.params[k], buffers[k]);
  FAIL("the kernel has no parameter " << out);
  return {};
}

std::string first_difference(const std::vector<double>& got, const Array& want) {
  if (got.size() != want.values.size())
    return "got " + std::to_string(got.size()) + " values, want " + std::to_string(want.values.size());
  double scale = 1;
  for (double w : want.values) scale = std::max(scale, std::fabs(w));
  for (size_t k = 0; k < got.size(); ++k) {
    const double g = got[k], w = want.values[k];
    if (std::fabs(g - w) <= 1e-5 * scale + 1e-4 * std::fabs(w)) continue;
    std::ostringstream s;
    s << index_text(want.shape, static_cast<int64_t>(k)) << ": got " << g << ", want " << w;
    return s.str();
  }
  return "";
}

void check_op(const OpGraph& g, const std::string& output, const Array& want,
              const std::set<std::string>& data_constants) {
  check_built(g, build_subgraph(g, output, data_constants), want);
}

void check_built(const OpGraph& g, const Built& b, const Array& want) {
  INFO(b.dag.to_text());
  REQUIRE(b.dag.ops().back().shape == (want.shape.empty() ? std::vector<int64_t>{1} : want.shape));
  REQUIRE(b.dag.ops().back().dtype == want.dtype);
  CHECK(first_difference(run_reference(g, b), want) == "");
  CHECK(first_difference(run_default_cpu(g, b), want) == "");
}

}  // namespace tessel_test
