#include "frontend/fuse.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "schedule/te/error.h"

namespace tessel {
namespace {

// The node graph fusion works on: node n's out-edges go to the nodes that read its outputs, each
// with the pattern of that reading (the reader's kind, or Elementwise when a broadcast reader reads
// an input of its own output's shape, as TVM's IndexedForwardGraph marks it). Node `sink` stands for
// the model's outputs.
struct Edge {
  size_t to;
  OpPattern pattern;
};

struct NodeGraph {
  std::vector<OpPattern> kind;
  std::vector<std::vector<Edge>> out;
  size_t sink = 0;
};

NodeGraph node_graph(const Graph& graph, const std::function<OpPattern(const Node&)>& pattern_of) {
  NodeGraph g;
  const size_t n = graph.nodes.size();
  g.sink = n;
  g.kind.resize(n + 1, OpPattern::Opaque);
  g.out.resize(n + 1);
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < n; ++i) {
    g.kind[i] = pattern_of(graph.nodes[i]);
    for (const std::string& v : graph.nodes[i].outputs) producer[v] = i;
  }
  for (size_t i = 0; i < n; ++i) {
    const Node& node = graph.nodes[i];
    for (const std::string& v : node.inputs) {
      auto p = producer.find(v);
      if (v.empty() || p == producer.end()) continue;
      OpPattern edge = g.kind[i];
      if (edge == OpPattern::Broadcast && !node.outputs.empty() &&
          graph.value(v).info.shape == graph.value(node.outputs[0]).info.shape)
        edge = OpPattern::Elementwise;
      g.out[p->second].push_back(Edge{i, edge});
    }
  }
  // A value that is a model output, or that nothing reads, leaves the graph.
  for (size_t i = 0; i < n; ++i)
    for (const std::string& v : graph.nodes[i].outputs) {
      const bool model_output = std::find(graph.outputs.begin(), graph.outputs.end(), v) != graph.outputs.end();
      if (model_output || graph.consumers(v).empty()) g.out[i].push_back(Edge{g.sink, OpPattern::Opaque});
    }
  return g;
}

// The immediate post-dominator of every node and the combined pattern of the edges on the way to
// it (the worst kind of reading between a node and its post-dominator).
struct PostDominators {
  std::vector<size_t> parent;  // the sink's is itself
  std::vector<OpPattern> relation;
  std::vector<int> depth;
};

PostDominators post_dominators(const NodeGraph& g) {
  const size_t n = g.sink;
  PostDominators pd{std::vector<size_t>(n + 1, n), std::vector<OpPattern>(n + 1, OpPattern::Elementwise),
                    std::vector<int>(n + 1, 0)};
  auto combine = [](OpPattern a, OpPattern b) { return std::max(a, b); };
  // Nodes are topological, so walking them backwards visits every reader before its producer.
  for (size_t i = n; i-- > 0;) {
    size_t lca = g.out[i].empty() ? n : g.out[i][0].to;
    OpPattern relation = OpPattern::Elementwise;
    for (const Edge& e : g.out[i]) {
      size_t a = lca, b = e.to;
      OpPattern pattern = e.pattern;
      while (a != b) {
        if (pd.depth[a] < pd.depth[b]) {
          pattern = combine(pattern, pd.relation[b]);
          b = pd.parent[b];
        } else {
          relation = combine(relation, pd.relation[a]);
          a = pd.parent[a];
        }
      }
      lca = a;
      relation = combine(relation, pattern);
    }
    pd.parent[i] = lca;
    pd.relation[i] = relation;
    pd.depth[i] = lca == n ? 1 : pd.depth[lca] + 1;
  }
  return pd;
}

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n), size_(n, 1) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  // Joins a's group into b's (b's root stays the root, so the group keeps its master).
  void join(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    parent_[a] = b;
    size_[b] += size_[a];
  }
  size_t size(size_t x) { return size_[find(x)]; }

 private:
  std::vector<size_t> parent_, size_;
};

class Fuser {
 public:
  Fuser(const Graph& graph, const FuseOptions& options)
      : graph_(graph),
        options_(options),
        g_(node_graph(graph, options.pattern_of)),
        pd_(post_dominators(g_)),
        groups_(g_.sink),
        master_(g_.kind.begin(), g_.kind.end() - 1),
        anchors_(g_.sink) {
    for (size_t i = 0; i < g_.sink; ++i) anchors_[i] = g_.kind[i] == OpPattern::OutEwiseFusable ? 1 : 0;
  }

  std::vector<FusedGroup> run() {
    for (int phase = 0; phase < 2; ++phase)
      for (size_t i = 0; i < g_.sink; ++i) try_fuse(i, phase);
    return collect();
  }

