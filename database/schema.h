// The tuning log's schema, its version history and the checks run when a log is opened: is it a
// tessel log, is it from a newer tessel, does it need migrating. The SQLite schema lives here; the
// PostgreSQL one, its counterpart, in postgres_schema.h. Internal to database/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "database/connection.h"

namespace tessel::db {

class SqliteConnection;

// Schema versions (PRAGMA user_version of a SQLite file; the tessel_schema table of a PostgreSQL
// database, whose logs begin at version 4):
//   1  workloads, targets, sessions, records (the first prototype's layout)
//   2  adds records.checksum and the indexes for best-per-(workload, target) and duplicate lookup
//   3  adds records.purpose ('trial' or 'retime'); every older record is a trial
//   4  adds records.reference_s (a retime's yardstick, see MeasureRecord); 0 in every older record
constexpr int64_t kSchemaVersion = 4;
// PRAGMA application_id of every tessel log: the bytes "TESL". A file without it is not ours.
constexpr int64_t kApplicationId = 0x5445534C;

// The tables of a log at kSchemaVersion and the columns the log reads, the same in every backend.
struct TableColumns {
  const char* table;
  std::vector<const char*> columns;
};
const std::vector<TableColumns>& expected_columns();
// Tables and columns of expected_columns() that the log lacks; `columns_of_table` is a query of the
// column names of the table named by ?1 (none when it does not exist).
std::vector<std::string> missing_columns(Connection& conn, const char* columns_of_table);

// Writes the schema of a new log into an empty file that no other connection uses (see
// TuningLog::open, which builds a new log beside its path and links it into place).
void create_schema(SqliteConnection& conn);

// Brings an open connection to a usable state or throws DatabaseError naming the log. SQLite:
// refuses foreign, newer and table-less files, runs PRAGMA quick_check and migrates older schemas
// in one transaction (writable connections). PostgreSQL: see prepare_postgres_schema. Either way it
// then verifies that every table and column the log reads is present.
void prepare_schema(Connection& conn);

// Problems with the schema of an open log (wrong application id or version, missing columns,
// triggers or views that a tessel log never has). Empty when the schema is as expected.
std::vector<std::string> schema_problems(Connection& conn);

// Damage the database engine itself finds: PRAGMA integrity_check of a SQLite file. None for
// PostgreSQL, whose server keeps its storage to itself (and checks its pages as it reads them).
std::vector<std::string> storage_problems(Connection& conn);

// Rows that refer to missing rows: PRAGMA foreign_key_check of a SQLite file. None for PostgreSQL,
// which enforces the log's foreign keys on every write.
std::vector<std::string> reference_problems(Connection& conn);

// The refusal of a log whose schema version is newer than this tessel's.
std::string newer_schema_message(const std::string& where, int64_t version);
std::string join_lines(const std::vector<std::string>& lines, size_t limit);

}  // namespace tessel::db
