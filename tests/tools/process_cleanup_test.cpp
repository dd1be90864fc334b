// A tessel session killed with SIGKILL (no chance to clean up) takes its runner and builder processes
// with it. This test process makes itself a subreaper, so every process the session leaves behind is
// re-parented here, where the test can see it.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "subprocess.h"

using tessel_test::command_line;
using tessel_test::executable_of;
using tessel_test::live_children;
using tessel_test::live_children_of;
using tessel_test::reap_exited_children;
using tessel_test::start_tessel;
using tessel_test::TempDir;
using tessel_test::wait_for;

namespace {

using Args = std::vector<std::string>;

const Args kWorkload = {"--op", "matmul", "--param", "M=8", "--param", "N=8", "--param", "K=8", "--min-time-ms", "2"};

Args concat(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// CPU seconds a process has used (user + system, all its threads); 0 when it is gone.
double cpu_seconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return 0;
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // fields 14 and 15 of /proc/PID/stat
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Waits until `session` has a child that satisfies `ready` and returns it. Fails the test if the
// session ends first.
template <typename Ready>
pid_t wait_for_child(pid_t session, const std::string& output, Ready ready) {
  for (;;) {
    int status = 0;
    if (waitpid(session, &status, WNOHANG) == session) {
      INFO(tessel_test::read_text(output));
      FAIL("the session ended before the moment to kill it came");
    }
    for (pid_t child : live_children_of(session))
      if (ready(child)) return child;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a polling pace, not a deadline
  }
}

// SIGKILLs the session, then gives the processes it leaves behind a generous while to go (the
// kernel delivers their parent-death signal at once; a linker a builder had started finishes its
// file first) and returns those still alive, each killed afterwards so that none outlives the test.
std::vector<std::string> survivors_of_kill(pid_t session) {
  REQUIRE(kill(session, SIGKILL) == 0);
  CHECK(wait_for(session) == 128 + SIGKILL);
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<pid_t> left;
  for (;;) {
    reap_exited_children();
    left = live_children();
    if (left.empty() || std::chrono::steady_clock::now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::vector<std::string> survivors;
  for (pid_t pid : left) {
    survivors.push_back(std::to_string(pid) + ": " + command_line(pid));
    kill(pid, SIGKILL);
  }
  while (!live_children().empty()) reap_exited_children();
  reap_exited_children();
  return survivors;
}

}  // namespace

TEST_CASE("a measure session killed while its runner spins in a hung kernel leaves no process behind",
          "[cli][measure][cleanup]") {
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  TempDir dir;
  std::string output = dir.file("measure.txt");
  // The run timeout is far away: only the session's death can end the hung kernel.
  pid_t session = start_tessel(concat({"measure", "--db", dir.file("log.db"), "--random-schedules", "3", "--inject",
                                       "hang@0", "--run-timeout", "3600"},
                                      kWorkload),
                               output);
  const std::string runner_exe = std::filesystem::path(tessel_test::tessel_exe()).parent_path() / "tessel-runner";
  // The runner is in the hung kernel once it has spun for half a second of CPU; an idle runner,
  // waiting for its next candidate, uses none.
  pid_t runner = wait_for_child(session, output, [&](pid_t child) {
    return executable_of(child) == std::filesystem::canonical(runner_exe).string() && cpu_seconds(child) >= 0.5;
  });
  INFO("runner " << runner << " spinning");
  std::vector<std::string> survivors = survivors_of_kill(session);
  INFO(tessel_test::read_text(output));
  for (const std::string& s : survivors) UNSCOPED_INFO("survivor " << s);
  CHECK(survivors.empty());
}

TEST_CASE("a tune session killed while it builds leaves no process behind", "[cli][tune][cleanup]") {
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  TempDir dir;
  std::string output = dir.file("tune.txt");
  pid_t session = start_tessel(concat({"tune", "--db", dir.file("log.db"), "--trials", "200"}, kWorkload), output);
  pid_t builder = wait_for_child(session, output, tessel_test::is_builder);
  INFO("builder " << builder << " running");
  std::vector<std::string> survivors = survivors_of_kill(session);
  INFO(tessel_test::read_text(output));
  for (const std::string& s : survivors) UNSCOPED_INFO("survivor " << s);
  CHECK(survivors.empty());
}
