// Behaviour of the tuning log: storing and replaying records, hostile text, JSON-lines round trips,
// import errors, merging and schema migrations.
#include "database/tuning_log.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/database/test_support.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

// Runs SQL on a log behind the TuningLog's back, as another program (or damage) would.
void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* message = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  INFO(text);
  REQUIRE(rc == SQLITE_OK);
}

void require_same(const MeasureRecord& a, const MeasureRecord& b) {
  CHECK(a.workload.key == b.workload.key);
  CHECK(a.workload.text == b.workload.text);
  CHECK(a.workload.flops == b.workload.flops);
  CHECK(a.target.kind == b.target.kind);
  CHECK(a.target.arch == b.target.arch);
  CHECK(a.target.device_name == b.target.device_name);
  CHECK(a.target.driver_version == b.target.driver_version);
  CHECK(a.target.toolkit_version == b.target.toolkit_version);
  CHECK(a.target.cpu_features == b.target.cpu_features);
  CHECK(a.trace_json == b.trace_json);
  CHECK(a.samples_s == b.samples_s);
  CHECK(a.median_s == b.median_s);
  CHECK(a.error == b.error);
  CHECK(a.error_message == b.error_message);
  CHECK(a.build_s == b.build_s);
  CHECK(a.run_s == b.run_s);
  CHECK(a.settings_json == b.settings_json);
}


}  // namespace

TEST_CASE("error codes are stored by name and parsed back", "[database]") {
  const ErrorCode all[] = {
      ErrorCode::Ok,           ErrorCode::Instantiation, ErrorCode::CompileHost, ErrorCode::CompileDevice,
      ErrorCode::BuildTimeout, ErrorCode::RuntimeError,  ErrorCode::RunTimeout,  ErrorCode::WrongAnswer,
      ErrorCode::Unknown};
  for (ErrorCode code : all) CHECK(error_code_from_string(to_string(code)) == code);
  CHECK(std::string(to_string(ErrorCode::WrongAnswer)) == "wrong_answer");
  CHECK(std::string(to_string(ErrorCode::CompileDevice)) == "compile_device");
  CHECK_FALSE(error_code_from_string("OK").has_value());
  CHECK_FALSE(error_code_from_string("").has_value());
}

TEST_CASE("appended records come back exactly, with counts", "[database]") {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  log.begin_session({"unit test", R"({"trials":10})", "0.1.0", "host-a", ""});
  std::vector<MeasureRecord> batch = {make_record("mm", 1.0 / 3.0), make_record("mm", 2e-7),
                                      make_record("mm", 1e-3, ErrorCode::RunTimeout)};
  batch[1].samples_s = {2e-7, 2.0000000000000004e-7, 1.9999999999999998e-7};
  auto ids = log.append(batch);
  REQUIRE(ids.size() == 3);
  CHECK(ids[0] < ids[1]);

  auto stored = log.records("mm", cpu_target());
  REQUIRE(stored.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    require_same(stored[i], batch[i]);
    CHECK(stored[i].id == ids[i]);
    CHECK(stored[i].timestamp.size() == 24);  // filled in: 2024-05-01T12:34:56.789Z
  }
  auto counts = log.counts();
  CHECK(counts.workloads == 1);
  CHECK(counts.targets == 1);
  CHECK(counts.sessions == 1);
  CHECK(counts.records == 3);
  CHECK(counts.error_records == 1);
  CHECK(log.check().empty());
  CHECK(log.records("mm", gpu_target()).empty());
  CHECK(log.holds("mm", cpu_target(), batch[2].trace_json));
  CHECK_FALSE(log.holds("mm", gpu_target(), batch[2].trace_json));
  CHECK_FALSE(log.holds("mm", cpu_target(), "[]"));
  CHECK_FALSE(log.holds("conv", cpu_target(), batch[2].trace_json));
}

