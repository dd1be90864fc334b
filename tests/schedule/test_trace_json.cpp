// Trace JSON: malformed input raises InputError naming the source, the step index and the field.
#include <cstdio>
#include <fstream>

#include "schedule_test_util.h"

using namespace tessel;
using namespace tessel::schedtest;

namespace {

// Requires trace_from_json(text) to throw InputError whose message contains every part.
void require_input_error(const std::string& text, std::vector<std::string> parts) {
  INFO("json: " << text);
  bool thrown = false;
  try {
    trace_from_json(text, "my.json");
  } catch (const InputError& e) {
    thrown = true;
    std::string what = e.what();
    INFO("what(): " << what);
    CHECK(what.find("my.json") != std::string::npos);
    for (const std::string& p : parts) CHECK(what.find(p) != std::string::npos);
  }
  CHECK(thrown);
}

const char* kGoodStep = R"({"kind": "split", "stage": "C", "loop": "i", "factors": [8]})";

std::string with_steps(const std::string& steps) { return std::string(R"({"version": 1, "steps": [)") + kGoodStep + ", " + steps + "]}"; }

}  // namespace

TEST_CASE("trace JSON: a valid document parses", "[trace][json]") {
  Trace t = trace_from_json(R"({"version": 1, "steps": [{"kind": "split", "stage": "C", "loop": "i", "factors": [8, 4]},
      {"kind": "annotate", "stage": "C", "loop": "i.0", "annotation": "parallel"}]})");
  REQUIRE(t.steps.size() == 2);
  CHECK(t.steps[0].kind == StepKind::Split);
  CHECK(t.steps[0].factors == std::vector<int64_t>{8, 4});
  CHECK(t.steps[1].annotation == Annotation::Parallel);
  CHECK(trace_from_json(R"({"version": 1, "steps": []})").steps.empty());
  CHECK(trace_to_json(Trace{}) == R"({"steps":[],"version":1})");
}

TEST_CASE("trace JSON: document-level errors", "[trace][json][errors]") {
  require_input_error("{\"version\": 1, \"steps\": [", {"malformed JSON"});
  require_input_error("not json at all", {"malformed JSON"});
  require_input_error("[1, 2]", {"JSON object"});
  require_input_error(R"({"steps": []})", {"version"});
  require_input_error(R"({"version": "1", "steps": []})", {"version"});
  require_input_error(R"({"version": 2, "steps": []})", {"version 2", "not supported"});
  require_input_error(R"({"version": 0, "steps": []})", {"version 0"});
  require_input_error(R"({"version": 1})", {"steps"});
  require_input_error(R"({"version": 1, "steps": {}})", {"steps"});
}

TEST_CASE("trace JSON: step-level errors name the step index and field", "[trace][json][errors]") {
  require_input_error(with_steps(R"({"kind": "teleport", "stage": "C"})"), {"step 1", "unknown step kind 'teleport'"});
  require_input_error(with_steps(R"({"stage": "C"})"), {"step 1", "missing field 'kind'"});
  require_input_error(with_steps(R"({"kind": "split", "stage": "C", "factors": [2]})"), {"step 1", "missing field 'loop'"});
  require_input_error(with_steps(R"({"kind": "split", "stage": "C", "loop": "i"})"), {"step 1", "missing field 'factors'"});
  require_input_error(with_steps(R"({"kind": "split", "stage": "C", "loop": "i", "factors": 8})"),
                      {"step 1", "field 'factors'", "array of integers"});
  require_input_error(with_steps(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [8.5]})"),
                      {"step 1", "field 'factors'"});
  require_input_error(with_steps(R"({"kind": "split", "stage": 3, "loop": "i", "factors": [8]})"),
                      {"step 1", "field 'stage' must be a string"});
  require_input_error(with_steps(R"({"kind": "fuse", "stage": "C", "loops": ["i", 2]})"),
                      {"step 1", "field 'loops'", "array of strings"});
  require_input_error(with_steps(R"({"kind": "compute_at", "stage": "P", "loop": "x"})"),
                      {"step 1", "missing field 'target'"});
  require_input_error(with_steps(R"({"kind": "cache_write", "stage": "C", "scope": "register"})"),
                      {"step 1", "unknown scope 'register'"});
  require_input_error(with_steps(R"({"kind": "cache_read", "stage": "A", "scope": "local"})"),
                      {"step 1", "missing field 'readers'"});
  require_input_error(with_steps(R"({"kind": "annotate", "stage": "C", "loop": "i", "annotation": "simd"})"),
                      {"step 1", "unknown annotation 'simd'"});
  require_input_error(with_steps(R"({"kind": "pragma", "stage": "C", "loop": "i", "pragma": "auto_unroll_max_step", "value": "16"})"),
                      {"step 1", "field 'value' must be an integer"});
  require_input_error(with_steps(R"({"kind": "rfactor", "stage": "C", "loop": "k.1"})"),
                      {"step 1", "missing field 'factor_axis'"});
  require_input_error(with_steps(R"({"kind": "storage_align", "stage": "P", "axis": 0, "factor": 8})"),
                      {"step 1", "missing field 'offset'"});
  require_input_error(with_steps(R"({"kind": "prefetch", "stage": "P", "loop": "j", "offset": 4})"),
                      {"step 1", "missing field 'tensor'"});
  require_input_error(with_steps(R"({"kind": "prefetch", "stage": "P", "loop": "j", "tensor": "A", "offset": 1.5})"),
                      {"step 1", "field 'offset' must be an integer"});
  require_input_error(with_steps("42"), {"step 1", "JSON object"});
  // The first step is fine: the index names the bad one, not always 0.
  require_input_error(std::string(R"({"version": 1, "steps": [)") + kGoodStep + "," + kGoodStep + R"(, {"kind": 7}]})",
                      {"step 2", "field 'kind' must be a string"});
}

TEST_CASE("trace JSON: load_trace_file", "[trace][json]") {
  CHECK_THROWS_AS(load_trace_file("/nonexistent/dir/schedule.json"), InputError);
  std::string path = "test_schedule_trace_tmp.json";
  {
    std::ofstream out(path);
    out << R"({"version": 1, "steps": [{"kind": "compute_inline", "stage": "P"}]})";
  }
  Trace t = load_trace_file(path);
  REQUIRE(t.steps.size() == 1);
  CHECK(t.steps[0].kind == StepKind::ComputeInline);
  {
    std::ofstream out(path);
    out << R"({"version": 1, "steps": [{"kind": "compute_inline"}]})";
  }
  try {
    load_trace_file(path);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(path) != std::string::npos);
    CHECK(std::string(e.what()).find("step 0") != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("trace replay: a step that does not apply names its index", "[trace]") {
  ComputeDAG dag = matmul_dag();
  Trace t = trace_from_json(with_steps(R"({"kind": "split", "stage": "C", "loop": "i", "factors": [2]})"));
  try {
    replay(dag, t);
    FAIL("no error");
  } catch (const ScheduleError& e) {
    CHECK(e.step_index() == 1);
    CHECK(std::string(e.what()).find("step 1 (split(C, i, [2]))") != std::string::npos);
    CHECK(e.reason().find("split or fused away") != std::string::npos);
  }
}
