#include "search/search_policy.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "schedule/te/error.h"
#include "schedule/te/parallel.h"
#include "search/gpu_schedule.h"

namespace tessel {

namespace {

// Decisions are named "<stage>/<loop>" (tiles) or "<stage>.<what>": crossover swaps whole stages.
std::string stage_of(const std::string& decision) {
  size_t slash = decision.find('/');
  if (slash != std::string::npos) return decision.substr(0, slash);
  size_t dot = decision.rfind('.');
  return dot == std::string::npos ? decision : decision.substr(0, dot);
}

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      out.push_back(p);
      n /= p;
    }
  if (n > 1) out.push_back(n);
  return out;
}

}  // namespace

SearchPolicy::SearchPolicy(const ComputeDAG& dag, const SearchTarget& target, const SearchOptions& options,
                           uint64_t seed)
    : dag_(dag),
      target_(target),
      options_(options),
      rng_(seed),
      sketches_(target.gpu ? gpu_sketches(dag, target.gpu_spec) : cpu_sketches(dag, target.cpu)) {
  if (options_.strategy != "evolution" && options_.strategy != "random")
    throw InputError("search strategy '" + options_.strategy + "' is not 'evolution' or 'random'");
  if (options_.population < 2) throw InputError("search population must be at least 2");
}

std::optional<ProgramFeatures> SearchPolicy::features(const Trace& trace) const {
  FeatureTarget target;
  target.gpu = target_.gpu;
  target.gpu_limits.max_threads_per_block = target_.gpu_spec.max_threads_per_block;
  target.gpu_limits.max_shared_bytes = shared_limit(target_.gpu_spec, trace);
  try {
    return features_of_schedule(dag_, trace, target);
  } catch (const Error&) {
    // Does not apply, lower or fit the target (ScheduleError), or trips an internal check of
    // lowering (CompileError): not a candidate, and not a reason to end a long session.
    return std::nullopt;
  }
}

std::optional<SketchResult> SearchPolicy::apply(const Sketch& sketch, std::vector<TraceDecision> decisions) {
  Decider decider(rng_(), std::move(decisions));
  try {
    return apply_sketch(sketch, dag_, decider);
  } catch (const ScheduleError&) {
    return std::nullopt;  // a sketch that cannot build this DAG with these decisions
  }
}

const Sketch* SearchPolicy::sketch_named(const std::string& name) const {
  for (const Sketch& s : sketches_)
    if (s.name == name) return &s;
  return nullptr;
}

std::optional<SketchResult> SearchPolicy::fresh() {
  const Sketch& s = sketches_[std::uniform_int_distribution<size_t>(0, sketches_.size() - 1)(rng_)];
  return apply(s, {});
}

std::optional<SketchResult> SearchPolicy::mutate(const Individual& parent) {
  const Sketch* sketch = sketch_named(parent.schedule.trace.sketch);
  const std::vector<DecisionSpace>& spaces = parent.schedule.spaces;
  if (!sketch || spaces.empty()) return std::nullopt;
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); };
  std::vector<TraceDecision> decisions = parent.schedule.trace.decisions;
  size_t i = static_cast<size_t>(uniform(0, static_cast<int64_t>(spaces.size()) - 1));
  const DecisionSpace& space = spaces[i];
  std::vector<int64_t>& v = decisions[i].values;
  if (!space.options.empty()) {
    std::vector<int64_t> others;
    for (int64_t o : space.options)
      if (o != v[0]) others.push_back(o);
    if (others.empty()) return std::nullopt;
    v[0] = others[static_cast<size_t>(uniform(0, static_cast<int64_t>(others.size()) - 1))];
  } else {
    size_t level = static_cast<size_t>(uniform(0, space.levels - 1));
    switch (uniform(0, 2)) {
      case 0: {  // move a prime factor to another level (or to the outer loop)
        std::vector<int64_t> primes = prime_factors(v[level]);
        if (primes.empty()) {
          v[level] = 2;
          break;
        }
        int64_t p = primes[static_cast<size_t>(uniform(0, static_cast<int64_t>(primes.size()) - 1))];
        v[level] /= p;
        size_t to = static_cast<size_t>(uniform(0, space.levels));  // == levels: the outer loop
        if (to < v.size() && to != level) v[to] *= p;
        break;
      }
      case 1:  // double or halve
        v[level] = uniform(0, 1) ? v[level] * 2 : std::max<int64_t>(1, v[level] / 2);
        break;
      default:  // a fresh length for this level, any length (non-divisible ones included)
        v[level] = sample_tile(rng_, space.extent, space.levels, space.preferred)[level];
    }
  }
  std::optional<SketchResult> child = apply(*sketch, std::move(decisions));
  if (child && trace_steps_key(child->trace) == parent.key) return std::nullopt;
  return child;
}

