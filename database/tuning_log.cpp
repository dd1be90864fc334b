// TuningLog: opening, appending, replay queries and integrity checks. Export, import and merge are in
// tuning_log_jsonl.cpp.
#include "database/tuning_log.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "database/record_rows.h"
#include "database/schema.h"
#include "database/tuning_log_impl.h"

namespace tessel {
namespace {

constexpr size_t kMaxReportedRecordProblems = 50;
// append(): no trial budget, so no counting.
constexpr int64_t kNoBudget = std::numeric_limits<int64_t>::max();

std::string host_name() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "";
  return buffer;
}

// Ordering shared by best_per_workload_target and export: stable across files and machines.
const char* const kWorkloadTargetOrder =
    " ORDER BY w.key, t.kind, t.arch, t.device_name, t.driver_version, t.toolkit_version, "
    "t.cpu_features";

// Reads every row of `stmt`; a row that fails its checksum or cannot be decoded is never returned
// as if it were sound.
std::vector<MeasureRecord> read_sound_records(db::Statement& stmt, const std::string& path) {
  std::vector<MeasureRecord> result;
  while (stmt.step()) {
    db::RecordRow row = db::read_record_row(stmt);
    if (row.problem) {
      throw DatabaseError("tuning log '" + path + "': " + *row.problem + "; run `tessel db check --db " +
                          path + "`");
    }
    result.push_back(std::move(row.record));
  }
  return result;
}

// best(): every record of the pair, in the log's order, through the ranking rule. A record whose
// measurement cannot be believed (measurement_problem) is no timing, though a wrong answer or a crash
// it reports still rules its schedule out; schedules are then tried best first until `usable`
// accepts one's representative record.
std::optional<MeasureRecord> best_of(db::Connection& conn, int64_t workload, int64_t target,
                                     const RecordValidator& usable) {
  db::Statement all = conn.prepare(
      (std::string(db::kRecordSelect) + " WHERE r.workload_id = ?1 AND r.target_id = ?2 ORDER BY r.id").c_str());
  all.bind(1, workload).bind(2, target);
  std::vector<MeasureRecord> records = read_sound_records(all, conn.path());
  ScheduleRanking ranking;
  std::map<int64_t, size_t> index_of;
  for (size_t i = 0; i < records.size(); ++i) {
    const MeasureRecord& r = records[i];
    index_of[r.id] = i;
    if (db::measurement_problem(r) && !disqualifies(r.error)) continue;
    ranking.add(r.trace_json, r.error, r.median_s, r.reference_s, r.id);
  }
  if (!usable) {
    std::optional<ScheduleRanking::Ranked> best = ranking.best();
    if (!best) return std::nullopt;
    return std::move(records[index_of.at(*ranking.representative(*best->trace_json))]);
  }
  for (const ScheduleRanking::Ranked& candidate : ranking.ranked()) {
    MeasureRecord& r = records[index_of.at(*ranking.representative(*candidate.trace_json))];
    if (!usable(r)) return std::move(r);
  }
  return std::nullopt;
}

// A writable open of a path where nothing is: builds the new log in a file of its own beside the
// path, then links it into place, so that the path goes from absent to a complete log and another
// process never finds an empty or half-made file there (an empty file at a log's path is refused,
// see open). When another process links its new log first, that one is used.
void create_log_file(const std::string& path) {
  std::string temporary = path + ".new-XXXXXX";
  int fd = mkstemp(temporary.data());
  if (fd < 0) {
    throw DatabaseError("cannot create tuning log '" + path + "': " + std::strerror(errno) +
                        "; check that its directory exists and is writable");
  }
  close(fd);
  auto remove_temporary = [&] {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((temporary + suffix).c_str());
  };
  try {
    {
      db::Connection conn(temporary, /*read_only=*/false);
      db::create_schema(conn);
    }  // closing the only connection moves everything out of the write-ahead log into the file
    if (link(temporary.c_str(), path.c_str()) != 0 && errno != EEXIST) {
      const int link_error = errno;
      // A file system without hard links: rename, unless something took the path meanwhile.
      if (renameat2(AT_FDCWD, temporary.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0 &&
          errno != EEXIST) {
        throw DatabaseError("cannot create tuning log '" + path + "': " + std::strerror(link_error));
      }
    }
  } catch (...) {
    remove_temporary();
    throw;
  }
  remove_temporary();
}

}  // namespace

const char* to_string(RecordPurpose purpose) { return purpose == RecordPurpose::Retime ? "retime" : "trial"; }

std::optional<RecordPurpose> record_purpose_from_string(std::string_view text) {
  if (text == "trial") return RecordPurpose::Trial;
  if (text == "retime") return RecordPurpose::Retime;
  return std::nullopt;
}

TuningLog::TuningLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningLog::TuningLog(TuningLog&&) noexcept = default;
TuningLog& TuningLog::operator=(TuningLog&&) noexcept = default;
TuningLog::~TuningLog() = default;

const std::string& TuningLog::path() const { return impl_->conn.path(); }

TuningLog TuningLog::open(const std::string& path, Mode mode) {
  if (path.empty()) throw DatabaseError("tuning log path is empty");
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) {
    throw DatabaseError("tuning log '" + path + "' is a directory, not a file");
  }
  if (!std::filesystem::exists(status)) {
    if (mode == Mode::ReadOnly) throw DatabaseError("tuning log '" + path + "' does not exist");
    create_log_file(path);
  } else if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(path, ec) == 0 && !ec) {
    throw DatabaseError("tuning log '" + path + "' is an empty file, not a tessel log: remove it or name a new path");
  }
  auto impl = std::make_unique<Impl>(path, mode == Mode::ReadOnly);
  db::prepare_schema(impl->conn);
  return TuningLog(std::move(impl));
}

