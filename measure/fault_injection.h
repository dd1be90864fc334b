// Deliberate faults for testing the harness (`tessel measure --inject crash@3,hang@5,...`). A fault is
// real code added to the candidate's kernel after lowering, so it exercises exactly the paths a bad
// schedule would: the runner segfaults, spins, writes wrong values or writes far out of bounds, on
// the CPU and on the GPU alike.
#pragma once

#include <map>
#include <string>

#include "schedule/ir/stmt.h"

namespace tessel {

enum class Fault {
  None,
  Crash,        // stores through a wild address (SIGSEGV; an illegal address on a GPU)
  Hang,         // a loop of 2^62 dependent float additions after the kernel's work
  Wrong,        // overwrites the first output element with |y| + 1
  OutOfBounds,  // stores `far_elements` past the end of the first output
};

// How far past the end the out-of-bounds store lands: on the CPU inside the runner's guard region
// (256 MiB), on the GPU beyond any allocation a runner makes (16 Gi elements = 64 GiB).
constexpr int64_t kCpuFarElements = int64_t{1} << 24;
constexpr int64_t kGpuFarElements = int64_t{1} << 34;

const char* to_string(Fault fault);

// Candidate index -> fault, parsed from "KIND@I,KIND@I,..." (kinds: crash, hang, wrong, oob).
// Throws InputError naming the bad entry.
std::map<int64_t, Fault> parse_fault_plan(const std::string& spec);

// `func` with the fault's code appended after its body (for the GPU: as one more one-thread kernel).
LoweredFunc inject_fault(const LoweredFunc& func, Fault fault, int64_t far_elements = kCpuFarElements);

}  // namespace tessel
