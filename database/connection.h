// The database interface the tuning log is written against: a connection that runs SQL with `?N`
// parameters, statements that bind parameters only, write transactions that serialize writers,
// snapshot read transactions, and retries of work that a lost server connection interrupted. SQLite
// (sqlite_connection.h) and PostgreSQL (postgres_connection.h) implement it. Internal to database/.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "database/tuning_log.h"

namespace tessel::db {

enum class Backend { SQLite, PostgreSQL };

// A failure that left the database as it was and that doing the same work again may get past: the
// connection to the server was lost, or the server aborted the transaction (a deadlock, a
// serialization failure). Thrown only by backends with a server; with_retries() catches it.
class TransientError : public DatabaseError {
 public:
  explicit TransientError(const std::string& message) : DatabaseError(message) {}
};

// One prepared statement as a backend implements it; used through Statement.
class StatementBackend {
 public:
  virtual ~StatementBackend() = default;
  virtual void bind_text(int index, std::string_view text) = 0;
  virtual void bind_double(int index, double value) = 0;
  virtual void bind_int(int index, int64_t value) = 0;
  virtual bool step() = 0;
  virtual void reset() = 0;
  virtual bool is_null(int column) const = 0;
  virtual int column_count() const = 0;
  virtual int64_t column_int(int column) const = 0;
  virtual double column_double(int column) const = 0;
  virtual std::string column_text(int column) const = 0;
};

// A prepared statement. SQL names its parameters ?1, ?2, ... (1-based, as in SQLite); a parameter
// left unbound is NULL. Text is bound with its exact length, so any bytes (quotes, comment markers,
// placeholders, multi-byte UTF-8) are stored verbatim; doubles travel without loss.
class Statement {
 public:
  explicit Statement(std::unique_ptr<StatementBackend> backend) : backend_(std::move(backend)) {}

  Statement& bind(int index, std::string_view text) {
    backend_->bind_text(index, text);
    return *this;
  }
  Statement& bind(int index, double value) {
    backend_->bind_double(index, value);
    return *this;
  }
  Statement& bind(int index, int64_t value) {
    backend_->bind_int(index, value);
    return *this;
  }

  // Advances; true while a row is available. The first call runs the statement. Throws
  // DatabaseError (TransientError when the work may be retried).
  bool step() { return backend_->step(); }
  // Steps a statement that returns no rows (or whose rows are not needed).
  void run() {
    while (step()) {
    }
  }
  // Makes the statement ready to run again and clears its parameters.
  void reset() { backend_->reset(); }

  bool is_null(int column) const { return backend_->is_null(column); }
  int column_count() const { return backend_->column_count(); }
  int64_t column_int(int column) const { return backend_->column_int(column); }
  double column_double(int column) const { return backend_->column_double(column); }
  std::string column_text(int column) const { return backend_->column_text(column); }

 private:
  std::unique_ptr<StatementBackend> backend_;
};

class Connection {
 public:
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  virtual Backend backend() const = 0;
  // The log as messages name it: a file path, or a URL without its password.
  const std::string& path() const { return path_; }
  bool read_only() const { return read_only_; }
  bool in_transaction() const { return in_transaction_; }

  // Runs SQL written in this source tree (never user text). Throws DatabaseError.
  virtual void exec(const char* sql) = 0;
  virtual Statement prepare(const char* sql) = 0;
  // Runs a query whose first column of the first row is an integer.
  int64_t query_int(const char* sql);

  // After a TransientError: makes the connection usable again (reconnecting to the server), or
  // throws TransientError when it cannot yet. Whatever transaction was open is gone.
  virtual void recover() {}

 protected:
  Connection(std::string path, bool read_only) : path_(std::move(path)), read_only_(read_only) {}

  // Used through Transaction and ReadTransaction. begin_write waits until this connection is the
  // only writer of the log; commit returns once the changes are durable.
  virtual void begin_write() = 0;
  virtual void begin_read() = 0;
  virtual void commit() = 0;
  virtual void end_read() = 0;
  virtual void rollback() noexcept = 0;
  friend class Transaction;
  friend class ReadTransaction;

  bool in_transaction_ = false;

 private:
  std::string path_;
  bool read_only_;
};

// A write transaction: it holds the log's write lock from the start, so the rows it reads (a count
// against a budget, a find-or-insert) cannot change under it before COMMIT. Rolls back on
// destruction unless committed.
class Transaction {
 public:
  explicit Transaction(Connection& conn) : conn_(conn) { conn_.begin_write(); }
  ~Transaction() {
    if (open_) conn_.rollback();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // Returns once COMMIT has succeeded: the changes are durable.
  void commit() {
    conn_.commit();
    open_ = false;
  }

 private:
  Connection& conn_;
  bool open_ = true;
};

// A read transaction: every statement in it sees the same snapshot of the log, even while other
// processes write.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection& conn) : conn_(conn) { conn_.begin_read(); }
  ~ReadTransaction() {
    if (open_) conn_.rollback();
  }
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

  void finish() {
    open_ = false;
    conn_.end_read();
  }

 private:
  Connection& conn_;
  bool open_ = true;
};

// Waits between attempts of work that failed with TransientError: growing, randomised pauses while
// it recovers the connection, for up to kRetryDeadline in all. A server restarted under a running
// tuner costs the tuner a pause, not its run.
class Retrier {
 public:
  explicit Retrier(Connection& conn);
  // Pauses and recovers the connection; throws DatabaseError naming the log once the deadline has
  // passed.
  void after(const TransientError& error);

 private:
  Connection& conn_;
  std::chrono::steady_clock::time_point start_;
  int attempt_ = 0;
};

// Runs `work` (which opens and commits its own transactions) and runs it again, whole, after a
// TransientError: a transaction that failed before COMMIT left nothing behind, so a re-run never
// applies half of one. Inside an open transaction `work` runs once; the transaction's owner retries.
template <typename Work>
auto with_retries(Connection& conn, Work&& work) -> decltype(work()) {
  if (conn.in_transaction()) return work();
  Retrier retrier(conn);
  for (;;) {
    try {
      return work();
    } catch (const TransientError& error) {
      retrier.after(error);
    }
  }
}

}  // namespace tessel::db