TEST_CASE("best() returns the fastest ok record, never an error or wrong answer", "[database]") {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  log.append({make_record("mm", 3e-3), make_record("mm", 1.5e-3), make_record("mm", 2e-3)});
  // Faster, but wrong or failed: must never be replayed.
  log.append({make_record("mm", 1e-4, ErrorCode::WrongAnswer),
              make_record("mm", 1e-5, ErrorCode::RuntimeError), make_record("mm", 0, ErrorCode::CompileHost),
              make_record("mm", 1e-6, ErrorCode::Unknown)});
  log.append({make_record("mm", 1e-3, ErrorCode::Ok, gpu_target())});
  log.append({make_record("conv", 1e-4, ErrorCode::WrongAnswer)});  // only invalid records

  auto best = log.best("mm", cpu_target());
  REQUIRE(best.has_value());
  CHECK(best->median_s == 1.5e-3);
  CHECK(best->error == ErrorCode::Ok);
  CHECK(log.best("mm", gpu_target())->median_s == 1e-3);
  CHECK_FALSE(log.best("conv", cpu_target()).has_value());
  CHECK_FALSE(log.best("no-such-workload", cpu_target()).has_value());
  TargetInfo other_driver = gpu_target();
  other_driver.driver_version = "560.00";
  CHECK_FALSE(log.best("mm", other_driver).has_value());

  auto all = log.best_per_workload_target();
  REQUIRE(all.size() == 2);  // (mm, llvm) and (mm, cuda); conv has no valid record
  CHECK(all[0].target.kind == "cuda");
  CHECK(all[0].median_s == 1e-3);
  CHECK(all[1].target.kind == "llvm");
  CHECK(all[1].median_s == 1.5e-3);
}

TEST_CASE("retimes: best() ranks a schedule by the upper median of its timings", "[database]") {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  auto timing = [](const std::string& trace, double median, RecordPurpose purpose,
                   ErrorCode error = ErrorCode::Ok) {
    MeasureRecord r = make_record("mm", median, error);
    r.trace_json = trace;
    r.purpose = purpose;
    return r;
  };
  const auto trial = RecordPurpose::Trial, retime = RecordPurpose::Retime;
  // "lucky" logged 1.0 ms once; two retimes say 2.0 and 2.2 ms. "steady" is 1.5 ms.
  log.append({timing("lucky", 1.0e-3, trial), timing("steady", 1.5e-3, trial)});
  CHECK(log.best("mm", cpu_target())->trace_json == "lucky");  // one timing each: the fastest
  log.append({timing("lucky", 2.0e-3, retime)});
  auto best = log.best("mm", cpu_target());  // two timings: the slower counts
  REQUIRE(best.has_value());
  CHECK(best->trace_json == "steady");
  log.append({timing("lucky", 1.1e-3, retime), timing("steady", 1.6e-3, retime), timing("steady", 1.4e-3, retime)});
  best = log.best("mm", cpu_target());  // medians: lucky 1.1 of {1.0, 2.0, 1.1}; steady 1.5 of {1.5, 1.6, 1.4}
  REQUIRE(best.has_value());
  CHECK(best->trace_json == "lucky");
  CHECK(best->median_s == 1.1e-3);
  CHECK(best->purpose == retime);  // the record whose median is the estimate
  CHECK(latency_estimate({3, 1, 2}) == 2);
  CHECK(latency_estimate({1, 2}) == 2);
  CHECK(latency_estimate({4}) == 4);

  SECTION("a timeout in a retime does not rule a schedule out") {
    log.append({timing("lucky", 0, retime, ErrorCode::RunTimeout)});
    CHECK(log.best("mm", cpu_target())->trace_json == "lucky");
  }
  SECTION("a wrong answer or a crash in any timing does") {
    ErrorCode error = GENERATE(ErrorCode::WrongAnswer, ErrorCode::RuntimeError);
    log.append({timing("lucky", 0, retime, error)});
    CHECK(log.best("mm", cpu_target())->trace_json == "steady");
    CHECK(log.best_per_workload_target().front().trace_json == "steady");
  }
  auto counts = log.counts();
  CHECK(counts.retimes >= 4);
  CHECK(counts.records == counts.retimes + 2);
  CHECK(log.check().empty());
}

