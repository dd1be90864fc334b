// The tuning log: every measurement a tuning session makes, kept in one SQLite file or in a
// PostgreSQL database, either of which survives crashes, concurrent writers and sharing between
// machines. Replay (best schedule per workload and target), JSON-lines export/import and merging of
// logs live here too.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "database/schedule_ranking.h"
#include "measure/error_code.h"
#include "schedule/te/error.h"

namespace tessel {

// Anything wrong with a log: cannot open (or connect), damaged, from a newer tessel, not a tessel
// log, an empty file, read-only when written, a database server gone for longer than the retries
// wait, or a record that cannot be stored. The message names the file or URL (never its password)
// and says what to do. A log that cannot be used is bad input, like any other unusable input file
// (the CLI exits with code 2).
class DatabaseError : public InputError {
 public:
  explicit DatabaseError(const std::string& message) : InputError(message) {}
};

// The tensor program being tuned. `key` is the structural hash that identifies it; `text` the
// canonical TE text it was derived from.
struct WorkloadInfo {
  std::string key;
  std::string text;
  double flops = 0;
};

// Where it ran. Two targets are the same only if every field is equal; callers normalise fields
// (e.g. leave driver_version empty) when they want records to apply across driver updates.
struct TargetInfo {
  std::string kind;  // "llvm", "cuda"
  std::string arch;  // "x86-64-v3", "sm_90"
  std::string device_name;
  std::string driver_version;
  std::string toolkit_version;
  std::string cpu_features;
};

// One tuning run. `start_time` (ISO 8601 UTC) is filled in by begin_session when left empty.
struct SessionInfo {
  std::string label;
  std::string options_json;
  std::string tool_version;
  std::string host;
  std::string start_time;
};

// Why a record was measured. A Trial is one candidate of a search: it counts against the trial budget,
// and a search never measures a schedule the log already holds as a trial. A Retime measures again a
// schedule the log holds already (the tuner re-times its leaders, see search/tuner.h), so that one
// lucky or unlucky timing on a noisy machine cannot decide which schedule is best.
enum class RecordPurpose { Trial, Retime };
const char* to_string(RecordPurpose purpose);
std::optional<RecordPurpose> record_purpose_from_string(std::string_view text);

// One measured candidate schedule. Doubles must be finite; an Ok record needs at least one sample.
struct MeasureRecord {
  WorkloadInfo workload;
  TargetInfo target;
  std::string trace_json;
  std::vector<double> samples_s;  // every latency sample, in seconds
  double median_s = 0;
  ErrorCode error = ErrorCode::Ok;
  std::string error_message;
  double build_s = 0;
  double run_s = 0;
  std::string settings_json;  // measurement settings (repeats, warmup, flush...)
  std::string timestamp;      // ISO 8601 UTC; filled in by append when empty
  int64_t session_id = 0;     // 0: the session of this handle (begun on demand)
  int64_t id = 0;             // assigned by append; ignored on input
  RecordPurpose purpose = RecordPurpose::Trial;
  // The yardstick of a retime (0: none). A shared machine's speed swings between moments by more
  // than its schedules differ, so the tuner times the task's default schedule right before and after
  // each schedule it re-times; this is the lower of those two medians (a moment's slow-down only
  // lengthens a timing). The default's own timings there carry their own median (so the default
  // counts at the level, like the schedules compared with it). Replay ranks by median_s relative to
  // it: see scaled_latency.
  double reference_s = 0;
};

// What database/ cannot judge about a record by itself: whether its workload text describes the
// workload its key names and whether its trace parses and applies to that workload (that needs the
// schedule library, which the log does not depend on). Returns the problem as "field: problem"
// (e.g. "trace_json: step 2 (split): no loop 'k'"), or nullopt when the record is usable. Supplied
// by the caller of import, merge, check and best; an empty validator accepts every record.
using RecordValidator = std::function<std::optional<std::string>(const MeasureRecord&)>;

// Result of import_jsonl / merge. Import is all-or-nothing: when `errors` is not empty nothing was
// stored (imported and duplicates are 0) and each error names the source and line (or record), the
// field and the problem ("shared.jsonl: line 7: median_s: must be above 0 in an ok record").
struct ImportReport {
  int64_t imported = 0;
  int64_t duplicates = 0;  // identical records already present (see import_jsonl)
  std::vector<std::string> errors;
};

// Whether `location` names a log in PostgreSQL (a libpq connection URI: postgresql://... or
// postgres://...) rather than a SQLite file.
bool is_postgres_url(std::string_view location);

// A handle on one log. Many processes, on many hosts for a PostgreSQL log, may write the same log
// at once: a write transaction takes the log's write lock first (SQLite: BEGIN IMMEDIATE, waiting
// out other writers instead of failing with SQLITE_BUSY; PostgreSQL: an advisory lock) and holds
// it to COMMIT. On PostgreSQL, work interrupted by a lost server connection (a restart, say) is
// retried whole for up to a minute. Move-only; not for concurrent use from several threads.
class TuningLog {
 public:
  enum class Mode { ReadOnly, ReadWrite };

