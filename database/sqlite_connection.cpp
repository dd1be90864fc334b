// The SQLite connection: the tuning log's defensive settings, statements and lock handling.
#include "database/sqlite_connection.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <utility>

namespace tessel::db {
namespace {

constexpr int kBusyTimeoutMs = 60'000;
// After the busy timeout, BEGIN IMMEDIATE is retried until this much time has passed in total. SQLite
// also returns SQLITE_BUSY without waiting in a few cases (e.g. while another process recovers the
// WAL), which the retries absorb.
constexpr auto kLockDeadline = std::chrono::minutes(10);

bool is_busy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

std::string hint_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "; another process has held the log's write lock for too long";
    case SQLITE_CANTOPEN:
      return "; check that the file and its directory exist and are accessible";
    case SQLITE_READONLY:
      return "; the file or its directory is read-only";
    case SQLITE_FULL:
      return "; the disk is full";
    default:
      return "";
  }
}

}  // namespace

SqliteConnection::SqliteConnection(const std::string& path, bool read_only) : Connection(path, read_only) {
  // No SQLITE_OPEN_URI: a path is always a plain file name, never "file:...?options".
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw DatabaseError("cannot open tuning log '" + path + "': " + message + hint_for(rc));
  }
  // SQLite opens a file it may not write read-only without saying so; a writer would then fail at
  // its first write, after the work whose results it meant to store.
  if (!read_only && sqlite3_db_readonly(db_, "main") == 1) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw DatabaseError("tuning log '" + path + "' is read-only (its permissions); cannot write to it");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  // Logs are shared between machines, so a file may have been crafted: refuse schema edits, do not
  // run triggers, views or functions named in the schema, and never load extensions.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DQS_DML, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DQS_DDL, 0, nullptr);
  // cell_size_check makes SQLite notice more kinds of page damage while reading; no mmap, so a
  // damaged file yields an error code rather than a fault.
  try {
    exec("PRAGMA cell_size_check = ON");
    exec("PRAGMA mmap_size = 0");
  } catch (...) {
    sqlite3_close_v2(db_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

SqliteConnection::~SqliteConnection() { sqlite3_close_v2(db_); }

void SqliteConnection::fail(const std::string& what, int rc) const {
  std::string message = sqlite3_extended_errcode(db_) == rc ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  std::string log = "tuning log '" + path() + "'";
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
      throw DatabaseError(log + " is damaged (SQLite: " + message + ", while " + what +
                          "); run `tessel db check --db " + path() +
                          "` and restore the log from a backup or an export");
    case SQLITE_NOTADB:
      throw DatabaseError(log + " is not an SQLite database, or its header is damaged (SQLite: " + message +
                          ")");
    default:
      throw DatabaseError(log + ": " + what + ": " + message + hint_for(rc));
  }
}

void SqliteConnection::exec(const char* sql) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(std::string("running `") + sql + "`", rc);
}

void SqliteConnection::enable_wal() {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, "PRAGMA journal_mode = WAL", -1, &stmt, nullptr);
    std::string mode;
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(stmt);
      if (rc == SQLITE_ROW) {
        mode = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
        rc = SQLITE_OK;
      }
    }
    sqlite3_finalize(stmt);
    if (rc == SQLITE_OK && mode == "wal") return;
    if (rc == SQLITE_OK) {
      throw DatabaseError("tuning log '" + path() + "': cannot switch to WAL mode (journal mode stays '" +
                          mode + "'); is the file on a network file system?");
    }
    if (!is_busy(rc) || std::chrono::steady_clock::now() - start > kLockDeadline) {
      fail("switching to WAL mode", rc);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// A statement of a SqliteConnection. Errors are reported through the connection, which names the
// file.
class SqliteStatement : public StatementBackend {
 public:
  SqliteStatement(const SqliteConnection& conn, sqlite3_stmt* stmt) : conn_(conn), stmt_(stmt) {}
  ~SqliteStatement() override { sqlite3_finalize(stmt_); }

  void bind_text(int index, std::string_view text) override {
    int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    if (rc != SQLITE_OK) conn_.fail("binding a text parameter", rc);
  }
  void bind_double(int index, double value) override {
    int rc = sqlite3_bind_double(stmt_, index, value);
    if (rc != SQLITE_OK) conn_.fail("binding a number", rc);
  }
  void bind_int(int index, int64_t value) override {
    int rc = sqlite3_bind_int64(stmt_, index, value);
    if (rc != SQLITE_OK) conn_.fail("binding an integer", rc);
  }

  bool step() override {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    conn_.fail("reading or writing the log", rc);
  }

  void reset() override {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool is_null(int column) const override { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  int column_count() const override { return sqlite3_column_count(stmt_); }
  int64_t column_int(int column) const override { return sqlite3_column_int64(stmt_, column); }
  double column_double(int column) const override { return sqlite3_column_double(stmt_, column); }

  std::string column_text(int column) const override {
    // Take the pointer before the length, as SQLite documents, and copy exactly that many bytes.
    const unsigned char* text = sqlite3_column_text(stmt_, column);
    int size = sqlite3_column_bytes(stmt_, column);
    if (text == nullptr) return {};
    return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
  }

 private:
  const SqliteConnection& conn_;
  sqlite3_stmt* stmt_;
};

Statement SqliteConnection::prepare(const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) fail("reading the log", rc);
  return Statement(std::make_unique<SqliteStatement>(*this, stmt));
}

void SqliteConnection::begin_write() {
  auto start = std::chrono::steady_clock::now();
  std::minstd_rand jitter(static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id()) ^
                                                start.time_since_epoch().count()));
  for (int attempt = 0;; ++attempt) {
    // IMMEDIATE takes the write lock up front, so a writer never meets SQLITE_BUSY half-way through.
    int rc = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) break;
    if (!is_busy(rc) || std::chrono::steady_clock::now() - start > kLockDeadline) {
      fail("starting a write transaction", rc);
    }
    // Randomised, growing back-off so that many waiting writers do not retry in lock-step.
    int cap_ms = std::min(1000, 5 << std::min(attempt, 8));
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + jitter() % cap_ms));
  }
  in_transaction_ = true;
}

void SqliteConnection::begin_read() {
  exec("BEGIN");
  in_transaction_ = true;
}

void SqliteConnection::commit() {
  // In WAL mode COMMIT does not wait for readers, but retry BUSY anyway: the transaction stays open
  // and holds the write lock, so retrying is always safe.
  for (int attempt = 0;; ++attempt) {
    int rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) {
      in_transaction_ = false;
      return;
    }
    if (!is_busy(rc) || attempt > 100) fail("committing", rc);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void SqliteConnection::end_read() { commit(); }

void SqliteConnection::rollback() noexcept {
  sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  in_transaction_ = false;
}

}  // namespace tessel::db