std::vector<std::string> TuningLog::check_file(const std::string& path, const RecordValidator& validator) {
  try {
    return open(path, Mode::ReadOnly).check(validator);
  } catch (const DatabaseError& e) {
    return {e.what()};
  }
}

int64_t TuningLog::begin_session(const SessionInfo& session) {
  impl_->require_writable("begin a session");
  SessionInfo filled = session;
  if (filled.start_time.empty()) filled.start_time = db::utc_timestamp();
  if (filled.host.empty()) filled.host = host_name();
#ifdef TESSEL_VERSION
  if (filled.tool_version.empty()) filled.tool_version = TESSEL_VERSION;
#endif
  db::Transaction txn(impl_->conn);
  int64_t id = db::insert_session(impl_->conn, filled);
  txn.commit();
  impl_->session_id = id;
  return id;
}

std::vector<int64_t> TuningLog::append(const std::vector<MeasureRecord>& batch) {
  return append_within_budget(batch, kNoBudget);
}

std::vector<int64_t> TuningLog::append_within_budget(const std::vector<MeasureRecord>& batch, int64_t trial_budget) {
  impl_->require_writable("append records");
  if (trial_budget < 0) {
    throw DatabaseError("tuning log '" + path() + "': a trial budget must be 0 or more, not " +
                        std::to_string(trial_budget));
  }
  bool needs_session = false;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (auto problem = db::validate_record(batch[i])) {
      throw DatabaseError("tuning log '" + path() + "': cannot append record " + std::to_string(i) +
                          " of the batch: " + *problem);
    }
    needs_session |= batch[i].session_id == 0;
  }
  if (needs_session && impl_->session_id == 0) begin_session(SessionInfo{});

  std::vector<int64_t> ids(batch.size(), 0);
  db::Transaction txn(impl_->conn);
  // Trials still allowed per (workload id, target id), counted under the write lock: no other
  // writer can add one between the count and the insert.
  std::map<std::pair<int64_t, int64_t>, int64_t> room;
  db::Statement count = impl_->conn.prepare(
      "SELECT count(*) FROM records WHERE workload_id = ?1 AND target_id = ?2 AND purpose = 'trial'");
  for (size_t i = 0; i < batch.size(); ++i) {
    const MeasureRecord& record = batch[i];
    int64_t workload = db::workload_id(impl_->conn, record.workload);
    int64_t target = db::target_id(impl_->conn, record.target);
    if (record.purpose == RecordPurpose::Trial) {
      auto [it, fresh] = room.try_emplace({workload, target}, trial_budget);
      if (fresh && trial_budget != kNoBudget) {
        count.bind(1, workload).bind(2, target);
        count.step();
        it->second = std::max<int64_t>(0, trial_budget - count.column_int(0));
        count.reset();
      }
      if (it->second == 0) continue;
      --it->second;
    }
    int64_t session = record.session_id != 0 ? record.session_id : impl_->session_id;
    std::string timestamp = record.timestamp.empty() ? db::utc_timestamp() : record.timestamp;
    ids[i] = db::insert_record(impl_->conn, record, workload, target, session, timestamp);
  }
  txn.commit();
  return ids;
}

int64_t TuningLog::trial_count(const std::string& workload_key, const TargetInfo& target) const {
  auto workload = db::find_workload(impl_->conn, workload_key);
  auto target_row = db::find_target(impl_->conn, target);
  if (!workload || !target_row) return 0;
  db::Statement stmt = impl_->conn.prepare(
      "SELECT count(*) FROM records WHERE workload_id = ?1 AND target_id = ?2 AND purpose = 'trial'");
  stmt.bind(1, *workload).bind(2, *target_row);
  stmt.step();
  return stmt.column_int(0);
}

std::optional<MeasureRecord> TuningLog::best(const std::string& workload_key, const TargetInfo& target,
                                             const RecordValidator& usable) const {
  auto workload = db::find_workload(impl_->conn, workload_key);
  auto target_row = db::find_target(impl_->conn, target);
  if (!workload || !target_row) return std::nullopt;
  return best_of(impl_->conn, *workload, *target_row, usable);
}

