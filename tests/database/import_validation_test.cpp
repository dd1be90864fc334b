// Imported records are untrusted: every JSON-lines field is checked for type and range, every record
// for a believable measurement and (through the CLI's validator) a workload and trace that mean
// something; an import stores all of a file or nothing. `db check` finds the same problems in a log,
// replay never picks a record that has them, and the trial budget holds across writers.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "database/tuning_log.h"
#include "tests/database/real_records.h"
#include "tests/database/test_support.h"
#include "tools/db_command.h"

using namespace tessel;
using namespace tessel::testing;
using nlohmann::json;

namespace {


// A split of the matmul's first loop: a trace that replays on matmul_workload().
std::string split_trace(int factor) {
  return R"({"version":1,"steps":[{"kind":"split","stage":"C","loop":"i","factors":[)" + std::to_string(factor) +
         "]}]}";
}

// Three good lines of a real export (distinct schedules of one matmul).
std::vector<std::string> good_lines() {
  ScratchDir dir;
  auto log = TuningLog::open(dir.file("source.db"), TuningLog::Mode::ReadWrite);
  const WorkloadInfo w = matmul_workload();
  std::vector<MeasureRecord> records;
  for (int factor : {2, 4, 8}) {
    MeasureRecord r = real_record(w, "", 1e-3 * factor);
    r.trace_json = split_trace(factor);
    records.push_back(r);
  }
  log.append(records);
  std::istringstream text(export_to_string(log));
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  REQUIRE(lines.size() == 3);
  return lines;
}

std::string with(const std::string& line, const json::json_pointer& field, const json& value) {
  json j = json::parse(line);
  j[field] = value;
  return j.dump();
}

std::string without(const std::string& line, const json::json_pointer& field) {
  json j = json::parse(line);
  j[field.parent_pointer()].erase(field.back());
  return j.dump();
}

// One hostile line and the start of the problem import must report for it (after "FILE: line 2: ").
struct Hostile {
  const char* what;
  std::function<std::string(const std::string&)> make;
  const char* problem;
};

std::vector<Hostile> hostile_lines() {
  using P = json::json_pointer;
  auto set = [](const char* field, json value) {
    return [field, value](const std::string& l) { return with(l, P(field), value); };
  };
  auto drop = [](const char* field) { return [field](const std::string& l) { return without(l, P(field)); }; };
  auto replace = [](const std::string& from, const std::string& to) {
    return [from, to](const std::string& l) {
      std::string s = l;
      const size_t at = s.find(from);
      REQUIRE(at != std::string::npos);
      return s.replace(at, from.size(), to);
    };
  };
  // A field set to a marker, whose text then becomes `text`: for what JSON cannot hold.
  auto raw = [](const char* field, const std::string& text) {
    return [field, text](const std::string& l) {
      std::string s = with(l, P(field), "@marker@");
      return s.replace(s.find("\"@marker@\""), 10, text);
    };
  };
  std::string text_1e400 = split_trace(2);
  text_1e400.replace(text_1e400.find("[2]"), 3, "[1e400]");
  return {
      {"a median beyond a double's range", raw("/median_s", "1e400"), "not valid JSON"},
      {"a build time beyond a double's range", raw("/build_s", "-1e400"), "not valid JSON"},
      {"a negative median", set("/median_s", -1e-3), "median_s: must be a number from 0"},
      {"a zero median in an ok record", set("/median_s", 0), "median_s: must be above 0 in an ok record"},
      {"a median given as text", set("/median_s", "0.001"), "median_s: must be a number"},
      {"a negative sample", set("/samples_s", json::array({1e-3, -1e-3})), "samples_s: sample 1 must be"},
      {"a sample that underflows to 0", replace(R"("samples_s":[)", R"("samples_s":[1e-400,)"),
       "samples_s: sample 0 must be"},
      {"an ok record without samples", set("/samples_s", json::array()), "samples_s: an ok record needs"},
      {"samples that are not an array", set("/samples_s", "fast"), "samples_s: must be an array of numbers"},
      {"a negative build time", set("/build_s", -1), "build_s: must be a number from 0"},
      {"a negative run time", set("/run_s", -2.5), "run_s: must be a number from 0"},
      {"a negative yardstick", set("/reference_s", -1), "reference_s: must be a number from 0"},
      {"negative flops", set("/workload/flops", -5), "workload.flops: must be a number from 0"},
      {"an unknown error code", set("/error", "exploded"), "error: unknown error code 'exploded'"},
      {"an unknown purpose", set("/purpose", "rerun"), "purpose: must be"},
      {"an unknown format version", set("/v", 9), "v: unsupported format version 9"},
      {"a fractional format version", set("/v", 1.5), "v: unsupported format version"},
      {"no timestamp", drop("/timestamp"), "timestamp: missing"},
      {"no session", drop("/session"), "session: missing"},
      {"a workload that is not an object", set("/workload", 5), "workload: must be a JSON object"},
      {"a target field that is not a string", set("/target/arch", 3), "target.arch: must be a string"},
      {"an error message that is not a string", set("/error_message", json::array()), "error_message: must be a string"},
      {"a trace that is not JSON", set("/trace_json", "split i by 4"), "trace_json:"},
      {"a trace with a number beyond a double", set("/trace_json", text_1e400), "trace_json:"},
      {"a trace that does not apply", set("/trace_json", R"({"version":1,"steps":[{"kind":"split","stage":"C","loop":"zz","factors":[4]}]})"),
       "trace_json: invalid schedule: step 0"},
      {"a trace of a newer version", set("/trace_json", R"({"version":7,"steps":[]})"), "trace_json:"},
      {"an empty trace", set("/trace_json", ""), "trace_json: is empty"},
      {"a key that is not the workload's", set("/workload/key", "0123456789abcdef"), "workload.key: '0123456789abcdef'"},
      {"a workload text that does not parse", set("/workload/text", "C[i:8] = D[i] +"), "workload.text:"},
      {"an empty workload key", set("/workload/key", ""), "workload.key: is empty"},
      {"a line that is not an object", [](const std::string&) { return std::string("[1,2,3]"); },
       "must be a JSON object"},
      {"a line cut short", [](const std::string& l) { return l.substr(0, l.size() / 2); }, "not valid JSON"},
      {"a line nested very deep", [](const std::string&) { return std::string(100000, '['); }, "not valid JSON"},
      {"a string that is not UTF-8", raw("/error_message", "\"x\xff\""), "not valid JSON"},
  };
}

}  // namespace

