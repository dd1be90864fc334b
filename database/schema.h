// The tuning log's schema, its version history and the checks run when a file is opened: is it a
// tessel log, is it from a newer tessel, does it need migrating. Internal to database/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "database/sqlite_connection.h"

namespace tessel::db {

// Schema versions (PRAGMA user_version):
//   1  workloads, targets, sessions, records (the first prototype's layout)
//   2  adds records.checksum and the indexes for best-per-(workload, target) and duplicate lookup
//   3  adds records.purpose ('trial' or 'retime'); every older record is a trial
//   4  adds records.reference_s (a retime's yardstick, see MeasureRecord); 0 in every older record
constexpr int64_t kSchemaVersion = 4;
// PRAGMA application_id of every tessel log: the bytes "TESL". A file without it is not ours.
constexpr int64_t kApplicationId = 0x5445534C;

// Writes the schema of a new log into an empty file that no other connection uses (see
// TuningLog::open, which builds a new log beside its path and links it into place).
void create_schema(Connection& conn);

// Brings an open connection to a usable state or throws DatabaseError naming the file: refuses
// foreign, newer and table-less files, runs PRAGMA quick_check and migrates older schemas in one
// transaction (writable connections), and verifies that every table and column the log reads is
// present.
void prepare_schema(Connection& conn);

// Problems with the schema of an open log (wrong application id or version, missing columns,
// triggers or views that a tessel log never has). Empty when the schema is as expected.
std::vector<std::string> schema_problems(Connection& conn);

// Runs "PRAGMA quick_check" or "PRAGMA integrity_check" and returns its findings ("ok" removed).
std::vector<std::string> pragma_check(Connection& conn, const char* pragma);

}  // namespace tessel::db
