// JSON-lines export and import of the tuning log, and merging of log files.
//
// Format version 1: one JSON object per line, keys sorted, with everything needed to use the record
// without any other line:
//   {"build_s":..,"error":"ok","error_message":"","median_s":..,"run_s":..,"samples_s":[..],
//    "session":{"host","label","options_json","start_time","tool_version"},"settings_json":"..",
//    "target":{"arch","cpu_features","device_name","driver_version","kind","toolkit_version"},
//    "timestamp":"..","trace_json":"..","v":1,"workload":{"flops","key","text"}}
// Format version 2, for retimes only (a schedule measured again, see RecordPurpose): the same with
// "purpose":"retime" and "v":2, so that a tessel that knows only version 1 refuses the line instead
// of importing it as a trial. A line without "purpose" is a trial; trials keep "v":1, so exports
// written before retimes existed and exports of logs without retimes are unchanged. A version 1
// line with "purpose" (written by tessel 64bafa9 to 5282ecd) is read by its purpose.
// A record timed against the yardstick also carries "reference_s" (MeasureRecord::reference_s), in
// either version; a line without it has none. A tessel that predates it ignores the field, and
// then ranks the record by its raw median, as it ranked every record.
// Trace, options and settings are carried as strings, not parsed JSON, so their bytes come back
// exactly as stored. Record and session ids are local to a file and not exported.
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <tuple>

#include "database/record_rows.h"
#include "database/tuning_log.h"
#include "database/tuning_log_json.h"
#include "database/tuning_log_impl.h"

namespace tessel {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;         // a trial's line
constexpr int kRetimeFormatVersion = 2;   // a retime's line (adds "purpose")
constexpr size_t kImportBatch = 256;  // records per write transaction while importing

// A record read from a line or another log, with its session and where it came from.
struct ImportItem {
  MeasureRecord record;
  SessionInfo session;
  std::string origin;  // "FILE: line 7" or "FILE: record 12"
};

}  // namespace

json target_json(const TargetInfo& t) {
  return json{{"kind", t.kind},
              {"arch", t.arch},
              {"device_name", t.device_name},
              {"driver_version", t.driver_version},
              {"toolkit_version", t.toolkit_version},
              {"cpu_features", t.cpu_features}};
}