TEST_CASE("import refuses every hostile field with its line and field, and stores nothing", "[database][import]") {
  const std::vector<std::string> lines = good_lines();
  ScratchDir dir;
  const std::string path = dir.file("log.db");
  {  // the log the user gives: one good record already
    auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
    std::istringstream first(lines[0] + "\n");
    REQUIRE(log.import_jsonl(first, "first.jsonl", record_validator()).imported == 1);
  }
  const std::string before = read_file(path);
  int tested = 0;
  for (const Hostile& h : hostile_lines()) {
    INFO(h.what);
    const std::string file = dir.file("hostile.jsonl");
    write_file(file, lines[1] + "\n" + h.make(lines[2]) + "\n" + lines[0] + "\n");
    {
      auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
      ImportReport report = log.import_jsonl_files({file}, record_validator());
      CHECK(report.imported == 0);
      REQUIRE(report.errors.size() == 1);
      CHECK_THAT(report.errors[0], Catch::StartsWith(file + ": line 2: " + h.problem));
      CHECK(log.counts().records == 1);
    }
    DbResult r = db({"import", "--db", path, file});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error: " + file + ": line 2: " + h.problem));
    CHECK_THAT(r.err, Catch::Contains("nothing imported") && Catch::Contains(path));
    CHECK(r.out.empty());
    CHECK(read_file(path) == before);
    ++tested;
  }
  CHECK(tested >= 30);
  CHECK(TuningLog::check_file(path, record_validator()).empty());
}

TEST_CASE("one bad line among 22 imports nothing, and the fixed file imports once", "[database][import]") {
  ScratchDir dir;
  auto source = TuningLog::open(dir.file("source.db"), TuningLog::Mode::ReadWrite);
  const WorkloadInfo w = matmul_workload();
  std::vector<MeasureRecord> records;
  for (int i = 0; i < 22; ++i) records.push_back(real_record(w, "s" + std::to_string(i), 1e-3 + 1e-5 * i));
  source.append(records);
  std::string text = export_to_string(source);
  std::string bad = text;
  const size_t line_12 = [&] {
    size_t at = 0;
    for (int i = 0; i < 11; ++i) at = bad.find('\n', at) + 1;
    return at;
  }();
  bad.replace(bad.find(R"("median_s":)", line_12), 11, R"("median_s":-)");
  const std::string bad_file = dir.file("bad.jsonl"), good_file = dir.file("good.jsonl");
  write_file(bad_file, bad);
  write_file(good_file, text);
  const std::string path = dir.file("log.db");
  TuningLog::open(path, TuningLog::Mode::ReadWrite).append({real_record(w, "mine", 5e-3)});
  const std::string before = read_file(path);

  DbResult refused = db({"import", "--db", path, good_file, bad_file});  // all files, or none
  CHECK(refused.code == 2);
  CHECK_THAT(refused.err, Catch::StartsWith("error: " + bad_file + ": line 12: median_s:"));
  CHECK(read_file(path) == before);

  DbResult ok = db({"import", "--db", path, good_file});
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, Catch::Contains("imported 22, duplicates skipped 0"));
  DbResult again = db({"import", "--db", path, good_file});
  CHECK(again.code == 0);
  CHECK_THAT(again.out, Catch::Contains("imported 0, duplicates skipped 22"));
  CHECK(TuningLog::open(path, TuningLog::Mode::ReadOnly).counts().records == 23);
}

