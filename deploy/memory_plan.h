// The static memory plan of a model's intermediates, after TVM's graph memory planner: every
// intermediate lives from the kernel that writes it to the last kernel that reads it, and
// intermediates whose lives do not overlap share bytes of one arena. Placement is greedy, each value
// at a 64-byte aligned offset that no value alive at the same time occupies (the lowest such, or the
// tightest gap), in several orders (largest first, longest life first, ...); the smallest arena wins.
#pragma once

#include <cstdint>
#include <vector>

namespace tessel {

struct Lifetime {
  int64_t bytes = 0;
  int64_t first = 0;  // the step that writes it
  int64_t last = 0;   // the last step that reads it (>= first)
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // one per lifetime
  int64_t arena_bytes = 0;
  int64_t live_bound_bytes = 0;  // the most bytes alive at one step: no plan can do with less
};

MemoryPlan plan_memory(const std::vector<Lifetime>& lifetimes);

// The most bytes (each rounded up as the plan places it) alive at one step.
int64_t live_bound_bytes(const std::vector<Lifetime>& lifetimes);

}  // namespace tessel
