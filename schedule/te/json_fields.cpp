#include "schedule/te/json_fields.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "schedule/te/error.h"

namespace tessel {

namespace {

// Finds where a SAX parse of the text stops with an error: nlohmann reports a number beyond a
// double's range (out_of_range.406) without a position, the SAX interface passes it along.
struct ErrorLocator : nlohmann::json_sax<nlohmann::json> {
  size_t position = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t at, const std::string&, const nlohmann::detail::exception&) override {
    position = at;
    return false;
  }
};

// "line 3, column 17" of the byte offset `at` (1-based; the offset points just past the token).
std::string line_and_column(const std::string& text, size_t at) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < at && i < text.size(); ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(at - line_start);
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& where, const std::string& problem) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    // nlohmann's messages start with "[json.exception.parse_error.101] "; the rest is the part a user needs.
    if (size_t close = what.find("] "); what.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      what = what.substr(close + 2);
    if (e.id == 406) {  // a number beyond a double's range, e.g. 1e400: say where it is
      ErrorLocator locator;
      nlohmann::json::sax_parse(text, &locator);
      what += " at " + line_and_column(text, locator.position) + " (numbers must be finite doubles)";
    }
    throw InputError(where + ": " + problem + ": " + what);
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
  return json_integer(*it, field(key), min, max);
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

std::optional<std::string> integer_problem(const nlohmann::json& value, int64_t min, int64_t max) {
  const std::string range = "must be an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (max < 0 || v > static_cast<uint64_t>(max)) return range + ", not " + std::to_string(v);
    if (static_cast<int64_t>(v) < min) return range + ", not " + std::to_string(v);
    return std::nullopt;
  }
  if (!value.is_number_integer()) return range + ", not " + json_kind(value);
  const int64_t v = value.get<int64_t>();
  if (v < min || v > max) return range + ", not " + std::to_string(v);
  return std::nullopt;
}

int64_t json_integer(const nlohmann::json& value, const std::string& where, int64_t min, int64_t max) {
  if (std::optional<std::string> problem = integer_problem(value, min, max)) throw InputError(where + ": " + *problem);
  return value.is_number_unsigned() ? static_cast<int64_t>(value.get<uint64_t>()) : value.get<int64_t>();
}

std::string json_kind(const nlohmann::json& value) {
  if (value.is_number_float()) return "the number " + value.dump();
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      return s.size() <= 40 ? "the string " + value.dump() : std::string("a string of ") + std::to_string(s.size()) + " characters";
    }
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    default: return "a " + std::string(value.type_name());
  }
}

std::optional<JsonObject> JsonObject::object(const char* key) const {
  auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonObject(*it, field(key));
}

}  // namespace tessel
