#include "tools/workload.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "schedule/interpreter/host_memory.h"
#include "schedule/te/error.h"
#include "schedule/te/json_fields.h"

namespace tessel {

namespace {

// A suite file holds data for other tools too (baselines, byte counts); the reader checks what it
// uses -- every case's name, op and params -- and leaves the rest alone. Limits keep a hostile file
// from costing more than reading it: a suite of more than this many cases is refused.
constexpr size_t kMaxSuiteCases = 100000;

std::string describe(const std::string& op, const OpParams& params) {
  std::string s = op;
  for (const auto& [k, v] : params) s += " " + k + "=" + v;
  return s;
}

// One param value as the op templates take it: a string as is, an integer or a finite number in its
// JSON spelling (the template parses it strictly).
std::string param_text(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) return v.dump();  // finite: parse_json_text refuses 1e400
  throw InputError(where + ": must be a string or a number, not " + json_kind(v));
}

// The case at `where` ("FILE: cases[3]").
Workload case_from_json(const nlohmann::json& c, const std::string& where) {
  const JsonObject object(c, where);
  std::optional<std::string> name = object.string("name"), op = object.string("op");
  if (!name || !op) throw InputError(where + ": a case needs string fields 'name' and 'op'");
  Workload w;
  w.name = *name;
  w.op = *op;
  if (std::optional<JsonObject> params = object.object("params"))
    for (const auto& [k, v] : c.at("params").items()) w.params[k] = param_text(v, params->field(k.c_str()));
  try {
    w.dag = build_op(w.op, w.params);
  } catch (const InputError& e) {
    throw InputError(where + " (" + w.name + "): " + e.what());
  }
  return w;
}

nlohmann::json suite_json(const std::string& text, const std::string& path) {
  nlohmann::json j = parse_json_text(text, path, "malformed JSON");
  if (!j.is_object() || !j.contains("cases") || !j["cases"].is_array())
    throw InputError(path + ": a suite is a JSON object with an array 'cases'");
  if (j["cases"].size() > kMaxSuiteCases)
    throw InputError(path + ": 'cases' holds " + std::to_string(j["cases"].size()) + " entries; at most " +
                     std::to_string(kMaxSuiteCases) + " are allowed");
  return j;
}

nlohmann::json read_suite(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw InputError("suite file " + path + " is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read suite file " + path);
  std::stringstream text;
  text << in.rdbuf();
  return suite_json(text.str(), path);
}

std::string case_where(const std::string& path, size_t i) { return path + ": cases[" + std::to_string(i) + "]"; }

std::vector<Workload> cases_of(const nlohmann::json& suite, const std::string& path) {
  std::vector<Workload> out;
  const nlohmann::json& cases = suite.at("cases");
  for (size_t i = 0; i < cases.size(); ++i) out.push_back(case_from_json(cases[i], case_where(path, i)));
  return out;
}

}  // namespace

std::vector<Workload> load_suite(const std::string& path) { return cases_of(read_suite(path), path); }

std::vector<Workload> parse_suite(const std::string& text, const std::string& path) {
  return cases_of(suite_json(text, path), path);
}

Workload resolve_workload(const std::string& op, const std::vector<std::string>& params, const std::string& suite,
                          const std::string& case_name) {
  if (!op.empty() && !suite.empty()) throw InputError("give either --op or --suite, not both");
  if (!suite.empty()) {
    if (case_name.empty()) throw InputError("--suite needs --case NAME");
    if (!params.empty()) throw InputError("--param goes with --op, not with --suite");
    nlohmann::json j = read_suite(suite);
    std::string names;
    for (size_t i = 0; i < j["cases"].size(); ++i) {
      const nlohmann::json& c = j["cases"][i];
      if (c.is_object() && c.contains("name") && c["name"] == case_name) return case_from_json(c, case_where(suite, i));
      if (c.is_object() && c.contains("name") && c["name"].is_string())
        names += (names.empty() ? "" : ", ") + c["name"].get<std::string>();
    }
    throw InputError("suite " + suite + " has no case '" + case_name + "'; its cases are: " + names);
  }
  if (op.empty()) throw InputError("no workload: give --op NAME [--param K=V ...] or --suite FILE --case NAME");
  if (!case_name.empty()) throw InputError("--case goes with --suite");
  Workload w;
  w.op = op;
  for (const std::string& p : params) {
    size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--param '" + p + "' must have the form NAME=VALUE");
    std::string key = p.substr(0, eq);
    if (w.params.count(key)) throw InputError("--param " + key + " is given twice");
    w.params[key] = p.substr(eq + 1);
  }
  w.dag = build_op(op, w.params);
  w.name = describe(op, w.params);
  return w;
}

DType parse_dtype_option(const std::string& dtype) {
  static const std::map<std::string, DType> kTypes = {
      {"fp32", DType::Float32},    {"fp16", DType::Float16},    {"bf16", DType::BFloat16},
      {"float32", DType::Float32}, {"float16", DType::Float16}, {"bfloat16", DType::BFloat16}};
  auto type = kTypes.find(dtype);
  if (type == kTypes.end()) throw InputError("--dtype " + dtype + ": unknown; choose fp32, fp16 or bf16");
  return type->second;
}

void apply_dtype(Workload& w, const std::string& dtype) {
  const std::string name = to_string(parse_dtype_option(dtype));
  const OpTemplate* t = find_op_template(w.op);
  bool takes_dtype = false;
  if (t)
    for (const OpParam& p : t->params) takes_dtype |= p.name == "dtype";
  if (!takes_dtype)
    throw InputError(w.name + ": --dtype: op " + w.op +
                     " has no dtype parameter (matmul, dense, batch_matmul and conv2d take one)");
  auto given = w.params.find("dtype");
  if (given != w.params.end() && given->second != name)
    throw InputError(w.name + ": --dtype " + dtype + " disagrees with its dtype=" + given->second);
  const bool from_suite = w.name != describe(w.op, w.params);
  w.params["dtype"] = name;
  w.dag = build_op(w.op, w.params);
  w.name = from_suite ? w.name + " [" + name + "]" : describe(w.op, w.params);
}

void require_fits_in_memory(const Workload& w) {
  try {
    require_host_memory(w.dag);
  } catch (const InputError& e) {
    throw InputError(w.name + ": " + e.what());
  }
}

}  // namespace tessel
