// Mapping between MeasureRecord and the rows of the tuning log.
#include "database/record_rows.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

namespace tessel::db {
namespace {

// SQLite may store a REAL with an integral value as an integer on disk, which turns -0.0 into 0.0;
// normalise up front so that what is hashed is what comes back.
double canonical(double value) { return value == 0 ? 0.0 : value; }

bool is_valid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t length;
    uint32_t code;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, code = c & 0x07;
    } else {
      return false;
    }
    if (i + length > n) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      code = (code << 6) | (s[i + k] & 0x3F);
    }
    static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

class Fnv1a {
 public:
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) hash_ = (hash_ ^ p[i]) * 0x100000001b3ULL;
  }
  void u64(uint64_t value) {
    unsigned char le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<unsigned char>(value >> (8 * i));
    bytes(le, 8);
  }
  void text(const std::string& value) {
    u64(value.size());
    bytes(value.data(), value.size());
  }
  void number(double value) {
    double v = canonical(value);
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    u64(bits);
  }
  int64_t value() const { return static_cast<int64_t>(hash_); }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

// Runs an INSERT ... RETURNING id (SQLite has RETURNING since 3.35) and returns the new row's id.
int64_t inserted_id(Connection& conn, Statement& insert) {
  if (!insert.step()) throw DatabaseError("tuning log '" + conn.path() + "': an insert returned no row id");
  const int64_t id = insert.column_int(0);
  insert.run();  // to the end of the statement, which SQLite needs before the insert is complete
  return id;
}

}  // namespace

std::optional<std::string> validate_record(const MeasureRecord& r) {
  auto finite = [](double v) { return std::isfinite(v); };
  if (r.workload.key.empty()) return "workload key is empty";
  if (r.target.kind.empty()) return "target kind is empty";
  if (!finite(r.workload.flops)) return "workload flops is not finite";
  if (!finite(r.median_s)) return "median_s is not finite";
  if (!finite(r.build_s) || !finite(r.run_s)) return "build_s or run_s is not finite";
  if (!finite(r.reference_s) || r.reference_s < 0) return "reference_s is not a finite latency (0 or more)";
  for (double s : r.samples_s) {
    if (!finite(s)) return "a latency sample is not finite";
  }
  if (r.error == ErrorCode::Ok && r.samples_s.empty()) return "an ok record has no latency samples";
  const std::pair<const char*, const std::string*> texts[] = {
      {"workload.key", &r.workload.key},
      {"workload.text", &r.workload.text},
      {"target.kind", &r.target.kind},
      {"target.arch", &r.target.arch},
      {"target.device_name", &r.target.device_name},
      {"target.driver_version", &r.target.driver_version},
      {"target.toolkit_version", &r.target.toolkit_version},
      {"target.cpu_features", &r.target.cpu_features},
      {"trace_json", &r.trace_json},
      {"error_message", &r.error_message},
      {"settings_json", &r.settings_json},
      {"timestamp", &r.timestamp},
  };
  for (const auto& [name, text] : texts) {
    if (!is_valid_utf8(*text)) return std::string("field '") + name + "' is not valid UTF-8";
  }
  return std::nullopt;
}

std::optional<std::string> measurement_problem(const MeasureRecord& r) {
  auto finite_non_negative = [](double v) { return std::isfinite(v) && v >= 0; };
  if (r.workload.key.empty()) return "workload.key: is empty";
  if (r.workload.text.empty()) return "workload.text: is empty";
  if (!finite_non_negative(r.workload.flops)) return "workload.flops: must be a finite number, 0 or more";
  if (r.target.kind.empty()) return "target.kind: is empty";
  if (r.trace_json.empty()) return "trace_json: is empty";
  if (!std::isfinite(r.median_s) || r.median_s < 0) return "median_s: must be a finite number, 0 or more";
  if (r.error == ErrorCode::Ok) {
    if (r.median_s <= 0) return "median_s: must be above 0 in an ok record";
    if (r.samples_s.empty()) return "samples_s: an ok record needs at least one latency sample";
  }
  for (size_t i = 0; i < r.samples_s.size(); ++i) {
    if (!std::isfinite(r.samples_s[i]) || r.samples_s[i] <= 0)
      return "samples_s: sample " + std::to_string(i) + " must be a finite latency above 0";
  }
  if (!finite_non_negative(r.build_s)) return "build_s: must be a finite number of seconds, 0 or more";
  if (!finite_non_negative(r.run_s)) return "run_s: must be a finite number of seconds, 0 or more";
  if (!finite_non_negative(r.reference_s)) return "reference_s: must be a finite latency, 0 (none) or more";
  return std::nullopt;
}

