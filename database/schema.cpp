// Schema creation, migration and verification for the tuning log: the SQLite schema, and the entry
// points that hand a PostgreSQL log to postgres_schema.cpp.
#include "database/schema.h"

#include <cstdio>
#include <functional>
#include <iterator>
#include <set>

#include "database/postgres_schema.h"
#include "database/record_rows.h"
#include "database/sqlite_connection.h"

namespace tessel::db {
namespace {

// Version 1 as the first prototype wrote it. Kept verbatim: a new file is built by replaying every
// migration, so new and migrated files cannot drift apart.
void migrate_0_to_1(SqliteConnection& conn) {
  conn.exec(
      "CREATE TABLE workloads ("
      "  id INTEGER PRIMARY KEY,"
      "  key TEXT NOT NULL UNIQUE,"
      "  text TEXT NOT NULL,"
      "  flops REAL NOT NULL);"
      "CREATE TABLE targets ("
      "  id INTEGER PRIMARY KEY,"
      "  kind TEXT NOT NULL, arch TEXT NOT NULL, device_name TEXT NOT NULL,"
      "  driver_version TEXT NOT NULL, toolkit_version TEXT NOT NULL, cpu_features TEXT NOT NULL,"
      "  UNIQUE (kind, arch, device_name, driver_version, toolkit_version, cpu_features));"
      "CREATE TABLE sessions ("
      "  id INTEGER PRIMARY KEY,"
      "  start_time TEXT NOT NULL, options_json TEXT NOT NULL, tool_version TEXT NOT NULL,"
      "  host TEXT NOT NULL, label TEXT NOT NULL);"
      "CREATE TABLE records ("
      "  id INTEGER PRIMARY KEY,"
      "  workload_id INTEGER NOT NULL REFERENCES workloads(id),"
      "  target_id INTEGER NOT NULL REFERENCES targets(id),"
      "  session_id INTEGER NOT NULL REFERENCES sessions(id),"
      "  trace_json TEXT NOT NULL,"
      "  samples_json TEXT NOT NULL,"
      "  median_s REAL NOT NULL,"
      "  error_code TEXT NOT NULL,"
      "  error_message TEXT NOT NULL,"
      "  build_s REAL NOT NULL,"
      "  run_s REAL NOT NULL,"
      "  settings_json TEXT NOT NULL,"
      "  timestamp TEXT NOT NULL);");
}

void migrate_1_to_2(SqliteConnection& conn) {
  conn.exec("ALTER TABLE records ADD COLUMN checksum INTEGER NOT NULL DEFAULT 0");
  // Checksum every existing record. A row that cannot be decoded is not guessed at: the migration
  // fails and rolls back, leaving the file as it was.
  Statement select = conn.prepare((std::string(kRecordSelectV2) + " ORDER BY r.id").c_str());
  Statement update = conn.prepare("UPDATE records SET checksum = ?1 WHERE id = ?2");
  while (select.step()) {
    RecordRow row = read_record_row(select);
    if (!row.decoded) {
      throw DatabaseError("tuning log '" + conn.path() + "': cannot migrate: " + *row.problem);
    }
    update.bind(1, record_checksum(row.record)).bind(2, row.record.id);
    update.run();
    update.reset();
  }
  conn.exec(
      "CREATE INDEX records_best ON records (workload_id, target_id, error_code, median_s);"
      "CREATE INDEX records_checksum ON records (checksum);");
}

void migrate_2_to_3(SqliteConnection& conn) {
  // The checksum covers the purpose only when it is not 'trial', so existing checksums stay valid.
  conn.exec("ALTER TABLE records ADD COLUMN purpose TEXT NOT NULL DEFAULT 'trial'");
}

void migrate_3_to_4(SqliteConnection& conn) {
  // No record had a yardstick before; the checksum covers reference_s only when it is not 0.
  conn.exec("ALTER TABLE records ADD COLUMN reference_s REAL NOT NULL DEFAULT 0");
}

// kMigrations[v] takes a file from version v to v + 1.
const std::function<void(SqliteConnection&)> kMigrations[] = {migrate_0_to_1, migrate_1_to_2, migrate_2_to_3,
                                                              migrate_3_to_4};
static_assert(std::size(kMigrations) == kSchemaVersion);

constexpr const char* kSqliteColumnsOfTable = "SELECT name FROM pragma_table_info(?1)";

std::string hex(int64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// Runs "PRAGMA quick_check" or "PRAGMA integrity_check" and returns its findings ("ok" removed).
std::vector<std::string> pragma_check(SqliteConnection& conn, const char* pragma) {
  std::vector<std::string> problems;
  Statement stmt = conn.prepare(pragma);
  while (stmt.step()) {
    std::string line = stmt.column_text(0);
    if (line != "ok") problems.push_back(line);
  }
  return problems;
}

void migrate(SqliteConnection& conn) {
  Transaction txn(conn);
  int64_t version = conn.query_int("PRAGMA user_version");  // re-read under the write lock
  for (int64_t v = version; v < kSchemaVersion; ++v) kMigrations[v](conn);
  conn.exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
  txn.commit();
}

void prepare_sqlite_schema(SqliteConnection& conn) {
  const std::string& path = conn.path();
  const std::string where = "tuning log '" + path + "'";
  bool writable = !conn.read_only();

  // These reads are the first to touch the file; damage to its header shows up here. One read
  // transaction, so that a log being created by another process is seen either before or after.
  ReadTransaction snapshot(conn);
  const int64_t application_id = conn.query_int("PRAGMA application_id");
  const int64_t objects = conn.query_int("SELECT count(*) FROM sqlite_schema");
  int64_t version = conn.query_int("PRAGMA user_version");
  snapshot.finish();

  // A new log is built complete before it takes its path (TuningLog::open), so a file without
  // tables was not made by tessel, or was cut short: using it would bury whatever it was.
  if (application_id == 0 && objects == 0 && version == 0) {
    throw DatabaseError(where + " is an SQLite database without tables, not a tessel log: remove it or name a new path");
  }
  if (application_id != kApplicationId) {
    throw DatabaseError(where + " is an SQLite database but not a tessel tuning log (application_id " +
                        hex(application_id) + ", expected " + hex(kApplicationId) + ")");
  }
  if (version > kSchemaVersion) throw DatabaseError(newer_schema_message(where, version));

  if (writable) {
    conn.enable_wal();
    // FULL: a commit is on disk before append() returns, so a power cut cannot lose a record the
    // caller was told about. Batching keeps the cost to one sync per batch.
    conn.exec("PRAGMA synchronous = FULL");
    conn.exec("PRAGMA foreign_keys = ON");
    auto problems = pragma_check(conn, "PRAGMA quick_check(20)");
    if (!problems.empty()) {
      throw DatabaseError(where + " is damaged (PRAGMA quick_check: " + join_lines(problems, 3) +
                          "); run `tessel db check --db " + path +
                          "` and restore it from a backup or "
                          "an export");
    }
    version = conn.query_int("PRAGMA user_version");
    if (version < kSchemaVersion) migrate(conn);
  } else if (version < kSchemaVersion) {
    throw DatabaseError(where + " has schema version " + std::to_string(version) +
                        ", older than this tessel's " + std::to_string(kSchemaVersion) +
                        "; run `tessel db migrate --db " + path + "` to upgrade it");
  }

  auto missing = missing_columns(conn, kSqliteColumnsOfTable);
  if (!missing.empty()) {
    throw DatabaseError(where + " does not have the tessel schema (" + join_lines(missing, 3) +
                        "); it is damaged or was not written by tessel");
  }
}

std::vector<std::string> sqlite_schema_problems(SqliteConnection& conn) {
  std::vector<std::string> problems;
  int64_t application_id = conn.query_int("PRAGMA application_id");
  if (application_id != kApplicationId) {
    problems.push_back("application_id is " + hex(application_id) + ", expected " + hex(kApplicationId));
  }
  int64_t version = conn.query_int("PRAGMA user_version");
  if (version != kSchemaVersion) {
    problems.push_back("schema version is " + std::to_string(version) + ", expected " +
                       std::to_string(kSchemaVersion));
  }
  for (auto& problem : missing_columns(conn, kSqliteColumnsOfTable)) problems.push_back(std::move(problem));
  Statement extra =
      conn.prepare("SELECT type, name FROM sqlite_schema WHERE type IN ('trigger', 'view') ORDER BY name");
  while (extra.step()) {
    problems.push_back("unexpected " + extra.column_text(0) + " '" + extra.column_text(1) +
                       "' (tessel logs have none; the file may have been tampered with)");
  }
  return problems;
}

}  // namespace

const std::vector<TableColumns>& expected_columns() {
  static const std::vector<TableColumns> tables = {
      {"workloads", {"id", "key", "text", "flops"}},
      {"targets", {"id", "kind", "arch", "device_name", "driver_version", "toolkit_version", "cpu_features"}},
      {"sessions", {"id", "start_time", "options_json", "tool_version", "host", "label"}},
      {"records",
       {"id", "workload_id", "target_id", "session_id", "trace_json", "samples_json", "median_s",
        "error_code", "error_message", "build_s", "run_s", "settings_json", "timestamp", "checksum", "purpose",
        "reference_s"}},
  };
  return tables;
}

std::string join_lines(const std::vector<std::string>& lines, size_t limit) {
  std::string joined;
  for (size_t i = 0; i < lines.size() && i < limit; ++i) joined += (i ? "; " : "") + lines[i];
  if (lines.size() > limit) joined += "; ...";
  return joined;
}

std::string newer_schema_message(const std::string& where, int64_t version) {
  return where + " has schema version " + std::to_string(version) +
         ", written by a newer tessel; this tessel reads schema versions up to " + std::to_string(kSchemaVersion) +
         ". Upgrade tessel to use this log.";
}

std::vector<std::string> missing_columns(Connection& conn, const char* columns_of_table) {
  std::vector<std::string> problems;
  Statement info = conn.prepare(columns_of_table);
  for (const auto& [table, columns] : expected_columns()) {
    info.bind(1, std::string_view(table));
    std::set<std::string> present;
    while (info.step()) present.insert(info.column_text(0));
    info.reset();
    if (present.empty()) {
      problems.push_back(std::string("table '") + table + "' is missing");
      continue;
    }
    for (const char* column : columns) {
      if (!present.count(column)) {
        problems.push_back(std::string("table '") + table + "' lacks column '" + column + "'");
      }
    }
  }
  return problems;
}

void create_schema(SqliteConnection& conn) {
  conn.enable_wal();
  Transaction txn(conn);
  for (const auto& migrate : kMigrations) migrate(conn);
  conn.exec(("PRAGMA application_id = " + std::to_string(kApplicationId)).c_str());
  conn.exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
  txn.commit();
}

void prepare_schema(Connection& conn) {
  if (conn.backend() == Backend::PostgreSQL) {
    prepare_postgres_schema(conn);
  } else {
    prepare_sqlite_schema(static_cast<SqliteConnection&>(conn));
  }
}

std::vector<std::string> schema_problems(Connection& conn) {
  if (conn.backend() == Backend::PostgreSQL) return postgres_schema_problems(conn);
  return sqlite_schema_problems(static_cast<SqliteConnection&>(conn));
}

std::vector<std::string> storage_problems(Connection& conn) {
  if (conn.backend() == Backend::PostgreSQL) return {};
  std::vector<std::string> problems;
  for (auto& line : pragma_check(static_cast<SqliteConnection&>(conn), "PRAGMA integrity_check(100)")) {
    problems.push_back("integrity_check: " + line);
  }
  return problems;
}

std::vector<std::string> reference_problems(Connection& conn) {
  if (conn.backend() == Backend::PostgreSQL) return {};
  std::vector<std::string> problems;
  Statement foreign = conn.prepare("SELECT * FROM pragma_foreign_key_check");
  while (foreign.step()) {
    problems.push_back("row " + std::to_string(foreign.column_int(1)) + " of " + foreign.column_text(0) +
                       " refers to a missing row of " + foreign.column_text(2));
  }
  return problems;
}

}  // namespace tessel::db
