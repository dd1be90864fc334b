// JSON-lines export and import of the tuning log, and merging of logs.
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
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <tuple>

#include "database/record_rows.h"
#include "database/tuning_log.h"
#include "database/tuning_log_json.h"
#include "database/tuning_log_impl.h"
#include "schedule/te/json_fields.h"

namespace tessel {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;         // a trial's line
constexpr int kRetimeFormatVersion = 2;   // a retime's line (adds "purpose")

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

// Reads one line. Every value's type and range is checked here, through the readers shared by
// every reader of untrusted JSON (schedule/te/json_fields.h), so that an error names the line and
// the field ("shared.jsonl: line 7: target.arch: must be a string") and no number, however large,
// reaches a later reader unchecked.
struct LineReader {
  explicit LineReader(const JsonObject& object) : o(object) {}

  std::string text(const char* key) const {
    std::optional<std::string> value = o.string(key);
    if (!value) throw InputError(o.field(key) + ": missing");
    return *value;
  }
  double number(const char* key, double min) const {
    std::optional<double> value = o.number(key, min, std::numeric_limits<double>::max());
    if (!value) throw InputError(o.field(key) + ": missing");
    return *value;
  }
  JsonObject object(const char* key) const {
    std::optional<JsonObject> value = o.object(key);
    if (!value) throw InputError(o.field(key) + ": missing");
    return *value;
  }

  const JsonObject& o;
};

struct LineContent {
  MeasureRecord record;
  SessionInfo session;
};

LineContent from_line(const std::string& line, const std::string& where) {
  const json j = parse_json_text(line, where);
  const JsonObject top(j, where + ": ");
  const LineReader read(top);
  auto v = j.find("v");
  if (v == j.end()) throw InputError(top.field("v") + ": missing");
  if (!v->is_number_integer() || (*v != kFormatVersion && *v != kRetimeFormatVersion)) {
    throw InputError(top.field("v") + ": unsupported format version " + v->dump() + " (this tessel reads versions " +
                     std::to_string(kFormatVersion) + " and " + std::to_string(kRetimeFormatVersion) + ")");
  }
  const int version = *v == kFormatVersion ? kFormatVersion : kRetimeFormatVersion;
  LineContent content;
  MeasureRecord& r = content.record;
  const JsonObject w = read.object("workload");
  const LineReader workload(w);
  r.workload = {workload.text("key"), workload.text("text"), workload.number("flops", 0)};
  const JsonObject t = read.object("target");
  const LineReader target(t);
  r.target = {target.text("kind"),           target.text("arch"),
              target.text("device_name"),    target.text("driver_version"),
              target.text("toolkit_version"), target.text("cpu_features")};
  const JsonObject s = read.object("session");
  const LineReader session(s);
  content.session = {session.text("label"), session.text("options_json"), session.text("tool_version"),
                     session.text("host"), session.text("start_time")};
  r.trace_json = read.text("trace_json");
  auto samples = j.find("samples_s");
  if (samples == j.end()) throw InputError(top.field("samples_s") + ": missing");
  if (!samples->is_array()) throw InputError(top.field("samples_s") + ": must be an array of numbers");
  for (const json& sample : *samples) {
    // parse_json_text refuses numbers beyond a double's range, so every number here is finite.
    if (!sample.is_number()) throw InputError(top.field("samples_s") + ": must be an array of numbers");
    r.samples_s.push_back(sample.get<double>());
  }
  r.median_s = read.number("median_s", 0);
  const std::string error = read.text("error");
  auto code = error_code_from_string(error);
  if (!code) throw InputError(top.field("error") + ": unknown error code '" + error + "'");
  r.error = *code;
  r.error_message = read.text("error_message");
  r.build_s = read.number("build_s", 0);
  r.run_s = read.number("run_s", 0);
  r.settings_json = read.text("settings_json");
  r.timestamp = read.text("timestamp");
  // A version 2 line must say its purpose. A version 1 line may carry one too: tessel 64bafa9 to
  // 5282ecd wrote retimes that way, and their exports must import as retimes, not be refused.
  if (version == kRetimeFormatVersion && !top.has("purpose"))
    throw InputError(top.field("purpose") + ": missing (a version 2 line needs it)");
  if (std::optional<std::string> purpose = top.string("purpose")) {
    auto p = record_purpose_from_string(*purpose);
    if (!p) throw InputError(top.field("purpose") + ": must be \"trial\" or \"retime\", not '" + *purpose + "'");
    r.purpose = *p;
  }
  r.reference_s = top.number("reference_s", 0, std::numeric_limits<double>::max()).value_or(0);
  return content;
}

using SessionKey = std::tuple<std::string, std::string, std::string, std::string, std::string>;

SessionKey session_key(const SessionInfo& s) {
  return {s.start_time, s.options_json, s.tool_version, s.host, s.label};
}

// Records read and checked, waiting to be stored together. Sessions are kept once each: an export
// repeats its session on every line.
struct ImportSet {
  struct Item {
    MeasureRecord record;
    size_t session;      // index into sessions
    std::string origin;  // "FILE: line 7" or "FILE: record 12"
  };
  std::vector<Item> items;
  std::vector<SessionInfo> sessions;
  std::map<SessionKey, size_t> session_index;
  ImportReport report;

