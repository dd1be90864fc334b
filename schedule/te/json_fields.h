// Reading untrusted JSON (config files, schedules, suites, imported records): every value's type and
// range checked where it enters, every error an InputError naming the place — the file (and line),
// and the field path ("tune.json: costmodel.mlp_weight: must be a finite number at least 0").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace tessel {

// Parses `text`; an InputError naming `where` for anything that is not one JSON value (including
// numbers beyond a double's range, such as 1e400), with the line and column of the problem. Deep
// nesting is safe: nlohmann's parser and destructor do not recurse per level. The message reads
// "WHERE: PROBLEM: detail"; readers whose messages users already know keep their wording in `problem`.
nlohmann::json parse_json_text(const std::string& text, const std::string& where,
                               const std::string& problem = "not valid JSON");
// Reads and parses the file at `path`; the error names the path.
nlohmann::json parse_json_file(const std::string& path);

// A view of one JSON object and where it is ("FILE: section").
class JsonObject {
 public:
  // Throws InputError when `value` is not an object. A file's top level is named "FILE: ", its
  // fields then "FILE: key"; nested objects are "FILE: key.inner". `value` must outlive the view.
  JsonObject(const nlohmann::json& value, std::string where);

  // Throws InputError naming the first field that is not one of `known` (a misspelt setting must
  // not be silently ignored).
  void allow_only(std::initializer_list<const char*> known) const;

  bool has(const char* key) const { return value_->contains(key); }
  // Each returns nullopt for a missing field and throws InputError naming the field for a value of
  // the wrong type or out of [min, max].
  std::optional<std::string> string(const char* key) const;
  std::optional<bool> boolean(const char* key) const;
  std::optional<int64_t> integer(const char* key, int64_t min, int64_t max) const;
  std::optional<double> number(const char* key, double min, double max) const;  // finite
  std::optional<JsonObject> object(const char* key) const;

  // "where.key", for messages about a field's meaning.
  std::string field(const char* key) const;
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json* value_;
  std::string where_;
};

// Why `value` is not an integer in [min, max] ("must be an integer from 1 to 16, not the number
// 1.5"), or nullopt when it is one.
std::optional<std::string> integer_problem(const nlohmann::json& value, int64_t min, int64_t max);
// `value` as an integer in [min, max]; otherwise InputError("WHERE: " + the problem).
int64_t json_integer(const nlohmann::json& value, const std::string& where, int64_t min, int64_t max);

// What a JSON value is, for messages: "the string \"abc\"", "null", "the number 1.5", "an array".
std::string json_kind(const nlohmann::json& value);

}  // namespace tessel
