// Trace replay and the JSON form of schedules.
#include "schedule/state/trace.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "schedule/state/schedule_limits.h"
#include "schedule/te/error.h"
#include "schedule/te/json_fields.h"

namespace tessel {

using nlohmann::json;

State replay(const ComputeDAG& dag, const Trace& trace) {
  if (static_cast<int64_t>(trace.steps.size()) > kMaxTraceSteps)
    throw InputError("the schedule has " + std::to_string(trace.steps.size()) + " steps; at most " +
                     std::to_string(kMaxTraceSteps) + " are allowed");
  State state(dag);
  for (size_t i = 0; i < trace.steps.size(); ++i) apply_step(state, trace.steps[i], static_cast<int>(i));
  return state;
}

namespace {

const std::vector<std::pair<StepKind, const char*>>& step_kinds() {
  static const std::vector<std::pair<StepKind, const char*>> kinds = {
      {StepKind::Split, "split"}, {StepKind::Fuse, "fuse"}, {StepKind::Reorder, "reorder"},
      {StepKind::ComputeAt, "compute_at"}, {StepKind::ComputeInline, "compute_inline"},
      {StepKind::ComputeRoot, "compute_root"}, {StepKind::CacheRead, "cache_read"},
      {StepKind::CacheWrite, "cache_write"}, {StepKind::RFactor, "rfactor"},
      {StepKind::Annotate, "annotate"}, {StepKind::Pragma, "pragma"},
      {StepKind::StorageAlign, "storage_align"}, {StepKind::SetScope, "set_scope"},
      {StepKind::Prefetch, "prefetch"}, {StepKind::Tensorize, "tensorize"},
      {StepKind::StorageSwizzle, "storage_swizzle"}};
  return kinds;
}

const std::vector<Annotation>& all_annotations() {
  static const std::vector<Annotation> all = {
      Annotation::Parallel, Annotation::Vectorize, Annotation::Unroll, Annotation::BlockX,
      Annotation::BlockY, Annotation::BlockZ, Annotation::VThread, Annotation::ThreadX,
      Annotation::ThreadY, Annotation::ThreadZ};
  return all;
}

json step_to_json(const Step& s) {
  json j;
  j["kind"] = to_string(s.kind);
  j["stage"] = s.stage;
  switch (s.kind) {
    case StepKind::Split: j["loop"] = s.loop; j["factors"] = s.factors; break;
    case StepKind::Fuse: case StepKind::Reorder: j["loops"] = s.loops; break;
    case StepKind::ComputeAt: j["target"] = s.target_stage; j["loop"] = s.target_loop; break;
    case StepKind::ComputeInline: case StepKind::ComputeRoot: break;
    case StepKind::CacheRead: j["scope"] = to_string(s.scope); j["readers"] = s.loops; break;
    case StepKind::CacheWrite: j["scope"] = to_string(s.scope); break;
    case StepKind::RFactor: j["loop"] = s.loop; j["factor_axis"] = s.value; break;
    case StepKind::Annotate: j["loop"] = s.loop; j["annotation"] = to_string(s.annotation); break;
    case StepKind::Pragma: j["loop"] = s.loop; j["pragma"] = s.pragma; j["value"] = s.value; break;
    case StepKind::StorageAlign: j["axis"] = s.axis; j["factor"] = s.value; j["offset"] = s.offset; break;
    case StepKind::SetScope: j["scope"] = to_string(s.scope); break;
    case StepKind::Prefetch: j["loop"] = s.loop; j["tensor"] = s.tensor; j["offset"] = s.value; break;
    case StepKind::Tensorize: j["loop"] = s.loop; break;
    case StepKind::StorageSwizzle: break;
  }
  return j;
}

// Field access with messages that name the step and the field ("my.json: step 3: field 'factors'
// entry 1 must be an integer from 1 to ..., not -4"). Every number is range-checked here, at the
// boundary; the step primitives then check what depends on the state.
struct StepReader {
  const json& j;
  std::string where;