std::vector<MeasureRecord> TuningLog::best_per_workload_target(const RecordValidator& usable) const {
  db::Statement pairs = impl_->conn.prepare(
      (std::string("SELECT DISTINCT r.workload_id, r.target_id FROM records r JOIN workloads w ON w.id = "
                   "r.workload_id JOIN targets t ON t.id = r.target_id WHERE r.error_code = 'ok'") +
       kWorkloadTargetOrder)
          .c_str());
  std::vector<MeasureRecord> result;
  while (pairs.step()) {
    if (auto best = best_of(impl_->conn, pairs.column_int(0), pairs.column_int(1), usable))
      result.push_back(std::move(*best));
  }
  return result;
}

bool TuningLog::holds(const std::string& workload_key, const TargetInfo& target,
                      const std::string& trace_json) const {
  auto workload = db::find_workload(impl_->conn, workload_key);
  auto target_row = db::find_target(impl_->conn, target);
  if (!workload || !target_row) return false;
  db::Statement stmt = impl_->conn.prepare(
      "SELECT 1 FROM records WHERE workload_id = ?1 AND target_id = ?2 AND trace_json = ?3 LIMIT 1");
  stmt.bind(1, *workload).bind(2, *target_row).bind(3, trace_json);
  return stmt.step();
}

std::vector<std::pair<int64_t, std::string>> TuningLog::settings(const std::string& workload_key,
                                                                 const TargetInfo& target) const {
  auto workload = db::find_workload(impl_->conn, workload_key);
  auto target_row = db::find_target(impl_->conn, target);
  if (!workload || !target_row) return {};
  db::Statement stmt = impl_->conn.prepare(
      "SELECT MIN(id), settings_json FROM records WHERE workload_id = ?1 AND target_id = ?2 "
      "GROUP BY settings_json ORDER BY MIN(id)");
  stmt.bind(1, *workload).bind(2, *target_row);
  std::vector<std::pair<int64_t, std::string>> out;
  while (stmt.step()) out.emplace_back(stmt.column_int(0), stmt.column_text(1));
  return out;
}

std::vector<MeasureRecord> TuningLog::records(const std::string& workload_key,
                                              const TargetInfo& target) const {
  auto workload = db::find_workload(impl_->conn, workload_key);
  auto target_row = db::find_target(impl_->conn, target);
  if (!workload || !target_row) return {};
  db::Statement stmt = impl_->conn.prepare(
      (std::string(db::kRecordSelect) + " WHERE r.workload_id = ?1 AND r.target_id = ?2 ORDER BY r.id")
          .c_str());
  stmt.bind(1, *workload).bind(2, *target_row);
  return read_sound_records(stmt, path());
}

TuningLog::Counts TuningLog::counts() const {
  // One statement, so that all the numbers come from the same snapshot.
  db::Statement stmt = impl_->conn.prepare(
      "SELECT (SELECT count(*) FROM workloads), (SELECT count(*) FROM targets), "
      "(SELECT count(*) FROM sessions), (SELECT count(*) FROM records), "
      "(SELECT count(*) FROM records WHERE error_code <> 'ok'), "
      "(SELECT count(*) FROM records WHERE purpose = 'retime')");
  stmt.step();
  return Counts{stmt.column_int(0), stmt.column_int(1), stmt.column_int(2), stmt.column_int(3),
                stmt.column_int(4), stmt.column_int(5)};
}

std::vector<std::string> TuningLog::check(const RecordValidator& validator) const {
  db::Connection& conn = impl_->conn;
  std::vector<std::string> problems;
  try {
    for (auto& line : db::pragma_check(conn, "PRAGMA integrity_check(100)")) {
      problems.push_back("integrity_check: " + line);
    }
  } catch (const DatabaseError& e) {
    problems.push_back(e.what());
  }
  // On a damaged b-tree the remaining checks would only add noise (or read garbage).
  if (!problems.empty()) return problems;

  try {
    problems = db::schema_problems(conn);
    if (!problems.empty()) return problems;

    db::Statement foreign = conn.prepare("SELECT * FROM pragma_foreign_key_check");
    while (foreign.step()) {
      problems.push_back("row " + std::to_string(foreign.column_int(1)) + " of " + foreign.column_text(0) +
                         " refers to a missing row of " + foreign.column_text(2));
    }

    // Then each record: damage first (it fails its checksum or cannot be decoded), else what
    // import would refuse in it.
    db::Statement all = conn.prepare((std::string(db::kRecordSelect) + " ORDER BY r.id").c_str());
    size_t bad = 0;
    while (all.step()) {
      db::RecordRow row = db::read_record_row(all);
      std::optional<std::string> problem = row.problem;
      if (!problem) {
        std::optional<std::string> found = db::measurement_problem(row.record);
        if (!found && validator) found = validator(row.record);
        if (found) problem = "record " + std::to_string(row.record.id) + ": " + *found;
      }
      if (!problem) continue;
      if (++bad <= kMaxReportedRecordProblems) problems.push_back(*problem);
    }
    if (bad > kMaxReportedRecordProblems) {
      problems.push_back("... and " + std::to_string(bad - kMaxReportedRecordProblems) + " more bad records");
    }
  } catch (const DatabaseError& e) {
    problems.push_back(e.what());
  }
  return problems;
}

}  // namespace tessel