int64_t record_checksum(const MeasureRecord& r) {
  Fnv1a h;
  h.text(r.workload.key);
  h.text(r.workload.text);
  h.number(r.workload.flops);
  for (const std::string* field :
       {&r.target.kind, &r.target.arch, &r.target.device_name, &r.target.driver_version,
        &r.target.toolkit_version, &r.target.cpu_features}) {
    h.text(*field);
  }
  h.text(r.trace_json);
  h.u64(r.samples_s.size());
  for (double s : r.samples_s) h.number(s);
  h.number(r.median_s);
  h.text(to_string(r.error));
  h.text(r.error_message);
  h.number(r.build_s);
  h.number(r.run_s);
  h.text(r.settings_json);
  h.text(r.timestamp);
  // Hashed only when not a trial, so that the checksums of logs written before retimes existed
  // (schema version 2) stay valid.
  if (r.purpose != RecordPurpose::Trial) h.text(to_string(r.purpose));
  // Likewise only when there is one (schema version 3 had none).
  if (r.reference_s != 0) h.number(r.reference_s);
  return h.value();
}

std::string samples_to_json(const std::vector<double>& samples) {
  // nlohmann prints the shortest text that parses back to the same double, so samples round-trip
  // exactly through the database and through JSON lines.
  return nlohmann::json(samples).dump();
}

#define TESSEL_RECORD_COLUMNS                                                                        \
  "SELECT r.id, r.session_id, w.key, w.text, w.flops, t.kind, t.arch, t.device_name, "              \
  "t.driver_version, t.toolkit_version, t.cpu_features, r.trace_json, r.samples_json, r.median_s, " \
  "r.error_code, r.error_message, r.build_s, r.run_s, r.settings_json, r.timestamp, r.checksum"
#define TESSEL_RECORD_JOINS \
  " FROM records r JOIN workloads w ON w.id = r.workload_id JOIN targets t ON t.id = r.target_id"
const char* const kRecordSelect = TESSEL_RECORD_COLUMNS ", r.purpose, r.reference_s" TESSEL_RECORD_JOINS;
const char* const kRecordSelectV2 = TESSEL_RECORD_COLUMNS TESSEL_RECORD_JOINS;
#undef TESSEL_RECORD_COLUMNS
#undef TESSEL_RECORD_JOINS

