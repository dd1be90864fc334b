// State construction, extent derivation and loop-variable values.
#include "schedule/state/state.h"

#include <algorithm>
#include <sstream>

#include "schedule/te/error.h"

namespace tessel {

const char* to_string(Annotation a) {
  switch (a) {
    case Annotation::None: return "none";
    case Annotation::Parallel: return "parallel";
    case Annotation::Vectorize: return "vectorize";
    case Annotation::Unroll: return "unroll";
    case Annotation::BlockX: return "blockIdx.x";
    case Annotation::BlockY: return "blockIdx.y";
    case Annotation::BlockZ: return "blockIdx.z";
    case Annotation::VThread: return "vthread";
    case Annotation::ThreadX: return "threadIdx.x";
    case Annotation::ThreadY: return "threadIdx.y";
    case Annotation::ThreadZ: return "threadIdx.z";
  }
  return "?";
}

bool is_gpu_binding(Annotation a) { return a >= Annotation::BlockX; }

int Stage::find_var(const std::string& var_name) const {
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i].name == var_name) return static_cast<int>(i);
  return -1;
}

int Stage::leaf_position(const std::string& var_name) const {
  for (size_t i = 0; i < leaves.size(); ++i)
    if (vars[leaves[i]].name == var_name) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> Stage::leaf_names() const {
  std::vector<std::string> out;
  for (int l : leaves) out.push_back(vars[l].name);
  return out;
}

Stage make_stage(const Operation& op) {
  Stage s;
  s.name = op.name;
  for (const Axis& a : op.axes) s.vars.push_back({a.name, IterKind::Spatial, a.extent});
  for (const Axis& a : op.reduce_axes) s.vars.push_back({a.name, IterKind::Reduce, a.extent});
  s.num_spatial_roots = static_cast<int>(op.axes.size());
  s.num_roots = static_cast<int>(s.vars.size());
  for (int i = 0; i < s.num_roots; ++i) s.leaves.push_back(i);
  return s;
}

State::State(const ComputeDAG& dag) : ops_(dag.ops()) {
  for (const Operation& op : ops_) stages_.push_back(make_stage(op));
}

int State::stage_index(const std::string& name) const {
  for (size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i].name == name) return static_cast<int>(i);
  return -1;
}

const Operation& State::op(const std::string& name) const {
  int i = stage_index(name);
  TESSEL_CHECK(i >= 0, "no stage " + name);
  return ops_[i];
}

const Stage& State::stage(const std::string& name) const {
  int i = stage_index(name);
  TESSEL_CHECK(i >= 0, "no stage " + name);
  return stages_[i];
}

Operation& State::mutable_op(const std::string& name) {
  int i = stage_index(name);
  TESSEL_CHECK(i >= 0, "no stage " + name);
  return ops_[i];
}

Stage& State::mutable_stage(const std::string& name) {
  int i = stage_index(name);
  TESSEL_CHECK(i >= 0, "no stage " + name);
  return stages_[i];
}

void State::insert_stage(int position, Operation op, Stage stage) {
  ops_.insert(ops_.begin() + position, std::move(op));
  stages_.insert(stages_.begin() + position, std::move(stage));
}

std::vector<std::string> State::consumers(const std::string& name) const {
  std::vector<std::string> out;
  for (const Operation& op : ops_) {
    if (op.is_placeholder) continue;
    for (const std::string& t : tensors_read(op.body))
      if (t == name) {
        out.push_back(op.name);
        break;
      }
  }
  return out;
}

std::vector<std::string> State::effective_consumers(const std::string& name) const {
  std::vector<std::string> out;
  for (const std::string& c : consumers(name)) {
    if (stage(c).loc != ComputeLoc::Inline) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
      continue;
    }
    for (const std::string& d : effective_consumers(c))
      if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  return out;
}

std::vector<std::string> State::outputs() const {
  std::vector<std::string> out;
  for (const Operation& op : ops_)
    if (!op.is_placeholder && consumers(op.name).empty()) out.push_back(op.name);
  return out;
}

