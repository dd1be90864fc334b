// Lowering: a scheduled State becomes a LoweredFunc, pass by pass (see lower.cpp for the list).
#pragma once

#include <ostream>
#include <string>

#include "schedule/ir/stmt.h"
#include "schedule/lower/verify.h"
#include "schedule/state/state.h"

namespace tessel {

struct LowerOptions {
  LowerTarget target = LowerTarget::Cpu;
  std::ostream* dump = nullptr;  // when set, the IR is printed after every pass
  GpuLimits gpu_limits;          // LowerTarget::Gpu only
};

// Parameters are the DAG's inputs in order, then its outputs.
LoweredFunc lower(const State& state, const std::string& name, const LowerOptions& options = {});

}  // namespace tessel
