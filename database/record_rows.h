// How a MeasureRecord maps onto rows of the log: validation, the per-record checksum, reading a
// joined record row, and the find-or-insert helpers for workloads, targets and sessions.
// Internal to database/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "database/connection.h"
#include "database/tuning_log.h"

namespace tessel::db {

// Why `record` cannot be stored (non-finite numbers, text that is not UTF-8, an Ok record without
// samples), or nullopt when it is fine. JSON lines need valid UTF-8 to round-trip byte for byte.
std::optional<std::string> validate_record(const MeasureRecord& record);

// Why a record's measurement cannot be believed, as "field: problem", or nullopt: what import
// refuses and check() reports beyond what can be stored. An ok record needs a finite median above
// 0; every sample must be finite and above 0; build and run times, flops and the yardstick finite
// and not negative; the workload key and text, the target kind and the trace present. (The error
// code and purpose are known by construction: read_record_row reports unknown ones.) append() does
// not apply it: a measurement tessel takes is what it is.
std::optional<std::string> measurement_problem(const MeasureRecord& record);

// FNV-1a over every stored field of the record (workload, target, measurement; not the session or
// id), each length-prefixed. SQLite keeps no checksums of its own, and rows in any database may be
// edited behind the log's back, so this is what lets check() and best() notice a flipped byte
// inside a trace or a workload's text.
int64_t record_checksum(const MeasureRecord& record);

std::string samples_to_json(const std::vector<double>& samples);

// Columns of kRecordSelect, in order; read_record_row relies on them.
extern const char* const kRecordSelect;
// The same for a file still at schema version 2 (no purpose column: every record is a trial), for
// the migrations that read records before version 3 exists.
extern const char* const kRecordSelectV2;

struct RecordRow {
  MeasureRecord record;
  int64_t stored_checksum = 0;
  std::optional<std::string> problem;  // set when the row cannot be decoded or fails its checksum
  bool decoded = true;                 // false when samples or the error code could not be read
};
RecordRow read_record_row(const Statement& stmt);

// Find-or-insert. workload_id throws DatabaseError when the key is stored with a different text or
// flops (a key collision or a bug upstream: storing it would make records lie).
int64_t workload_id(Connection& conn, const WorkloadInfo& workload);
// The message workload_id would throw, or nullopt when the workload can be stored.
std::optional<std::string> workload_mismatch(Connection& conn, const WorkloadInfo& workload);
int64_t target_id(Connection& conn, const TargetInfo& target);
std::optional<int64_t> find_workload(Connection& conn, const std::string& key);
std::optional<int64_t> find_target(Connection& conn, const TargetInfo& target);
int64_t insert_session(Connection& conn, const SessionInfo& session);
int64_t find_or_insert_session(Connection& conn, const SessionInfo& session);

// Inserts the record (already validated) and returns its id. `timestamp` overrides the record's.
int64_t insert_record(Connection& conn, const MeasureRecord& record, int64_t workload, int64_t target,
                      int64_t session, const std::string& timestamp);

// True when a record with exactly the same content (see record_checksum) is already stored.
bool has_identical_record(Connection& conn, const MeasureRecord& record, int64_t workload, int64_t target);

// Current time as ISO 8601 UTC with milliseconds, e.g. "2024-05-01T12:34:56.789Z".
std::string utc_timestamp();

}  // namespace tessel::db
