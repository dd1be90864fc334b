#include "search/random_schedule.h"

#include <algorithm>
#include <random>

#include "schedule/lower/lower.h"
#include "schedule/te/error.h"
#include "search/schedule_patterns.h"

namespace tessel {

namespace {

class Generator {
 public:
  Generator(const ComputeDAG& dag, uint64_t seed, const CpuTargetSpec& target)
      : dag_(dag), rng_(seed), target_(target), b_(dag) {}

  Trace run() {
    choose_structure();
    choose_loops();
    choose_locations();
    return b_.trace();
  }

 private:
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& v) { return v[uniform(0, static_cast<int64_t>(v.size()) - 1)]; }

  bool apply(const Step& step) { return b_.apply(step); }
  const State& state() const { return b_.state(); }

  // A tile length for a loop of `extent`: a divisor, a power of two or any small number, so that
  // non-divisible factors are common.
  int64_t factor(int64_t extent) {
    int64_t cap = std::max<int64_t>(1, std::min<int64_t>(extent, 64));
    if (target_.vector_lanes <= cap && coin(0.15)) return target_.vector_lanes;
    switch (uniform(0, 2)) {
      case 0: {
        std::vector<int64_t> divisors;
        for (int64_t d = 1; d <= cap; ++d)
          if (extent % d == 0) divisors.push_back(d);
        return pick(divisors);
      }
      case 1: {
        std::vector<int64_t> powers;
        for (int64_t p = 1; p <= cap; p *= 2) powers.push_back(p);
        return pick(powers);
      }
      default: return uniform(1, cap);
    }
  }

  std::vector<std::string> compute_stages_reversed() const {
    std::vector<std::string> out;
    for (size_t i = state().ops().size(); i-- > 0;)
      if (!state().ops()[i].is_placeholder && state().stages()[i].loc != ComputeLoc::Inline)
        out.push_back(state().ops()[i].name);
    return out;
  }

  // Inlining, cache_write, rfactor and cache_read: the choices that add or remove stages.
  void choose_structure() {
    for (const std::string& name : compute_stages_reversed()) {
      const Operation op = state().op(name);  // a copy: every applied step replaces the state
      if (op.reduce == ReduceKind::None) {
        if (!state().is_output(name) && coin(0.5)) apply(compute_inline_step(name));
        continue;
      }
      if (coin(0.2)) {
        const Stage& s = state().stage(name);
        const IterVar& k = s.vars[s.num_spatial_roots + uniform(0, s.num_roots - s.num_spatial_roots - 1)];
        std::string loop = k.name;
        if (apply(split_step(name, loop, {factor(k.extent)}))) {
          const Stage& split = state().stage(name);
          std::string part = split.leaf_names()[split.leaf_position(loop + ".0") + uniform(0, 1)];
          int64_t axis = uniform(0, static_cast<int64_t>(op.axes.size()));
          apply(rfactor_step(name, part, axis));
        }
      } else if (coin(0.35)) {
        apply(cache_write_step(name, MemScope::Local));
      }
    }
    if (coin(0.15)) {
      std::vector<std::string> inputs = dag_.inputs();
      const std::string& input = pick(inputs);
      std::vector<std::string> readers = state().effective_consumers(input);
      if (readers.size() == 1 && state().consumers(input).size() == 1)
        apply(cache_read_step(input, MemScope::Local, readers));
    }
  }

  void choose_loops() {
    for (const std::string& name : compute_stages_reversed()) {
      for (const std::string& loop : state().stage(name).leaf_names()) {
        if (!coin(0.7)) continue;
        const Stage& s = state().stage(name);
        int64_t extent = s.vars[s.find_var(loop)].extent;
        std::vector<int64_t> factors;
        int levels = static_cast<int>(uniform(1, 3));
        int64_t remaining = extent;
        for (int l = 0; l < levels; ++l) {
          int64_t f = factor(remaining);
          factors.push_back(f);
          remaining = std::max<int64_t>(1, (remaining + f - 1) / f);
        }
        apply(split_step(name, loop, factors));
      }
      std::vector<std::string> leaves = state().stage(name).leaf_names();
      if (coin(0.6)) {
        std::shuffle(leaves.begin(), leaves.end(), rng_);
        apply(reorder_step(name, leaves));
      }
      leaves = state().stage(name).leaf_names();
      if (leaves.size() >= 2 && coin(0.3)) apply(fuse_step(name, {leaves[0], leaves[1]}));
      annotate(name);
    }
  }

  void annotate(const std::string& name) {
    std::vector<std::string> leaves = state().stage(name).leaf_names();
    if (coin(0.6)) apply(annotate_step(name, leaves.front(), Annotation::Parallel));
    if (leaves.size() > 1 && coin(0.2)) apply(annotate_step(name, leaves[1], Annotation::Parallel));
    if (coin(0.6)) apply(annotate_step(name, leaves.back(), Annotation::Vectorize));
    if (coin(0.3)) apply(annotate_step(name, pick(leaves), Annotation::Unroll));
    if (coin(0.3)) {
      static const std::vector<int64_t> steps = {0, 16, 64, 512};
      apply(pragma_step(name, leaves.front(), "auto_unroll_max_step", pick(steps)));
    }
    if (!state().is_output(name) && coin(0.1)) {
      int rank = static_cast<int>(state().op(name).shape.size());
      apply(storage_align_step(name, static_cast<int>(uniform(0, rank - 1)), uniform(1, 8) * 4, uniform(0, 3)));
    }
  }

  void choose_locations() {
    for (const std::string& name : compute_stages_reversed()) {
      if (state().is_output(name)) continue;
      std::vector<std::string> consumers = state().effective_consumers(name);
      if (consumers.empty()) continue;
      double p = name.find(".local") != std::string::npos ? 0.85 : 0.5;
      if (!coin(p)) continue;
      const std::string& target = pick(consumers);
      std::vector<std::string> loops = state().stage(target).leaf_names();
      // Prefer the loops sharing stages already attached, so multi-consumer stages can follow.
      apply(compute_at_step(name, target, pick(loops)));
    }
  }

  const ComputeDAG& dag_;
  std::mt19937_64 rng_;
  CpuTargetSpec target_;
  TraceBuilder b_;
};

}  // namespace

Trace random_schedule(const ComputeDAG& dag, uint64_t seed, const CpuTargetSpec& target) {
  for (uint64_t attempt = 0;; ++attempt) {
    Trace t = Generator(dag, seed * 0x9e3779b97f4a7c15ULL + attempt, target).run();
    try {
      lower(replay(dag, t), "check");
      return t;
    } catch (const ScheduleError&) {
      if (attempt > 50) return Trace{};  // the empty schedule always lowers
    }
  }
}

}  // namespace tessel