TEST_CASE("yardstick: best() ranks timings relative to the default's at the same moment", "[database]") {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  auto timing = [](const std::string& trace, double median, double reference) {
    MeasureRecord r = make_record("mm", median);
    r.trace_json = trace;
    r.purpose = RecordPurpose::Retime;
    r.reference_s = reference;
    return r;
  };
  // The default usually runs at 2.0 ms. "calm" was timed only in a fast moment (default at 1.5 ms
  // beside it), "busy" in slow ones (default at 3.0 ms). Raw, calm looks faster; relative to the
  // default, busy is: 2.7 / 3.0 = 0.90 of the default against calm's 1.44 / 1.5 = 0.96.
  log.append({timing("default", 2.0e-3, 0), timing("default", 2.02e-3, 0), timing("calm", 1.44e-3, 1.5e-3),
              timing("calm", 1.45e-3, 1.5e-3), timing("busy", 2.7e-3, 3.0e-3), timing("busy", 2.73e-3, 3.0e-3),
              timing("busy", 1.76e-3, 2.0e-3)});
  // The level: the upper median of the references {1.5, 1.5, 3.0, 3.0, 2.0} = 2.0 ms.
  CHECK(scaled_latency(2.7e-3, 3.0e-3, 2.0e-3) == Approx(1.8e-3));
  CHECK(scaled_latency(1.44e-3, 1.5e-3, 2.0e-3) == Approx(1.92e-3));
  CHECK(scaled_latency(1.0e-3, 0, 2.0e-3) == 1.0e-3);  // no reference: the raw median
  CHECK(scaled_latency(1.0e-3, 1.5e-3, 0) == 1.0e-3);  // no level
  auto best = log.best("mm", cpu_target());
  REQUIRE(best.has_value());
  CHECK(best->trace_json == "busy");
  CHECK(best->reference_s == 3.0e-3);  // the record whose scaled latency (1.8 ms of 1.76, 1.8, 1.82) is the estimate
  CHECK(best->median_s == 2.7e-3);
  CHECK(log.best_per_workload_target().front().trace_json == "busy");

  // Equal estimates: the schedule recorded first wins, whatever its trace's text.
  auto ties = TuningLog::open(dir.file("ties.db"), TuningLog::Mode::ReadWrite);
  ties.append({timing("zz-first", 1.0e-3, 2.0e-3), timing("aa-second", 1.0e-3, 2.0e-3)});
  CHECK(ties.best("mm", cpu_target())->trace_json == "zz-first");

  // The reference goes out and comes back with the record, and is part of its identity.
  std::string text = export_to_string(log);
  CHECK(text.find(R"("reference_s":0.003)") != std::string::npos);
  auto copy = TuningLog::open(dir.file("copy.db"), TuningLog::Mode::ReadWrite);
  std::istringstream in(text);
  CHECK(copy.import_jsonl(in, "a.jsonl").imported == 7);
  CHECK(export_to_string(copy) == text);
  CHECK(copy.best("mm", cpu_target())->trace_json == "busy");
  CHECK(copy.merge(dir.file("log.db")).duplicates == 7);
  // One referenced record's line, with another reference (a new record) and a negative one (refused).
  const size_t at = text.find(R"("reference_s":0.003)");
  std::string line = text.substr(text.rfind('\n', at) + 1);
  line = line.substr(0, line.find('\n') + 1);
  std::string other = line;
  other.replace(other.find(R"("reference_s":0.003)"), 19, R"("reference_s":0.004)");
  std::string negative = line;
  negative.replace(negative.find(R"("reference_s":0.003)"), 19, R"("reference_s":-1.00)");
  std::istringstream more(other + negative);
  auto report = copy.import_jsonl(more, "more.jsonl");
  CHECK(report.imported == 0);  // all or nothing
  REQUIRE(report.errors.size() == 1);
  CHECK_THAT(report.errors[0], Catch::Contains("more.jsonl: line 2") && Catch::Contains("reference_s"));
  std::istringstream just_other(other);
  CHECK(copy.import_jsonl(just_other, "other.jsonl").imported == 1);
  CHECK(copy.check().empty());
}

