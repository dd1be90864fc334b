// The connection layer over the SQLite C API: a connection with the defensive settings, prepared
// statements that bind parameters only, and BEGIN IMMEDIATE transactions that wait out other
// writers. Internal to database/; the public header never shows SQLite types.
#pragma once

#include <string>

#include "database/connection.h"

struct sqlite3;

namespace tessel::db {

class SqliteConnection : public Connection {
 public:
  // Opens an existing file (never creating one: TuningLog::open decides when a log is new) with
  // extended error codes, the defensive configuration (no triggers, views, extensions or writable
  // schema; untrusted schema) and a 60 s busy timeout. A writable connection to a file SQLite could
  // open only for reading (its permissions) is refused. Throws DatabaseError.
  SqliteConnection(const std::string& path, bool read_only);
  ~SqliteConnection() override;

  Backend backend() const override { return Backend::SQLite; }
  void exec(const char* sql) override;
  Statement prepare(const char* sql) override;

  // Switches the file to write-ahead logging, waiting while other connections hold it (the switch
  // needs a moment of exclusive access, which racing openers of a new file contend for).
  void enable_wal();

  // Throws a DatabaseError naming the file, what was being done and SQLite's message; damaged and
  // non-database files get a message that says so and what to do.
  [[noreturn]] void fail(const std::string& what, int rc) const;

  sqlite3* handle() const { return db_; }

 protected:
  void begin_write() override;
  void begin_read() override;
  void commit() override;
  void end_read() override;
  void rollback() noexcept override;

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace tessel::db
