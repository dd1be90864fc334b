// -v: `tessel measure -v` prints a line per candidate; `tessel tune -v` prints a line per round
// where it would otherwise redraw a live table, which it does only on a terminal, so the tune test
// runs tessel on a pseudo-terminal.
#include <pty.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "subprocess.h"

using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;

namespace {

using Args = std::vector<std::string>;

Args concat(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const Args kWorkload = {"--op", "matmul", "--param", "M=8", "--param", "N=8", "--param", "K=8", "--min-time-ms", "2"};

// Runs tessel with its standard input, output and error on a new pseudo-terminal and returns all it
// wrote there (newlines arrive as "\r\n").
std::string run_on_terminal(const Args& args, int* exit_code) {
  std::vector<char*> argv = {const_cast<char*>(tessel_test::tessel_exe())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int terminal = -1;
  pid_t pid = forkpty(&terminal, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execv(tessel_test::tessel_exe(), argv.data());
    _exit(127);
  }
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(terminal, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EIO once tessel has exited and closed its side
    text.append(buffer, static_cast<size_t>(n));
  }
  close(terminal);
  *exit_code = tessel_test::wait_for(pid);
  return text;
}

int count_lines_matching(const std::string& text, const std::regex& pattern) {
  std::istringstream lines(text);
  int n = 0;
  for (std::string line; std::getline(lines, line);) n += std::regex_search(line, pattern);
  return n;
}

}  // namespace

TEST_CASE("measure -v prints a line per candidate, without -v none", "[cli][measure]") {
  TempDir dir;
  const std::regex candidate_line("^#[0-9]+ random seed [0-9]+: ok ");
  RunResult quiet = tessel(concat({"measure", "--db", dir.file("quiet.db"), "--random-schedules", "3"}, kWorkload));
  INFO(quiet.out << quiet.err);
  REQUIRE(quiet.exit_code == 0);
  CHECK(count_lines_matching(quiet.out + quiet.err, candidate_line) == 0);

  RunResult verbose =
      tessel(concat({"measure", "--db", dir.file("verbose.db"), "--random-schedules", "3", "-v"}, kWorkload));
  INFO(verbose.out << verbose.err);
  REQUIRE(verbose.exit_code == 0);
  CHECK(count_lines_matching(verbose.out + verbose.err, candidate_line) == 3);
}

TEST_CASE("tune -v on a terminal prints a line per round instead of the live table", "[cli][tune]") {
  TempDir dir;
  int exit_code = -1;
  std::string live =
      run_on_terminal(concat({"tune", "--db", dir.file("live.db"), "--trials", "4"}, kWorkload), &exit_code);
  INFO("without -v:\n" << live);
  REQUIRE(exit_code == 0);
  CHECK_THAT(live, Catch::Contains("\033[1A\033[2K"));  // the table redrawn in place
  CHECK_THAT(live, !Catch::Contains("\nround 1: "));    // its status line is indented, not a line of its own

  std::string lines =
      run_on_terminal(concat({"tune", "--db", dir.file("lines.db"), "--trials", "4", "-v"}, kWorkload), &exit_code);
  INFO("with -v:\n" << lines);
  REQUIRE(exit_code == 0);
  CHECK_THAT(lines, Catch::Contains("\nround 1: "));
  CHECK_THAT(lines, !Catch::Contains("\033["));
}