std::optional<SketchResult> SearchPolicy::crossover(const Individual& a, const Individual& b) {
  if (a.schedule.trace.sketch != b.schedule.trace.sketch) return std::nullopt;
  const Sketch* sketch = sketch_named(a.schedule.trace.sketch);
  if (!sketch) return std::nullopt;
  std::map<std::string, bool> from_b;  // per stage: whose decisions the child takes
  std::vector<TraceDecision> decisions;
  for (const TraceDecision& d : a.schedule.trace.decisions) {
    std::string stage = stage_of(d.name);
    if (!from_b.count(stage)) from_b[stage] = std::uniform_int_distribution<int>(0, 1)(rng_) == 1;
    const TraceDecision* chosen = &d;
    if (from_b[stage])
      for (const TraceDecision& e : b.schedule.trace.decisions)
        if (e.name == d.name) chosen = &e;
    decisions.push_back(*chosen);
  }
  return apply(*sketch, std::move(decisions));
}

std::vector<std::optional<ProgramFeatures>> SearchPolicy::features(const std::vector<const Trace*>& traces) const {
  std::vector<std::optional<ProgramFeatures>> out(traces.size());
  // An exception here is not a schedule problem (out of memory, a bug): the caller's to handle.
  parallel_indices(traces.size(), [&](size_t i) { out[i] = features(*traces[i]); });
  return out;
}

std::vector<SearchPolicy::Individual> SearchPolicy::evaluate(std::vector<SketchResult> schedules,
                                                             std::unordered_set<std::string>& seen) {
  std::vector<Individual> todo;
  std::vector<const Trace*> traces;
  for (SketchResult& s : schedules) {
    std::string key = trace_steps_key(s.trace);
    if (seen.insert(key).second) todo.push_back(Individual{std::move(s), std::move(key), {}, 0});
  }
  for (const Individual& ind : todo) traces.push_back(&ind.schedule.trace);
  std::vector<std::optional<ProgramFeatures>> found = features(traces);
  std::vector<Individual> out;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (!found[i]) continue;
    todo[i].features = std::move(*found[i]);
    out.push_back(std::move(todo[i]));
  }
  return out;
}

std::vector<SearchPolicy::Individual> SearchPolicy::initial_population(std::unordered_set<std::string>& seen) {
  std::vector<SketchResult> seeds;
  for (const Measured& m : measured_ok_) {
    if (static_cast<int>(seeds.size()) >= options_.measured_seeds) break;
    const Sketch* sketch = sketch_named(m.trace.sketch);
    if (!sketch || m.trace.decisions.empty()) continue;  // the default or a hand-written schedule
    if (std::optional<SketchResult> s = apply(*sketch, m.trace.decisions)) seeds.push_back(std::move(*s));
  }
  std::vector<Individual> pop = evaluate(std::move(seeds), seen);
  for (int round = 0; static_cast<int>(pop.size()) < options_.population && round < options_.max_fresh_attempts; ++round) {
    std::vector<SketchResult> more;
    for (size_t i = pop.size(); static_cast<int>(i) < options_.population; ++i)
      if (std::optional<SketchResult> s = fresh()) more.push_back(std::move(*s));
    for (Individual& ind : evaluate(std::move(more), seen)) pop.push_back(std::move(ind));
  }
  return pop;
}

void SearchPolicy::score(std::vector<Individual>& individuals, CostModel& model,
                         const std::vector<ProgramFeatures>& reference) {
  if (individuals.empty()) return;
  std::vector<ProgramFeatures> programs;
  programs.reserve(individuals.size());
  for (const Individual& ind : individuals) programs.push_back(ind.features);
  std::vector<double> scores = model.predict_with_reference(programs, reference);
  for (size_t i = 0; i < individuals.size(); ++i) individuals[i].score = scores[i];
}

