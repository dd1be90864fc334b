// Helpers shared by the tuning-log tests: a scratch directory that cleans up after itself and
// records with sensible defaults.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>

#include "database/tuning_log.h"
#include "tools/db_command.h"

namespace tessel::testing {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessel_db_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline TargetInfo cpu_target() { return {"llvm", "x86-64-v3", "Test CPU", "", "19.1", "+avx2,+fma"}; }
inline TargetInfo gpu_target() { return {"cuda", "sm_90", "H100", "550.54", "12.4", ""}; }

inline MeasureRecord make_record(const std::string& key, double median, ErrorCode error = ErrorCode::Ok,
                                 const TargetInfo& target = cpu_target()) {
  MeasureRecord r;
  r.workload = {key, "compute " + key + "(i, j) = A(i, k) * B(k, j)", 2.0e9};
  r.target = target;
  // One schedule per (median, outcome): records made alike are timings of the same schedule.
  std::ostringstream trace;
  trace << std::setprecision(17) << R"([{"step":"split","loop":"i","factor":32,"tag":")" << median << " "
        << to_string(error) << R"("}])";
  r.trace_json = trace.str();
  if (median > 0) r.samples_s = {median * 1.01, median, median * 0.99};  // a failed run has none
  r.median_s = median;
  r.error = error;
  if (error != ErrorCode::Ok) r.error_message = "failed: " + std::string(to_string(error));
  r.build_s = 0.25;
  r.run_s = 0.5;
  r.settings_json = R"({"repeat":3,"warmup":1})";
  return r;
}

inline std::string export_to_string(const TuningLog& log) {
  std::ostringstream out;
  log.export_jsonl(out);
  return out.str();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Runs `body` in a child process and never returns into Catch there: the exit code says whether
// the body threw (the message goes to stderr).
template <typename Body>
pid_t spawn(Body body) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int code = 0;
  try {
    body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", getpid(), e.what());
    code = 1;
  }
  _exit(code);
}

// `tessel db ARGS...` run in this process: its exit code and what it printed.
struct DbResult {
  int code;
  std::string out, err;
};
inline DbResult db(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = run_db_command(args, out, err);
  return {code, out.str(), err.str()};
}

// Text that breaks naive SQL, JSON and encodings: quotes, comment markers, both backends'
// placeholders, escapes, control characters and multi-byte UTF-8, tagged to tell values apart.
inline std::string hostile(const std::string& tag) {
  return tag + R"( '"; DROP TABLE records; -- $1 ?1 $$ ?2 /* */ ' OR 1=1; \x00 ")" + "\\n\\\" \t\r\n" +
         "héllo wörld — 世界 🚀 " + tag;
}

// A session and two records (one ok, one failed) made of hostile text, with a workload text, a trace
// and an error message of a mebibyte each.
struct HostileRecords {
  SessionInfo session;
  MeasureRecord ok, failed;
  std::string megabyte;
};
inline HostileRecords hostile_records() {
  HostileRecords h;
  for (int i = 0; h.megabyte.size() < (1u << 20); ++i) h.megabyte += hostile(std::to_string(i));
  h.session = SessionInfo{hostile("label"), hostile("options"), hostile("version"), hostile("host"), ""};
  h.ok = make_record(hostile("key"), 1e-3);
  h.ok.workload.text = h.megabyte;
  h.ok.target = {hostile("kind"),   hostile("arch"),    hostile("device"),
                 hostile("driver"), hostile("toolkit"), hostile("features")};
  h.ok.trace_json = h.megabyte + "trace";
  h.ok.error_message = hostile("message");
  h.ok.settings_json = hostile("settings");
  h.failed = h.ok;
  h.failed.error = ErrorCode::CompileDevice;
  h.failed.error_message = h.megabyte + "error";
  return h;
}

// Imports `exported` (an export of `records` records over two sessions) into the empty log `fresh`,
// checks it comes back byte for byte, then imports it again: the duplicate rule adds nothing.
inline void check_import_round_trip(TuningLog& fresh, const std::string& exported, int64_t records) {
  std::istringstream in(exported);
  ImportReport report = fresh.import_jsonl(in, "a.jsonl");
  CHECK(report.errors.empty());
  CHECK(report.imported == records);
  CHECK(export_to_string(fresh) == exported);
  CHECK(fresh.counts().sessions == 2);

  std::istringstream again(exported);
  ImportReport second = fresh.import_jsonl(again, "a.jsonl");
  CHECK(second.imported == 0);
  CHECK(second.duplicates == records);
  CHECK(fresh.counts().records == records);
  CHECK(export_to_string(fresh) == exported);
}

}  // namespace tessel::testing
