// Trace replay and the JSON form of schedules.
#include "schedule/state/trace.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "schedule/te/error.h"

namespace tessel {

using nlohmann::json;

State replay(const ComputeDAG& dag, const Trace& trace) {
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
      {StepKind::Prefetch, "prefetch"}};
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
  }
  return j;
}

// Field access with messages that name the step and the field.
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
    if (!f.is_string()) fail(std::string("field '") + name + "' must be a string");
    return f.get<std::string>();
  }
  int64_t integer(const char* name) const {
    const json& f = field(name);
    if (!f.is_number_integer()) fail(std::string("field '") + name + "' must be an integer");
    return f.get<int64_t>();
  }
  std::vector<std::string> strings(const char* name) const {
    const json& f = field(name);
    if (!f.is_array()) fail(std::string("field '") + name + "' must be an array of strings");
    std::vector<std::string> out;
    for (const json& e : f) {
      if (!e.is_string()) fail(std::string("field '") + name + "' must be an array of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  std::vector<int64_t> integers(const char* name) const {
    const json& f = field(name);
    if (!f.is_array()) fail(std::string("field '") + name + "' must be an array of integers");
    std::vector<int64_t> out;
    for (const json& e : f) {
      if (!e.is_number_integer()) fail(std::string("field '") + name + "' must be an array of integers");
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  MemScope scope() const {
    std::string s = str("scope");
    for (MemScope m : {MemScope::Global, MemScope::Shared, MemScope::Local})
      if (s == to_string(m)) return m;
    fail("unknown scope '" + s + "' (global, shared or local)");
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
  switch (s.kind) {
    case StepKind::Split: s.loop = r.str("loop"); s.factors = r.integers("factors"); break;
    case StepKind::Fuse: case StepKind::Reorder: s.loops = r.strings("loops"); break;
    case StepKind::ComputeAt: s.target_stage = r.str("target"); s.target_loop = r.str("loop"); break;
    case StepKind::ComputeInline: case StepKind::ComputeRoot: break;
    case StepKind::CacheRead: s.scope = r.scope(); s.loops = r.strings("readers"); break;
    case StepKind::CacheWrite: s.scope = r.scope(); break;
    case StepKind::RFactor: s.loop = r.str("loop"); s.value = r.integer("factor_axis"); break;
    case StepKind::Annotate: s.loop = r.str("loop"); s.annotation = r.annotation(); break;
    case StepKind::Pragma: s.loop = r.str("loop"); s.pragma = r.str("pragma"); s.value = r.integer("value"); break;
    case StepKind::StorageAlign:
      if (r.integer("axis") < 0 || r.integer("axis") > 64) r.fail("field 'axis' must be a dimension index");
      s.axis = static_cast<int>(r.integer("axis"));
      s.value = r.integer("factor");
      s.offset = r.integer("offset");
      break;
    case StepKind::SetScope: s.scope = r.scope(); break;
    case StepKind::Prefetch: s.loop = r.str("loop"); s.tensor = r.str("tensor"); s.value = r.integer("offset"); break;
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
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(source + ": malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  }
  if (!j.is_object()) throw InputError(source + ": a schedule must be a JSON object with 'version' and 'steps'");
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer())
    throw InputError(source + ": missing integer field 'version'");
  if (version->get<int64_t>() > kTraceVersion || version->get<int64_t>() < 1)
    throw InputError(source + ": schedule version " + std::to_string(version->get<int64_t>()) +
                     " is not supported (this tessel reads version " + std::to_string(kTraceVersion) + ")");
  auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array()) throw InputError(source + ": missing array field 'steps'");
  Trace trace;
  for (size_t i = 0; i < steps->size(); ++i)
    trace.steps.push_back(step_from_json((*steps)[i], source + ": step " + std::to_string(i)));
  if (auto sketch = j.find("sketch"); sketch != j.end()) {
    if (!sketch->is_string()) throw InputError(source + ": field 'sketch' must be a string");
    trace.sketch = sketch->get<std::string>();
  }
  if (auto decisions = j.find("decisions"); decisions != j.end()) {
    auto bad = [&](size_t i) {
      return InputError(source + ": decision " + std::to_string(i) + " must be [\"name\", [integers...]]");
    };
    if (!decisions->is_array()) throw InputError(source + ": field 'decisions' must be an array");
    for (size_t i = 0; i < decisions->size(); ++i) {
      const json& d = (*decisions)[i];
      if (!d.is_array() || d.size() != 2 || !d[0].is_string() || !d[1].is_array()) throw bad(i);
      TraceDecision out{d[0].get<std::string>(), {}};
      for (const json& v : d[1]) {
        if (!v.is_number_integer()) throw bad(i);
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