namespace {

json to_line(const MeasureRecord& r, const SessionInfo& s) {
  json line{
      {"v", kFormatVersion},
      {"workload", {{"key", r.workload.key}, {"text", r.workload.text}, {"flops", r.workload.flops}}},
      {"target", target_json(r.target)},
      {"session",
       {{"start_time", s.start_time},
        {"label", s.label},
        {"options_json", s.options_json},
        {"tool_version", s.tool_version},
        {"host", s.host}}},
      {"trace_json", r.trace_json},
      {"samples_s", r.samples_s},
      {"median_s", r.median_s},
      {"error", to_string(r.error)},
      {"error_message", r.error_message},
      {"build_s", r.build_s},
      {"run_s", r.run_s},
      {"settings_json", r.settings_json},
      {"timestamp", r.timestamp},
  };
  if (r.reference_s != 0) line["reference_s"] = r.reference_s;
  if (r.purpose != RecordPurpose::Trial) {
    line["purpose"] = to_string(r.purpose);
    line["v"] = kRetimeFormatVersion;
  }
  return line;
}

// Field readers for from_line: each names the field (with its object, e.g. "target.arch") in the
// error it throws, so that a reader of the report knows what to fix.
struct LineError {
  std::string message;
};

const json& field(const json& object, const char* name, const std::string& prefix) {
  auto it = object.find(name);
  if (it == object.end()) throw LineError{"missing field '" + prefix + name + "'"};
  return *it;
}

std::string text_field(const json& object, const char* name, const std::string& prefix = "") {
  const json& value = field(object, name, prefix);
  if (!value.is_string()) throw LineError{"field '" + prefix + name + "' must be a string"};
  return value.get<std::string>();
}

double number_field(const json& object, const char* name, const std::string& prefix = "") {
  const json& value = field(object, name, prefix);
  if (!value.is_number()) throw LineError{"field '" + prefix + name + "' must be a number"};
  return value.get<double>();
}

const json& object_field(const json& object, const char* name) {
  const json& value = field(object, name, "");
  if (!value.is_object()) throw LineError{std::string("field '") + name + "' must be an object"};
  return value;
}

ImportItem from_line(const std::string& line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    throw LineError{std::string("invalid JSON (") + e.what() + ")"};
  }
  if (!j.is_object()) throw LineError{"not a JSON object"};
  const json& version = field(j, "v", "");
  if (!version.is_number_integer()) throw LineError{"field 'v' must be an integer"};
  if (version.get<int64_t>() != kFormatVersion && version.get<int64_t>() != kRetimeFormatVersion) {
    throw LineError{"unsupported format version " + version.dump() + " (this tessel reads versions " +
                    std::to_string(kFormatVersion) + " and " + std::to_string(kRetimeFormatVersion) + ")"};
  }
  ImportItem item;
  MeasureRecord& r = item.record;
  const json& w = object_field(j, "workload");
  r.workload = {text_field(w, "key", "workload."), text_field(w, "text", "workload."),
                number_field(w, "flops", "workload.")};
  const json& t = object_field(j, "target");
  r.target = {text_field(t, "kind", "target."),
              text_field(t, "arch", "target."),
              text_field(t, "device_name", "target."),
              text_field(t, "driver_version", "target."),
              text_field(t, "toolkit_version", "target."),
              text_field(t, "cpu_features", "target.")};
  const json& s = object_field(j, "session");
  item.session = {text_field(s, "label", "session."), text_field(s, "options_json", "session."),
                  text_field(s, "tool_version", "session."), text_field(s, "host", "session."),
                  text_field(s, "start_time", "session.")};
  r.trace_json = text_field(j, "trace_json");
  const json& samples = field(j, "samples_s", "");
  if (!samples.is_array()) throw LineError{"field 'samples_s' must be an array of numbers"};
  for (const json& sample : samples) {
    if (!sample.is_number()) throw LineError{"field 'samples_s' must be an array of numbers"};
    r.samples_s.push_back(sample.get<double>());
  }
  r.median_s = number_field(j, "median_s");
  std::string error = text_field(j, "error");
  auto code = error_code_from_string(error);
  if (!code) throw LineError{"unknown error code '" + error + "'"};
  r.error = *code;
  r.error_message = text_field(j, "error_message");
  r.build_s = number_field(j, "build_s");
  r.run_s = number_field(j, "run_s");
  r.settings_json = text_field(j, "settings_json");
  r.timestamp = text_field(j, "timestamp");
  // A version 2 line must say its purpose. A version 1 line may carry one too: tessel 64bafa9 to
  // 5282ecd wrote retimes that way, and their exports must import as retimes, not be refused.
  if (version.get<int64_t>() == kRetimeFormatVersion && !j.contains("purpose"))
    throw LineError{"a version 2 line needs field 'purpose'"};
  if (j.contains("purpose")) {
    std::string purpose = text_field(j, "purpose");
    auto p = record_purpose_from_string(purpose);
    if (!p) throw LineError{"field 'purpose' must be \"trial\" or \"retime\", not '" + purpose + "'"};
    r.purpose = *p;
  }
  if (j.contains("reference_s")) r.reference_s = number_field(j, "reference_s");
  if (auto problem = db::validate_record(r)) throw LineError{*problem};
  return item;
}

using SessionKey = std::tuple<std::string, std::string, std::string, std::string, std::string>;

// Stores one batch in one transaction, applying the duplicate rule of import_jsonl.
void store_batch(db::Connection& conn, std::vector<ImportItem>& batch,
                 std::map<SessionKey, int64_t>& sessions, ImportReport& report) {
  if (batch.empty()) return;
  db::Transaction txn(conn);
  int64_t imported = 0, duplicates = 0;
  std::vector<std::string> errors;
  std::map<SessionKey, int64_t> new_sessions = sessions;
  for (const ImportItem& item : batch) {
    const MeasureRecord& r = item.record;
    if (auto mismatch = db::workload_mismatch(conn, r.workload)) {
      errors.push_back(item.origin + ": " + *mismatch);
      continue;
    }
    int64_t workload = db::workload_id(conn, r.workload);
    int64_t target = db::target_id(conn, r.target);
    if (db::has_identical_record(conn, r, workload, target)) {
      ++duplicates;
      continue;
    }
    const SessionInfo& s = item.session;
    SessionKey key{s.start_time, s.options_json, s.tool_version, s.host, s.label};
    auto [it, inserted] = new_sessions.try_emplace(key, 0);
    if (inserted) it->second = db::find_or_insert_session(conn, s);
    db::insert_record(conn, r, workload, target, it->second, r.timestamp);
    ++imported;
  }
  txn.commit();
  // Only after COMMIT: a failed batch leaves the report and the session cache as they were.
  sessions = std::move(new_sessions);
  report.imported += imported;
  report.duplicates += duplicates;
  for (auto& error : errors) report.errors.push_back(std::move(error));
  batch.clear();
}

}  // namespace

