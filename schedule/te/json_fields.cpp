#include "schedule/te/json_fields.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "schedule/te/error.h"

namespace tessel {

nlohmann::json parse_json_text(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    // nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is the part a user needs.
    if (size_t close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    throw InputError(where + ": not valid JSON: " + what);
  }
}

nlohmann::json parse_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read '" + path + "': no such file or not readable");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError("cannot read '" + path + "'");
  return parse_json_text(text.str(), path);
}

JsonObject::JsonObject(const nlohmann::json& value, std::string where) : value_(&value), where_(std::move(where)) {
  if (value.is_object()) return;
  std::string shown = where_;  // a file's top level is "FILE: "
  if (shown.size() >= 2 && shown.compare(shown.size() - 2, 2, ": ") == 0) shown.resize(shown.size() - 2);
  throw InputError(shown + ": must be a JSON object");
}

std::string JsonObject::field(const char* key) const {
  return where_ + (where_.empty() || where_.back() == ' ' ? "" : ".") + key;
}

void JsonObject::allow_only(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : value_->items()) {
    bool ok = false;
    std::string list;
    for (const char* k : known) {
      ok = ok || key == k;
      list += (list.empty() ? "" : ", ") + std::string(k);
    }
    if (!ok) throw InputError(field(key.c_str()) + ": unknown setting (known: " + list + ")");
  }
}

std::optional<std::string> JsonObject::string(const char* key) const {
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  if (!it->is_string()) throw InputError(field(key) + ": must be a string");
  return it->get<std::string>();
}

std::optional<bool> JsonObject::boolean(const char* key) const {
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  if (!it->is_boolean()) throw InputError(field(key) + ": must be true or false");
  return it->get<bool>();
}

std::optional<int64_t> JsonObject::integer(const char* key, int64_t min, int64_t max) const {
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  const std::string range = " from " + std::to_string(min) + " to " + std::to_string(max);
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    if (v > static_cast<uint64_t>(max)) throw InputError(field(key) + ": must be an integer" + range);
    return static_cast<int64_t>(v);
  }
  if (!it->is_number_integer()) throw InputError(field(key) + ": must be an integer" + range);
  const int64_t v = it->get<int64_t>();
  if (v < min || v > max) throw InputError(field(key) + ": must be an integer" + range);
  return v;
}

std::optional<double> JsonObject::number(const char* key, double min, double max) const {
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  std::ostringstream range;
  range << " from " << min << " to " << max;
  if (!it->is_number()) throw InputError(field(key) + ": must be a number" + range.str());
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < min || v > max) throw InputError(field(key) + ": must be a number" + range.str());
  return v;
}

std::optional<JsonObject> JsonObject::object(const char* key) const {
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonObject(*it, field(key));
}

}  // namespace tessel
