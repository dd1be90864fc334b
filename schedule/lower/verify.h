// Lowering pass, last: checks what every code generator relies on, and the target's limits. A
// schedule that does not fit the target (a GPU binding on the CPU) raises ScheduleError; anything
// else is a bug in tessel and raises CompileError.
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

enum class LowerTarget : uint8_t { Cpu, Gpu };

void verify_lowered(const LoweredFunc& func, LowerTarget target);

}  // namespace tessel