RecordRow read_record_row(const Statement& s) {
  RecordRow row;
  MeasureRecord& r = row.record;
  r.id = s.column_int(0);
  r.session_id = s.column_int(1);
  r.workload = {s.column_text(2), s.column_text(3), s.column_double(4)};
  r.target = {s.column_text(5), s.column_text(6), s.column_text(7),
              s.column_text(8), s.column_text(9), s.column_text(10)};
  r.trace_json = s.column_text(11);
  std::string samples = s.column_text(12);
  r.median_s = s.column_double(13);
  std::string code = s.column_text(14);
  r.error_message = s.column_text(15);
  r.build_s = s.column_double(16);
  r.run_s = s.column_double(17);
  r.settings_json = s.column_text(18);
  r.timestamp = s.column_text(19);
  row.stored_checksum = s.column_int(20);
  std::string purpose = s.column_count() > 21 ? s.column_text(21) : "trial";
  r.reference_s = s.column_count() > 22 ? s.column_double(22) : 0;

  std::string where = "record " + std::to_string(r.id) + ": ";
  auto parsed = nlohmann::json::parse(samples, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) {
    row.problem = where + "latency samples are not a JSON array";
  } else {
    for (const auto& v : parsed) {
      if (!v.is_number()) {
        row.problem = where + "a latency sample is not a number";
        break;
      }
      r.samples_s.push_back(v.get<double>());
    }
  }
  if (auto error = error_code_from_string(code)) {
    r.error = *error;
  } else {
    r.error = ErrorCode::Unknown;
    if (!row.problem) row.problem = where + "unknown error code '" + code + "'";
  }
  if (auto p = record_purpose_from_string(purpose)) {
    r.purpose = *p;
  } else if (!row.problem) {
    row.problem = where + "unknown record purpose '" + purpose + "'";
  }
  row.decoded = !row.problem.has_value();
  // A file from elsewhere may hold what append() would refuse (e.g. bytes that are not UTF-8, which
  // no JSON line can carry); report it rather than pass it on.
  if (!row.problem) {
    if (auto invalid = validate_record(r)) row.problem = where + *invalid;
  }
  if (!row.problem && record_checksum(r) != row.stored_checksum) {
    row.problem = where + "content does not match its checksum (the file is damaged)";
  }
  return row;
}

std::optional<int64_t> find_workload(Connection& conn, const std::string& key) {
  Statement stmt = conn.prepare("SELECT id FROM workloads WHERE key = ?1");
  stmt.bind(1, key);
  if (!stmt.step()) return std::nullopt;
  return stmt.column_int(0);
}

std::optional<std::string> workload_mismatch(Connection& conn, const WorkloadInfo& w) {
  Statement stmt = conn.prepare("SELECT text, flops FROM workloads WHERE key = ?1");
  stmt.bind(1, w.key);
  if (!stmt.step() || (stmt.column_text(0) == w.text && stmt.column_double(1) == canonical(w.flops))) {
    return std::nullopt;
  }
  return "workload key '" + w.key +
         "' is already stored with a different text or flops; refusing to mix them";
}

int64_t workload_id(Connection& conn, const WorkloadInfo& w) {
  conn.prepare("INSERT INTO workloads(key, text, flops) VALUES (?1, ?2, ?3) ON CONFLICT(key) DO NOTHING")
      .bind(1, w.key)
      .bind(2, w.text)
      .bind(3, canonical(w.flops))
      .run();
  Statement stmt = conn.prepare("SELECT id, text, flops FROM workloads WHERE key = ?1");
  stmt.bind(1, w.key);
  if (!stmt.step()) {
    throw DatabaseError("tuning log '" + conn.path() + "': workload '" + w.key +
                        "' vanished after insertion");
  }
  if (stmt.column_text(1) != w.text || stmt.column_double(2) != canonical(w.flops)) {
    throw DatabaseError("tuning log '" + conn.path() + "': " + *workload_mismatch(conn, w));
  }
  return stmt.column_int(0);
}

std::optional<int64_t> find_target(Connection& conn, const TargetInfo& t) {
  Statement stmt = conn.prepare(
      "SELECT id FROM targets WHERE kind = ?1 AND arch = ?2 AND device_name = ?3 AND "
      "driver_version = ?4 AND toolkit_version = ?5 AND cpu_features = ?6");
  stmt.bind(1, t.kind).bind(2, t.arch).bind(3, t.device_name);
  stmt.bind(4, t.driver_version).bind(5, t.toolkit_version).bind(6, t.cpu_features);
  if (!stmt.step()) return std::nullopt;
  return stmt.column_int(0);
}