TEST_CASE("an import killed at any moment leaves the log as it was or holds the whole file", "[database][import][crash]") {
  ScratchDir dir;
  const WorkloadInfo w = matmul_workload();
  std::string text;
  {
    auto source = TuningLog::open(dir.file("source.db"), TuningLog::Mode::ReadWrite);
    std::vector<MeasureRecord> records;
    for (int i = 0; i < 2000; ++i) records.push_back(real_record(w, "s" + std::to_string(i), 1e-3 + 1e-7 * i));
    source.append(records);
    text = export_to_string(source);
  }
  // How long an import takes here, to spread the kills over it.
  const auto t0 = std::chrono::steady_clock::now();
  {
    auto timed = TuningLog::open(dir.file("timed.db"), TuningLog::Mode::ReadWrite);
    std::istringstream in(text);
    REQUIRE(timed.import_jsonl(in, "a.jsonl").imported == 2000);
  }
  const auto full = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);

  const std::string path = dir.file("log.db");
  TuningLog::open(path, TuningLog::Mode::ReadWrite).append({real_record(w, "mine", 5e-3)});
  std::mt19937 rng(7);
  for (int round = 0; round < 6; ++round) {
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      try {
        auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
        std::istringstream in(text);
        log.import_jsonl(in, "a.jsonl");
      } catch (...) {
        _exit(1);
      }
      _exit(0);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % (full.count() + 1)));
    kill(child, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    auto log = TuningLog::open(path, TuningLog::Mode::ReadOnly);
    const int64_t records = log.counts().records;
    INFO("round " << round);
    CHECK((records == 1 || records == 2001));
    CHECK(log.check().empty());
    if (records == 2001) break;  // later rounds would only find duplicates
  }
}

TEST_CASE("db check finds in a log what import refuses, and replay never picks such a record", "[database][import]") {
  ScratchDir dir;
  const std::string path = dir.file("poisoned.db");
  const WorkloadInfo w = matmul_workload();
  // What a log written before these checks (or by hand) may hold; append takes it as measured.
  MeasureRecord zero = real_record(w, "zero", 0);
  zero.samples_s = {1e-3};                                 // an ok record timed at 0
  MeasureRecord stranger = real_record(w, "stranger", 1e-9);  // the fastest, but its trace does not apply
  stranger.trace_json = R"({"version":1,"steps":[{"kind":"split","stage":"C","loop":"zz","factors":[4]}]})";
  MeasureRecord negative = real_record(w, "negative", 2e-9);
  negative.samples_s = {-1.0, 2e-9, 3e-9};
  MeasureRecord honest = real_record(w, "honest", 1e-3);
  MeasureRecord slower = real_record(w, "slower", 2e-3);
  {
    auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
    log.append({slower, zero, stranger, negative, honest});
  }
  const std::string before = read_file(path);

  DbResult check = db({"check", "--db", path});
  CHECK(check.code == 1);
  CHECK_THAT(check.err, Catch::Contains("record 2: median_s: must be above 0 in an ok record"));
  CHECK_THAT(check.err, Catch::Contains("record 3: trace_json: invalid schedule: step 0"));
  CHECK_THAT(check.err, Catch::Contains("record 4: samples_s: sample 0 must be"));
  CHECK_THAT(check.err, !Catch::Contains("record 1:") && !Catch::Contains("record 5:"));
  auto problems = TuningLog::check_file(path);  // without the validator: what database/ sees alone
  CHECK(problems.size() == 2);

  auto log = TuningLog::open(path, TuningLog::Mode::ReadOnly);
  CHECK(log.best(w.key, cpu_target())->trace_json == stranger.trace_json);  // no validator: nothing to tell
  auto best = log.best(w.key, cpu_target(), record_validator());
  REQUIRE(best.has_value());
  CHECK(best->trace_json == honest.trace_json);
  DbResult listed = db({"best", "--db", path, "--json"});
  REQUIRE(listed.code == 0);
  CHECK(json::parse(listed.out)[0]["trace_json"] == honest.trace_json);

  // Merging the poisoned log spreads nothing: every bad record named, none of the good ones taken.
  const std::string clean = dir.file("clean.db");
  TuningLog::open(clean, TuningLog::Mode::ReadWrite).append({real_record(w, "mine", 5e-3)});
  const std::string clean_before = read_file(clean);
  DbResult merged = db({"merge", "--db", clean, path});
  CHECK(merged.code == 2);
  CHECK_THAT(merged.err, Catch::StartsWith("error: " + path + ": record 2: median_s:"));
  CHECK_THAT(merged.err, Catch::Contains(path + ": record 3: trace_json:") &&
                             Catch::Contains(path + ": record 4: samples_s:") && Catch::Contains("nothing imported"));
  CHECK(read_file(clean) == clean_before);
  CHECK(read_file(path) == before);  // reading it changed nothing
}

