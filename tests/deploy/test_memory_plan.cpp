#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "deploy/memory_plan.h"

namespace tessel {
namespace {

int64_t rounded(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// Every plan must hold these: aligned offsets, everything inside the arena, no two values alive at
// one step sharing a byte, and no arena smaller than the liveness bound.
void check_plan(const std::vector<Lifetime>& lives, const MemoryPlan& plan) {
  REQUIRE(plan.offsets.size() == lives.size());
  for (size_t i = 0; i < lives.size(); ++i) {
    CHECK(plan.offsets[i] % 64 == 0);
    CHECK(plan.offsets[i] >= 0);
    CHECK(plan.offsets[i] + lives[i].bytes <= plan.arena_bytes);
    for (size_t j = i + 1; j < lives.size(); ++j) {
      const bool same_time = lives[i].first <= lives[j].last && lives[j].first <= lives[i].last;
      const bool same_bytes = plan.offsets[i] < plan.offsets[j] + lives[j].bytes &&
                              plan.offsets[j] < plan.offsets[i] + lives[i].bytes;
      if (same_time && same_bytes) FAIL("values " << i << " and " << j << " are alive together and overlap");
    }
  }
  CHECK(plan.arena_bytes >= plan.live_bound_bytes);
}

TEST_CASE("memory plan: values whose lives do not overlap share bytes", "[deploy]") {
  // A chain a -> b -> c -> d: each value is read by the next kernel only.
  const std::vector<Lifetime> lives = {{1000, 0, 1}, {2000, 1, 2}, {1000, 2, 3}, {2000, 3, 4}};
  const MemoryPlan plan = plan_memory(lives);
  check_plan(lives, plan);
  CHECK(plan.live_bound_bytes == rounded(1000) + rounded(2000));
  CHECK(plan.arena_bytes == plan.live_bound_bytes);
  CHECK(plan.offsets[1] == plan.offsets[3]);
  CHECK(plan.offsets[0] == plan.offsets[2]);
}

TEST_CASE("memory plan: a buffer alive at one step takes bytes the others leave free there", "[deploy]") {
  // Step 0 needs 8 KiB (a and b); at step 1 only a is alive, and a 2 KiB kernel scratch fits where
  // b was: the arena does not grow.
  std::vector<Lifetime> lives = {{4096, 0, 1}, {4096, 0, 0}};
  const int64_t without = plan_memory(lives).arena_bytes;
  lives.push_back({2048, 1, 1});
  const MemoryPlan plan = plan_memory(lives);
  check_plan(lives, plan);
  CHECK(without == 8192);
  CHECK(plan.arena_bytes == 8192);
  CHECK(plan.live_bound_bytes == 8192);
  // The same scratch at step 0 cannot share: 10 KiB.
  lives.back() = {2048, 0, 0};
  CHECK(plan_memory(lives).arena_bytes == 10240);
}

TEST_CASE("memory plan: where largest-first leaves a hole, another order reaches the bound", "[deploy]") {
  // Largest first puts the 4 KiB value at 0, the 3 KiB one alive with it above it, and then the
  // 2 KiB value alive at steps 1-2 finds only a 1 KiB gap: 9 KiB. Longest life first needs 7 KiB,
  // the liveness bound (steps 1 and 3). As in a transformer layer, where the arena of largest-first
  // placement came out 29% over the bound.
  const std::vector<Lifetime> lives = {{2048, 1, 2}, {3072, 2, 3}, {3072, 1, 1}, {2048, 1, 1}, {4096, 3, 3}};
  const MemoryPlan plan = plan_memory(lives);
  check_plan(lives, plan);
  CHECK(plan.live_bound_bytes == 7168);
  CHECK(plan.arena_bytes == 7168);
}

TEST_CASE("memory plan: the liveness bound counts each step's values, rounded as placed", "[deploy]") {
  const std::vector<Lifetime> lives = {{1, 0, 0}, {65, 0, 2}, {100, 2, 2}, {7, 1, 1}};
  // Step 0: 64 + 128; step 1: 128 + 64; step 2: 128 + 128.
  CHECK(live_bound_bytes(lives) == 256);
  CHECK(live_bound_bytes({}) == 0);
  CHECK(plan_memory({}).arena_bytes == 0);
}

TEST_CASE("memory plan: random lifetimes give valid plans near the liveness bound", "[deploy]") {
  std::mt19937_64 rng(7);
  int64_t arena_total = 0, bound_total = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int steps = 1 + static_cast<int>(rng() % 61);
    const int values = 1 + static_cast<int>(rng() % 80);
    std::vector<Lifetime> lives;
    for (int v = 0; v < values; ++v) {
      const int64_t first = static_cast<int64_t>(rng() % steps);
      const int64_t last = std::min<int64_t>(steps - 1, first + static_cast<int64_t>(rng() % 5));
      lives.push_back({1 + static_cast<int64_t>(rng() % 771'000), first, last});
    }
    const MemoryPlan plan = plan_memory(lives);
    check_plan(lives, plan);
    // The bound counted directly, step by step.
    int64_t bound = 0;
    for (int s = 0; s < steps; ++s) {
      int64_t live = 0;
      for (const Lifetime& l : lives)
        if (l.first <= s && s <= l.last) live += rounded(l.bytes);
      bound = std::max(bound, live);
    }
    CHECK(plan.live_bound_bytes == bound);
    arena_total += plan.arena_bytes;
    bound_total += bound;
  }
  // Greedy placement is not optimal, but on short random lives it stays close to the bound.
  CHECK(static_cast<double>(arena_total) <= 1.25 * static_cast<double>(bound_total));
}

// Whether the plan puts no input on bytes an output takes.
bool inputs_apart(const std::vector<Lifetime>& lives, const MemoryPlan& plan, const std::vector<bool>& is_input,
                  const std::vector<bool>& is_output) {
  for (size_t i = 0; i < lives.size(); ++i)
    for (size_t o = 0; o < lives.size(); ++o)
      if (is_input[i] && is_output[o] && plan.offsets[i] < plan.offsets[o] + lives[o].bytes &&
          plan.offsets[o] < plan.offsets[i] + lives[i].bytes)
        return false;
  return true;
}

TEST_CASE("memory plan: inputs and outputs never share bytes, at the cost of the smaller of them", "[deploy]") {
  // A transformer's shape: 8 KiB of token ids read by the first kernel, 3 MiB values in a chain,
  // a 3 MiB output written by the last. Holding the output for the whole run (step 0 on) would take
  // 9 MiB; keeping the small input until the output is written costs its 8 KiB.
  const int64_t mib = 1 << 20;
  std::vector<Lifetime> lives = {{8192, 0, 0}, {3 * mib, 0, 1}, {3 * mib, 1, 2}, {3 * mib, 2, 3}, {3 * mib, 3, 3}};
  std::vector<bool> is_input = {true, false, false, false, false}, is_output = {false, false, false, false, true};
  std::vector<Lifetime> apart;
  MemoryPlan plan;
  auto place = [&] {
    PlannedLives placed = plan_inputs_apart_from_outputs(lives, is_input, is_output);
    apart = placed.lives;
    plan = placed.plan;
    check_plan(apart, plan);
  };
  place();
  CHECK(inputs_apart(apart, plan, is_input, is_output));
  CHECK(apart[0].last == 3);  // the input kept
  CHECK(apart[4].first == 3);  // the output as it lives
  CHECK(plan.arena_bytes == live_bound_bytes(lives) + 8192);

  // An image's shape: a 600 KB input read by the first kernel, a 4000-byte output written by the
  // last: the output is held from the first kernel instead.
  lives = {{602'112, 0, 0}, {800'000, 0, 1}, {800'000, 1, 2}, {4000, 2, 2}};
  is_input = {true, false, false, false};
  is_output = {false, false, false, true};
  place();
  CHECK(inputs_apart(apart, plan, is_input, is_output));
  CHECK(apart[0].last == 0);
  CHECK(apart[3].first == 0);
  CHECK(plan.arena_bytes <= live_bound_bytes(lives) + rounded(4000));

  // Without inputs or without outputs in the arena, nothing changes.
  is_input.assign(lives.size(), false);
  place();
  CHECK(apart[3].first == 2);

  // Random lives, several inputs (alive from step 0) and outputs (until the last step).
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int steps = 1 + static_cast<int>(rng() % 30);
    const int values = 2 + static_cast<int>(rng() % 40);
    lives.clear();
    is_input.clear();
    is_output.clear();
    for (int v = 0; v < values; ++v) {
      const int kind = static_cast<int>(rng() % 4);  // 0 input, 1 output, else an intermediate
      int64_t first = static_cast<int64_t>(rng() % steps);
      int64_t last = std::min<int64_t>(steps - 1, first + static_cast<int64_t>(rng() % 5));
      if (kind == 0) first = 0;
      if (kind == 1) last = steps - 1;
      lives.push_back({1 + static_cast<int64_t>(rng() % 197'000), first, last});
      is_input.push_back(kind == 0);
      is_output.push_back(kind == 1);
    }
    INFO("trial " << trial);
    place();
    CHECK(inputs_apart(apart, plan, is_input, is_output));
    for (size_t i = 0; i < lives.size(); ++i) {  // only ever longer lives, and only of inputs and outputs
      CHECK(apart[i].first <= lives[i].first);
      CHECK(apart[i].last >= lives[i].last);
      if (!is_input[i] && !is_output[i]) CHECK((apart[i].first == lives[i].first && apart[i].last == lives[i].last));
    }
  }
}

TEST_CASE("memory plan: a step's room for scratch is its longest free run below the top, not its free bytes",
          "[deploy]") {
  // Step 1 holds a (4 KiB at 0) and c (4 KiB at 8 KiB): 4 KiB free between them and 4 KiB above
  // c up to a top of 16 KiB, 8 KiB free in all, but no run longer than 4 KiB.
  const std::vector<Lifetime> lives = {{4096, 0, 1}, {4096, 0, 0}, {4096, 0, 1}, {4096, 2, 2}};
  const MemoryPlan plan = plan_memory(lives);
  check_plan(lives, plan);
  REQUIRE(plan.arena_bytes == 12288);
  REQUIRE(plan.offsets[1] == 4096);  // b between a and c, in each order that reaches the bound
  const std::vector<int64_t> room = step_room(lives, plan, 3, 16384);
  CHECK(room == std::vector<int64_t>{4096, 4096, 12288});
  // Below the arena's own top (the top given is less), the gaps alone count.
  CHECK(step_room(lives, plan, 3, 0) == std::vector<int64_t>{0, 4096, 8192});
  // A top inside a 64-byte line: the room ends at the line before it, where a block placed in
  // whole lines still fits below the top.
  const std::vector<Lifetime> one = {{64, 0, 0}};
  CHECK(step_room(one, plan_memory(one), 1, 100) == std::vector<int64_t>{0});
  CHECK(step_room(one, plan_memory(one), 1, 200) == std::vector<int64_t>{128});
}

TEST_CASE("memory plan: step blocks that fit their room stay within the top", "[deploy]") {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int steps = 1 + static_cast<int>(rng() % 40);
    std::vector<Lifetime> lives;
    for (int v = 0; v < 1 + static_cast<int>(rng() % 50); ++v) {
      const int64_t first = static_cast<int64_t>(rng() % steps);
      const int64_t last = std::min<int64_t>(steps - 1, first + static_cast<int64_t>(rng() % 6));
      lives.push_back({1 + static_cast<int64_t>(rng() % 197'000), first, last});
    }
    const MemoryPlan values = plan_memory(lives);
    const int64_t top = values.arena_bytes + static_cast<int64_t>(rng() % 61'000);
    const std::vector<int64_t> room = step_room(lives, values, steps, top);
    std::vector<int64_t> blocks(static_cast<size_t>(steps));
    for (int s = 0; s < steps; ++s)  // in whole 64-byte lines, as a build's scratch is counted
      blocks[s] = room[s] > 0 ? static_cast<int64_t>(rng() % (room[s] + 1)) / 64 * 64 : 0;
    const MemoryPlan plan = place_step_blocks(lives, values, blocks, top);
    std::vector<Lifetime> all = lives;
    for (int s = 0; s < steps; ++s) all.push_back({blocks[s], s, s});
    check_plan(all, plan);
    CHECK(plan.arena_bytes <= top);
    for (size_t i = 0; i < lives.size(); ++i) CHECK(plan.offsets[i] == values.offsets[i]);  // values stay put
  }
  // A block larger than any run goes above the values alive at its step.
  const std::vector<Lifetime> lives = {{4096, 0, 0}};
  const MemoryPlan plan = place_step_blocks(lives, plan_memory(lives), {8192}, 4096);
  CHECK(plan.offsets[1] == 4096);
  CHECK(plan.arena_bytes == 12288);
}

}  // namespace
}  // namespace tessel
