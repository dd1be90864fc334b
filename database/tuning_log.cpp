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

#include "database/postgres_connection.h"
#include "database/record_rows.h"
#include "database/schema.h"
#include "database/sqlite_connection.h"
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

// The transaction of append_within_budget: every step of it runs again, from a fresh count, when a
// server connection is lost before COMMIT.
std::vector<int64_t> insert_within_budget(db::Connection& conn, const std::vector<MeasureRecord>& batch,
                                          int64_t trial_budget, int64_t handle_session) {
  db::Transaction txn(conn);
  // Trials still allowed per (workload id, target id), counted under the write lock: no other
  // writer can add one between the count and the insert.
  std::map<std::pair<int64_t, int64_t>, int64_t> room;
  db::Statement count = conn.prepare(
      "SELECT count(*) FROM records WHERE workload_id = ?1 AND target_id = ?2 AND purpose = 'trial'");
  std::vector<int64_t> ids = db::insert_batch(conn, batch, handle_session, [&](int64_t workload, int64_t target) {
    auto [it, fresh] = room.try_emplace({workload, target}, trial_budget);
    if (fresh && trial_budget != kNoBudget) {
      count.bind(1, workload).bind(2, target);
      count.step();
      it->second = std::max<int64_t>(0, trial_budget - count.column_int(0));
      count.reset();
    }
    if (it->second == 0) return false;
    --it->second;
    return true;
  });
  txn.commit();
  return ids;
}

// check(): the engine's own findings first (on a damaged file the other checks would only add
// noise, or read garbage), then the schema, references and each record. A lost server connection
// is passed on for the caller to retry; any other failure is reported as a finding.
std::vector<std::string> check_log(db::Connection& conn, const RecordValidator& validator) {
  std::vector<std::string> problems;
  try {
    problems = db::storage_problems(conn);
  } catch (const db::TransientError&) {
    throw;
  } catch (const DatabaseError& e) {
    problems.push_back(e.what());
  }
  if (!problems.empty()) return problems;

  try {
    problems = db::schema_problems(conn);
    if (!problems.empty()) return problems;
    problems = db::reference_problems(conn);

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
  } catch (const db::TransientError&) {
    throw;
  } catch (const DatabaseError& e) {
    problems.push_back(e.what());
  }
  return problems;
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
      db::SqliteConnection conn(temporary, /*read_only=*/false);
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

std::vector<int64_t> db::insert_batch(Connection& conn, const std::vector<MeasureRecord>& batch,
                                      int64_t handle_session, const std::function<bool(int64_t, int64_t)>& take_trial) {
  std::vector<int64_t> ids(batch.size(), 0);
  for (size_t i = 0; i < batch.size(); ++i) {
    const MeasureRecord& record = batch[i];
    const int64_t workload = workload_id(conn, record.workload);
    const int64_t target = target_id(conn, record.target);
    if (record.purpose == RecordPurpose::Trial && !take_trial(workload, target)) continue;
    const int64_t session = record.session_id != 0 ? record.session_id : handle_session;
    const std::string timestamp = record.timestamp.empty() ? utc_timestamp() : record.timestamp;
    ids[i] = insert_record(conn, record, workload, target, session, timestamp);
  }
  return ids;
}

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

bool is_postgres_url(std::string_view location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

std::string TuningLog::display_name(const std::string& location) {
  return is_postgres_url(location) ? db::redact_url(location) : location;
}

TuningLog TuningLog::open(const std::string& path, Mode mode) {
  if (path.empty()) throw DatabaseError("tuning log path is empty");
  const bool read_only = mode == Mode::ReadOnly;
  std::unique_ptr<db::Connection> conn;
  if (is_postgres_url(path)) {
    conn = std::make_unique<db::PostgresConnection>(path, read_only);
  } else {
    std::error_code ec;
    auto status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status)) {
      throw DatabaseError("tuning log '" + path + "' is a directory, not a file");
    }
    if (!std::filesystem::exists(status)) {
      if (read_only) throw DatabaseError("tuning log '" + path + "' does not exist");
      create_log_file(path);
    } else if (std::filesystem::is_regular_file(status) && std::filesystem::file_size(path, ec) == 0 && !ec) {
      throw DatabaseError("tuning log '" + path +
                          "' is an empty file, not a tessel log: remove it or name a new path");
    }
    conn = std::make_unique<db::SqliteConnection>(path, read_only);
  }
  auto impl = std::make_unique<Impl>(std::move(conn));
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
  impl_->session_id = impl_->retrying([&] {
    db::Transaction txn(impl_->conn);
    int64_t id = db::insert_session(impl_->conn, filled);
    txn.commit();
    return id;
  });
  return impl_->session_id;
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

  return impl_->retrying([&] { return insert_within_budget(impl_->conn, batch, trial_budget, impl_->session_id); });
}