 private:
  // TVM's rules, by the pattern of the node's group (its master) and the relation to the post-
  // dominator; injective nodes wait for phase 1, so that contractions finish taking their epilogues.
  void try_fuse(size_t i, int phase) {
    const size_t dom = pd_.parent[i];
    if (dom == g_.sink || groups_.find(i) == groups_.find(dom)) return;
    const OpPattern group = master_[groups_.find(i)];
    const OpPattern relation = pd_.relation[i];
    if (group == OpPattern::OutEwiseFusable) {
      if (phase == 0 && relation == OpPattern::Elementwise)
        commit_if(i, dom, [](OpPattern k, bool) { return k <= OpPattern::Broadcast; });
    } else if (group <= OpPattern::Broadcast) {
      if (relation <= OpPattern::Injective || relation == OpPattern::Reduction)
        commit_if(i, dom,
                  [](OpPattern k, bool sink) { return sink ? k != OpPattern::Opaque : k <= OpPattern::Injective; });
    } else if (group == OpPattern::Injective) {
      if (phase == 1) commit_if(i, dom, [](OpPattern k, bool) { return k <= OpPattern::Injective; });
    }
  }

  // Fuses every node on the paths from `src` to `dom` (and `dom`) into dom's group when each
  // satisfies `ok` and the group stays within the size limit.
  template <typename Condition>
  void commit_if(size_t src, size_t dom, Condition ok) {
    std::vector<size_t> path;
    std::vector<bool> seen(g_.sink + 1, false);
    std::vector<size_t> stack;
    for (const Edge& e : g_.out[src]) stack.push_back(e.to);
    while (!stack.empty()) {
      const size_t v = stack.back();
      stack.pop_back();
      if (seen[v]) continue;
      seen[v] = true;
      if (v == g_.sink) return;  // cannot happen below a post-dominator; refuse rather than guess
      if (!ok(g_.kind[v], v == dom)) return;
      path.push_back(v);
      if (v == dom) continue;
      for (const Edge& e : g_.out[v]) stack.push_back(e.to);
    }
    size_t total = groups_.size(dom);
    std::vector<size_t> roots;
    for (size_t v : path)
      if (groups_.find(v) != groups_.find(dom) && std::find(roots.begin(), roots.end(), groups_.find(v)) == roots.end())
        roots.push_back(groups_.find(v));
    if (groups_.find(src) != groups_.find(dom) &&
        std::find(roots.begin(), roots.end(), groups_.find(src)) == roots.end())
      roots.push_back(groups_.find(src));
    for (size_t r : roots) total += groups_.size(r);
    if (total > static_cast<size_t>(options_.max_nodes)) return;
    // One contraction or window per kernel: two convolutions joined by an add stay two kernels (the
    // schedules tile one contraction), the add joining one of them.
    const size_t root = groups_.find(dom);
    int anchors = anchors_[root];
    for (size_t r : roots) anchors += anchors_[r];
    if (anchors > 1) return;
    OpPattern master = master_[root];
    for (size_t r : roots) master = std::max(master, master_[r]);
    for (size_t v : path) groups_.join(v, dom);
    groups_.join(src, dom);
    master_[groups_.find(dom)] = master;
    anchors_[groups_.find(dom)] = anchors;
  }

  std::vector<FusedGroup> collect() {
    std::map<size_t, size_t> index;  // group root -> position in `out`
    std::vector<FusedGroup> out;
    for (size_t i = 0; i < g_.sink; ++i) {
      const size_t root = groups_.find(i);
      auto [it, fresh] = index.try_emplace(root, out.size());
      if (fresh) out.emplace_back();
      out[it->second].nodes.push_back(i);
    }
    // A group's outputs: values read by another group or leaving the model. Groups are listed by
    // their first node; a group whose inputs come from a group listed after it cannot happen for
    // fusion along post-dominators, but the order is checked when subgraphs are built.
    for (FusedGroup& group : out)
      for (size_t i : group.nodes)
        for (const std::string& v : graph_.nodes[i].outputs) {
          bool outside = std::find(graph_.outputs.begin(), graph_.outputs.end(), v) != graph_.outputs.end();
          for (size_t c : graph_.consumers(v)) outside = outside || groups_.find(c) != groups_.find(i);
          if (outside) group.outputs.push_back(v);
        }
    return out;
  }

  const Graph& graph_;
  const FuseOptions& options_;
  NodeGraph g_;
  PostDominators pd_;
  UnionFind groups_;
  std::vector<OpPattern> master_;  // by group root
  std::vector<int> anchors_;       // by group root: its OutEwiseFusable nodes
};

}  // namespace

std::vector<FusedGroup> fuse(const Graph& graph, const FuseOptions& options) {
  FuseOptions o = options;
  if (!o.pattern_of)
    o.pattern_of = [&graph](const Node& node) {
      const OpSpec* spec = find_op(node.op_type);
      if (!spec)
        throw InputError(node.where() + ": operator " + node.op_type + " (opset " + std::to_string(graph.opset) +
                         ") is not supported by tessel");
      return spec->pattern;
    };
  if (o.max_nodes < 1) throw InputError("the fusion limit must be at least 1 node");
  return Fuser(graph, o).run();
}

}  // namespace tessel
