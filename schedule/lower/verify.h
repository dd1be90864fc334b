// Lowering pass, last: checks what every code generator relies on, and the target's limits. A
// failure is a bug in tessel (or a limit the schedule exceeds) and raises CompileError.
#pragma once

#include "schedule/ir/stmt.h"

namespace tessel {

enum class LowerTarget : uint8_t { Cpu, Gpu };

void verify_lowered(const LoweredFunc& func, LowerTarget target);

}  // namespace tessel
