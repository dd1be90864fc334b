// Trace: a schedule as an ordered list of steps, serialized to versioned JSON and replayed exactly.
#pragma once

#include <string>
#include <vector>

#include "schedule/state/step.h"

namespace tessel {

constexpr int kTraceVersion = 1;

struct Trace {
  std::vector<Step> steps;
};

// Replays `trace` on a fresh State of `dag`. Throws ScheduleError naming the first bad step.
State replay(const ComputeDAG& dag, const Trace& trace);

// {"version": 1, "steps": [{"kind": "split", "stage": "C", "loop": "i", "factors": [8, 4]}, ...]}
std::string trace_to_json(const Trace& trace, bool pretty = false);
// Parses JSON text; throws InputError naming the step index and field on malformed input, and on a
// version newer than this build understands. `source` names the text in messages (e.g. a file path).
Trace trace_from_json(const std::string& text, const std::string& source = "schedule");
// Reads a file and parses it; throws InputError when it cannot be read.
Trace load_trace_file(const std::string& path);

}  // namespace tessel
