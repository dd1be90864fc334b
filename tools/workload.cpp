#include "tools/workload.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "schedule/te/error.h"

namespace tessel {

namespace {

std::string describe(const std::string& op, const OpParams& params) {
  std::string s = op;
  for (const auto& [k, v] : params) s += " " + k + "=" + v;
  return s;
}

Workload case_from_json(const nlohmann::json& c, const std::string& where) {
  if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || !c.contains("op") || !c["op"].is_string())
    throw InputError(where + ": a case needs string fields 'name' and 'op'");
  Workload w;
  w.name = c["name"].get<std::string>();
  w.op = c["op"].get<std::string>();
  if (c.contains("params")) {
    if (!c["params"].is_object()) throw InputError(where + " (" + w.name + "): 'params' must be an object");
    for (const auto& [k, v] : c["params"].items())
      w.params[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  try {
    w.dag = build_op(w.op, w.params);
  } catch (const InputError& e) {
    throw InputError(where + " (" + w.name + "): " + e.what());
  }
  return w;
}

nlohmann::json read_suite(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw InputError("suite file " + path + " is a directory, not a file");
  std::ifstream in(path);
  if (!in) throw InputError("cannot read suite file " + path);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + ": malformed JSON at byte " + std::to_string(e.byte));
  }
  if (!j.is_object() || !j.contains("cases") || !j["cases"].is_array())
    throw InputError(path + ": a suite is a JSON object with an array 'cases'");
  return j;
}

}  // namespace

std::vector<Workload> load_suite(const std::string& path) {
  nlohmann::json j = read_suite(path);
  std::vector<Workload> out;
  for (size_t i = 0; i < j["cases"].size(); ++i)
    out.push_back(case_from_json(j["cases"][i], path + ": case " + std::to_string(i)));
  return out;
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
      if (c.is_object() && c.contains("name") && c["name"] == case_name)
        return case_from_json(c, suite + ": case " + std::to_string(i));
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

}  // namespace tessel
