#include "deploy/memory_plan.h"

#include <algorithm>
#include <numeric>

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

MemoryPlan plan_memory(const std::vector<Lifetime>& lifetimes) {
  MemoryPlan plan;
  plan.offsets.assign(lifetimes.size(), 0);
  plan.live_bound_bytes = live_bound_bytes(lifetimes);

  std::vector<size_t> order(lifetimes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lifetimes[a].bytes > lifetimes[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    // The placed intermediates alive at the same time, by offset: take the first gap that fits.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (overlap(lifetimes[i], lifetimes[j]))
        taken.push_back({plan.offsets[j], plan.offsets[j] + aligned(lifetimes[j].bytes)});
    std::sort(taken.begin(), taken.end());
    int64_t at = 0;
    for (const auto& [start, end] : taken) {
      if (at + aligned(lifetimes[i].bytes) <= start) break;
      at = std::max(at, end);
    }
    plan.offsets[i] = at;
    plan.arena_bytes = std::max(plan.arena_bytes, at + aligned(lifetimes[i].bytes));
    placed.push_back(i);
  }
  return plan;
}

}  // namespace tessel
