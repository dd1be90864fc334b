// ComputeDAG validation, canonical printing and workload keys.
#include "schedule/te/dag.h"

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "schedule/te/checked_math.h"
#include "schedule/te/error.h"
#include "schedule/te/tensor_size.h"

namespace tessel {

const char* to_string(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::None: return "none";
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
  }
  return "?";
}

double reduce_init(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Max: return -std::numeric_limits<double>::infinity();
    case ReduceKind::Min: return std::numeric_limits<double>::infinity();
    default: return 0.0;
  }
}

int64_t Operation::num_elements() const {
  // ComputeDAG's constructor checked the sizes; this product cannot overflow for an op of a DAG.
  int64_t n = 1;
  for (int64_t e : shape) {
    std::optional<int64_t> next = checked_mul(n, e);
    TESSEL_CHECK(next.has_value(), "element count of " + name + " overflows int64");
    n = *next;
  }
  return n;
}

namespace {

void check_body(const Operation& op, const std::map<std::string, const Operation*>& known) {
  std::set<std::string> axis_names;
  for (const Axis& a : op.axes) axis_names.insert(a.name);
  for (const Axis& a : op.reduce_axes) axis_names.insert(a.name);
  for (const std::string& v : free_vars(op.body))
    if (!axis_names.count(v))
      throw InputError("operation " + op.name + ": body uses unknown axis '" + v + "'");
  std::function<void(const Expr&)> walk = [&](const Expr& e) {
    if (e->op == ExprOp::TensorRead) {
      auto it = known.find(e->name);
      if (it == known.end())
        throw InputError("operation " + op.name + " reads " + e->name + ", which is not defined before it");
      if (it->second->shape.size() != e->args.size())
        throw InputError("operation " + op.name + " reads " + e->name + " with " +
                         std::to_string(e->args.size()) + " indices; it has rank " +
                         std::to_string(it->second->shape.size()));
      if (e->type.dtype != it->second->dtype)
        throw InputError("operation " + op.name + " reads " + e->name + " as " + to_string(e->type.dtype) +
                         "; it holds " + to_string(it->second->dtype));
    }
    for (const Expr& a : e->args) walk(a);
  };
  walk(op.body);
}

}  // namespace

ComputeDAG::ComputeDAG(std::vector<Operation> ops) : ops_(std::move(ops)) {
  std::map<std::string, const Operation*> known;
  std::set<std::string> axis_names;
  for (const Operation& op : ops_) {
    if (op.name.empty()) throw InputError("an operation has no name");
    if (known.count(op.name)) throw InputError("two operations are named " + op.name);
    for (int64_t e : op.shape)
      if (e <= 0) throw InputError("operation " + op.name + " has a non-positive extent " + std::to_string(e));
    if (!op.is_placeholder) {
      if (!op.body) throw InputError("operation " + op.name + " has no body");
      if (op.axes.size() != op.shape.size())
        throw InputError("operation " + op.name + ": one axis per output dimension expected");
      for (size_t i = 0; i < op.axes.size(); ++i)
        if (op.axes[i].extent != op.shape[i])
          throw InputError("operation " + op.name + ": axis " + op.axes[i].name + " extent differs from shape");
      if ((op.reduce == ReduceKind::None) != op.reduce_axes.empty())
        throw InputError("operation " + op.name + ": reduction axes and reduce kind disagree");
      for (const Axis& a : op.axes)
        if (!axis_names.insert(a.name).second) throw InputError("axis name " + a.name + " is used twice");
      for (const Axis& a : op.reduce_axes) {
        if (a.extent <= 0) throw InputError("operation " + op.name + ": reduce axis " + a.name + " is empty");
        if (!axis_names.insert(a.name).second) throw InputError("axis name " + a.name + " is used twice");
      }
      if (int64_t depth = expr_depth(op.body); depth > kMaxExprDepth)
        throw InputError("operation " + op.name + ": its expression is " + std::to_string(depth) +
                         " levels deep; at most " + std::to_string(kMaxExprDepth) + " are allowed");
      check_body(op, known);
      if (op.body->type.dtype != op.dtype)
        throw InputError("operation " + op.name + " is " + to_string(op.dtype) + " but its body computes " +
                         to_string(op.body->type.dtype));
      if (op.reduce != ReduceKind::None && Type{op.dtype, 1}.is_half())
        throw InputError("operation " + op.name + " reduces in " + to_string(op.dtype) +
                         "; reductions accumulate in float32: cast the result in an operation after it");
    }
    check_operation_sizes(op);
    known[op.name] = &op;
  }
  if (outputs().empty()) throw InputError("the DAG computes nothing");
}

const Operation& ComputeDAG::op(const std::string& name) const {
  int i = index_of(name);
  if (i < 0) throw InputError("no tensor named " + name);
  return ops_[i];
}

int ComputeDAG::index_of(const std::string& name) const {
  for (size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> ComputeDAG::inputs() const {
  std::vector<std::string> out;
  for (const Operation& op : ops_)
    if (op.is_placeholder) out.push_back(op.name);
  return out;
}

std::vector<std::string> ComputeDAG::consumers(const std::string& name) const {
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

std::vector<std::string> ComputeDAG::outputs() const {
  std::vector<std::string> out;
  for (const Operation& op : ops_)
    if (!op.is_placeholder && consumers(op.name).empty()) out.push_back(op.name);
  return out;
}

double ComputeDAG::flops() const {
  double total = 0;
  for (const Operation& op : ops_) {
    if (op.is_placeholder) continue;
    double points = static_cast<double>(op.num_elements());
    for (const Axis& r : op.reduce_axes) points *= static_cast<double>(r.extent);
    int64_t per_point = 0;
    std::function<void(const Expr&)> count = [&](const Expr& e) {
      switch (e->op) {
        case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div:
        case ExprOp::Min: case ExprOp::Max: case ExprOp::Call:
          if (e->type.is_float()) ++per_point;
          break;
        default: break;
      }
      for (const Expr& a : e->args) count(a);
    };
    count(op.body);
    if (op.reduce != ReduceKind::None) ++per_point;  // the combine
    total += points * static_cast<double>(per_point);
  }
  return total;
}

std::string ComputeDAG::to_text() const {
  std::ostringstream out;
  auto dims = [](const std::vector<int64_t>& shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s;
  };
  for (const Operation& op : ops_) {
    if (op.is_placeholder) {
      out << op.name << " = placeholder(" << to_string(op.dtype) << "[" << dims(op.shape) << "])\n";
      continue;
    }
    out << op.name << "[";
    for (size_t i = 0; i < op.axes.size(); ++i)
      out << (i ? ", " : "") << op.axes[i].name << ":" << op.axes[i].extent;
    out << "] = ";
    if (op.reduce != ReduceKind::None) {
      out << to_string(op.reduce) << "(";
      for (size_t i = 0; i < op.reduce_axes.size(); ++i)
        out << (i ? ", " : "") << op.reduce_axes[i].name << ":" << op.reduce_axes[i].extent;
      out << "; " << to_string(op.body) << ")";
    } else {
      out << to_string(op.body);
    }
    out << "  : " << to_string(op.dtype) << "\n";
  }
  return out.str();
}

std::string ComputeDAG::workload_key() const {
  // FNV-1a 64 over the canonical text and the dtype signature: stable across runs and machines,
  // unlike std::hash.
  std::string text = to_text() + "|sig:";
  for (const Operation& op : ops_) text += to_string(op.dtype) + ",";
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace tessel