  [[noreturn]] void fail(const std::string& what) const { throw InputError(where + ": " + what); }
  const json& field(const char* name) const {
    auto it = j.find(name);
    if (it == j.end()) fail(std::string("missing field '") + name + "'");
    return *it;
  }
  std::string str(const char* name) const {
    const json& f = field(name);
    if (!f.is_string()) fail(std::string("field '") + name + "' must be a string, not " + json_kind(f));
    return f.get<std::string>();
  }
  int64_t integer(const char* name, int64_t min, int64_t max) const {
    const json& f = field(name);
    if (std::optional<std::string> problem = integer_problem(f, min, max))
      fail(std::string("field '") + name + "' " + *problem);
    return f.is_number_unsigned() ? static_cast<int64_t>(f.get<uint64_t>()) : f.get<int64_t>();
  }
  const json& array(const char* name, const char* of, int64_t max_size) const {
    const json& f = field(name);
    if (!f.is_array()) fail(std::string("field '") + name + "' must be an array of " + of + ", not " + json_kind(f));
    if (static_cast<int64_t>(f.size()) > max_size)
      fail(std::string("field '") + name + "' has " + std::to_string(f.size()) + " entries; at most " +
           std::to_string(max_size) + " are allowed");
    return f;
  }
  std::vector<std::string> strings(const char* name) const {
    const json& f = array(name, "strings", kMaxStageLoops + kMaxTraceSteps);  // loops, or readers
    std::vector<std::string> out;
    for (const json& e : f) {
      if (!e.is_string())
        fail(std::string("field '") + name + "' must be an array of strings; entry " + std::to_string(out.size()) +
             " is " + json_kind(e));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  std::vector<int64_t> integers(const char* name, int64_t min, int64_t max, int64_t max_size) const {
    const json& f = array(name, "integers", max_size);
    std::vector<int64_t> out;
    for (size_t i = 0; i < f.size(); ++i) {
      if (std::optional<std::string> problem = integer_problem(f[i], min, max))
        fail(std::string("field '") + name + "' (an array of integers) entry " + std::to_string(i) + " " + *problem);
      out.push_back(f[i].is_number_unsigned() ? static_cast<int64_t>(f[i].get<uint64_t>()) : f[i].get<int64_t>());
    }
    return out;
  }
  MemScope scope() const {
    std::string s = str("scope");
    for (MemScope m : {MemScope::Global, MemScope::Shared, MemScope::Local, MemScope::MatrixA, MemScope::MatrixB,
                       MemScope::Accumulator, MemScope::WgAccumulator})
      if (s == to_string(m)) return m;
    fail("unknown scope '" + s + "' (global, shared, local, matrix_a, matrix_b, accumulator or wg_accumulator)");
  }
  Annotation annotation() const {
    std::string s = str("annotation");
    for (Annotation a : all_annotations())
      if (s == to_string(a)) return a;
    fail("unknown annotation '" + s + "'");
  }
};

Step step_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": a step must be a JSON object");
  StepReader r{j, where};
  std::string kind = r.str("kind");
  Step s;
  bool known = false;
  for (const auto& [k, name] : step_kinds())
    if (kind == name) {
      s.kind = k;
      known = true;
    }
  if (!known) r.fail("unknown step kind '" + kind + "'");
  s.stage = r.str("stage");
  constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
  switch (s.kind) {
    case StepKind::Split:
      s.loop = r.str("loop");
      s.factors = r.integers("factors", 1, kAny, kMaxSplitFactors);
      break;
    case StepKind::Fuse: case StepKind::Reorder: s.loops = r.strings("loops"); break;
    case StepKind::ComputeAt: s.target_stage = r.str("target"); s.target_loop = r.str("loop"); break;
    case StepKind::ComputeInline: case StepKind::ComputeRoot: break;
    case StepKind::CacheRead: s.scope = r.scope(); s.loops = r.strings("readers"); break;
    case StepKind::CacheWrite: s.scope = r.scope(); break;
    case StepKind::RFactor: s.loop = r.str("loop"); s.value = r.integer("factor_axis", 0, kMaxStageLoops); break;
    case StepKind::Annotate: s.loop = r.str("loop"); s.annotation = r.annotation(); break;
    case StepKind::Pragma:
      s.loop = r.str("loop");
      s.pragma = r.str("pragma");
      s.value = r.integer("value", 0, kMaxAutoUnrollStep);
      break;
    case StepKind::StorageAlign:
      s.axis = static_cast<int>(r.integer("axis", 0, 64));
      s.value = r.integer("factor", 1, kMaxStorageAlignFactor);
      s.offset = r.integer("offset", 0, kMaxStorageAlignFactor - 1);
      break;
    case StepKind::SetScope: s.scope = r.scope(); break;
    case StepKind::Prefetch:
      s.loop = r.str("loop");
      s.tensor = r.str("tensor");
      s.value = r.integer("offset", 1, kMaxPrefetchOffset);
      break;
    case StepKind::Tensorize: s.loop = r.str("loop"); break;
    case StepKind::StorageSwizzle: break;
  }
  return s;
}

}  // namespace

std::string trace_to_json(const Trace& trace, bool pretty) {
  json j;
  j["version"] = kTraceVersion;
  j["steps"] = json::array();
  for (const Step& s : trace.steps) j["steps"].push_back(step_to_json(s));
  if (!trace.sketch.empty()) j["sketch"] = trace.sketch;
  if (!trace.decisions.empty()) {
    j["decisions"] = json::array();
    for (const TraceDecision& d : trace.decisions) j["decisions"].push_back(json::array({d.name, d.values}));
  }
  return pretty ? j.dump(2) : j.dump();
}

std::string trace_steps_key(const Trace& trace) {
  json steps = json::array();
  for (const Step& s : trace.steps) steps.push_back(step_to_json(s));
  return steps.dump();
}

Trace trace_from_json(const std::string& text, const std::string& source) {
  const json j = parse_json_text(text, source, "malformed JSON");
  if (!j.is_object()) throw InputError(source + ": a schedule must be a JSON object with 'version' and 'steps'");
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer())
    throw InputError(source + ": missing integer field 'version'");
  if (integer_problem(*version, 1, kTraceVersion))
    throw InputError(source + ": schedule version " + version->dump() + " is not supported (this tessel reads version " +
                     std::to_string(kTraceVersion) + ")");
  auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array()) throw InputError(source + ": missing array field 'steps'");
  if (static_cast<int64_t>(steps->size()) > kMaxTraceSteps)
    throw InputError(source + ": the schedule has " + std::to_string(steps->size()) + " steps; at most " +
                     std::to_string(kMaxTraceSteps) + " are allowed");
  Trace trace;
  for (size_t i = 0; i < steps->size(); ++i)
    trace.steps.push_back(step_from_json((*steps)[i], source + ": step " + std::to_string(i)));
  if (auto sketch = j.find("sketch"); sketch != j.end()) {
    if (!sketch->is_string()) throw InputError(source + ": field 'sketch' must be a string");
    trace.sketch = sketch->get<std::string>();
  }
  if (auto decisions = j.find("decisions"); decisions != j.end()) {
    auto bad = [&](size_t i, const std::string& why) {
      return InputError(source + ": decision " + std::to_string(i) + " must be [\"name\", [integers...]]" + why);
    };
    if (!decisions->is_array()) throw InputError(source + ": field 'decisions' must be an array");
    if (static_cast<int64_t>(decisions->size()) > kMaxTraceSteps)
      throw InputError(source + ": field 'decisions' has " + std::to_string(decisions->size()) + " entries; at most " +
                       std::to_string(kMaxTraceSteps) + " are allowed");
    for (size_t i = 0; i < decisions->size(); ++i) {
      const json& d = (*decisions)[i];
      if (!d.is_array() || d.size() != 2 || !d[0].is_string() || !d[1].is_array()) throw bad(i, "");
      if (static_cast<int64_t>(d[1].size()) > kMaxSplitFactors + 1)
        throw bad(i, ": it holds " + std::to_string(d[1].size()) + " values, at most " +
                         std::to_string(kMaxSplitFactors + 1) + " are allowed");
      TraceDecision out{d[0].get<std::string>(), {}};
      for (const json& v : d[1]) {
        if (std::optional<std::string> problem =
                integer_problem(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
          throw bad(i, ": a value " + *problem);
        out.values.push_back(v.get<int64_t>());
      }
      trace.decisions.push_back(std::move(out));
    }
  }
  return trace;
}

Trace load_trace_file(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw InputError("schedule file " + path + " is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read schedule file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return trace_from_json(text.str(), path);
}

}  // namespace tessel
