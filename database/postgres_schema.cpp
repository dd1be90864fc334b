// Creation and verification of a tuning log's schema in PostgreSQL.
#include "database/postgres_schema.h"

#include <algorithm>

#include "database/schema.h"

namespace tessel::db {
namespace {

constexpr const char* kApplication = "tessel";

// The SQLite schema at version 4 (schema.cpp) with PostgreSQL's types: BIGSERIAL for row ids,
// BIGINT for references and checksums, DOUBLE PRECISION for REAL. Every text column compares and
// sorts bytewise (COLLATE "C"), as SQLite's do, so that an export lists records in the same order
// whichever backend and locale the log lives in.
constexpr const char* kCreateTables =
    "CREATE TABLE workloads ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  key TEXT COLLATE \"C\" NOT NULL UNIQUE,"
    "  text TEXT COLLATE \"C\" NOT NULL,"
    "  flops DOUBLE PRECISION NOT NULL);"
    "CREATE TABLE targets ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  kind TEXT COLLATE \"C\" NOT NULL, arch TEXT COLLATE \"C\" NOT NULL,"
    "  device_name TEXT COLLATE \"C\" NOT NULL, driver_version TEXT COLLATE \"C\" NOT NULL,"
    "  toolkit_version TEXT COLLATE \"C\" NOT NULL, cpu_features TEXT COLLATE \"C\" NOT NULL,"
    "  UNIQUE (kind, arch, device_name, driver_version, toolkit_version, cpu_features));"
    "CREATE TABLE sessions ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  start_time TEXT COLLATE \"C\" NOT NULL, options_json TEXT COLLATE \"C\" NOT NULL,"
    "  tool_version TEXT COLLATE \"C\" NOT NULL, host TEXT COLLATE \"C\" NOT NULL,"
    "  label TEXT COLLATE \"C\" NOT NULL);"
    "CREATE TABLE records ("
    "  id BIGSERIAL PRIMARY KEY,"
    "  workload_id BIGINT NOT NULL REFERENCES workloads(id),"
    "  target_id BIGINT NOT NULL REFERENCES targets(id),"
    "  session_id BIGINT NOT NULL REFERENCES sessions(id),"
    "  trace_json TEXT COLLATE \"C\" NOT NULL,"
    "  samples_json TEXT COLLATE \"C\" NOT NULL,"
    "  median_s DOUBLE PRECISION NOT NULL,"
    "  error_code TEXT COLLATE \"C\" NOT NULL,"
    "  error_message TEXT COLLATE \"C\" NOT NULL,"
    "  build_s DOUBLE PRECISION NOT NULL,"
    "  run_s DOUBLE PRECISION NOT NULL,"
    "  settings_json TEXT COLLATE \"C\" NOT NULL,"
    "  timestamp TEXT COLLATE \"C\" NOT NULL,"
    "  checksum BIGINT NOT NULL DEFAULT 0,"
    "  purpose TEXT COLLATE \"C\" NOT NULL DEFAULT 'trial',"
    "  reference_s DOUBLE PRECISION NOT NULL DEFAULT 0);"
    "CREATE INDEX records_best ON records (workload_id, target_id, error_code, median_s);"
    "CREATE INDEX records_checksum ON records (checksum);"
    "CREATE TABLE tessel_schema (version INTEGER NOT NULL, application TEXT NOT NULL);";

// Relations of the current schema (the first of search_path, where the log's tables are created)
// that bear one of the log's table names.
constexpr const char* kLogRelations =
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relname IN "
    "('workloads', 'targets', 'sessions', 'records', 'tessel_schema') ORDER BY c.relname";

constexpr const char* kColumnsOfTable =
    "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relname = ?1 AND a.attnum > 0 AND NOT a.attisdropped";

struct SchemaState {
  std::vector<std::string> relations;  // of kLogRelations
  bool has_version_table = false;
  std::vector<std::pair<int64_t, std::string>> versions;  // the rows of tessel_schema
};

SchemaState read_state(Connection& conn) {
  SchemaState state;
  Statement relations = conn.prepare(kLogRelations);
  while (relations.step()) state.relations.push_back(relations.column_text(0));
  state.has_version_table =
      std::find(state.relations.begin(), state.relations.end(), "tessel_schema") != state.relations.end();
  if (state.has_version_table) {
    Statement rows = conn.prepare("SELECT version, application FROM tessel_schema");
    while (rows.step()) state.versions.emplace_back(rows.column_int(0), rows.column_text(1));
  }
  return state;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// Writes the schema unless another process did since `conn` looked: the check is repeated under
// the write lock, which every creator takes.
void create_schema_once(Connection& conn) {
  Transaction txn(conn);
  if (!read_state(conn).relations.empty()) return;  // rolls back; nothing was written
  conn.exec(kCreateTables);
  conn.prepare("INSERT INTO tessel_schema(version, application) VALUES (?1, ?2)")
      .bind(1, kSchemaVersion)
      .bind(2, std::string_view(kApplication))
      .run();
  txn.commit();
}

// The one row of tessel_schema, or the reason the database is not a tessel log.
std::pair<int64_t, std::string> version_row(const SchemaState& state, const std::string& where) {
  const std::string not_ours = where + " is not a tessel log: ";
  const std::string what_to_do = "; name a database (or a search_path schema) of its own for the log";
  if (!state.has_version_table) {
    throw DatabaseError(not_ours + "the database has tables named like a log's (" + joined(state.relations) +
                        ") but no tessel_schema table" + what_to_do);
  }
  if (state.versions.size() != 1 || state.versions.front().second != kApplication) {
    throw DatabaseError(not_ours + "its tessel_schema table does not hold the one row tessel writes there" +
                        what_to_do);
  }
  return state.versions.front();
}

}  // namespace

void prepare_postgres_schema(Connection& conn) {
  const std::string where = "tuning log '" + conn.path() + "'";
  auto read = [&] {
    ReadTransaction snapshot(conn);  // a log being created by another process is seen whole or not at all
    SchemaState state = read_state(conn);
    snapshot.finish();
    return state;
  };
  SchemaState state = read();
  if (state.relations.empty()) {
    if (conn.read_only()) {
      throw DatabaseError(where +
                          " does not exist: the database holds no tessel log (open it for writing, e.g. "
                          "with `tessel db import`, to create one)");
    }
    create_schema_once(conn);
    state = read();
  }
  const int64_t version = version_row(state, where).first;
  if (version > kSchemaVersion) throw DatabaseError(newer_schema_message(where, version));
  if (version < kSchemaVersion) {
    throw DatabaseError(where + " has schema version " + std::to_string(version) +
                        ", which no tessel writes to PostgreSQL (its logs begin at version " +
                        std::to_string(kSchemaVersion) + "); it is damaged or was not written by tessel");
  }
  auto missing = missing_columns(conn, kColumnsOfTable);
  if (!missing.empty()) {
    throw DatabaseError(where + " does not have the tessel schema (" + join_lines(missing, 3) +
                        "); it is damaged or was not written by tessel");
  }
}

std::vector<std::string> postgres_schema_problems(Connection& conn) {
  std::vector<std::string> problems;
  const SchemaState state = read_state(conn);
  if (!state.has_version_table) {
    problems.push_back("table 'tessel_schema' is missing");
  } else if (state.versions.size() != 1 || state.versions.front().second != kApplication) {
    problems.push_back("table 'tessel_schema' does not hold the one row tessel writes there");
  } else if (state.versions.front().first != kSchemaVersion) {
    problems.push_back("schema version is " + std::to_string(state.versions.front().first) + ", expected " +
                       std::to_string(kSchemaVersion));
  }
  for (auto& problem : missing_columns(conn, kColumnsOfTable)) problems.push_back(std::move(problem));
  Statement triggers = conn.prepare(
      "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
      "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND NOT t.tgisinternal "
      "AND c.relname IN ('workloads', 'targets', 'sessions', 'records', 'tessel_schema') ORDER BY 1, 2");
  while (triggers.step()) {
    problems.push_back("unexpected trigger '" + triggers.column_text(1) + "' on table '" + triggers.column_text(0) +
                       "' (tessel logs have none; the database may have been tampered with)");
  }
  return problems;
}

}  // namespace tessel::db