  // Checks `record` (the log's checks of a measurement, then the caller's) and keeps it, or
  // reports why not.
  void add(MeasureRecord record, const SessionInfo& session, std::string origin, const RecordValidator& validator) {
    std::optional<std::string> problem = db::measurement_problem(record);
    if (!problem) problem = db::validate_record(record);
    if (!problem && validator) problem = validator(record);
    if (problem) {
      report.errors.push_back(origin + ": " + *problem);
      return;
    }
    auto [it, inserted] = session_index.try_emplace(session_key(session), sessions.size());
    if (inserted) sessions.push_back(session);
    items.push_back(Item{std::move(record), it->second, std::move(origin)});
  }

  void read_jsonl(std::istream& in, const std::string& source_name, const RecordValidator& validator) {
    std::string line;
    for (int64_t line_number = 1; std::getline(in, line); ++line_number) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      std::string origin = source_name + ": line " + std::to_string(line_number);
      LineContent content;
      try {
        content = from_line(line, origin);
      } catch (const InputError& e) {
        report.errors.push_back(e.what());
        continue;
      }
      add(std::move(content.record), content.session, std::move(origin), validator);
    }
    if (in.bad()) throw DatabaseError("cannot read '" + source_name + "' (I/O error)");
  }

  // Stores every item in one transaction, or nothing when any cannot be stored (its workload key
  // is held with another text); applies the duplicate rule of import_jsonl. The transaction runs
  // again, whole, after a lost server connection.
  void store(db::Connection& conn) {
    if (!report.errors.empty() || items.empty()) return;
    Outcome outcome = db::with_retries(conn, [&] { return store_once(conn); });
    if (!outcome.errors.empty()) {
      report.errors = std::move(outcome.errors);
      return;
    }
    report.imported = outcome.imported;
    report.duplicates = outcome.duplicates;
  }

 private:
  struct Outcome {
    int64_t imported = 0, duplicates = 0;
    std::vector<std::string> errors;
  };

  Outcome store_once(db::Connection& conn) const {
    Outcome outcome;
    db::Transaction txn(conn);
    std::vector<int64_t> session_ids(sessions.size(), 0);
    for (const Item& item : items) {
      const MeasureRecord& r = item.record;
      if (auto mismatch = db::workload_mismatch(conn, r.workload)) {
        outcome.errors.push_back(item.origin + ": workload.key: " + *mismatch);
        continue;
      }
      int64_t workload = db::workload_id(conn, r.workload);
      int64_t target = db::target_id(conn, r.target);
      if (db::has_identical_record(conn, r, workload, target)) {
        ++outcome.duplicates;
        continue;
      }
      int64_t& session = session_ids[item.session];
      if (session == 0) session = db::find_or_insert_session(conn, sessions[item.session]);
      db::insert_record(conn, r, workload, target, session, r.timestamp);
      ++outcome.imported;
    }
    if (outcome.errors.empty()) txn.commit();  // else the transaction rolls back: the log is as it was
    return outcome;
  }
};

// Every session of a log, by id.
std::map<int64_t, SessionInfo> read_sessions(db::Connection& conn) {
  std::map<int64_t, SessionInfo> sessions;
  db::Statement rows = conn.prepare("SELECT id, label, options_json, tool_version, host, start_time FROM sessions");
  while (rows.step()) {
    sessions[rows.column_int(0)] = {rows.column_text(1), rows.column_text(2), rows.column_text(3),
                                    rows.column_text(4), rows.column_text(5)};
  }
  return sessions;
}