int64_t target_id(Connection& conn, const TargetInfo& t) {
  conn.prepare(
          "INSERT INTO targets(kind, arch, device_name, driver_version, toolkit_version, cpu_features) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING")
      .bind(1, t.kind)
      .bind(2, t.arch)
      .bind(3, t.device_name)
      .bind(4, t.driver_version)
      .bind(5, t.toolkit_version)
      .bind(6, t.cpu_features)
      .run();
  auto id = find_target(conn, t);
  if (!id) throw DatabaseError("tuning log '" + conn.path() + "': a target vanished after insertion");
  return *id;
}

int64_t insert_session(Connection& conn, const SessionInfo& s) {
  Statement stmt = conn.prepare(
      "INSERT INTO sessions(start_time, options_json, tool_version, host, label) "
      "VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id");
  stmt.bind(1, s.start_time).bind(2, s.options_json).bind(3, s.tool_version).bind(4, s.host).bind(5, s.label);
  return inserted_id(conn, stmt);
}

int64_t find_or_insert_session(Connection& conn, const SessionInfo& s) {
  Statement stmt = conn.prepare(
      "SELECT id FROM sessions WHERE start_time = ?1 AND options_json = ?2 AND tool_version = ?3 AND "
      "host = ?4 AND label = ?5 ORDER BY id LIMIT 1");
  stmt.bind(1, s.start_time).bind(2, s.options_json).bind(3, s.tool_version);
  stmt.bind(4, s.host).bind(5, s.label);
  if (stmt.step()) return stmt.column_int(0);
  return insert_session(conn, s);
}

int64_t insert_record(Connection& conn, const MeasureRecord& r, int64_t workload, int64_t target,
                      int64_t session, const std::string& timestamp) {
  MeasureRecord stored = r;
  stored.timestamp = timestamp;
  Statement stmt = conn.prepare(
      "INSERT INTO records(workload_id, target_id, session_id, trace_json, samples_json, median_s, "
      "error_code, error_message, build_s, run_s, settings_json, timestamp, checksum, purpose, reference_s) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) RETURNING id");
  stmt.bind(1, workload).bind(2, target).bind(3, session);
  stmt.bind(4, r.trace_json).bind(5, samples_to_json(r.samples_s)).bind(6, canonical(r.median_s));
  stmt.bind(7, std::string_view(to_string(r.error))).bind(8, r.error_message);
  stmt.bind(9, canonical(r.build_s)).bind(10, canonical(r.run_s)).bind(11, r.settings_json);
  stmt.bind(12, timestamp).bind(13, record_checksum(stored)).bind(14, std::string_view(to_string(r.purpose)));
  stmt.bind(15, canonical(r.reference_s));
  return inserted_id(conn, stmt);
}

bool has_identical_record(Connection& conn, const MeasureRecord& r, int64_t workload, int64_t target) {
  // The checksum index narrows the search; the column comparisons make the rule exact.
  Statement stmt = conn.prepare(
      "SELECT 1 FROM records WHERE checksum = ?1 AND workload_id = ?2 AND target_id = ?3 AND "
      "trace_json = ?4 AND samples_json = ?5 AND median_s = ?6 AND error_code = ?7 AND "
      "error_message = ?8 AND build_s = ?9 AND run_s = ?10 AND settings_json = ?11 AND "
      "timestamp = ?12 AND purpose = ?13 AND reference_s = ?14 LIMIT 1");
  stmt.bind(1, record_checksum(r)).bind(2, workload).bind(3, target);
  stmt.bind(4, r.trace_json).bind(5, samples_to_json(r.samples_s)).bind(6, canonical(r.median_s));
  stmt.bind(7, std::string_view(to_string(r.error))).bind(8, r.error_message);
  stmt.bind(9, canonical(r.build_s)).bind(10, canonical(r.run_s)).bind(11, r.settings_json);
  stmt.bind(12, r.timestamp).bind(13, std::string_view(to_string(r.purpose))).bind(14, canonical(r.reference_s));
  return stmt.step();
}

std::string utc_timestamp() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[40];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &utc);
  char result[48];
  std::snprintf(result, sizeof result, "%s.%03dZ", buffer, static_cast<int>(ms));
  return result;
}

}  // namespace tessel::db
