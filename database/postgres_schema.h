// The tuning log's schema in a PostgreSQL database: the tables and indexes of SQLite schema version
// 4 in PostgreSQL's types, plus a tessel_schema table holding the schema version (the counterpart
// of a SQLite file's PRAGMA user_version and application_id, on which future migrations key).
// Internal to database/.
#pragma once

#include <string>
#include <vector>

#include "database/connection.h"

namespace tessel::db {

// Makes the database a usable log or throws DatabaseError naming its URL. A database without any
// tessel table gets the schema (read-write handles; under the log's write lock, so that processes
// opening a fresh database at once create it once) or is refused as "does not exist" (read-only
// handles). Refuses a database with tables named like the log's but no tessel_schema row, a schema
// version newer than this tessel's (or older than 4, which no tessel writes here) and missing
// tables or columns.
void prepare_postgres_schema(Connection& conn);

// What schema_problems reports for a PostgreSQL log: the tessel_schema row, missing tables and
// columns, and triggers on the log's tables (a tessel log has none).
std::vector<std::string> postgres_schema_problems(Connection& conn);

}  // namespace tessel::db
