// Step descriptions, constructors, the common checks and the atomic apply_step dispatcher.
#include "schedule/state/step.h"

#include <sstream>

#include "schedule/state/schedule_limits.h"
#include "schedule/state/step_internal.h"
#include "schedule/te/error.h"

namespace tessel {

const char* to_string(StepKind kind) {
  switch (kind) {
    case StepKind::Split: return "split";
    case StepKind::Fuse: return "fuse";
    case StepKind::Reorder: return "reorder";
    case StepKind::ComputeAt: return "compute_at";
    case StepKind::ComputeInline: return "compute_inline";
    case StepKind::ComputeRoot: return "compute_root";
    case StepKind::CacheRead: return "cache_read";
    case StepKind::CacheWrite: return "cache_write";
    case StepKind::RFactor: return "rfactor";
    case StepKind::Annotate: return "annotate";
    case StepKind::Pragma: return "pragma";
    case StepKind::StorageAlign: return "storage_align";
    case StepKind::SetScope: return "set_scope";
    case StepKind::Prefetch: return "prefetch";
    case StepKind::Tensorize: return "tensorize";
    case StepKind::StorageSwizzle: return "storage_swizzle";
  }
  return "?";
}

namespace {
template <typename T>
std::string join(const std::vector<T>& items) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << items[i];
  out << "]";
  return out.str();
}
}  // namespace

std::string Step::describe() const {
  std::ostringstream out;
  out << to_string(kind) << "(" << stage;
  switch (kind) {
    case StepKind::Split: out << ", " << loop << ", " << join(factors); break;
    case StepKind::Fuse: case StepKind::Reorder: out << ", " << join(loops); break;
    case StepKind::ComputeAt: out << ", " << target_stage << ", " << target_loop; break;
    case StepKind::ComputeInline: case StepKind::ComputeRoot: break;
    case StepKind::CacheRead: out << ", " << to_string(scope) << ", " << join(loops); break;
    case StepKind::CacheWrite: out << ", " << to_string(scope); break;
    case StepKind::RFactor: out << ", " << loop << ", " << value; break;
    case StepKind::Annotate: out << ", " << loop << ", " << to_string(annotation); break;
    case StepKind::Pragma: out << ", " << loop << ", " << pragma << "=" << value; break;
    case StepKind::StorageAlign: out << ", " << axis << ", " << value << ", " << offset; break;
    case StepKind::SetScope: out << ", " << to_string(scope); break;
    case StepKind::Prefetch: out << ", " << loop << ", " << tensor << ", " << value; break;
    case StepKind::Tensorize: out << ", " << loop; break;
    case StepKind::StorageSwizzle: break;
  }
  out << ")";
  return out.str();
}

Step split_step(const std::string& stage, const std::string& loop, std::vector<int64_t> factors) {
  Step s{StepKind::Split, stage, loop};
  s.factors = std::move(factors);
  return s;
}
Step fuse_step(const std::string& stage, std::vector<std::string> loops) {
  Step s{StepKind::Fuse, stage};
  s.loops = std::move(loops);
  return s;
}
Step reorder_step(const std::string& stage, std::vector<std::string> order) {
  Step s{StepKind::Reorder, stage};
  s.loops = std::move(order);
  return s;
}
Step compute_at_step(const std::string& stage, const std::string& target, const std::string& loop) {
  Step s{StepKind::ComputeAt, stage};
  s.target_stage = target;
  s.target_loop = loop;
  return s;
}
Step compute_inline_step(const std::string& stage) { return Step{StepKind::ComputeInline, stage}; }
Step compute_root_step(const std::string& stage) { return Step{StepKind::ComputeRoot, stage}; }
Step cache_read_step(const std::string& tensor, MemScope scope, std::vector<std::string> readers) {
  Step s{StepKind::CacheRead, tensor};
  s.scope = scope;
  s.loops = std::move(readers);
  return s;
}
Step cache_write_step(const std::string& stage, MemScope scope) {
  Step s{StepKind::CacheWrite, stage};
  s.scope = scope;
  return s;
}
Step rfactor_step(const std::string& stage, const std::string& loop, int64_t factor_axis) {
  Step s{StepKind::RFactor, stage, loop};
  s.value = factor_axis;
  return s;
}
Step annotate_step(const std::string& stage, const std::string& loop, Annotation annotation) {
  Step s{StepKind::Annotate, stage, loop};
  s.annotation = annotation;
  return s;
}
Step pragma_step(const std::string& stage, const std::string& loop, const std::string& pragma, int64_t value) {
  Step s{StepKind::Pragma, stage, loop};
  s.pragma = pragma;
  s.value = value;
  return s;
}
Step storage_swizzle_step(const std::string& stage) { return Step{StepKind::StorageSwizzle, stage}; }
Step storage_align_step(const std::string& stage, int axis, int64_t factor, int64_t offset) {
  Step s{StepKind::StorageAlign, stage};
  s.axis = axis;
  s.value = factor;
  s.offset = offset;
  return s;
}

