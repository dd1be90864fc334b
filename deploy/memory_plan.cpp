#include "deploy/memory_plan.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

namespace tessel {
namespace {

bool overlap(const Lifetime& a, const Lifetime& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

int64_t arena_bytes_of(int64_t bytes) { return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

int64_t live_bound_bytes(const std::vector<Lifetime>& lifetimes) {
  int64_t steps = 0;
  for (const Lifetime& l : lifetimes) steps = std::max(steps, l.last + 1);
  std::vector<int64_t> live(static_cast<size_t>(steps), 0);
  for (const Lifetime& l : lifetimes)
    for (int64_t s = l.first; s <= l.last; ++s) live[static_cast<size_t>(s)] += arena_bytes_of(l.bytes);
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

PlannedLives plan_inputs_apart_from_outputs(const std::vector<Lifetime>& lives, const std::vector<bool>& is_input,
                                            const std::vector<bool>& is_output) {
  int64_t inputs_read_until = -1, outputs_written_from = -1;  // the first input's last read, the last output's write
  for (size_t i = 0; i < lives.size(); ++i) {
    if (is_input[i])
      inputs_read_until = inputs_read_until < 0 ? lives[i].last : std::min(inputs_read_until, lives[i].last);
    if (is_output[i]) outputs_written_from = std::max(outputs_written_from, lives[i].first);
  }
  if (inputs_read_until < 0 || outputs_written_from < 0) return {lives, plan_memory(lives)};  // no pair to keep apart
  PlannedLives keep_inputs{lives, {}}, hold_outputs{lives, {}};
  for (size_t i = 0; i < lives.size(); ++i) {
    if (is_input[i]) keep_inputs.lives[i].last = std::max(lives[i].last, outputs_written_from);
    if (is_output[i]) hold_outputs.lives[i].first = std::min(lives[i].first, inputs_read_until);
  }
  keep_inputs.plan = plan_memory(keep_inputs.lives);
  hold_outputs.plan = plan_memory(hold_outputs.lives);
  return keep_inputs.plan.arena_bytes <= hold_outputs.plan.arena_bytes ? keep_inputs : hold_outputs;
}

namespace {

// One greedy placement: values in `order`, each at the lowest offset (first fit) or in the smallest
// gap (best fit) that no placed value alive at the same time occupies.
MemoryPlan place(const std::vector<Lifetime>& lifetimes, const std::vector<size_t>& order, bool best_fit) {
  MemoryPlan plan;
  plan.offsets.assign(lifetimes.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const int64_t bytes = arena_bytes_of(lifetimes[i].bytes);
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (overlap(lifetimes[i], lifetimes[j]))
        taken.push_back({plan.offsets[j], plan.offsets[j] + arena_bytes_of(lifetimes[j].bytes)});
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

namespace {

// The byte ranges the values alive at `step` take, sorted.
std::vector<std::pair<int64_t, int64_t>> taken_at(const std::vector<Lifetime>& values, const MemoryPlan& plan,
                                                  int64_t step) {
  std::vector<std::pair<int64_t, int64_t>> taken;
  for (size_t j = 0; j < values.size(); ++j)
    if (values[j].first <= step && step <= values[j].last)
      taken.push_back({plan.offsets[j], plan.offsets[j] + arena_bytes_of(values[j].bytes)});
  std::sort(taken.begin(), taken.end());
  return taken;
}

// The gaps between sorted ranges below `top`, as (start, length).
std::vector<std::pair<int64_t, int64_t>> gaps(const std::vector<std::pair<int64_t, int64_t>>& taken, int64_t top) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t at = 0;
  for (const auto& [start, end] : taken) {
    if (start > at) out.push_back({at, start - at});
    at = std::max(at, end);
  }
  if (top > at) out.push_back({at, top - at});
  return out;
}

}  // namespace

std::vector<int64_t> step_room(const std::vector<Lifetime>& values, const MemoryPlan& plan, int64_t steps,
                               int64_t top) {
  top = std::max(top / kArenaAlignment * kArenaAlignment, plan.arena_bytes);  // whole lines: blocks are placed so
  std::vector<int64_t> room(static_cast<size_t>(steps), 0);
  for (int64_t s = 0; s < steps; ++s)
    for (const auto& [start, length] : gaps(taken_at(values, plan, s), top))
      room[static_cast<size_t>(s)] = std::max(room[static_cast<size_t>(s)], length);
  return room;
}

MemoryPlan place_step_blocks(const std::vector<Lifetime>& values, const MemoryPlan& plan,
                             const std::vector<int64_t>& block_bytes, int64_t top) {
  MemoryPlan out = plan;
  top = std::max(top / kArenaAlignment * kArenaAlignment, plan.arena_bytes);
  for (size_t s = 0; s < block_bytes.size(); ++s) {
    const int64_t bytes = arena_bytes_of(block_bytes[s]);
    const std::vector<std::pair<int64_t, int64_t>> taken = taken_at(values, plan, static_cast<int64_t>(s));
    int64_t at = -1, tightest = 0;
    for (const auto& [start, length] : gaps(taken, top))
      if (length >= bytes && (at < 0 || length < tightest)) {
        at = start;
        tightest = length;
      }
    if (at < 0) {  // no gap holds it: above every value alive at its step
      at = 0;
      for (const auto& range : taken) at = std::max(at, range.second);
    }
    out.offsets.push_back(at);
    if (bytes > 0) out.arena_bytes = std::max(out.arena_bytes, at + bytes);
  }
  out.live_bound_bytes = plan.live_bound_bytes;
  return out;
}

}  // namespace tessel
