// Training samples from a tuning log (search/log_samples.h): trial records only, failures as
// latency 0, groups per workload and target kind, the filters, and records that no longer replay
// skipped with their reason rather than failing the whole log.
#include <catch2/catch.hpp>
#include <filesystem>

#include "schedule/ops/op_library.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/log_samples.h"
#include "search/random_schedule.h"

using namespace tessel;

namespace {

struct ScratchLog {
  ScratchLog() {
    path = (std::filesystem::temp_directory_path() / ("tessel-log-samples-" + std::to_string(::getpid()) + ".db"))
               .string();
    std::filesystem::remove(path);
  }
  ~ScratchLog() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
  std::string path;
};

MeasureRecord record(const ComputeDAG& dag, const std::string& kind, const std::string& trace_json, double median_s,
                     ErrorCode error = ErrorCode::Ok, RecordPurpose purpose = RecordPurpose::Trial) {
  MeasureRecord r;
  r.workload = WorkloadInfo{dag.workload_key(), dag.to_text(), dag.flops()};
  r.target = TargetInfo{kind, kind == "cuda" ? "sm_90" : "x86-64", "test", "", "", ""};
  r.trace_json = trace_json;
  r.error = error;
  if (error == ErrorCode::Ok) {
    r.median_s = median_s;
    r.samples_s = {median_s};
  }
  r.purpose = purpose;
  return r;
}

}  // namespace

TEST_CASE("log samples: trials of the target kind, failures as latency 0, bad records skipped with a reason",
          "[search][log_samples]") {
  ScratchLog scratch;
  const ComputeDAG a = build_op("matmul", {{"M", "13"}, {"N", "7"}, {"K", "61"}});
  const ComputeDAG b = build_op("softmax", {{"rows", "7"}, {"cols", "61"}});
  const CpuTargetSpec cpu{8, 2};
  const std::string a0 = trace_to_json(default_schedule(a, cpu));
  const std::string a1 = trace_to_json(random_schedule(a, 1, cpu));
  const std::string a2 = trace_to_json(random_schedule(a, 2, cpu));
  const std::string b0 = trace_to_json(default_schedule(b, cpu));
  const std::string b0_gpu = trace_to_json(default_gpu_schedule(b, GpuTargetSpec{}));
  {
    TuningLog log = TuningLog::open(scratch.path, TuningLog::Mode::ReadWrite);
    log.append({record(a, "llvm", a0, 2e-3), record(a, "llvm", a1, 1e-3),
                record(a, "llvm", a2, 0, ErrorCode::WrongAnswer),
                record(a, "llvm", a1, 1.1e-3, ErrorCode::Ok, RecordPurpose::Retime),  // not a sample
                record(a, "llvm", R"({"version": 1, "steps": [{"kind": "no_such_step"}]})", 3e-3),
                record(b, "llvm", b0, 5e-4), record(b, "cuda", b0_gpu, 4e-4)});
  }
  const TuningLog log = TuningLog::open(scratch.path, TuningLog::Mode::ReadOnly);

  LogSamples llvm = samples_from_log(log, LogSampleFilter{});
  REQUIRE(llvm.samples.size() == 4);  // a: three replayable trials; b: one on llvm
  REQUIRE(llvm.workload_keys.size() == 4);
  REQUIRE(llvm.skipped.size() == 1);
  CHECK_THAT(llvm.skipped[0], Catch::Contains("workload " + a.workload_key()) && Catch::Contains("no_such_step"));
  std::map<std::string, std::vector<double>> latencies;
  for (size_t i = 0; i < llvm.samples.size(); ++i) {
    CHECK(llvm.samples[i].group == llvm.workload_keys[i] + "/llvm");
    CHECK(llvm.samples[i].features.rows > 0);
    latencies[llvm.workload_keys[i]].push_back(llvm.samples[i].latency_s);
  }
  CHECK(latencies[a.workload_key()] == std::vector<double>{2e-3, 1e-3, 0.0});  // the log's order; failure: 0
  CHECK(latencies[b.workload_key()] == std::vector<double>{5e-4});

  LogSampleFilter cuda;
  cuda.target = TargetKind::Cuda;
  LogSamples gpu = samples_from_log(log, cuda);
  REQUIRE(gpu.samples.size() == 1);
  CHECK(gpu.samples[0].group == b.workload_key() + "/cuda");
  CHECK(gpu.samples[0].latency_s == 4e-4);

  LogSampleFilter only_b;
  only_b.only_workloads = {b.workload_key()};
  CHECK(samples_from_log(log, only_b).samples.size() == 1);
  LogSampleFilter without_b;
  without_b.exclude_workloads = {b.workload_key()};
  LogSamples rest = samples_from_log(log, without_b);
  CHECK(rest.samples.size() == 3);
  for (const std::string& key : rest.workload_keys) CHECK(key == a.workload_key());
}