// Writes the export of one snapshot of the log; `started` turns true with the first line.
void write_export(db::Connection& conn, std::ostream& out, bool& started) {
  // One read transaction: sessions and records come from the same snapshot even while other
  // processes keep appending.
  db::ReadTransaction snapshot(conn);
  const std::map<int64_t, SessionInfo> sessions = read_sessions(conn);
  db::Statement rows =
      conn.prepare((std::string(db::kRecordSelect) +
                    " ORDER BY w.key, t.kind, t.arch, t.device_name, t.driver_version, t.toolkit_version, "
                    "t.cpu_features, r.timestamp, r.id")
                       .c_str());
  const std::string& path = conn.path();
  while (rows.step()) {
    db::RecordRow row = db::read_record_row(rows);
    if (row.problem) {
      throw DatabaseError("tuning log '" + path + "': cannot export: " + *row.problem +
                          "; run `tessel db check --db " + path + "`");
    }
    auto session = sessions.find(row.record.session_id);
    if (session == sessions.end()) {
      throw DatabaseError("tuning log '" + path + "': cannot export: record " + std::to_string(row.record.id) +
                          " refers to a missing session");
    }
    started = true;
    out << to_line(row.record, session->second).dump() << '\n';
  }
  snapshot.finish();
}

// A record of another log, read for merge(): the record with its session, or why it cannot be used.
struct SourceRecord {
  std::optional<std::string> error;
  std::string origin;  // "PATH: record 12"
  MeasureRecord record;
  SessionInfo session;
};

// Every record of the log behind `conn`, from one snapshot, in id order.
std::vector<SourceRecord> read_source(db::Connection& conn) {
  std::vector<SourceRecord> result;
  const std::string& path = conn.path();
  db::ReadTransaction snapshot(conn);  // one snapshot of the other log, even while it is being written
  const std::map<int64_t, SessionInfo> sessions = read_sessions(conn);
  db::Statement rows = conn.prepare((std::string(db::kRecordSelect) + " ORDER BY r.id").c_str());
  while (rows.step()) {
    db::RecordRow row = db::read_record_row(rows);
    SourceRecord& source = result.emplace_back();
    if (row.problem) {
      source.error = path + ": " + *row.problem;
      continue;
    }
    source.origin = path + ": record " + std::to_string(row.record.id);
    auto session = sessions.find(row.record.session_id);
    if (session == sessions.end()) {
      source.error = source.origin + ": session: refers to a missing session";
      continue;
    }
    source.record = std::move(row.record);
    source.session = session->second;
  }
  snapshot.finish();
  return result;
}

}  // namespace

void TuningLog::export_jsonl(std::ostream& out) const {
  bool started = false;
  impl_->retrying([&] {
    try {
      write_export(impl_->conn, out, started);
    } catch (const db::TransientError& e) {
      // Lines already written would be written twice by a re-run.
      if (started) throw DatabaseError(std::string(e.what()) + "; the export is incomplete");
      throw;
    }
  });
  out.flush();
  if (!out) throw DatabaseError("tuning log '" + path() + "': writing the export failed");
}

ImportReport TuningLog::import_jsonl(std::istream& in, const std::string& source_name,
                                     const RecordValidator& validator) {
  impl_->require_writable("import records");
  ImportSet set;
  set.read_jsonl(in, source_name, validator);
  set.store(impl_->conn);
  return std::move(set.report);
}

ImportReport TuningLog::import_jsonl_files(const std::vector<std::string>& paths, const RecordValidator& validator) {
  impl_->require_writable("import records");
  ImportSet set;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in || std::filesystem::is_directory(path)) throw InputError("cannot read '" + path + "': no such file or not readable");
    set.read_jsonl(in, path, validator);
  }
  set.store(impl_->conn);
  return std::move(set.report);
}

ImportReport TuningLog::merge(const std::string& other_path, const RecordValidator& validator) {
  return merge(std::vector<std::string>{other_path}, validator);
}

ImportReport TuningLog::merge(const std::vector<std::string>& other_paths, const RecordValidator& validator) {
  impl_->require_writable("merge records");
  ImportSet set;
  for (const std::string& other_path : other_paths) {
    TuningLog other = open(other_path, Mode::ReadOnly);
    for (SourceRecord& source : other.impl_->retrying([&] { return read_source(other.impl_->conn); })) {
      if (source.error) {
        set.report.errors.push_back(std::move(*source.error));
      } else {
        set.add(std::move(source.record), source.session, std::move(source.origin), validator);
      }
    }
  }
  set.store(impl_->conn);
  return std::move(set.report);
}

}  // namespace tessel
