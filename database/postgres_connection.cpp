// The PostgreSQL connection: libpq calls, binary parameters, the advisory write lock and recovery
// from a lost server connection.
#include "database/postgres_connection.h"

#include <libpq-fe.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "database/schema.h"

namespace tessel::db {
namespace {

// Type OIDs of the parameters the log binds (fixed in every PostgreSQL release; the server headers
// that name them are not part of libpq).
constexpr Oid kInt8Oid = 20;
constexpr Oid kTextOid = 25;
constexpr Oid kFloat8Oid = 701;

// Writers of one log take this transaction-scoped advisory lock first: the log's counterpart of
// SQLite's BEGIN IMMEDIATE. Its key is the number every SQLite log carries as its application_id.
// READ COMMITTED, so that each statement after the lock sees every write committed before it (a
// snapshot taken at BEGIN, as REPEATABLE READ would, could miss the previous writer's commit).
static_assert(kApplicationId == 1413829452);
constexpr const char* kBeginWrite =
    "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock(1413829452); SELECT txid_current()";

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// SQLSTATEs after which the same work may succeed when run again: the connection broke (class 08),
// the server aborted the transaction to resolve a conflict (class 40), or it is shutting down or
// starting up.
bool is_transient_state(std::string_view state) {
  return starts_with(state, "08") || starts_with(state, "40") || state == "57P01" || state == "57P02" ||
         state == "57P03";
}

// A server message on one line: libpq's messages end with a newline and indent their details.
std::string one_line(std::string message) {
  std::string out;
  bool space = false;
  for (char c : message) {
    if (c == '\n' || c == '\t' || c == '\r' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// What to do about a connection that failed, judged by libpq's message.
std::string connect_hint(const std::string& message) {
  if (contains(message, "Connection refused") || contains(message, "No such file or directory") ||
      contains(message, "timeout expired") || contains(message, "could not translate host name")) {
    return "; is the server running, and does the URL name its host and port?";
  }
  if (contains(message, "does not exist")) return "; create the database (createdb NAME) or name an existing one";
  if (contains(message, "password")) return "; check the user name and password (in the URL or ~/.pgpass)";
  return "";
}

// The start of a statement, for a message: enough to tell which one it was.
std::string abbreviated(std::string_view sql) {
  constexpr size_t kShown = 60;
  return sql.size() <= kShown ? std::string(sql) : std::string(sql.substr(0, kShown)) + " ...";
}

// Server notices (a shutdown's warning, say) are not the log's business; libpq would print them.
void ignore_notice(void*, const char*) {}

void put_big_endian(std::string& bytes, uint64_t value) {
  bytes.resize(8);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (56 - 8 * i));
}

// One statement of a PostgresConnection. The statement runs at its first step() and its rows are
// fetched whole, so that other statements may run on the connection while this one's rows are read.
// Parameters go in binary format; results come as text, which the server writes exactly for floats
// (shortest round-trip form) and which std::from_chars reads back without loss.
class PostgresStatement : public StatementBackend {
 public:
  PostgresStatement(PostgresConnection& conn, std::string sql) : conn_(conn), sql_(std::move(sql)) {}
  ~PostgresStatement() override { PQclear(result_); }

  void bind_text(int index, std::string_view text) override {
    // PostgreSQL text cannot hold a NUL byte; say so rather than pass on the server's encoding error.
    if (text.find('\0') != std::string_view::npos) {
      throw DatabaseError("tuning log '" + conn_.path() + "': text with a NUL byte cannot be stored in PostgreSQL");
    }
    parameter(index, kTextOid).assign(text.data(), text.size());
  }
  void bind_double(int index, double value) override {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    put_big_endian(parameter(index, kFloat8Oid), bits);
  }
  void bind_int(int index, int64_t value) override {
    put_big_endian(parameter(index, kInt8Oid), static_cast<uint64_t>(value));
  }

  bool step() override {
    if (result_ == nullptr) {
      run();
      row_ = 0;
    } else {
      ++row_;
    }
    return row_ < PQntuples(result_);
  }

  void reset() override {
    PQclear(result_);
    result_ = nullptr;
    row_ = -1;
    parameters_.clear();
  }

  bool is_null(int column) const override { return PQgetisnull(result_, row_, column) != 0; }
  int column_count() const override { return PQnfields(result_); }

  int64_t column_int(int column) const override {
    int64_t value = 0;
    parse(column, value);
    return value;
  }
  double column_double(int column) const override {
    double value = 0;
    parse(column, value);
    return value;
  }
  std::string column_text(int column) const override {
    return std::string(PQgetvalue(result_, row_, column), static_cast<size_t>(PQgetlength(result_, row_, column)));
  }

 private:
  struct Parameter {
    Oid type = 0;  // 0: unbound, i.e. NULL
    std::string bytes;
  };

  std::string& parameter(int index, Oid type) {
    if (index < 1) throw DatabaseError("tuning log '" + conn_.path() + "': parameter index " + std::to_string(index));
    if (parameters_.size() < static_cast<size_t>(index)) parameters_.resize(index);
    parameters_[index - 1].type = type;
    return parameters_[index - 1].bytes;
  }

  void run() {
    std::vector<Oid> types;
    std::vector<const char*> values;
    std::vector<int> lengths;
    for (const Parameter& p : parameters_) {
      types.push_back(p.type);
      values.push_back(p.type == 0 ? nullptr : p.bytes.data());
      lengths.push_back(static_cast<int>(p.bytes.size()));
    }
    result_ = conn_.execute(sql_, static_cast<int>(parameters_.size()), types.data(), values.data(), lengths.data(),
                            "reading or writing the log");
  }

  // A NULL reads as 0, as SQLite reads it.
  template <typename Number>
  void parse(int column, Number& value) const {
    if (PQgetisnull(result_, row_, column)) return;
    const char* text = PQgetvalue(result_, row_, column);
    const char* end = text + PQgetlength(result_, row_, column);
    auto [stop, error] = std::from_chars(text, end, value);
    if (error != std::errc() || stop != end) {
      throw DatabaseError("tuning log '" + conn_.path() + "': column " + std::to_string(column) + " holds '" +
                          std::string(text, end) + "' where a number was expected");
    }
  }

  PostgresConnection& conn_;
  std::string sql_;
  std::vector<Parameter> parameters_;
  PGresult* result_ = nullptr;
  int row_ = -1;
};

}  // namespace

std::string redact_url(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t authority = scheme + 3;
  const size_t authority_end = std::min(url.find_first_of("/?", authority), url.size());
  std::string out = url.substr(0, authority);
  size_t hosts = authority;
  const size_t at = url.rfind('@', authority_end == 0 ? 0 : authority_end - 1);
  if (at != std::string::npos && at >= authority) {
    const std::string user_info = url.substr(authority, at - authority);
    out += user_info.substr(0, user_info.find(':')) + "@";
    hosts = at + 1;
  }
  const size_t query = std::min(url.find('?', authority_end), url.size());
  out += url.substr(hosts, query - hosts);
  if (query == url.size()) return out;
  // Keep every query parameter but the secrets.
  std::string kept;
  for (size_t start = query + 1; start <= url.size();) {
    const size_t end = std::min(url.find('&', start), url.size());
    const std::string parameter = url.substr(start, end - start);
    const std::string key = parameter.substr(0, parameter.find('='));
    if (!parameter.empty() && key != "password" && key != "sslpassword") kept += (kept.empty() ? "" : "&") + parameter;
    start = end + 1;
  }
  return kept.empty() ? out : out + "?" + kept;
}

std::string postgres_placeholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;  // the quote character of the literal or identifier we are in, if any
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote != 0) {
      if (c == quote) quote = 0;  // a doubled quote closes and reopens: the parity stays right
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '?' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      out += '$';
      continue;
    }
    out += c;
  }
  return out;
}

