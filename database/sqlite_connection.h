// Thin RAII layer over the SQLite C API for the tuning log: a connection with the defensive settings,
// prepared statements that bind parameters only, and BEGIN IMMEDIATE transactions that wait out
// other writers. Internal to database/; the public header never shows SQLite types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "database/tuning_log.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tessel::db {

class Statement;

class Connection {
 public:
  // Opens an existing file (never creating one: TuningLog::open decides when a log is new) with
  // extended error codes, the defensive configuration (no triggers, views, extensions or writable
  // schema; untrusted schema) and a 60 s busy timeout. A writable connection to a file SQLite could
  // open only for reading (its permissions) is refused. Throws DatabaseError.
  Connection(const std::string& path, bool read_only);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }

  // Runs SQL written in this source tree (never user text). Throws DatabaseError.
  void exec(const char* sql);
  // Like exec but ignores failure: for ROLLBACK on paths that are already reporting an error.
  void exec_quietly(const char* sql) noexcept;
  Statement prepare(const char* sql);

  // Switches the file to write-ahead logging, waiting while other connections hold it (the switch
  // needs a moment of exclusive access, which racing openers of a new file contend for).
  void enable_wal();

  // Runs a pragma or query whose first column of the first row is an integer.
  int64_t query_int(const char* sql);

  // Throws a DatabaseError naming the file, what was being done and SQLite's message; damaged and
  // non-database files get a message that says so and what to do.
  [[noreturn]] void fail(const std::string& what, int rc) const;

  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  bool read_only_;
};

class Statement {
 public:
  Statement(Connection& conn, sqlite3_stmt* stmt) : conn_(&conn), stmt_(stmt) {}
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;

  // Parameters are 1-based, as in SQLite. Text is copied and bound with its exact length, so any
  // bytes (quotes, comment markers, multi-byte UTF-8) are stored verbatim.
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, double value);
  Statement& bind(int index, int64_t value);

  // Advances; true while a row is available. Throws DatabaseError on failure.
  bool step();
  // Steps a statement that returns no rows (or whose rows are not needed).
  void run();
  void reset();

  bool is_null(int column) const;
  int column_count() const;
  int64_t column_int(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;

 private:
  Connection* conn_;
  sqlite3_stmt* stmt_;
};

// A BEGIN IMMEDIATE transaction: the write lock is taken up front, so a writer never meets
// SQLITE_BUSY half-way through. Waits for other writers (busy timeout, then retries with backoff)
// and rolls back on destruction unless committed.
class Transaction {
 public:
  explicit Transaction(Connection& conn);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // Returns once COMMIT has succeeded: the changes are durable.
  void commit();

 private:
  Connection& conn_;
  bool open_ = true;
};

}  // namespace tessel::db