TEST_CASE("retimes keep their purpose through export, import and merge", "[database]") {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("a.db"), TuningLog::Mode::ReadWrite);
  MeasureRecord trial = make_record("mm", 1e-3), again = make_record("mm", 1.2e-3);
  again.trace_json = trial.trace_json;
  again.purpose = RecordPurpose::Retime;
  log.append({trial, again});
  std::string text = export_to_string(log);
  CHECK(text.find(R"("purpose":"retime")") != std::string::npos);
  CHECK(text.find(R"("purpose":"trial")") == std::string::npos);  // a trial's line is as before retimes

  auto fresh = TuningLog::open(dir.file("b.db"), TuningLog::Mode::ReadWrite);
  std::istringstream in(text);
  CHECK(fresh.import_jsonl(in, "a.jsonl").imported == 2);
  CHECK(export_to_string(fresh) == text);
  auto records = fresh.records("mm", cpu_target());
  REQUIRE(records.size() == 2);
  CHECK(records[0].purpose == RecordPurpose::Trial);
  CHECK(records[1].purpose == RecordPurpose::Retime);
  CHECK(fresh.merge(dir.file("a.db")).duplicates == 2);
  // The purpose is part of a record's identity: the retime's line as a trial is another record.
  std::string retime_line = text.substr(text.find('\n') + 1);
  CHECK(retime_line.find(R"("v":2)") != std::string::npos);  // a version-1 reader refuses it
  std::string as_trial = retime_line;
  as_trial.erase(as_trial.find(R"("purpose":"retime",)"), std::string(R"("purpose":"retime",)").size());
  as_trial.replace(as_trial.find(R"("v":2)"), 5, R"("v":1)");
  std::istringstream trial_in(as_trial);
  auto as_trial_report = fresh.import_jsonl(trial_in, "as_trial.jsonl");
  CHECK(as_trial_report.errors.empty());
  CHECK(as_trial_report.imported == 1);

  std::string bad = retime_line;
  const std::string marked = R"("purpose":"retime")";
  bad.replace(bad.find(marked), marked.size(), R"("purpose":"rerun")");
  std::string unmarked = as_trial;
  unmarked.replace(unmarked.find(R"("v":1)"), 5, R"("v":2)");
  // As tessel 64bafa9 to 5282ecd wrote a retime: version 1 with "purpose". Read as a retime.
  std::string early = retime_line;
  early.replace(early.find(R"("v":2)"), 5, R"("v":1)");
  auto other = TuningLog::open(dir.file("c.db"), TuningLog::Mode::ReadWrite);
  std::istringstream early_in(early);
  CHECK(other.import_jsonl(early_in, "early.jsonl").imported == 1);
  REQUIRE(other.records("mm", cpu_target()).size() == 1);
  CHECK(other.records("mm", cpu_target())[0].purpose == RecordPurpose::Retime);
  std::istringstream bad_in(bad + unmarked);
  auto report = fresh.import_jsonl(bad_in, "bad.jsonl");
  REQUIRE(report.errors.size() == 2);
  CHECK_THAT(report.errors[0], Catch::Contains("bad.jsonl: line 1: purpose:") && Catch::Contains("rerun"));
  CHECK_THAT(report.errors[1], Catch::Contains("bad.jsonl: line 2: purpose: missing"));
}

TEST_CASE("hostile text round-trips byte for byte", "[database]") {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  const HostileRecords h = hostile_records();
  const SessionInfo& session = h.session;
  const MeasureRecord &r = h.ok, &failed = h.failed;
  log.begin_session(session);
  log.append({r, failed});

  auto stored = log.records(r.workload.key, r.target);
  REQUIRE(stored.size() == 2);
  require_same(stored[0], r);
  require_same(stored[1], failed);
  REQUIRE(log.best(r.workload.key, r.target).has_value());
  require_same(*log.best(r.workload.key, r.target), r);
  CHECK(log.counts().records == 2);  // the "DROP TABLE" text did nothing

  std::string exported = export_to_string(log);
  auto first_line = nlohmann::json::parse(exported.substr(0, exported.find('\n')));
  CHECK(first_line["session"]["label"] == session.label);
  CHECK(first_line["session"]["options_json"] == session.options_json);

  auto copy = TuningLog::open(dir.file("copy.db"), TuningLog::Mode::ReadWrite);
  std::istringstream in(exported);
  auto report = copy.import_jsonl(in, "export.jsonl");
  CHECK(report.errors.empty());
  CHECK(report.imported == 2);
  auto imported = copy.records(r.workload.key, r.target);
  REQUIRE(imported.size() == 2);
  require_same(imported[0], r);
  require_same(imported[1], failed);
  CHECK(export_to_string(copy) == exported);
}

