#include "search/sketch.h"

#include <algorithm>

#include "schedule/te/error.h"

namespace tessel {

const char* to_string(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::Tile: return "tile";
    case DecisionKind::Unroll: return "unroll";
    case DecisionKind::ComputeLocation: return "compute_location";
    case DecisionKind::Parallel: return "parallel";
    case DecisionKind::ThreadBinding: return "thread_binding";
    case DecisionKind::Vector: return "vector";
    case DecisionKind::Structure: return "structure";
  }
  return "?";
}

namespace {

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// One inner length for what is left of a loop: a divisor, a power of two, a preferred length or
// any small number, so that non-divisible lengths are common but not the rule.
int64_t sample_length(std::mt19937_64& rng, int64_t remaining, const std::vector<int64_t>& preferred) {
  std::vector<int64_t> fitting;
  for (int64_t p : preferred)
    if (p <= remaining) fitting.push_back(p);
  double r = std::uniform_real_distribution<double>(0, 1)(rng);
  if (!fitting.empty() && r < 0.4) return fitting[uniform(rng, 0, static_cast<int64_t>(fitting.size()) - 1)];
  // Ansor's limit on an inner tile length: longer ones only make unrolled code huge.
  const int64_t cap = std::min<int64_t>(remaining, 64);
  if (r < 0.65) {
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= cap; ++d)
      if (remaining % d == 0) divisors.push_back(d);
    return divisors[uniform(rng, 0, static_cast<int64_t>(divisors.size()) - 1)];
  }
  if (r < 0.85) {
    std::vector<int64_t> powers;
    for (int64_t p = 1; p <= cap; p *= 2) powers.push_back(p);
    return powers[uniform(rng, 0, static_cast<int64_t>(powers.size()) - 1)];
  }
  return uniform(rng, 1, std::min<int64_t>(cap, 64));
}

}  // namespace

std::vector<int64_t> sample_tile(std::mt19937_64& rng, int64_t extent, int levels,
                                 const std::vector<int64_t>& preferred) {
  // Innermost first: the register / vector level matters most and gets the preferred lengths.
  std::vector<int64_t> lengths(static_cast<size_t>(levels), 1);
  int64_t remaining = std::max<int64_t>(1, extent);
  for (int l = levels - 1; l >= 0; --l) {
    lengths[static_cast<size_t>(l)] = sample_length(rng, remaining, l == levels - 1 ? preferred : std::vector<int64_t>{});
    remaining = (remaining + lengths[static_cast<size_t>(l)] - 1) / lengths[static_cast<size_t>(l)];
  }
  return lengths;
}

Decider::Decider(uint64_t seed, std::vector<TraceDecision> given) : rng_(seed), given_(std::move(given)) {}

const TraceDecision* Decider::given(const std::string& name) const {
  for (const TraceDecision& d : given_)
    if (d.name == name) return &d;
  return nullptr;
}

void Decider::record(DecisionSpace space, std::vector<int64_t> values) {
  for (const TraceDecision& d : made_)
    TESSEL_CHECK(d.name != space.name, "sketch asked for decision " + space.name + " twice");
  made_.push_back({space.name, std::move(values)});
  spaces_.push_back(std::move(space));
}

std::vector<int64_t> Decider::tile(const std::string& name, int64_t extent, int levels, DecisionKind kind,
                                   std::vector<int64_t> preferred) {
  std::vector<int64_t> values;
  // Given lengths fit when each is at most what the levels inside it leave (the rule sampling follows).
  if (const TraceDecision* g = given(name); g && static_cast<int>(g->values.size()) == levels) {
    bool fits = true;
    int64_t remaining = std::max<int64_t>(1, extent);
    for (size_t l = g->values.size(); l-- > 0;) {
      int64_t v = g->values[l];
      fits = fits && v >= 1 && v <= remaining;
      if (!fits) break;
      remaining = (remaining + v - 1) / v;
    }
    if (fits) values = g->values;
  }
  if (values.empty()) values = sample_tile(rng_, extent, levels, preferred);
  record(DecisionSpace{name, kind, extent, levels, std::move(preferred), {}}, values);
  return values;
}

int64_t Decider::choose(const std::string& name, const std::vector<int64_t>& options, DecisionKind kind) {
  TESSEL_CHECK(!options.empty(), "decision " + name + " has no options");
  int64_t value = options[uniform(rng_, 0, static_cast<int64_t>(options.size()) - 1)];
  if (const TraceDecision* g = given(name); g && g->values.size() == 1 &&
                                            std::find(options.begin(), options.end(), g->values[0]) != options.end())
    value = g->values[0];
  record(DecisionSpace{name, kind, 0, 0, {}, options}, {value});
  return value;
}

SketchResult apply_sketch(const Sketch& sketch, const ComputeDAG& dag, Decider& decider) {
  TraceBuilder builder(dag);
  sketch.build(decider, builder);
  SketchResult result{builder.trace(), decider.spaces()};
  result.trace.sketch = sketch.name;
  result.trace.decisions = decider.decisions();
  return result;
}

}  // namespace tessel
