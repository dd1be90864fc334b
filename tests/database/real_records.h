// Records of real workloads (op-library DAGs) whose traces replay on them: what the CLI's record
// validator (tools/db_command.h) accepts, for tests that go through `tessel db`.
#pragma once

#include <string>

#include "database/tuning_log.h"
#include "schedule/ops/op_library.h"
#include "tests/database/test_support.h"

namespace tessel::testing {

// The workload of a small matmul (M x N x K).
inline WorkloadInfo matmul_workload(int m = 8, int n = 8, int k = 8) {
  ComputeDAG dag = build_op("matmul", {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}});
  return WorkloadInfo{dag.workload_key(), dag.to_text(), dag.flops()};
}

// A trace that replays on any workload; `tag` (its sketch name) tells schedules apart.
inline std::string replayable_trace(const std::string& tag) {
  return R"({"version":1,"steps":[],"sketch":")" + tag + R"("})";
}

inline MeasureRecord real_record(const WorkloadInfo& workload, const std::string& tag, double median,
                                 ErrorCode error = ErrorCode::Ok, const TargetInfo& target = cpu_target()) {
  MeasureRecord r = make_record(workload.key, median, error, target);
  r.workload = workload;
  r.trace_json = replayable_trace(tag);
  return r;
}

}  // namespace tessel::testing
