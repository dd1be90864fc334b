// Helpers shared by the tuning-log tests: a scratch directory that cleans up after itself and
// records with sensible defaults.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>

#include "database/tuning_log.h"

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

}  // namespace tessel::testing
