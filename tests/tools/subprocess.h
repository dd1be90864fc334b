// Runs the tessel binary (or any program) as a child process and collects what it did.
#pragma once

#include <filesystem>
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

// Runs the tessel binary under test.
RunResult tessel(const std::vector<std::string>& args);

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

// The path of a file in the source tree (e.g. "suites/operators.json").
std::string source_file(const std::string& relative);

}  // namespace tessel_test