PostgresConnection::PostgresConnection(const std::string& url, bool read_only)
    : Connection(redact_url(url), read_only), url_(url) {
  // The URL's own settings come after the defaults and before what the log needs, as libpq applies
  // later keywords over earlier ones: UTF-8 on the wire whatever the URL says. Keepalives notice a
  // server that vanished from the network within about two minutes, instead of the system's hours.
  const char* const keywords[] = {
      "connect_timeout",           "keepalives_idle", "keepalives_interval", "keepalives_count",
      "fallback_application_name", "dbname",          "client_encoding",     nullptr};
  const char* const values[] = {"10", "60", "10", "6", "tessel", url_.c_str(), "UTF8", nullptr};
  pg_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (pg_ == nullptr) throw DatabaseError("cannot connect to PostgreSQL at " + path() + ": out of memory");
  PQsetNoticeProcessor(pg_, ignore_notice, nullptr);
  if (PQstatus(pg_) != CONNECTION_OK) {
    const std::string message = one_line(PQerrorMessage(pg_));
    PQfinish(pg_);
    throw DatabaseError("cannot connect to PostgreSQL at " + path() + ": " + message + connect_hint(message));
  }
  try {
    const char* encoding = PQparameterStatus(pg_, "server_encoding");
    if (encoding == nullptr || std::strcmp(encoding, "UTF8") != 0) {
      throw DatabaseError("tuning log '" + path() + "': the database's encoding is " +
                          (encoding ? encoding : "unknown") +
                          "; a tessel log needs UTF8 (CREATE DATABASE name ENCODING 'UTF8' TEMPLATE template0)");
    }
    configure_session();
  } catch (...) {
    PQfinish(pg_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

PostgresConnection::~PostgresConnection() { PQfinish(pg_); }

void PostgresConnection::configure_session() {
  // extra_float_digits = 3: floats are written in their shortest exact form (PostgreSQL 12 and
  // later) or with every digit (before), so a double read back as text is the double stored.
  exec(read_only() ? "SET extra_float_digits = 3; SET default_transaction_read_only = on"
                   : "SET extra_float_digits = 3");
}

void PostgresConnection::fail(const std::string& what, PGresult* result) const {
  std::string message = result ? PQresultErrorMessage(result) : "";
  if (message.empty()) message = PQerrorMessage(pg_);
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const bool transient = PQstatus(pg_) != CONNECTION_OK || (state && is_transient_state(state));
  PQclear(result);
  const std::string text = "tuning log '" + path() + "': " + what + ": " + one_line(message);
  if (transient) throw TransientError(text);
  throw DatabaseError(text);
}

PGresult* PostgresConnection::execute(const std::string& sql, int count, const unsigned* types,
                                      const char* const* values, const int* lengths, const char* what) {
  const std::vector<int> formats(count, 1);
  PGresult* result = PQexecParams(pg_, sql.c_str(), count, types, values, lengths, formats.data(), /*text rows*/ 0);
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail(what, result);
  return result;
}

void PostgresConnection::exec(const char* sql) {
  PGresult* result = PQexec(pg_, sql);
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail("running `" + abbreviated(sql) + "`", result);
  PQclear(result);
}

Statement PostgresConnection::prepare(const char* sql) {
  return Statement(std::make_unique<PostgresStatement>(*this, postgres_placeholders(sql)));
}

void PostgresConnection::recover() {
  in_transaction_ = false;
  if (PQstatus(pg_) == CONNECTION_OK) {
    // The server ended the transaction (a deadlock, say) but the connection stands.
    if (PQtransactionStatus(pg_) != PQTRANS_IDLE) PQclear(PQexec(pg_, "ROLLBACK"));
    if (PQstatus(pg_) == CONNECTION_OK) return;
  }
  PQreset(pg_);
  if (PQstatus(pg_) != CONNECTION_OK) {
    const std::string message = one_line(PQerrorMessage(pg_));
    throw TransientError("tuning log '" + path() + "': lost the connection to the server and cannot reconnect: " +
                         message + connect_hint(message));
  }
  configure_session();
}

void PostgresConnection::begin_write() {
  PGresult* result = PQexec(pg_, kBeginWrite);
  if (PQresultStatus(result) != PGRES_TUPLES_OK || PQntuples(result) != 1) {
    rollback();  // BEGIN may have succeeded before what followed it failed
    fail("starting a write transaction", result);
  }
  transaction_id_ = std::strtoll(PQgetvalue(result, 0, 0), nullptr, 10);
  PQclear(result);
  in_transaction_ = true;
}

void PostgresConnection::begin_read() {
  // REPEATABLE READ: one snapshot for every statement of the transaction, as a SQLite read
  // transaction gives.
  exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  in_transaction_ = true;
}

void PostgresConnection::commit() {
  PGresult* result = PQexec(pg_, "COMMIT");
  in_transaction_ = false;
  if (PQresultStatus(result) == PGRES_COMMAND_OK) {
    // A transaction the server had already aborted "commits" as a rollback.
    const bool committed = std::strcmp(PQcmdStatus(result), "COMMIT") == 0;
    PQclear(result);
    if (!committed) throw DatabaseError("tuning log '" + path() + "': the server rolled the transaction back");
    return;
  }
  if (PQstatus(pg_) == CONNECTION_OK) fail("committing", result);
  PQclear(result);
  resolve_lost_commit();
}

void PostgresConnection::resolve_lost_commit() {
  const std::string lost = "tuning log '" + path() + "': lost the connection to the server while committing";
  Retrier retrier(*this);
  TransientError last(lost);
  for (;;) {
    try {
      retrier.after(last);
    } catch (const DatabaseError& e) {
      throw DatabaseError(std::string(e.what()) +
                          "; whether the last write was stored is unknown: check the log once the server is back");
    }
    std::string status;
    try {
      // An id at or past the server's next one was lost with the server's memory (no record of it
      // reached the write-ahead log, a commit record least of all); txid_status refuses such ids.
      Statement query = prepare("SELECT CASE WHEN ?1 >= txid_current() THEN 'aborted' ELSE txid_status(?1) END");
      query.bind(1, transaction_id_);
      if (query.step()) status = query.column_text(0);
    } catch (const TransientError& e) {
      last = e;
      continue;
    }
    if (status == "committed") return;
    if (status == "in progress") {
      last = TransientError(lost + "; the transaction is still in progress on the server");
      continue;
    }
    // Aborted (or too old for the server to know): nothing was stored, so the work may run again.
    throw TransientError(lost + "; the transaction did not commit");
  }
}

void PostgresConnection::end_read() {
  // Nothing was written: a failure to end the transaction changes nothing that was read. A broken
  // connection is noticed (and recovered) by the next statement.
  PQclear(PQexec(pg_, "COMMIT"));
  in_transaction_ = false;
}

void PostgresConnection::rollback() noexcept {
  if (PQstatus(pg_) == CONNECTION_OK && PQtransactionStatus(pg_) != PQTRANS_IDLE) PQclear(PQexec(pg_, "ROLLBACK"));
  in_transaction_ = false;
}

}  // namespace tessel::db
