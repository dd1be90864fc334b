// The measurer's scratch folder goes however its process ends: normally, by a signal a terminal
// sends, by SIGKILL (the watchdog), and, when even the watchdog was killed, at the next start.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "measure/work_dir.h"

using namespace tessel;

namespace {

// Waits (without a clock of its own: the test's timeout bounds it) until `path` is gone.
void wait_until_gone(const std::string& path) {
  while (std::filesystem::exists(path)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// A child process that makes a work folder, writes its path to the pipe, puts a file in it and
// waits to be killed.
std::pair<pid_t, std::string> child_with_work_dir() {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    WorkDir dir;
    std::ofstream(dir.path() + "/kernel.so") << "bytes";
    const std::string line = dir.path() + "\n";
    if (write(fds[1], line.data(), line.size()) < 0) _exit(1);
    for (;;) pause();
  }
  close(fds[1]);
  std::string path;
  char c;
  while (read(fds[0], &c, 1) == 1 && c != '\n') path += c;
  close(fds[0]);
  REQUIRE_FALSE(path.empty());
  REQUIRE(std::filesystem::exists(path + "/kernel.so"));
  return {pid, path};
}

}  // namespace

TEST_CASE("work dir: removed by its owner, named for its process", "[measure][work_dir]") {
  std::string path;
  {
    WorkDir dir;
    path = dir.path();
    CHECK(std::filesystem::is_directory(path));
    CHECK(std::filesystem::path(path).filename().string().rfind("tessel-measure-" + std::to_string(getpid()) + "-",
                                                                0) == 0);
    std::ofstream(path + "/candidate_1.so") << "x";
  }
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("work dir: removed when its process ends by SIGTERM or SIGKILL", "[measure][work_dir]") {
  for (int signal : {SIGTERM, SIGINT, SIGKILL}) {
    auto [pid, path] = child_with_work_dir();
    kill(pid, signal);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status));
    wait_until_gone(path);  // the watchdog's work
    CHECK_FALSE(std::filesystem::exists(path));
  }
}

TEST_CASE("work dir: a folder whose process no longer runs is removed at the next start", "[measure][work_dir]") {
  pid_t gone = fork();
  REQUIRE(gone >= 0);
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::string stale =
      (std::filesystem::temp_directory_path() / ("tessel-measure-" + std::to_string(gone) + "-leftover")).string();
  std::filesystem::create_directories(stale);
  std::ofstream(stale + "/runner.log") << "left by a killed session";
  const std::string mine =
      (std::filesystem::temp_directory_path() / ("tessel-measure-" + std::to_string(getpid()) + "-mine")).string();
  std::filesystem::create_directories(mine);  // this process runs: kept
  CHECK(remove_stale_work_dirs() >= 1);
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(mine));
  std::filesystem::remove_all(mine);
}

TEST_CASE("work dir: a folder whose process is a zombie is removed too", "[measure][work_dir]") {
  // A killed owner that nobody has reaped yet (a container whose first process does not reap
  // orphans) is a zombie: kill(pid, 0) still succeeds on it, but it runs no more.
  pid_t zombie = fork();
  REQUIRE(zombie >= 0);
  if (zombie == 0) _exit(0);
  const std::string stale =
      (std::filesystem::temp_directory_path() / ("tessel-measure-" + std::to_string(zombie) + "-zombie")).string();
  std::filesystem::create_directories(stale);
  // Not reaped: wait until the child has exited and is a zombie.
  siginfo_t info{};
  REQUIRE(waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT) == 0);
  REQUIRE(kill(zombie, 0) == 0);
  CHECK(remove_stale_work_dirs() >= 1);
  CHECK_FALSE(std::filesystem::exists(stale));
  waitpid(zombie, nullptr, 0);
}
