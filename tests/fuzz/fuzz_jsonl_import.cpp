// JSON-lines import under the mutation fuzzer: mutants of a real export go through
// TuningLog::import_jsonl with the CLI's record validator (workload text parsed, trace replayed).
// Each must be imported whole or refused whole, with every problem named by its line; nothing may
// throw. Whatever import accepted must then pass `check` with the same validator and be usable by
// replay. A crash, an abort or (in the sanitizer build) a memory error or undefined behaviour fails
// the program.
#include <catch2/catch.hpp>
#include <sstream>

#include "database/tuning_log.h"
#include "tests/database/real_records.h"
#include "tests/database/test_support.h"
#include "tests/fuzz/mutator.h"
#include "tools/db_command.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

// A small export reaching every field: trials with real schedules of two workloads, a failed
// record, a retime with a yardstick (a version 2 line), and hostile text.
std::vector<std::string> seeds() {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("seed.db"), TuningLog::Mode::ReadWrite);
  log.begin_session({"fuzz seed", R"({"trials":8,"seed":1})", "tessel 0.1.0", "host", ""});
  const WorkloadInfo small = matmul_workload(8, 8, 8), other = matmul_workload(4, 12, 6);
  auto with_trace = [](MeasureRecord r, const std::string& trace) {
    r.trace_json = trace;
    return r;
  };
  const std::string split = R"({"version":1,"steps":[{"kind":"split","stage":"C","loop":"i","factors":[4]}]})";
  const std::string split_annotate =
      R"({"version":1,"steps":[{"kind":"split","stage":"C","loop":"i","factors":[2,2]},)"
      R"({"kind":"annotate","stage":"C","loop":"i.0","annotation":"parallel"}]})";
  MeasureRecord retime = with_trace(real_record(small, "", 1.1e-3), split);
  retime.purpose = RecordPurpose::Retime;
  retime.reference_s = 2e-3;
  MeasureRecord hostile = real_record(other, "h\"'\\\n\t", 7e-4);
  hostile.error_message = "héllo — 世界 \"quoted\" \\ \n";
  log.append({with_trace(real_record(small, "", 1e-3), split), with_trace(real_record(small, "", 2e-3), split_annotate),
              real_record(small, "default", 3e-3), retime,
              with_trace(real_record(other, "", 0, ErrorCode::BuildTimeout), split), hostile});
  const std::string text = export_to_string(log);
  std::vector<std::string> out = {text};
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out.push_back(line + "\n");
  return out;
}

}  // namespace

TEST_CASE("mutated JSON lines import whole or are refused whole, line by line", "[fuzz][database][import]") {
  const std::vector<std::string> inputs = seeds();
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("fuzz.db"), TuningLog::Mode::ReadWrite);
  const RecordValidator validator = record_validator();
  int64_t mutant = 0, refused = 0;
  const int64_t accepted = tessel_fuzz::fuzz(inputs, 16000, 20260616, [&](const std::string& text) {
    ++mutant;
    const int64_t before = log.counts().records;
    std::istringstream in(text);
    ImportReport report;
    try {
      report = log.import_jsonl(in, "fuzz.jsonl", validator);
    } catch (const std::exception& e) {
      FAIL("mutant " << mutant << " threw: " << e.what() << "\n" << text);
    }
    if (report.errors.empty()) {
      CHECK(log.counts().records == before + report.imported);
      return true;
    }
    ++refused;
    CHECK(report.imported == 0);
    CHECK(log.counts().records == before);
    for (const std::string& error : report.errors) {
      INFO("mutant " << mutant << "\n" << text);
      CHECK_THAT(error, Catch::StartsWith("fuzz.jsonl: line "));
    }
    return false;
  });
  INFO("accepted " << accepted << " of " << mutant << ", refused " << refused);
  CHECK(accepted > 0);  // the fuzzing reached past the parser and the checks
  CHECK(refused > 0);
  CHECK(log.counts().records > 0);
  // What import accepted, check accepts, and replay can use.
  std::vector<std::string> problems = log.check(validator);
  INFO((problems.empty() ? std::string() : problems.front()));
  CHECK(problems.empty());
  for (const MeasureRecord& best : log.best_per_workload_target(validator)) {
    CHECK(best.median_s > 0);
    CHECK_FALSE(validator(best).has_value());
  }
}
