// Trace: a schedule as an ordered list of steps, serialized to versioned JSON and replayed exactly.
#pragma once

#include <string>
#include <vector>

#include "schedule/state/step.h"

namespace tessel {

constexpr int kTraceVersion = 1;

// A decision a schedule generator made (a tile's inner lengths, an unroll depth, a thread count),
// kept with the trace so that a search can mutate it and rebuild the steps (see search/sketch.h).
struct TraceDecision {
  std::string name;             // unique within the trace, e.g. "C.local/i" (a tile), "C.local.auto_unroll"
  std::vector<int64_t> values;
};

// `steps` are the schedule; replay uses nothing else. `sketch` and `decisions` record how a search
// built the steps (empty for hand-written schedules): the JSON carries them as optional fields.
struct Trace {
  std::vector<Step> steps;
  std::string sketch;
  std::vector<TraceDecision> decisions;
};

// The steps alone as compact JSON: two traces with equal keys are the same schedule.
std::string trace_steps_key(const Trace& trace);

// Replays `trace` on a fresh State of `dag`. Throws ScheduleError naming the first bad step.
State replay(const ComputeDAG& dag, const Trace& trace);

// {"version": 1, "steps": [{"kind": "split", "stage": "C", "loop": "i", "factors": [8, 4]}, ...],
//  "sketch": "cpu/multi_level_tiling", "decisions": [["C/i", [8, 4]], ...]}   (the last two optional)
std::string trace_to_json(const Trace& trace, bool pretty = false);
// Parses JSON text; throws InputError naming the step index and field on malformed input, and on a
// version newer than this build understands. `source` names the text in messages (e.g. a file path).
Trace trace_from_json(const std::string& text, const std::string& source = "schedule");
// Reads a file and parses it; throws InputError when it cannot be read.
Trace load_trace_file(const std::string& path);

}  // namespace tessel