std::vector<Proposal> SearchPolicy::ask(int n, CostModel& model) {
  std::vector<Proposal> out;
  std::unordered_set<std::string> chosen;
  std::unordered_set<std::string> seen;  // evaluated this round
  auto take = [&](const Individual& ind) {
    if (measured_keys_.count(ind.key) || !chosen.insert(ind.key).second) return;
    out.push_back(Proposal{ind.schedule.trace, ind.features, ind.score});
  };
  // Fresh samples, unranked: the first batches (no model yet) and the exploration share.
  auto add_fresh = [&](size_t wanted) {
    for (int round = 0; out.size() < wanted && round < options_.max_fresh_attempts; ++round) {
      std::vector<SketchResult> more;
      for (size_t i = out.size(); i < wanted; ++i)
        if (std::optional<SketchResult> s = fresh()) more.push_back(std::move(*s));
      for (const Individual& ind : evaluate(std::move(more), seen))
        if (out.size() < wanted) take(ind);
    }
  };
  if (n <= 0) return out;
  if (options_.strategy == "random" || !model.trained()) {
    add_fresh(static_cast<size_t>(n));
    return out;
  }

  std::vector<Individual> pop = initial_population(seen);
  // One reference for the round, so that a model of relative scores (a program's predicted share of
  // wins) scores every generation alike: the initial population, evenly spaced (the measured seeds
  // come first, the fresh samples after).
  std::vector<ProgramFeatures> reference;
  const size_t k = std::min(pop.size(), kReferencePrograms);
  for (size_t i = 0; i < k; ++i) reference.push_back(pop[k == 1 ? 0 : i * (pop.size() - 1) / (k - 1)].features);
  score(pop, model, reference);
  std::vector<Individual> pool = pop;  // every schedule evaluated this round
  auto tournament = [&]() -> const Individual& {
    const Individual& a = pop[std::uniform_int_distribution<size_t>(0, pop.size() - 1)(rng_)];
    const Individual& b = pop[std::uniform_int_distribution<size_t>(0, pop.size() - 1)(rng_)];
    return a.score >= b.score ? a : b;
  };
  for (int g = 0; g < options_.generations && !pop.empty(); ++g) {
    std::vector<SketchResult> proposals;
    for (int attempts = 0; static_cast<int>(proposals.size()) < options_.population && attempts < 4 * options_.population;
         ++attempts) {
      bool cross = pop.size() >= 2 && std::uniform_real_distribution<double>(0, 1)(rng_) < options_.crossover_ratio;
      std::optional<SketchResult> child = cross ? crossover(tournament(), tournament()) : mutate(tournament());
      if (child) proposals.push_back(std::move(*child));
    }
    std::vector<Individual> children = evaluate(std::move(proposals), seen);
    score(children, model, reference);
    pool.insert(pool.end(), children.begin(), children.end());
    // Elitism: the next generation is the best of parents and children (keys are distinct).
    for (Individual& c : children) pop.push_back(std::move(c));
    std::stable_sort(pop.begin(), pop.end(), [](const Individual& a, const Individual& b) { return a.score > b.score; });
    if (static_cast<int>(pop.size()) > options_.population) pop.resize(static_cast<size_t>(options_.population));
  }

  std::stable_sort(pool.begin(), pool.end(), [](const Individual& a, const Individual& b) { return a.score > b.score; });
  size_t by_model = static_cast<size_t>(std::lround(n * (1.0 - options_.random_ratio)));
  for (const Individual& ind : pool) {
    if (out.size() >= by_model) break;
    take(ind);
  }
  add_fresh(static_cast<size_t>(n));
  return out;
}

void SearchPolicy::tell(const Trace& trace, double latency_s) {
  measured_keys_.insert(trace_steps_key(trace));
  if (!(std::isfinite(latency_s) && latency_s > 0)) return;
  Measured m{trace, latency_s};
  auto at = std::upper_bound(measured_ok_.begin(), measured_ok_.end(), m,
                             [](const Measured& a, const Measured& b) { return a.latency_s < b.latency_s; });
  measured_ok_.insert(at, std::move(m));
}

}  // namespace tessel
