#include "deploy/memory_plan.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

namespace tessel {
namespace {

constexpr int64_t kAlign = 64;

int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

bool overlap(const Lifetime& a, const Lifetime& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

int64_t live_bound_bytes(const std::vector<Lifetime>& lifetimes) {
  int64_t steps = 0;
  for (const Lifetime& l : lifetimes) steps = std::max(steps, l.last + 1);
  std::vector<int64_t> live(static_cast<size_t>(steps), 0);
  for (const Lifetime& l : lifetimes)
    for (int64_t s = l.first; s <= l.last; ++s) live[static_cast<size_t>(s)] += aligned(l.bytes);
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

namespace {

// One greedy placement: values in `order`, each at the lowest offset (first fit) or in the smallest
// gap (best fit) that no placed value alive at the same time occupies.
MemoryPlan place(const std::vector<Lifetime>& lifetimes, const std::vector<size_t>& order, bool best_fit) {
  MemoryPlan plan;
  plan.offsets.assign(lifetimes.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const int64_t bytes = aligned(lifetimes[i].bytes);
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (overlap(lifetimes[i], lifetimes[j]))
        taken.push_back({plan.offsets[j], plan.offsets[j] + aligned(lifetimes[j].bytes)});
    std::sort(taken.begin(), taken.end());
    int64_t at = 0, chosen = -1, chosen_gap = 0;
    for (const auto& [start, end] : taken) {
      const int64_t gap = start - at;
      if (gap >= bytes && (chosen < 0 || (best_fit && gap < chosen_gap))) {
        chosen = at;
        chosen_gap = gap;
        if (!best_fit) break;
      }
      at = std::max(at, end);
    }
    plan.offsets[i] = chosen >= 0 ? chosen : at;
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[i] + bytes);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<Lifetime>& lifetimes) {
  // No single greedy order wins on every graph (largest first leaves holes in a transformer's
  // layers, longest life first in a CNN's), so several orders are placed and the smallest arena
  // kept. Each is O(n^2) in the number of values; a model has hundreds.
  auto size = [&](size_t i) { return lifetimes[i].bytes; };
  auto life = [&](size_t i) { return lifetimes[i].last - lifetimes[i].first + 1; };
  using Key = std::pair<int64_t, int64_t>;  // sorted descending
  const std::vector<std::function<Key(size_t)>> keys = {
      [&](size_t i) { return Key{size(i), 0}; },
      [&](size_t i) { return Key{size(i), life(i)}; },
      [&](size_t i) { return Key{life(i), size(i)}; },
      [&](size_t i) { return Key{size(i) * life(i), size(i)}; },
      [&](size_t i) { return Key{-lifetimes[i].first, size(i)}; },
  };
  std::optional<MemoryPlan> best;
  for (const auto& key : keys) {
    std::vector<size_t> order(lifetimes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) > key(b); });
    for (bool best_fit : {false, true}) {
      MemoryPlan plan = place(lifetimes, order, best_fit);
      if (!best || plan.arena_bytes < best->arena_bytes) best = std::move(plan);
    }
  }
  best->live_bound_bytes = live_bound_bytes(lifetimes);
  return *best;
}

}  // namespace tessel