TEST_CASE("export, import into a fresh log, export again is byte-identical", "[database]") {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("a.db"), TuningLog::Mode::ReadWrite);
  log.begin_session({"first", "{}", "0.1.0", "host-a", "2024-01-01T00:00:00.000Z"});
  for (int i = 0; i < 20; ++i) {
    auto r =
        make_record(i % 3 ? "mm" : "conv", (i + 1) / 7.0 * 1e-3,
                    i % 5 == 0 ? ErrorCode::WrongAnswer : ErrorCode::Ok, i % 2 ? cpu_target() : gpu_target());
    r.timestamp = "2024-01-01T00:00:0" + std::to_string(i % 4) + ".000Z";  // ties on purpose
    r.trace_json = R"({"i":)" + std::to_string(i) + "}";
    log.append({r});
  }
  log.begin_session({"second", R"({"x":1})", "0.1.0", "host-b", "2024-02-01T00:00:00.000Z"});
  log.append({make_record("gemv", 0.1 + 0.2), make_record("gemv", 1e-300, ErrorCode::BuildTimeout)});

  std::string first = export_to_string(log);
  CHECK(std::count(first.begin(), first.end(), '\n') == 22);

  auto fresh = TuningLog::open(dir.file("b.db"), TuningLog::Mode::ReadWrite);
  check_import_round_trip(fresh, first, 22);
}

TEST_CASE("a bad line is reported with its line number, field and problem, and nothing imports", "[database]") {
  ScratchDir dir;
  auto source = TuningLog::open(dir.file("a.db"), TuningLog::Mode::ReadWrite);
  source.append({make_record("mm", 1e-3), make_record("conv", 2e-3)});
  std::string good = export_to_string(source);
  std::string line1 = good.substr(0, good.find('\n'));
  std::string line2 = good.substr(good.find('\n') + 1);
  line2.pop_back();

  auto without = [](std::string line, const std::string& field) {
    auto j = nlohmann::json::parse(line);
    j.erase(field);
    return j.dump();
  };
  auto with = [](std::string line, const std::string& field, nlohmann::json value) {
    auto j = nlohmann::json::parse(line);
    j[field] = value;
    return j.dump();
  };
  std::string input = line1 + "\n" +                             // 1 good
                      "{not json\n" +                            // 2
                      without(line1, "trace_json") + "\n" +      // 3
                      "\n" +                                     // 4 blank: ignored
                      with(line1, "v", 3) + "\n" +               // 5
                      with(line1, "samples_s", "fast") + "\n" +  // 6
                      with(line1, "error", "exploded") + "\n" +  // 7
                      "[1,2,3]\r\n" +                            // 8
                      line2 + "\n";                              // 9 good

  auto log = TuningLog::open(dir.file("b.db"), TuningLog::Mode::ReadWrite);
  std::istringstream in(input);
  auto report = log.import_jsonl(in, "shared.jsonl");
  CHECK(report.imported == 0);
  REQUIRE(report.errors.size() == 6);
  CHECK_THAT(report.errors[0], Catch::StartsWith("shared.jsonl: line 2: not valid JSON"));
  CHECK(report.errors[1] == "shared.jsonl: line 3: trace_json: missing");
  CHECK_THAT(report.errors[2], Catch::StartsWith("shared.jsonl: line 5: v: unsupported format version 3"));
  CHECK(report.errors[3] == "shared.jsonl: line 6: samples_s: must be an array of numbers");
  CHECK(report.errors[4] == "shared.jsonl: line 7: error: unknown error code 'exploded'");
  CHECK(report.errors[5] == "shared.jsonl: line 8: must be a JSON object");
  CHECK(log.counts().records == 0);  // the good lines wait for the bad ones to be fixed
  CHECK_FALSE(log.best("mm", cpu_target()).has_value());
}

TEST_CASE("merging logs imports every record once", "[database]") {
  ScratchDir dir;
  auto a = TuningLog::open(dir.file("a.db"), TuningLog::Mode::ReadWrite);
  a.append({make_record("mm", 2e-3), make_record("mm", 1e-3, ErrorCode::WrongAnswer)});
  {
    auto b = TuningLog::open(dir.file("b.db"), TuningLog::Mode::ReadWrite);
    b.append({make_record("mm", 1.5e-3), make_record("conv", 1e-3, ErrorCode::Ok, gpu_target())});
  }
  auto report = a.merge(dir.file("b.db"));
  CHECK(report.errors.empty());
  CHECK(report.imported == 2);
  CHECK(a.counts().records == 4);
  CHECK(a.counts().sessions == 2);
  CHECK(a.best("mm", cpu_target())->median_s == 1.5e-3);
  auto again = a.merge(dir.file("b.db"));
  CHECK(again.imported == 0);
  CHECK(again.duplicates == 2);
  CHECK(a.check().empty());
  CHECK_THROWS_AS(a.merge(dir.file("missing.db")), DatabaseError);
}

