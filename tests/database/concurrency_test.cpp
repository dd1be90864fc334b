// Several processes writing one log at once, and writers killed at random moments: no SQLITE_BUSY
// reaches the caller, no committed record is lost, and the file stays sound.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "database/tuning_log.h"
#include "tests/database/test_support.h"

using namespace tessel;
using namespace tessel::testing;

namespace {


}  // namespace

TEST_CASE("8 processes appending to one new log at once lose nothing", "[database][concurrency]") {
  ScratchDir dir;
  std::string path = dir.file("shared.db");  // created by whichever child gets there first
  constexpr int kProcesses = 8, kRecordsEach = 50;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    children.push_back(spawn([&, p] {
      auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
      log.begin_session({"worker " + std::to_string(p), "{}", "0.1.0", "host", ""});
      for (int i = 0; i < kRecordsEach; ++i) {
        log.append({make_record("w" + std::to_string(i % 5), 1e-3 * (p + 1) + 1e-6 * i)});
      }
    }));
  }
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto log = TuningLog::open(path, TuningLog::Mode::ReadOnly);
  auto counts = log.counts();
  CHECK(counts.records == kProcesses * kRecordsEach);
  CHECK(counts.sessions == kProcesses);
  CHECK(counts.workloads == 5);
  CHECK(counts.targets == 1);
  CHECK(log.check().empty());
  CHECK(log.best("w0", cpu_target())->median_s == 1e-3);
}

// Reads from `fd` until a complete line has arrived that `wanted` accepts, keeping everything read
// in `text`; false when the writer closed the pipe first (it died).
template <typename Wanted>
bool read_until_line(int fd, std::string& text, Wanted wanted) {
  size_t checked = 0;
  for (;;) {
    for (size_t end; (end = text.find('\n', checked)) != std::string::npos; checked = end + 1)
      if (wanted(text.substr(checked, end - checked))) return true;
    char buffer[4096];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.append(buffer, static_cast<size_t>(n));
  }
}

TEST_CASE("a writer killed at random moments never loses a committed record", "[database][crash]") {
  ScratchDir dir;
  std::string path = dir.file("crash.db");
  std::mt19937 rng(20240501);
  std::uniform_int_distribution<int> delay_us(0, 30'000);
  constexpr int kKills = 100;
  std::set<int64_t> reported;
  int rounds_after_a_commit = 0;

  for (int kill_round = 0; kill_round < kKills; ++kill_round) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t child = spawn([&] {
      close(fds[0]);
      auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
      if (write(fds[1], "ready\n", 6) != 6) _exit(3);
      for (int i = 0;; ++i) {
        std::vector<MeasureRecord> batch = {make_record("w" + std::to_string(i % 3), 1e-3 + 1e-6 * i)};
        if (i % 4 == 0) batch.push_back(make_record("w9", 2e-3, ErrorCode::RuntimeError));
        for (int64_t id : log.append(batch)) {
          // Reported only after append returned, i.e. after COMMIT. One write per id stays atomic
          // on a pipe, so the parent never sees half a number followed by a newline.
          char line[32];
          int n = std::snprintf(line, sizeof line, "%lld\n", static_cast<long long>(id));
          if (write(fds[1], line, n) != n) _exit(3);
        }
      }
    });
    close(fds[1]);
    // Odd rounds kill at any moment, opening and creating the file included; even rounds wait until
    // the child has committed a record, so that the kill lands among appends and commits however
    // slow the machine is. Either way a random delay follows.
    std::string text;
    if (kill_round % 2 == 0) {
      bool committed = read_until_line(fds[0], text, [](const std::string& line) { return line != "ready"; });
      INFO(text);
      REQUIRE(committed);  // the writer died on its own before its first commit
      ++rounds_after_a_commit;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    kill(child, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));  // it was still running: it must not have failed on its own

    char buffer[4096];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
    close(fds[0]);
    for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
      std::string line = text.substr(start, end - start);
      if (line != "ready") reported.insert(std::stoll(line));
    }

    // Until the first commit has been reported the child may have died while creating the file,
    // leaving it empty: nothing was promised yet, so there is nothing to check.
    if (reported.empty()) continue;
    auto problems = TuningLog::check_file(path);
    INFO("after kill " << kill_round << ": " << (problems.empty() ? "" : problems.front()));
    REQUIRE(problems.empty());
  }

  auto log = TuningLog::open(path, TuningLog::Mode::ReadOnly);
  std::set<int64_t> stored;
  for (const char* key : {"w0", "w1", "w2", "w9"}) {
    for (const auto& r : log.records(key, cpu_target())) stored.insert(r.id);
  }
  INFO("reported " << reported.size() << ", stored " << stored.size());
  // Every even round killed a writer that had committed: the test exercised real commits.
  CHECK(rounds_after_a_commit == kKills / 2);
  CHECK(reported.size() >= static_cast<size_t>(kKills / 2));
  for (int64_t id : reported) {
    INFO("record " << id);
    CHECK(stored.count(id) == 1);
  }
}