TEST_CASE("a record whose key is not its workload's is refused and reported", "[database][import]") {
  ScratchDir dir;
  const std::string path = dir.file("log.db");
  MeasureRecord lying = real_record(matmul_workload(), "a", 1e-3);
  lying.workload.key = matmul_workload(16, 16, 16).key;  // another workload's key, this one's text
  TuningLog::open(path, TuningLog::Mode::ReadWrite).append({lying});
  DbResult check = db({"check", "--db", path});
  CHECK(check.code == 1);
  CHECK_THAT(check.err, Catch::Contains("record 1: workload.key: '" + lying.workload.key + "' is not the key"));
  DbResult best = db({"best", "--db", path, "--json"});
  CHECK(best.code == 0);
  CHECK(json::parse(best.out).empty());
}

TEST_CASE("the trial budget holds across handles and processes on one log", "[database][budget]") {
  ScratchDir dir;
  const std::string path = dir.file("log.db");
  auto trial = [](int i) { return make_record("mm", 1e-3 * (i + 1)); };
  auto a = TuningLog::open(path, TuningLog::Mode::ReadWrite);
  auto b = TuningLog::open(path, TuningLog::Mode::ReadWrite);
  CHECK(a.trial_count("mm", cpu_target()) == 0);

  std::vector<int64_t> first = a.append_within_budget({trial(0), trial(1), trial(2), trial(3), trial(4)}, 8);
  CHECK(std::count(first.begin(), first.end(), 0) == 0);
  MeasureRecord retime = trial(0);
  retime.purpose = RecordPurpose::Retime;
  MeasureRecord other_target = trial(9);
  other_target.target = gpu_target();
  std::vector<int64_t> second =
      b.append_within_budget({trial(5), trial(6), retime, trial(7), trial(8), trial(10), other_target}, 8);
  REQUIRE(second.size() == 7);
  CHECK(second[0] != 0);
  CHECK(second[1] != 0);
  CHECK(second[2] != 0);  // a retime is always stored
  CHECK(second[3] != 0);  // the 8th trial
  CHECK(second[4] == 0);
  CHECK(second[5] == 0);
  CHECK(second[6] != 0);  // another target has a budget of its own
  CHECK(a.trial_count("mm", cpu_target()) == 8);
  CHECK(a.trial_count("mm", gpu_target()) == 1);
  CHECK(a.trial_count("absent", cpu_target()) == 0);
  CHECK(a.append_within_budget({trial(11)}, 8) == std::vector<int64_t>{0});
  CHECK(a.append_within_budget({trial(11)}, 9).front() != 0);  // a larger budget extends
  CHECK_THROWS_AS(a.append_within_budget({trial(12)}, -1), DatabaseError);
  CHECK(a.counts().records == 11);

  // Four processes each trying to add 6 trials of a new pair, one at a time, under a budget of 10.
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      int code = 0;
      try {
        auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
        for (int i = 0; i < 6; ++i) log.append_within_budget({make_record("conv", 1e-3 * (p * 10 + i + 1))}, 10);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        code = 1;
      }
      _exit(code);
    }
    children.push_back(child);
  }
  for (pid_t child : children) {
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(a.trial_count("conv", cpu_target()) == 10);
  CHECK(a.check().empty());
}
