// The connection layer over libpq, for a tuning log kept in a PostgreSQL database: statements with
// binary parameters (text of exact length, doubles bit for bit), write transactions serialized by an
// advisory lock, and reconnection after the server went away. Internal to database/; the public
// header never shows libpq types.
#pragma once

#include <string>
#include <string_view>

#include "database/connection.h"

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

namespace tessel::db {

// `url` with its password removed (from the user part and from `password=` or `sslpassword=`
// parameters): how messages and TuningLog::path() name a log in PostgreSQL.
std::string redact_url(const std::string& url);

// `sql` with SQLite's ?N parameters rewritten as PostgreSQL's $N, outside quoted text, so that the
// log's SQL is written once for both backends.
std::string postgres_placeholders(std::string_view sql);

class PostgresConnection : public Connection {
 public:
  // Connects to the database a libpq connection URI names (postgresql://user@host:port/dbname?...),
  // with UTF-8 text on the wire and exact float output. A read-only connection runs every
  // transaction read-only, so the server itself refuses writes. Throws DatabaseError naming the URL
  // (without its password) when it cannot connect or the database's encoding is not UTF8.
  PostgresConnection(const std::string& url, bool read_only);
  ~PostgresConnection() override;

  Backend backend() const override { return Backend::PostgreSQL; }
  void exec(const char* sql) override;
  Statement prepare(const char* sql) override;
  void recover() override;

  // Runs `sql` ($N parameters, all in binary format) and returns its result, which the caller
  // clears. Throws DatabaseError, or TransientError when the work may be retried.
  PGresult* execute(const std::string& sql, int count, const unsigned* types, const char* const* values,
                    const int* lengths, const char* what);

  // Throws a DatabaseError naming the log, what was being done and the server's message; a
  // TransientError when the connection was lost or the server aborted the transaction in a way that
  // a re-run may get past. Clears `result`.
  [[noreturn]] void fail(const std::string& what, PGresult* result) const;

 protected:
  void begin_write() override;
  void begin_read() override;
  void commit() override;
  void end_read() override;
  void rollback() noexcept override;

 private:
  void configure_session();
  // The connection broke while COMMIT was under way: reconnects and asks the server whether the
  // transaction committed. Returns when it did; throws TransientError when it did not (the work may
  // be re-run) and DatabaseError when the server stays out of reach.
  void resolve_lost_commit();

  std::string url_;
  PGconn* pg_ = nullptr;
  int64_t transaction_id_ = 0;  // of the open write transaction (txid_current)
};

}  // namespace tessel::db