TEST_CASE("invalid records and misuse are refused with clear errors", "[database]") {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  auto nan = make_record("mm", std::nan(""));
  CHECK_THROWS_WITH(log.append({nan}), Catch::Contains("median_s is not finite"));
  auto bad_utf8 = make_record("mm", 1e-3);
  bad_utf8.trace_json = "\xff\xfe";
  CHECK_THROWS_WITH(log.append({bad_utf8}), Catch::Contains("'trace_json' is not valid UTF-8"));
  auto no_samples = make_record("mm", 1e-3);
  no_samples.samples_s.clear();
  CHECK_THROWS_AS(log.append({no_samples}), DatabaseError);
  log.append({make_record("mm", 1e-3)});
  auto other_text = make_record("mm", 1e-3);
  other_text.workload.text = "something else";
  CHECK_THROWS_WITH(log.append({other_text}), Catch::Contains("already stored with a different text"));
  CHECK(log.counts().records == 1);  // a failed batch stores nothing

  auto reader = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadOnly);
  CHECK_THROWS_WITH(reader.append({make_record("mm", 1e-3)}), Catch::Contains("read-only"));
  CHECK_THROWS_WITH(TuningLog::open(dir.file("absent.db"), TuningLog::Mode::ReadOnly),
                    Catch::Contains("does not exist"));
}

TEST_CASE("content damage that SQLite cannot see is caught by the record checksum", "[database]") {
  ScratchDir dir;
  std::string path = dir.file("log.db");
  {
    auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
    log.append({make_record("mm", 1e-3), make_record("mm", 2e-3)});
  }
  raw_exec(path, "UPDATE records SET trace_json = '[{\"step\":\"split\",\"factor\":64}]' WHERE id = 1");
  raw_exec(path, "UPDATE records SET error_message = CAST(X'C0FF' AS TEXT) WHERE id = 2");
  auto log = TuningLog::open(path, TuningLog::Mode::ReadOnly);
  auto problems = log.check();
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::Contains("record 1") && Catch::Contains("checksum"));
  CHECK_THAT(problems[1], Catch::Contains("record 2") && Catch::Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(log.best("mm", cpu_target()), Catch::Contains("checksum"));
  std::ostringstream out;
  CHECK_THROWS_AS(log.export_jsonl(out), DatabaseError);
}

