// A throwaway PostgreSQL cluster for tests: initdb, pg_ctl start/stop, and a watchdog process that
// removes the cluster when the test program dies without cleaning up.
#include "tests/database/postgres_server.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "tests/skip.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

bool has_server_programs(const fs::path& dir) {
  return access((dir / "initdb").c_str(), X_OK) == 0 && access((dir / "pg_ctl").c_str(), X_OK) == 0;
}

// Where initdb and pg_ctl are: a folder of PATH, else Debian's /usr/lib/postgresql/VERSION/bin, the
// newest version first. Empty when they are not installed.
std::string find_bin_dir() {
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (!dir.empty() && has_server_programs(dir)) return dir;
    }
  }
  std::vector<std::pair<int, fs::path>> versions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit) &&
        has_server_programs(entry.path() / "bin")) {
      versions.emplace_back(std::stoi(name), entry.path() / "bin");
    }
  }
  if (versions.empty()) return "";
  return std::max_element(versions.begin(), versions.end())->second.string();
}

// A TCP port on 127.0.0.1 that nothing listens on right now.
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(fd);
    throw std::runtime_error("cannot find a free localhost port");
  }
  close(fd);
  return ntohs(address.sin_port);
}

std::string tail_of(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

// Runs argv[0] (searched in PATH) with its output appended to `log`; returns its exit status.
int spawn(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

PostgresServer* PostgresServer::shared_or_skip() {
  static std::unique_ptr<PostgresServer> server;
  if (server) return server.get();
  const std::string bin_dir = find_bin_dir();
  if (bin_dir.empty()) {
    tessel_test::skip_test(
        "the PostgreSQL server programs (initdb, pg_ctl) are not installed; scripts/setup.sh "
        "installs them");
    return nullptr;
  }
  const bool root = geteuid() == 0;
  if (root && getpwnam("postgres") == nullptr) {
    tessel_test::skip_test("running as root, and there is no 'postgres' user to run the PostgreSQL server as");
    return nullptr;
  }
  server.reset(new PostgresServer(bin_dir, root));
  return server.get();
}

PostgresServer::PostgresServer(std::string bin_dir, bool as_postgres_user)
    : bin_dir_(std::move(bin_dir)), as_postgres_user_(as_postgres_user), owner_(getpid()) {
  std::string pattern = (fs::temp_directory_path() / "tessel_pg_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  folder_ = pattern;
  data_dir_ = folder_ + "/data";
  try {
    if (as_postgres_user_) {
      const passwd* user = getpwnam("postgres");
      if (chown(folder_.c_str(), user->pw_uid, user->pw_gid) != 0) throw std::runtime_error("chown failed");
    }
    // Databases sort text by an ICU locale where the server has ICU (PostgreSQL 15 and later), as
    // a production server's do: "Zeta" after "alpha", where bytewise order puts it first. The log's
    // columns must sort bytewise all the same.
    const std::vector<std::string> initdb = {
        "-D", data_dir_, "--auth=trust", "--username=tessel", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"};
    std::vector<std::string> icu = initdb;
    icu.insert(icu.end(), {"--locale-provider=icu", "--icu-locale=en-US"});
    try {
      run("initdb", icu);
    } catch (const std::runtime_error&) {
      fs::remove_all(data_dir_);
      run("initdb", initdb);
    }

    // The watchdog waits for the end of the pipe's write side, which this process holds (close on
    // exec, so the server never inherits it): at exit, or when the process is killed.
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_t watchdog = fork();
    if (watchdog == 0) {
      setsid();  // outlives a kill of the test's process group
      close(fds[1]);
      for (char byte;;) {
        const ssize_t n = read(fds[0], &byte, 1);
        if (n == 0 || (n < 0 && errno != EINTR)) break;
      }
      if (fs::exists(data_dir_)) {
        try {
          stop();
        } catch (...) {
        }
        remove();
      }
      _exit(0);
    }
    close(fds[0]);
    watchdog_fd_ = fds[1];

    // Another program may take the port between free_port() and the start: try a few.
    for (int attempt = 0;; ++attempt) {
      port_ = free_port();
      try {
        start();
        break;
      } catch (const std::runtime_error&) {
        if (attempt == 2) throw;
      }
    }
  } catch (...) {
    if (watchdog_fd_ >= 0) close(watchdog_fd_);
    remove();
    throw;
  }
}

PostgresServer::~PostgresServer() {
  if (getpid() != owner_) return;  // a forked test process exiting
  try {
    stop();
  } catch (...) {
  }
  remove();
  close(watchdog_fd_);
}

void PostgresServer::run(const std::string& program, const std::vector<std::string>& args) const {
  std::vector<std::string> argv;
  if (as_postgres_user_) argv = {"runuser", "-u", "postgres", "--"};
  argv.push_back(bin_dir_ + "/" + program);
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string log = folder_ + "/commands.log";
  const int status = spawn(argv, log);
  if (status != 0) {
    throw std::runtime_error(program + " failed with exit status " + std::to_string(status) + ":\n" +
                             tail_of(log, 2000) + "\nserver log:\n" + tail_of(folder_ + "/server.log", 2000));
  }
}

void PostgresServer::start() {
  // fsync off: a test server never outlives a machine crash. The socket goes in the folder, so
  // that no other server's socket directory is needed.
  run("pg_ctl",
      {"-D", data_dir_, "-w", "-t", "60", "-l", folder_ + "/server.log", "-o",
       "-p " + std::to_string(port_) + " -k " + folder_ + " -c listen_addresses=127.0.0.1 -c fsync=off", "start"});
}

void PostgresServer::stop() { run("pg_ctl", {"-D", data_dir_, "-m", "immediate", "-w", "stop"}); }

void PostgresServer::remove() {
  std::error_code ignored;
  fs::remove_all(folder_, ignored);
}

std::string PostgresServer::url(const std::string& name) const {
  return "postgresql://tessel@127.0.0.1:" + std::to_string(port_) + "/" + name;
}

std::string PostgresServer::create_database() {
  const std::string name = "tessel_test_" + std::to_string(++databases_);
  postgres_exec(url("postgres"), "CREATE DATABASE " + name);
  return url(name);
}

std::string postgres_query(const std::string& url, const std::string& sql) {
  PGconn* conn = PQconnectdb(url.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    throw std::runtime_error("cannot connect to " + url + ": " + message);
  }
  PGresult* result = PQexec(conn, sql.c_str());
  const ExecStatusType status = PQresultStatus(result);
  const std::string message = PQresultErrorMessage(result);
  std::string value;
  if (status == PGRES_TUPLES_OK && PQntuples(result) > 0 && PQnfields(result) > 0) {
    value.assign(PQgetvalue(result, 0, 0), PQgetlength(result, 0, 0));
  }
  PQclear(result);
  PQfinish(conn);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error("`" + sql + "` failed on " + url + ": " + message);
  }
  return value;
}

void postgres_exec(const std::string& url, const std::string& sql) { postgres_query(url, sql); }

}  // namespace tessel::testing