Step set_scope_step(const std::string& stage, MemScope scope) {
  Step s{StepKind::SetScope, stage};
  s.scope = scope;
  return s;
}

Step prefetch_step(const std::string& stage, const std::string& loop, const std::string& tensor, int64_t offset) {
  Step s{StepKind::Prefetch, stage, loop};
  s.tensor = tensor;
  s.value = offset;
  return s;
}

Step tensorize_step(const std::string& stage, const std::string& loop) {
  return Step{StepKind::Tensorize, stage, loop};
}

std::string cache_stage_name(const std::string& tensor, MemScope scope) {
  return tensor + "." + to_string(scope);
}
std::string rfactor_stage_name(const std::string& stage) { return stage + ".rf"; }

namespace step_internal {

Stage& schedulable_stage(State& state, const std::string& name) {
  int i = state.stage_index(name);
  if (i < 0) reject("no stage named '" + name + "'");
  if (state.ops()[i].is_placeholder) reject("'" + name + "' is an input, not a computed stage");
  Stage& s = state.mutable_stage(name);
  if (s.loc == ComputeLoc::Inline) reject("stage '" + name + "' is inlined and has no loops");
  return s;
}

int leaf_position(const Stage& stage, const std::string& loop) {
  int p = stage.leaf_position(loop);
  if (p >= 0) return p;
  std::string loops;
  for (const std::string& n : stage.leaf_names()) loops += (loops.empty() ? "" : ", ") + n;
  if (stage.find_var(loop) >= 0)
    reject("loop '" + loop + "' of stage " + stage.name + " was split or fused away; its loops are: " + loops);
  reject("stage " + stage.name + " has no loop '" + loop + "'; its loops are: " + loops);
}

std::string fresh_var_name(const Stage& stage, const std::string& base) {
  if (stage.find_var(base) < 0) return base;
  for (int k = 1;; ++k) {
    std::string name = base + "_" + std::to_string(k);
    if (stage.find_var(name) < 0) return name;
  }
}

void require_nothing_attached(const State& state, const std::string& stage, const std::string& why) {
  for (const Stage& s : state.stages())
    if (s.loc == ComputeLoc::At && s.attach_stage == stage)
      reject("stage " + s.name + " is computed at " + stage + "." + s.attach_loop + "; " + why);
}

void require_no_prefetch_in(const Stage& stage, const std::string& loop, const std::string& why) {
  for (const PrefetchHint& p : stage.prefetches)
    if (p.loop == loop)
      reject("loop '" + loop + "' of stage " + stage.name + " issues a prefetch of " + p.tensor + "; " + why);
}

}  // namespace step_internal

void apply_step(State& state, const Step& step, int index) {
  using namespace step_internal;
  State next = state;  // apply to a copy so a rejected step leaves `state` unchanged
  try {
    switch (step.kind) {
      case StepKind::Split: apply_split(next, step); break;
      case StepKind::Fuse: apply_fuse(next, step); break;
      case StepKind::Reorder: apply_reorder(next, step); break;
      case StepKind::ComputeAt: apply_compute_at(next, step); break;
      case StepKind::ComputeInline: apply_compute_inline(next, step); break;
      case StepKind::ComputeRoot: apply_compute_root(next, step); break;
      case StepKind::CacheRead: apply_cache_read(next, step); break;
      case StepKind::CacheWrite: apply_cache_write(next, step); break;
      case StepKind::RFactor: apply_rfactor(next, step); break;
      case StepKind::Annotate: apply_annotate(next, step); break;
      case StepKind::Pragma: apply_pragma(next, step); break;
      case StepKind::StorageAlign: apply_storage_align(next, step); break;
      case StepKind::SetScope: apply_set_scope(next, step); break;
      case StepKind::Prefetch: apply_prefetch(next, step); break;
      case StepKind::Tensorize: apply_tensorize(next, step); break;
      case StepKind::StorageSwizzle: apply_storage_swizzle(next, step); break;
    }
    if (std::string why = state_limit_violation(next); !why.empty()) reject(why);
  } catch (const Rejected& r) {
    throw ScheduleError(index, step.describe(), r.reason);
  }
  state = std::move(next);
}

}  // namespace tessel