  // Opens `path`: a SQLite file, or a PostgreSQL database named by a URL (see is_postgres_url).
  // ReadWrite creates a new log when the path does not exist (built beside it and linked into place
  // complete, so that no other process ever sees half a log) or the database holds no tessel
  // tables (created in one transaction), migrates an older schema in one transaction and runs
  // PRAGMA quick_check. Throws DatabaseError (naming the path) when the file or database is not a
  // tessel log (an empty file included: a new log needs a new path), is damaged, comes from a newer
  // tessel, cannot be reached or cannot be written in ReadWrite mode.
  static TuningLog open(const std::string& path, Mode mode);

  // Opens `path` read-only and returns check()'s findings, or the reason it could not be opened.
  // Empty means the log is sound.
  static std::vector<std::string> check_file(const std::string& path, const RecordValidator& validator = {});

  TuningLog(TuningLog&&) noexcept;
  TuningLog& operator=(TuningLog&&) noexcept;
  ~TuningLog();

  // The file path, or the URL without its password.
  const std::string& path() const;
  // What path() of a log at `location` is: the location itself, or a URL without its password.
  static std::string display_name(const std::string& location);

  // Starts a session; records appended with session_id 0 belong to it. Returns its id.
  int64_t begin_session(const SessionInfo& session);

  // Stores `batch` in one write transaction and returns the new record ids, in order, only after
  // COMMIT: once it returns, the records survive a crash of this process.
  std::vector<int64_t> append(const std::vector<MeasureRecord>& batch);

  // append() under a trial budget: the budget of a (workload, target) pair is a property of the log,
  // so that tuners sharing one log stop together. Inside the one write transaction that
  // inserts, counts each pair's trial records (RecordPurpose::Trial, failed ones included) and stores
  // the batch's trials of that pair, in batch order, only while the count stays within
  // `trial_budget`; retimes are always stored. Returns one entry per record of `batch`: its new id,
  // or 0 when it was not stored because the pair's budget was spent (by this batch or by another
  // writer). `trial_budget` must be at least 0.
  std::vector<int64_t> append_within_budget(const std::vector<MeasureRecord>& batch, int64_t trial_budget);

  // The number of trial records of (workload key, target), failed ones included: what
  // append_within_budget counts against the budget. 0 for a pair the log does not hold.
  int64_t trial_count(const std::string& workload_key, const TargetInfo& target) const;

  // Replay: the best schedule of (workload key, target) by the ranking rule (database/schedule_ranking.h),
  // as its record whose counted latency is the schedule's estimate (ScheduleRanking::representative).
  // Records that fail the log's own checks of a measurement (see check()) take no part, except that a
  // wrong answer or a crash still rules its schedule out. With a validator, a schedule whose
  // representative record the validator refuses is passed over for the next best, so a record
  // whose trace does not apply never stands in the way of one that does.
  // nullopt when there is none (callers then say "no tuned schedule for workload K on target T").
  // Throws DatabaseError if a record it reads fails its checksum, so a damaged log is never
  // silently misread.
  std::optional<MeasureRecord> best(const std::string& workload_key, const TargetInfo& target,
                                    const RecordValidator& usable = {}) const;

