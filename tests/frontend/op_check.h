// Checking ONNX op definitions on hand-built graphs: a small graph of one or a few nodes, its
// subgraph built in one SubgraphBuilder, and the result computed by the reference interpreter and
// by the default CPU schedule compiled with LLVM, each compared with values the test computes by
// its own loops from the ONNX spec.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/graph.h"
#include "frontend/subgraph_builder.h"
#include "schedule/te/dag.h"

namespace tessel_test {

// A dense row-major array in double: exact for float32 values and for int64 values below 2^53.
struct Array {
  tessel::DType dtype = tessel::DType::Float32;
  std::vector<int64_t> shape;
  std::vector<double> values;

  double& at(const std::vector<int64_t>& index);
  double at(const std::vector<int64_t>& index) const;
};

// An array of `shape` filled by f(index).
Array make_array(const std::vector<int64_t>& shape, const std::function<double(const std::vector<int64_t>&)>& f,
                 tessel::DType dtype = tessel::DType::Float32);
// Deterministic values uniform in [-1, 1), exact in float32.
Array random_array(const std::vector<int64_t>& shape, uint64_t seed);
Array int_array(const std::vector<int64_t>& shape, const std::vector<int64_t>& values);
// Calls f on every index of `shape` in row-major order.
void for_each_index(const std::vector<int64_t>& shape, const std::function<void(const std::vector<int64_t>&)>& f);

// A graph made by hand: runtime inputs with their values, constants, and nodes whose output values
// carry the shapes ONNX shape inference gives.
struct OpGraph {
  tessel::Graph graph;
  std::map<std::string, Array> feeds;  // runtime inputs and data constants, by value name

  explicit OpGraph(int64_t opset = 17) { graph.opset = opset; }
  OpGraph& input(const std::string& name, const Array& values);
  OpGraph& ints(const std::string& name, const std::vector<int64_t>& values, std::vector<int64_t> shape = {});
  OpGraph& floats(const std::string& name, const std::vector<float>& values, std::vector<int64_t> shape = {});
  // A node with its outputs' inferred shapes (Float32 unless `dtypes` says otherwise).
  OpGraph& node(const std::string& op_type, std::vector<std::string> inputs,
                std::vector<std::pair<std::string, std::vector<int64_t>>> outputs,
                std::map<std::string, tessel::Attribute> attributes = {}, std::vector<tessel::DType> dtypes = {});
};

struct Built {
  tessel::ComputeDAG dag;
  std::vector<std::string> input_values;  // the graph value of each placeholder, in order
};

// Every node of `g` built into `builder`: its outputs by value name. Runtime inputs and constants
// named in `data_constants` become placeholders; other constants are parameters (Reshape's shape,
// ...) that the ops read through OpContext. Throws InputError when an op refuses.
std::map<std::string, tessel::LazyTensor> build_nodes(const OpGraph& g, tessel::SubgraphBuilder& builder,
                                                      const std::set<std::string>& data_constants = {});
// The same, finished into one subgraph, with `output` as its result.
Built build_subgraph(const OpGraph& g, const std::string& output, const std::set<std::string>& data_constants = {});

// The DAG's output computed by the reference interpreter / by the default CPU schedule (LLVM).
std::vector<double> run_reference(const OpGraph& g, const Built& b);
std::vector<double> run_default_cpu(const OpGraph& g, const Built& b);

// The first value of `got` that differs from `want` (|got - want| <= 1e-5 * scale + 1e-4 * |want|,
// scale = max(1, max |want|)), as "[2, 3]: got 1.5, want 1.25", or "" when all agree.
std::string first_difference(const std::vector<double>& got, const Array& want);

// Builds `output` of `g`, and checks the interpreter's result and the compiled default schedule's
// against `want`. A DAG that reads integer tensors skips the interpreter while it cannot read them
// (the test warns).
void check_op(const OpGraph& g, const std::string& output, const Array& want,
              const std::set<std::string>& data_constants = {});
// The checks of check_op on a subgraph built otherwise (placeholders fed from g.feeds).
void check_built(const OpGraph& g, const Built& b, const Array& want);

}  // namespace tessel_test