bool State::is_output(const std::string& name) const {
  for (const std::string& o : outputs())
    if (o == name) return true;
  return false;
}

std::string State::to_string() const {
  std::ostringstream out;
  for (size_t i = 0; i < stages_.size(); ++i) {
    const Stage& s = stages_[i];
    if (ops_[i].is_placeholder) continue;
    out << "stage " << s.name;
    if (s.loc == ComputeLoc::Inline) out << " (inlined)";
    if (s.loc == ComputeLoc::At) out << " (at " << s.attach_stage << "." << s.attach_loop << ")";
    if (s.scope != MemScope::Global) out << " [" << tessel::to_string(s.scope) << "]";
    out << ":";
    for (int l : s.leaves) {
      const IterVar& v = s.vars[l];
      out << " " << v.name << (v.kind == IterKind::Reduce ? "(r)" : "") << ":" << v.extent;
      if (v.annotation != Annotation::None) out << "@" << tessel::to_string(v.annotation);
    }
    for (const PrefetchHint& p : s.prefetches) out << "; prefetch " << p.tensor << " in " << p.loop << " +" << p.offset;
    if (!s.tensorize_loop.empty()) out << "; tensorized at " << s.tensorize_loop;
    if (!s.double_buffer_loop.empty()) {
      out << "; " << (s.pipeline_stages == 2 ? std::string("double-buffered") : std::to_string(s.pipeline_stages) + " copies")
          << " in " << s.double_buffer_loop;
    }
    if (s.swizzle) out << "; swizzled";
    out << "\n";
  }
  return out.str();
}

void derive_extents(Stage& stage, const std::vector<int64_t>& root_extents) {
  TESSEL_CHECK(static_cast<int>(root_extents.size()) == stage.num_roots, "root extent count mismatch");
  for (int i = 0; i < stage.num_roots; ++i) stage.vars[i].extent = root_extents[i];
  for (const Relation& r : stage.relations) {
    if (r.kind == Relation::Kind::Split) {
      int64_t inner = 1;
      for (int64_t l : r.lengths) inner *= l;
      // The schedule limits keep every product here below 2^62 (schedule_limits.h).
      int64_t parent = stage.vars[r.parents[0]].extent;
      stage.vars[r.children[0]].extent = parent / inner + (parent % inner != 0 ? 1 : 0);
      for (size_t k = 0; k < r.lengths.size(); ++k) stage.vars[r.children[k + 1]].extent = r.lengths[k];
    } else {
      int64_t product = 1;
      for (int p : r.parents) product *= stage.vars[p].extent;
      stage.vars[r.children[0]].extent = product;
    }
  }
}

std::vector<Expr> var_values(const Stage& stage, const std::vector<std::string>& leaf_names) {
  std::vector<Expr> value(stage.vars.size());
  for (size_t i = 0; i < stage.leaves.size(); ++i) value[stage.leaves[i]] = make_var(leaf_names[i]);
  // Walk relations from the newest back: a relation's outputs are known once everything created
  // after it has been resolved.
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    const Relation& r = *it;
    if (r.kind == Relation::Kind::Split) {
      Expr v = value[r.children[0]];
      for (size_t k = 0; k < r.lengths.size(); ++k) v = v * make_int(r.lengths[k]) + value[r.children[k + 1]];
      value[r.parents[0]] = v;
    } else {
      Expr fused = value[r.children[0]];
      // fused = ((p0 * e1 + p1) * e2 + p2)...: peel from the innermost parent outwards.
      int64_t stride = 1;
      for (size_t k = r.parents.size(); k-- > 0;) {
        int64_t e = stage.vars[r.parents[k]].extent;
        Expr q = stride == 1 ? fused : fused / make_int(stride);
        value[r.parents[k]] = k == 0 ? q : q % make_int(e);
        stride *= e;
      }
    }
  }
  for (size_t i = 0; i < value.size(); ++i)
    TESSEL_CHECK(value[i] != nullptr || static_cast<int>(i) >= stage.num_roots,
                 "root var " + stage.vars[i].name + " of " + stage.name + " has no value");
  return value;
}

}  // namespace tessel