  // best() of every (workload, target) pair, ordered by workload key then target.
  std::vector<MeasureRecord> best_per_workload_target(const RecordValidator& usable = {}) const;

  // Whether the log holds a record of this schedule (its trace JSON) for (workload key, target).
  bool holds(const std::string& workload_key, const TargetInfo& target, const std::string& trace_json) const;

  // Each distinct measurement settings string (MeasureRecord::settings_json) among the records of
  // (workload key, target), with the id of its first record, by that id: how the pair was timed,
  // without reading (or checking) the records themselves.
  std::vector<std::pair<int64_t, std::string>> settings(const std::string& workload_key,
                                                        const TargetInfo& target) const;

  // Every record of (workload key, target), trials and retimes, in insertion order (for resuming
  // and training).
  std::vector<MeasureRecord> records(const std::string& workload_key, const TargetInfo& target) const;
  // The same, only those with an id above `after_id`: what other writers stored since a record the
  // caller has seen (ids grow with every append).
  std::vector<MeasureRecord> records_after(const std::string& workload_key, const TargetInfo& target,
                                           int64_t after_id) const;

  // The session begun on this handle (begin_session, or the first append), 0 until there is one.
  int64_t session_id() const;

  struct Counts {
    int64_t workloads = 0, targets = 0, sessions = 0, records = 0, error_records = 0;
    int64_t retimes = 0;  // records with purpose Retime (part of `records`)
  };
  Counts counts() const;

  // Integrity problems: PRAGMA integrity_check and foreign-key checks (SQLite; a PostgreSQL server
  // keeps both itself), schema checks, per-record checksums, then what import refuses in a record
  // ("record 12: median_s: must be above 0 in an ok record"): the log's own checks of a measurement
  // and the validator's. Empty means sound. Never throws for a damaged file; the damage is reported
  // instead.
  std::vector<std::string> check(const RecordValidator& validator = {}) const;

  // JSON lines, one self-contained record per line (format version 1, see tuning_log_jsonl.cpp),
  // ordered by workload key, target, timestamp and id so that export -> import -> export is
  // byte-identical.
  void export_jsonl(std::ostream& out) const;

  // Imports an export, all or nothing. Every line is read and checked first: its JSON and fields
  // (types and ranges), the log's checks of a measurement (see check()) and `validator`; a bad line
  // is reported as "<source_name>: line N: <field>: <problem>". Only when every line passes are the
  // records stored, in one transaction, so an interrupted import leaves the log as it was.
  // Rule for repeated imports: a record whose workload, target, trace, samples, timestamp and
  // every other stored field equal those of a record already in the log is skipped (counted as a
  // duplicate), so importing the same file twice adds nothing. Sessions are matched the same way.
  ImportReport import_jsonl(std::istream& in, const std::string& source_name, const RecordValidator& validator = {});

  // The same for several JSON-lines files, read from their paths: all of them or nothing.
  ImportReport import_jsonl_files(const std::vector<std::string>& paths, const RecordValidator& validator = {});

  // Imports every record of other logs (SQLite files or PostgreSQL URLs, opened read-only), with
  // import_jsonl's rules: all of them or nothing, a record named "<path>: record <id>".
  ImportReport merge(const std::vector<std::string>& other_paths, const RecordValidator& validator = {});
  ImportReport merge(const std::string& other_path, const RecordValidator& validator = {});

 private:
  struct Impl;
  explicit TuningLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  friend class WorkQueue;    // a shared session's tables live in the log (database/work_queue.h)
  friend class LeaseKeeper;
};

}  // namespace tessel