int64_t TuningLog::trial_count(const std::string& workload_key, const TargetInfo& target) const {
  return impl_->retrying([&]() -> int64_t {
    auto workload = db::find_workload(impl_->conn, workload_key);
    auto target_row = db::find_target(impl_->conn, target);
    if (!workload || !target_row) return 0;
    db::Statement stmt = impl_->conn.prepare(
        "SELECT count(*) FROM records WHERE workload_id = ?1 AND target_id = ?2 AND purpose = 'trial'");
    stmt.bind(1, *workload).bind(2, *target_row);
    stmt.step();
    return stmt.column_int(0);
  });
}

std::optional<MeasureRecord> TuningLog::best(const std::string& workload_key, const TargetInfo& target,
                                             const RecordValidator& usable) const {
  return impl_->retrying([&]() -> std::optional<MeasureRecord> {
    auto workload = db::find_workload(impl_->conn, workload_key);
    auto target_row = db::find_target(impl_->conn, target);
    if (!workload || !target_row) return std::nullopt;
    return best_of(impl_->conn, *workload, *target_row, usable);
  });
}

std::vector<MeasureRecord> TuningLog::best_per_workload_target(const RecordValidator& usable) const {
  return impl_->retrying([&] {
    // Every (workload, target) pair with an ok record, in the export's order.
    db::Statement pairs = impl_->conn.prepare(
        (std::string("SELECT w.id, t.id FROM workloads w, targets t WHERE EXISTS (SELECT 1 FROM records r "
                     "WHERE r.workload_id = w.id AND r.target_id = t.id AND r.error_code = 'ok')") +
         kWorkloadTargetOrder)
            .c_str());
    std::vector<MeasureRecord> result;
    while (pairs.step()) {
      if (auto best = best_of(impl_->conn, pairs.column_int(0), pairs.column_int(1), usable))
        result.push_back(std::move(*best));
    }
    return result;
  });
}

bool TuningLog::holds(const std::string& workload_key, const TargetInfo& target,
                      const std::string& trace_json) const {
  return impl_->retrying([&] {
    auto workload = db::find_workload(impl_->conn, workload_key);
    auto target_row = db::find_target(impl_->conn, target);
    if (!workload || !target_row) return false;
    db::Statement stmt = impl_->conn.prepare(
        "SELECT 1 FROM records WHERE workload_id = ?1 AND target_id = ?2 AND trace_json = ?3 LIMIT 1");
    stmt.bind(1, *workload).bind(2, *target_row).bind(3, trace_json);
    return stmt.step();
  });
}

std::vector<std::pair<int64_t, std::string>> TuningLog::settings(const std::string& workload_key,
                                                                 const TargetInfo& target) const {
  return impl_->retrying([&] {
    std::vector<std::pair<int64_t, std::string>> out;
    auto workload = db::find_workload(impl_->conn, workload_key);
    auto target_row = db::find_target(impl_->conn, target);
    if (!workload || !target_row) return out;
    db::Statement stmt = impl_->conn.prepare(
        "SELECT MIN(id), settings_json FROM records WHERE workload_id = ?1 AND target_id = ?2 "
        "GROUP BY settings_json ORDER BY MIN(id)");
    stmt.bind(1, *workload).bind(2, *target_row);
    while (stmt.step()) out.emplace_back(stmt.column_int(0), stmt.column_text(1));
    return out;
  });
}

std::vector<MeasureRecord> TuningLog::records(const std::string& workload_key,
                                              const TargetInfo& target) const {
  return records_after(workload_key, target, 0);
}

std::vector<MeasureRecord> TuningLog::records_after(const std::string& workload_key, const TargetInfo& target,
                                                    int64_t after_id) const {
  return impl_->retrying([&]() -> std::vector<MeasureRecord> {
    auto workload = db::find_workload(impl_->conn, workload_key);
    auto target_row = db::find_target(impl_->conn, target);
    if (!workload || !target_row) return {};
    db::Statement stmt = impl_->conn.prepare(
        (std::string(db::kRecordSelect) +
         " WHERE r.workload_id = ?1 AND r.target_id = ?2 AND r.id > ?3 ORDER BY r.id")
            .c_str());
    stmt.bind(1, *workload).bind(2, *target_row).bind(3, after_id);
    return read_sound_records(stmt, path());
  });
}

int64_t TuningLog::session_id() const { return impl_->session_id; }

TuningLog::Counts TuningLog::counts() const {
  return impl_->retrying([&] {
    // One statement, so that all the numbers come from the same snapshot.
    db::Statement stmt = impl_->conn.prepare(
        "SELECT (SELECT count(*) FROM workloads), (SELECT count(*) FROM targets), "
        "(SELECT count(*) FROM sessions), (SELECT count(*) FROM records), "
        "(SELECT count(*) FROM records WHERE error_code <> 'ok'), "
        "(SELECT count(*) FROM records WHERE purpose = 'retime')");
    stmt.step();
    return Counts{stmt.column_int(0), stmt.column_int(1), stmt.column_int(2), stmt.column_int(3),
                  stmt.column_int(4), stmt.column_int(5)};
  });
}

std::vector<std::string> TuningLog::check(const RecordValidator& validator) const {
  return impl_->retrying([&] { return check_log(impl_->conn, validator); });
}

}  // namespace tessel