TEST_CASE("a log from a newer tessel is refused, an older one is migrated", "[database]") {
  ScratchDir dir;
  SECTION("newer") {
    std::string path = dir.file("new.db");
    TuningLog::open(path, TuningLog::Mode::ReadWrite).append({make_record("mm", 1e-3)});
    raw_exec(path, "PRAGMA user_version = 7");
    for (auto mode : {TuningLog::Mode::ReadOnly, TuningLog::Mode::ReadWrite}) {
      CHECK_THROWS_WITH(TuningLog::open(path, mode), Catch::Contains("schema version 7") &&
                                                         Catch::Contains("up to 4") && Catch::Contains(path));
    }
  }
  // Rewrites the log at `path` as an older tessel left it (`downgrade`: SQL dropping the newer
  // columns and setting the version), checks that it must be migrated before a read-only open, and
  // opens it for writing, which migrates it; its records must then pass their checksums.
  auto reopen_older = [](const std::string& path, const std::string& downgrade, int version) {
    raw_exec(path, downgrade);
    CHECK_THROWS_WITH(TuningLog::open(path, TuningLog::Mode::ReadOnly),
                      Catch::Contains("schema version " + std::to_string(version)) && Catch::Contains("migrate"));
    auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
    CHECK(log.check().empty());
    return log;
  };
  SECTION("version 2, before retimes") {
    // A file as version 2 left it: no purpose column. Its records' checksums must stay valid.
    std::string path = dir.file("v2.db");
    TuningLog::open(path, TuningLog::Mode::ReadWrite).append({make_record("mm", 1e-3), make_record("mm", 2e-3)});
    auto log = reopen_older(path,
                            "ALTER TABLE records DROP COLUMN reference_s; ALTER TABLE records DROP COLUMN purpose; "
                            "PRAGMA user_version = 2;",
                            2);
    auto records = log.records("mm", cpu_target());
    REQUIRE(records.size() == 2);
    CHECK(records[0].purpose == RecordPurpose::Trial);
    CHECK(log.best("mm", cpu_target())->median_s == 1e-3);
  }
  SECTION("version 3, before the yardstick") {
    // A file as version 3 left it: no reference_s column. Retimes stay retimes, checksums valid.
    std::string path = dir.file("v3.db");
    MeasureRecord trial = make_record("mm", 1e-3), again = make_record("mm", 1.5e-3);
    again.trace_json = trial.trace_json;
    again.purpose = RecordPurpose::Retime;
    TuningLog::open(path, TuningLog::Mode::ReadWrite).append({trial, again});
    auto log = reopen_older(path, "ALTER TABLE records DROP COLUMN reference_s; PRAGMA user_version = 3;", 3);
    auto records = log.records("mm", cpu_target());
    REQUIRE(records.size() == 2);
    CHECK(records[1].purpose == RecordPurpose::Retime);
    CHECK(records[0].reference_s == 0);
    CHECK(records[1].reference_s == 0);
    CHECK(log.best("mm", cpu_target())->median_s == 1.5e-3);
  }
  SECTION("older") {
    // Schema version 1 as the first prototype wrote it: no checksums, no indexes.
    std::string path = dir.file("old.db");
    raw_exec(
        path,
        "PRAGMA application_id = 1413829452;"
        "CREATE TABLE workloads (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE,"
        "  text TEXT NOT NULL, flops REAL NOT NULL);"
        "CREATE TABLE targets (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, arch TEXT NOT NULL,"
        "  device_name TEXT NOT NULL, driver_version TEXT NOT NULL, toolkit_version TEXT NOT NULL,"
        "  cpu_features TEXT NOT NULL,"
        "  UNIQUE (kind, arch, device_name, driver_version, toolkit_version, cpu_features));"
        "CREATE TABLE sessions (id INTEGER PRIMARY KEY, start_time TEXT NOT NULL,"
        "  options_json TEXT NOT NULL, tool_version TEXT NOT NULL, host TEXT NOT NULL, label TEXT NOT NULL);"
        "CREATE TABLE records (id INTEGER PRIMARY KEY, workload_id INTEGER NOT NULL REFERENCES workloads(id),"
        "  target_id INTEGER NOT NULL REFERENCES targets(id), session_id INTEGER NOT NULL REFERENCES "
        "sessions(id),"
        "  trace_json TEXT NOT NULL, samples_json TEXT NOT NULL, median_s REAL NOT NULL,"
        "  error_code TEXT NOT NULL, error_message TEXT NOT NULL, build_s REAL NOT NULL,"
        "  run_s REAL NOT NULL, settings_json TEXT NOT NULL, timestamp TEXT NOT NULL);"
        "INSERT INTO workloads VALUES (1, 'mm', 'compute mm', 2e9);"
        "INSERT INTO targets VALUES (1, 'llvm', 'x86-64-v3', 'Test CPU', '', '19.1', '+avx2');"
        "INSERT INTO sessions VALUES (1, '2023-06-01T00:00:00.000Z', '{}', '0.0.1', 'old-host', 'old');"
        "INSERT INTO records VALUES (1, 1, 1, 1, '[]', '[0.002,0.001,0.003]', 0.002, 'ok', '', 1, 2, '{}',"
        "  '2023-06-01T00:00:01.000Z');"
        "INSERT INTO records VALUES (2, 1, 1, 1, '[1]', '[0.0005]', 0.0005, 'wrong_answer', 'bad', 1, 2, '{}',"
        "  '2023-06-01T00:00:02.000Z');"
        "PRAGMA user_version = 1;");
    CHECK_THROWS_WITH(TuningLog::open(path, TuningLog::Mode::ReadOnly),
                      Catch::Contains("schema version 1") && Catch::Contains("migrate"));
    {
      auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
      CHECK(log.check().empty());
      TargetInfo old_target{"llvm", "x86-64-v3", "Test CPU", "", "19.1", "+avx2"};
      auto best = log.best("mm", old_target);
      REQUIRE(best.has_value());
      CHECK(best->median_s == 0.002);
      CHECK(best->samples_s == std::vector<double>{0.002, 0.001, 0.003});
      log.append({make_record("mm2", 1e-3)});
    }
    auto reader = TuningLog::open(path, TuningLog::Mode::ReadOnly);  // now current: read-only is fine
    CHECK(reader.counts().records == 3);
    CHECK(reader.check().empty());
  }
}
