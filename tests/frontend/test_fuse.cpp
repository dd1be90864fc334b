// Fusion (frontend/fuse.h) on hand-built graphs with TVM's rules: contractions take their elementwise
// epilogue, elementwise prologues join reductions, injective chains join injective consumers,
// reductions do not fuse forward, a node read by two groups stays its own kernel, and the size limit
// holds. Patterns are given by op type here, so the test does not depend on the op table.
#include <catch2/catch.hpp>
#include <map>

#include "frontend/fuse.h"

using namespace tessel;

namespace {

struct GraphMaker {
  Graph g;
  int count = 0;
  GraphMaker& input(const std::string& name, std::vector<int64_t> shape) {
    g.set_value(Value{name, TensorInfo{DType::Float32, shape}, std::nullopt});
    g.inputs.push_back(name);
    return *this;
  }
  // A node reading `inputs`, producing `output` of `shape`.
  GraphMaker& node(const std::string& op, std::vector<std::string> inputs, const std::string& output,
                   std::vector<int64_t> shape) {
    g.set_value(Value{output, TensorInfo{DType::Float32, shape}, std::nullopt});
    g.nodes.push_back(Node{op + std::to_string(count++), op, std::move(inputs), {output}, {}});
    return *this;
  }
  GraphMaker& output(const std::string& name) {
    g.outputs.push_back(name);
    return *this;
  }
};

OpPattern pattern(const Node& n) {
  static const std::map<std::string, OpPattern> kinds = {
      {"Conv", OpPattern::OutEwiseFusable}, {"MatMul", OpPattern::OutEwiseFusable}, {"Add", OpPattern::Broadcast},
      {"Mul", OpPattern::Broadcast},        {"Relu", OpPattern::Elementwise},       {"Exp", OpPattern::Elementwise},
      {"Softmax", OpPattern::Reduction},    {"ReduceMean", OpPattern::Reduction},   {"Sub", OpPattern::Broadcast},
      {"Reshape", OpPattern::Injective},    {"Transpose", OpPattern::Injective},    {"TopK", OpPattern::Opaque}};
  return kinds.at(n.op_type);
}

// Each group as its nodes' op types joined by '+'.
std::vector<std::string> groups_of(const Graph& g, int max_nodes = 256) {
  FuseOptions o;
  o.pattern_of = pattern;
  o.max_nodes = max_nodes;
  std::vector<std::string> out;
  for (const FusedGroup& group : fuse(g, o)) {
    std::string s;
    for (size_t i : group.nodes) s += (s.empty() ? "" : "+") + g.nodes[i].op_type;
    out.push_back(s);
  }
  return out;
}

}  // namespace

TEST_CASE("fuse: a convolution takes its bias, activation and residual add", "[frontend][fuse]") {
  GraphMaker m;
  m.input("x", {1, 8, 7, 7}).input("w", {8, 8, 3, 3}).input("b", {1, 8, 1, 1}).input("skip", {1, 8, 7, 7});
  m.node("Conv", {"x", "w"}, "c", {1, 8, 7, 7})
      .node("Add", {"c", "b"}, "cb", {1, 8, 7, 7})
      .node("Relu", {"cb"}, "r", {1, 8, 7, 7})
      .node("Add", {"r", "skip"}, "y", {1, 8, 7, 7})
      .node("Relu", {"y"}, "out", {1, 8, 7, 7})
      .output("out");
  CHECK(groups_of(m.g) == std::vector<std::string>{"Conv+Add+Relu+Add+Relu"});
  FuseOptions o;
  o.pattern_of = pattern;
  CHECK(fuse(m.g, o).front().outputs == std::vector<std::string>{"out"});
}

TEST_CASE("fuse: a softmax takes its elementwise prologue, and reductions do not fuse forward", "[frontend][fuse]") {
  GraphMaker m;
  m.input("s", {2, 7, 7}).input("mask", {1, 1, 7});
  m.node("Mul", {"s", "s"}, "scaled", {2, 7, 7})
      .node("Add", {"scaled", "mask"}, "masked", {2, 7, 7})
      .node("Softmax", {"masked"}, "p", {2, 7, 7})
      .node("ReduceMean", {"p"}, "m", {2, 7, 1})
      .node("Sub", {"p", "m"}, "d", {2, 7, 7})
      .output("d");
  // Sub reads the softmax and the mean: its own kernel (a reduction's epilogue stays out).
  CHECK(groups_of(m.g) == std::vector<std::string>{"Mul+Add+Softmax", "ReduceMean", "Sub"});
}

TEST_CASE("fuse: injective chains fuse, but not into a contraction", "[frontend][fuse]") {
  GraphMaker m;
  m.input("k", {1, 12, 7, 64}).input("q", {12, 61, 64});
  m.node("Reshape", {"k"}, "k2", {12, 7, 64})
      .node("Transpose", {"k2"}, "kt", {12, 64, 7})
      .node("MatMul", {"q", "kt"}, "s", {12, 61, 7})
      .node("Exp", {"s"}, "e", {12, 61, 7})
      .output("e");
  CHECK(groups_of(m.g) == std::vector<std::string>{"Reshape+Transpose", "MatMul+Exp"});
}

TEST_CASE("fuse: a node read by two kernels stays its own, and a diamond of elementwise ops fuses", "[frontend][fuse]") {
  GraphMaker m;
  m.input("x", {1, 8, 7, 7}).input("w1", {8, 8, 1, 1}).input("w2", {8, 8, 1, 1});
  m.node("Relu", {"x"}, "a", {1, 8, 7, 7})
      .node("Conv", {"a", "w1"}, "c1", {1, 8, 7, 7})
      .node("Conv", {"a", "w2"}, "c2", {1, 8, 7, 7})
      .node("Add", {"c1", "c2"}, "sum", {1, 8, 7, 7})
      .node("Exp", {"sum"}, "e1", {1, 8, 7, 7})
      .node("Relu", {"sum"}, "e2", {1, 8, 7, 7})
      .node("Add", {"e1", "e2"}, "out", {1, 8, 7, 7})
      .output("out");
  // The first Relu is read by both convolutions (kernels that take no prologue). Both convolutions
  // post-dominate into the Add, but a kernel holds one contraction: the first takes the Add and
  // its diamond (Exp and Relu joining again), the second stays a kernel of its own.
  CHECK(groups_of(m.g) == std::vector<std::string>{"Relu", "Conv+Add+Exp+Relu+Add", "Conv"});
}

TEST_CASE("fuse: an opaque op fuses with nothing, and the size limit holds", "[frontend][fuse]") {
  GraphMaker m;
  m.input("x", {61});
  std::string prev = "x";
  for (int i = 0; i < 9; ++i) {
    m.node("Relu", {prev}, "r" + std::to_string(i), {61});
    prev = "r" + std::to_string(i);
  }
  m.node("TopK", {prev}, "t", {61}).node("Exp", {"t"}, "out", {61}).output("out");
  std::vector<std::string> groups = groups_of(m.g, 4);
  for (const std::string& g : groups) CHECK(std::count(g.begin(), g.end(), '+') < 4);
  CHECK(std::find(groups.begin(), groups.end(), "TopK") != groups.end());
  CHECK(std::find(groups.begin(), groups.end(), "Exp") != groups.end());
  size_t relus = 0;
  for (const std::string& g : groups) relus += static_cast<size_t>(std::count(g.begin(), g.end(), 'R'));
  CHECK(relus == 9);
}