void TuningLog::export_jsonl(std::ostream& out) const {
  db::Connection& conn = impl_->conn;
  // One read transaction: sessions and records come from the same snapshot even while other
  // processes keep appending.
  conn.exec("BEGIN");
  try {
    std::map<int64_t, SessionInfo> sessions;
    db::Statement session_rows =
        conn.prepare("SELECT id, label, options_json, tool_version, host, start_time FROM sessions");
    while (session_rows.step()) {
      sessions[session_rows.column_int(0)] = {session_rows.column_text(1), session_rows.column_text(2),
                                              session_rows.column_text(3), session_rows.column_text(4),
                                              session_rows.column_text(5)};
    }
    db::Statement rows =
        conn.prepare((std::string(db::kRecordSelect) +
                      " ORDER BY w.key, t.kind, t.arch, t.device_name, t.driver_version, t.toolkit_version, "
                      "t.cpu_features, r.timestamp, r.id")
                         .c_str());
    while (rows.step()) {
      db::RecordRow row = db::read_record_row(rows);
      if (row.problem) {
        throw DatabaseError("tuning log '" + path() + "': cannot export: " + *row.problem +
                            "; run `tessel db check --db " + path() + "`");
      }
      auto session = sessions.find(row.record.session_id);
      if (session == sessions.end()) {
        throw DatabaseError("tuning log '" + path() + "': cannot export: record " +
                            std::to_string(row.record.id) + " refers to a missing session");
      }
      out << to_line(row.record, session->second).dump() << '\n';
    }
  } catch (...) {
    conn.exec_quietly("ROLLBACK");
    throw;
  }
  conn.exec("COMMIT");
  out.flush();
  if (!out) throw DatabaseError("tuning log '" + path() + "': writing the export failed");
}

ImportReport TuningLog::import_jsonl(std::istream& in, const std::string& source_name) {
  impl_->require_writable("import records");
  ImportReport report;
  std::map<SessionKey, int64_t> sessions;
  std::vector<ImportItem> batch;
  std::string line;
  for (int64_t line_number = 1; std::getline(in, line); ++line_number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::string origin = source_name + ": line " + std::to_string(line_number);
    try {
      batch.push_back(from_line(line));
      batch.back().origin = std::move(origin);
    } catch (const LineError& e) {
      report.errors.push_back(origin + ": " + e.message);
      continue;
    }
    if (batch.size() >= kImportBatch) store_batch(impl_->conn, batch, sessions, report);
  }
  store_batch(impl_->conn, batch, sessions, report);
  if (in.bad()) throw DatabaseError("cannot read '" + source_name + "' (I/O error)");
  return report;
}

ImportReport TuningLog::merge(const std::string& other_path) {
  impl_->require_writable("merge records");
  TuningLog other = open(other_path, Mode::ReadOnly);
  db::Connection& from = other.impl_->conn;
  ImportReport report;
  std::map<SessionKey, int64_t> sessions;
  std::vector<ImportItem> batch;
  from.exec("BEGIN");
  try {
    std::map<int64_t, SessionInfo> other_sessions;
    db::Statement session_rows =
        from.prepare("SELECT id, label, options_json, tool_version, host, start_time FROM sessions");
    while (session_rows.step()) {
      other_sessions[session_rows.column_int(0)] = {session_rows.column_text(1), session_rows.column_text(2),
                                                    session_rows.column_text(3), session_rows.column_text(4),
                                                    session_rows.column_text(5)};
    }
    db::Statement rows = from.prepare((std::string(db::kRecordSelect) + " ORDER BY r.id").c_str());
    while (rows.step()) {
      db::RecordRow row = db::read_record_row(rows);
      std::string origin = other_path + ": record " + std::to_string(row.record.id);
      auto session = other_sessions.find(row.record.session_id);
      if (row.problem) {
        report.errors.push_back(other_path + ": " + *row.problem + "; skipped");
        continue;
      }
      if (session == other_sessions.end()) {
        report.errors.push_back(origin + ": refers to a missing session; skipped");
        continue;
      }
      batch.push_back(ImportItem{std::move(row.record), session->second, std::move(origin)});
      if (batch.size() >= kImportBatch) store_batch(impl_->conn, batch, sessions, report);
    }
    store_batch(impl_->conn, batch, sessions, report);
  } catch (...) {
    from.exec_quietly("ROLLBACK");
    throw;
  }
  from.exec("COMMIT");
  return report;
}

}  // namespace tessel
