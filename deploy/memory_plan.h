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

// Every buffer of a plan starts on a line of this many bytes.
constexpr int64_t kArenaAlignment = 64;

// The bytes a buffer of `bytes` takes in a plan: rounded up to the plan's 64-byte alignment.
int64_t arena_bytes_of(int64_t bytes);

// Room for a kernel's scratch beside a plan of the values: per step, the longest run of bytes below
// `top` (rounded down to the plan's 64-byte lines, at least the plan's arena) that no value alive at
// that step occupies.
std::vector<int64_t> step_room(const std::vector<Lifetime>& values, const MemoryPlan& plan, int64_t steps,
                               int64_t top);

// Adds one block a step (a kernel's scratch, `block_bytes[s]` at step s, 0 for none) to a plan of the
// values: each in the tightest gap its step leaves below the arena's top (`top`, at least the plan's
// arena), else above the values alive then. A block no larger than its step's `step_room` leaves the
// arena within `top`. Returns the plan of values and blocks: the blocks' offsets after the values'.
MemoryPlan place_step_blocks(const std::vector<Lifetime>& values, const MemoryPlan& plan,
                             const std::vector<int64_t>& block_bytes, int64_t top);

// Lifetimes as placed and their plan.
struct PlannedLives {
  std::vector<Lifetime> lives;
  MemoryPlan plan;
};

// A run's inputs, copied in before its first step, and its outputs, read after its last, may not
// share bytes: a caller may pass one run's outputs as the next run's inputs. `is_input[i]` and
// `is_output[i]` mark them among `lives` (inputs alive from step 0, outputs until the last step).
// Returns the lives with every input and output alive together at some step, and their plan: the
// inputs kept until the last output is written, or the outputs held from the step where the first
// input is last read, whichever plans the smaller arena. Other values are unchanged.
PlannedLives plan_inputs_apart_from_outputs(const std::vector<Lifetime>& lives, const std::vector<bool>& is_input,
                                            const std::vector<bool>& is_output);

// The most bytes (each rounded up as the plan places it) alive at one step.
int64_t live_bound_bytes(const std::vector<Lifetime>& lifetimes);

}  // namespace tessel
