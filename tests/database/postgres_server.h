// A throwaway PostgreSQL server for the tests of tuning logs in PostgreSQL: a cluster made with
// initdb in a temporary folder, listening on a free localhost port, shared by every test of one
// test-program run and removed when the program ends (or dies). Each test takes a database of its
// own, so tests stay independent.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tessel::testing {

class PostgresServer {
 public:
  // The server of this test program, started on first use. nullptr (after calling
  // tessel_test::skip_test with the reason) when the PostgreSQL server programs are not installed;
  // the caller returns at once. Throws std::runtime_error when they are but the server cannot start.
  static PostgresServer* shared_or_skip();

  // A new, empty database (CREATE DATABASE); returns its URL, postgresql://tessel@127.0.0.1:PORT/NAME.
  std::string create_database();
  // The URL of database `name` on this server.
  std::string url(const std::string& name) const;
  int port() const { return port_; }

  // Stops the server as a crash would (pg_ctl -m immediate stop) and starts it again on the same
  // port with the same data: what a tuner sees when its database server restarts.
  void stop();
  void start();

  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

 private:
  PostgresServer(std::string bin_dir, bool as_postgres_user);
  // Runs a server program (as the postgres user when this process is root: initdb refuses root);
  // its output goes to the folder's log. Throws std::runtime_error with the log when it fails.
  void run(const std::string& program, const std::vector<std::string>& args) const;
  void remove();

  std::string bin_dir_;
  bool as_postgres_user_;
  std::string folder_;
  std::string data_dir_;
  int port_ = 0;
  int databases_ = 0;
  pid_t owner_;           // forked test processes share the object but never stop the server
  int watchdog_fd_ = -1;  // closed at exit or when this process dies: the watchdog then cleans up
};

// Runs SQL on a database behind the log's back, as another program (or damage) would. Throws
// std::runtime_error with the server's message when it fails.
void postgres_exec(const std::string& url, const std::string& sql);
// The first column of the first row of a query's result ("" when there is none).
std::string postgres_query(const std::string& url, const std::string& sql);

}  // namespace tessel::testing
