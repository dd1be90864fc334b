// Runs the tessel binary (or any program) as a child process and collects what it did.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessel_test {

struct RunResult {
  int exit_code = -1;   // the child's exit status; 128 + signal number when it was killed
  std::string out;      // everything it wrote to standard output
  std::string err;      // everything it wrote to standard error
  std::string command;  // the command line, for failure messages
};

// Runs `program args...` with standard input from /dev/null and both output streams captured into
// separate temporary files. Never goes through a shell, so arguments need no quoting.
RunResult run_program(const std::string& program, const std::vector<std::string>& args);

// The same with `env` added to (or replacing entries of) this process's environment.
RunResult run_program(const std::string& program, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env);

// The tessel binary under test: $TESSEL_EXE where set (a bundle on a GPU host runs its own), else
// the one this build made.
const char* tessel_exe();

// Runs the tessel binary under test.
RunResult tessel(const std::vector<std::string>& args);
RunResult tessel(const std::vector<std::string>& args, const std::map<std::string, std::string>& env);

// Starts tessel without waiting, its standard input from /dev/null and both output streams to
// `output_path`. The caller reaps it (wait_for).
pid_t start_tessel(const std::vector<std::string>& args, const std::string& output_path);
// Waits for a child started by start_tessel; its exit code, or 128 + the signal that killed it.
int wait_for(pid_t pid);

// The processes whose parent is `parent`, as /proc tells (a subreaper's adopted orphans included),
// zombies left out.
std::vector<pid_t> live_children_of(pid_t parent);
// The same for this process.
std::vector<pid_t> live_children();
// The program a process runs (its /proc/PID/exe), or "" when it is gone.
std::string executable_of(pid_t pid);
// Whether `pid` is one of tessel's builders: a fork of tessel (the runner is another program) whose
// standard error goes to a candidate's build log (the work folder's watchdog, also a fork, writes
// nowhere).
bool is_builder(pid_t pid);
// Reaps every child of this process that has exited (adopted orphans included), without waiting.
void reap_exited_children();
// The command line of a process ("" when it is gone), for failure messages.
std::string command_line(pid_t pid);

// Every record of a tuning log (`tessel db export`), one JSON object each, in export order. Fails
// the test when the export fails.
std::vector<nlohmann::json> export_records(const std::string& db);

// A fresh directory under the system temporary directory, removed with everything in it on exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to `name` inside the directory and returns the full path.
  std::string write(const std::string& name, const std::string& text) const;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The whole of a file ("" when it cannot be read).
std::string read_text(const std::string& path);

// The path of a file in the source tree (e.g. "suites/operators.json").
std::string source_file(const std::string& relative);

}  // namespace tessel_test
