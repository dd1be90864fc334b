// `tessel tune`: the budget counts over the whole log, reruns resume, and a tuner killed mid-session
// loses no record and duplicates none when restarted.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "subprocess.h"

using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::export_records;
using tessel_test::tessel;

namespace {

// A tuning config beside `db` with a small search (a population of 24, one generation) and the
// given settings on top, section by section.
std::string config_for(const std::string& db, const nlohmann::json& settings) {
  nlohmann::json config = {{"search", {{"population", 24}, {"generations", 1}}}};
  for (const auto& [section, values] : settings.items())
    for (const auto& [key, value] : values.items()) config[section][key] = value;
  static int count = 0;
  const std::string path = db + ".config" + std::to_string(++count) + ".json";
  std::ofstream(path) << config.dump();
  return path;
}

std::vector<std::string> tune_args(const std::string& db, const std::string& trials,
                                   const nlohmann::json& settings = nlohmann::json::object()) {
  return {"tune", "--op",     "matmul", "--param",       "M=32", "--param",  "N=24",
          "--param", "K=16",  "--target", "llvm",        "--db",  db,        "--trials",
          trials,  "--min-time-ms", "2",  "--config",    config_for(db, settings)};
}

nlohmann::json saved_options(const nlohmann::json& record) {
  return nlohmann::json::parse(record["session"]["options_json"].get<std::string>());
}


// The records of trials (a retime measures a trial's schedule again and is no trial).
std::vector<nlohmann::json> trials_of(const std::vector<nlohmann::json>& records) {
  std::vector<nlohmann::json> trials;
  for (const nlohmann::json& r : records)
    if (r.value("purpose", "trial") == "trial") trials.push_back(r);
  return trials;
}

// The trials a running tuner has committed so far: 0 while it has not made its log yet (or is making
// it, when `db export` can fail to read it).
size_t trials_so_far(const std::string& db) {
  if (!std::filesystem::exists(db)) return 0;
  RunResult r = tessel({"db", "export", "--db", db});
  if (r.exit_code != 0) return 0;
  size_t trials = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && nlohmann::json::parse(line).value("purpose", "trial") == "trial") ++trials;
  return trials;
}

// Each record's schedule steps, which must be distinct among the trials of a (workload, target).
std::vector<std::string> step_keys(const std::vector<nlohmann::json>& records) {
  std::vector<std::string> keys;
  for (const nlohmann::json& r : records) {
    keys.push_back(nlohmann::json::parse(r["trace_json"].get<std::string>())["steps"].dump());
  }
  return keys;
}

pid_t spawn_tessel(const std::vector<std::string>& args, const std::string& log_file) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv = {const_cast<char*>(tessel_test::tessel_exe())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(tessel_test::tessel_exe(), argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST_CASE("tune: the trial budget counts over the log and reruns measure only the remainder", "[cli][tune]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  RunResult first = tessel(tune_args(db, "18", {{"search", {{"batch", 6}}}}));
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  CHECK_THAT(first.out, Catch::Contains("18 candidates measured this session"));
  CHECK_THAT(first.out, Catch::Contains("speedup"));
  std::vector<nlohmann::json> all = export_records(db);
  std::vector<nlohmann::json> records = trials_of(all);
  REQUIRE(records.size() == 18);
  // The leaders and the default were re-timed: each retime repeats a trial's schedule.
  REQUIRE(all.size() > 18);
  std::vector<std::string> trial_keys = step_keys(records);
  for (const nlohmann::json& r : all) {
    if (r.value("purpose", "trial") != "retime") continue;
    std::string key = step_keys({r}).front();
    CHECK(std::count(trial_keys.begin(), trial_keys.end(), key) == 1);
  }
  CHECK_THAT(first.out, Catch::Contains("retimes of the leaders"));
  auto objective_of = [](const nlohmann::json& record) {
    return saved_options(record)["costmodel"].value("objective", "");
  };
  CHECK(objective_of(records.front()) == "rank");  // the default, saved with the session
  auto input_of = [](const nlohmann::json& record) { return saved_options(record)["costmodel"].value("input", ""); };
  CHECK(input_of(records.front()) == "rows");  // the CPU's default, saved with the session
  auto spread_of = [](const nlohmann::json& record) { return saved_options(record)["leaders"].value("spread", false); };
  CHECK(spread_of(records.front()));  // one retime a round per schedule, by default
  // Under the yardstick a round's leaders are re-timed right after its trials; without it, none in
  // a schedule's own round: round 1's leaders are first re-timed after round 2's trials.
  auto trials_before_first_retime = [](const std::vector<nlohmann::json>& log) {
    size_t n = 0;
    for (const nlohmann::json& r : log) {
      if (r.value("purpose", "trial") == "retime") break;
      ++n;
    }
    return n;
  };
  CHECK(trials_before_first_retime(all) == 6);
  std::string unreferenced = dir.file("none.db");
  RunResult none_run =
      tessel(tune_args(unreferenced, "12", {{"search", {{"batch", 6}}}, {"leaders", {{"yardstick", false}}}}));
  INFO(none_run.err);
  REQUIRE(none_run.exit_code == 0);
  std::vector<nlohmann::json> none_log = export_records(unreferenced);
  CHECK(trials_before_first_retime(none_log) == 12);
  for (const nlohmann::json& r : none_log) CHECK_FALSE(r.contains("reference_s"));
  CHECK(saved_options(none_log.front())["leaders"].value("yardstick", true) == false);
  // The yardstick (on by default on the CPU): each retime batch times the default before, between
  // and after the leaders, D A D B D, and a leader's record keeps the lower neighbouring default
  // median as its reference.
  CHECK(saved_options(records.front())["leaders"].value("yardstick", false) == true);
  const std::string default_key = step_keys({records.front()}).front();  // the default is measured first
  std::vector<nlohmann::json> retimes;
  for (const nlohmann::json& r : all)
    if (r.value("purpose", "trial") == "retime") retimes.push_back(r);
  REQUIRE(retimes.size() >= 3);
  CHECK(step_keys({retimes.front()}).front() == default_key);
  CHECK(step_keys({retimes.back()}).front() == default_key);
  size_t referenced_retimes = 0;
  for (size_t k = 0; k < retimes.size(); ++k) {
    const bool ok = retimes[k]["error"] == "ok";
    if (step_keys({retimes[k]}).front() == default_key) {  // the default's own timing: itself
      CHECK(retimes[k].value("reference_s", 0.0) == (ok ? retimes[k]["median_s"].get<double>() : 0.0));
      continue;
    }
    REQUIRE(k > 0);
    REQUIRE(k + 1 < retimes.size());
    CHECK(step_keys({retimes[k - 1]}).front() == default_key);
    CHECK(step_keys({retimes[k + 1]}).front() == default_key);
    if (!ok) continue;
    ++referenced_retimes;
    // The lower neighbour that ran (a failed one has no median).
    auto ran = [&](size_t i) { return retimes[i]["error"] == "ok" ? retimes[i]["median_s"].get<double>() : 0.0; };
    const double before = ran(k - 1), after = ran(k + 1);
    CHECK(retimes[k].value("reference_s", 0.0) ==
          (before > 0 && after > 0 ? std::min(before, after) : std::max(before, after)));
  }
  CHECK(referenced_retimes > 0);
  // The last round settles: the fastest schedule, by the upper median of its timings scaled by
  // their references as the table ranks (a trial that was lucky once is re-timed and drops back),
  // has its three timings.
  auto upper_median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> references;
  for (const nlohmann::json& r : all)
    if (r.value("error", "") == "ok" && r.value("reference_s", 0.0) > 0) references.push_back(r["reference_s"]);
  const double level = upper_median(references);
  std::map<std::string, std::vector<double>> raw, referenced;  // a schedule with referenced timings counts those
  for (const nlohmann::json& r : all) {
    if (r.value("error", "") != "ok") continue;
    const double reference = r.value("reference_s", 0.0);
    const double median = r["median_s"].get<double>();
    raw[step_keys({r}).front()].push_back(median);
    if (reference > 0) referenced[step_keys({r}).front()].push_back(median * level / reference);
  }
  std::map<std::string, std::vector<double>> timings = raw;
  for (const auto& [key, scaled] : referenced) timings[key] = scaled;
  std::string fastest;
  double fastest_s = 0;
  for (const auto& [key, medians] : timings)
    if (fastest.empty() || upper_median(medians) < fastest_s) {
      fastest = key;
      fastest_s = upper_median(medians);
    }
  REQUIRE_FALSE(fastest.empty());
  CHECK(raw[fastest].size() >= 3);

  RunResult again = tessel(tune_args(db, "18"));
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("0 candidates measured this session"));
  CHECK(trials_of(export_records(db)).size() == 18);

  RunResult more =
      tessel(tune_args(db, "26", {{"search", {{"batch", 5}}}, {"costmodel", {{"objective", "packsum"}, {"input", "programs"}}}}));
  INFO(more.err);
  REQUIRE(more.exit_code == 0);
  CHECK_THAT(more.out, Catch::Contains("8 candidates measured this session"));
  records = trials_of(export_records(db));
  REQUIRE(records.size() == 26);
  CHECK(objective_of(records.back()) == "packsum");
  CHECK(input_of(records.back()) == "programs");
  std::vector<std::string> keys = step_keys(records);
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == keys.size());

  // A pairs model (relative scores against the round's reference programs) extends it too.
  RunResult pairs = tessel(tune_args(db, "32", {{"search", {{"batch", 6}}}, {"costmodel", {{"input", "pairs"}}}}));
  INFO(pairs.err);
  REQUIRE(pairs.exit_code == 0);
  CHECK_THAT(pairs.out, Catch::Contains("6 candidates measured this session"));
  records = trials_of(export_records(db));
  REQUIRE(records.size() == 32);
  CHECK(input_of(records.back()) == "pairs");
  keys = step_keys(records);
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == keys.size());

  // A log without retimes (as written before they existed): a rerun at its budget measures no trial
  // but re-times the leaders.
  std::string plain = dir.file("plain.db");
  RunResult none =
      tessel(tune_args(plain, "8", {{"search", {{"batch", 4}}}, {"leaders", {{"retime", 0}, {"spread", false}}}}));
  REQUIRE(none.exit_code == 0);
  CHECK(export_records(plain).size() == 8);
  CHECK_FALSE(spread_of(export_records(plain).front()));
  RunResult settle = tessel(tune_args(plain, "8"));
  INFO(settle.err);
  REQUIRE(settle.exit_code == 0);
  CHECK_THAT(settle.out, Catch::Contains("0 candidates measured this session"));
  CHECK_THAT(settle.err, Catch::Contains("re-timing the leaders"));
  std::vector<nlohmann::json> settled = export_records(plain);
  CHECK(trials_of(settled).size() == 8);
  CHECK(settled.size() >= 8 + 2 * 3);  // 3 leaders (the default may be one), 2 more timings each
}

TEST_CASE("tune: a tuner killed mid-session resumes with no record lost or duplicated", "[cli][tune]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  const std::vector<std::string> args = tune_args(db, "40", {{"search", {{"batch", 4}}}});
  pid_t pid = spawn_tessel(args, dir.file("first.txt"));
  // Kill it once some rounds are committed, at whatever point of a round it has reached. It waits for
  // the records, however long the machine takes (the test's timeout bounds it), not for a clock.
  size_t before = 0;
  while (before < 12) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int status = 0;
    REQUIRE(waitpid(pid, &status, WNOHANG) == 0);  // still running: 40 trials take many rounds
    before = trials_so_far(db);
  }
  REQUIRE(before >= 12);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  std::vector<nlohmann::json> survived = export_records(db);
  const size_t survived_trials = trials_of(survived).size();
  REQUIRE(survived_trials >= before);
  REQUIRE(survived_trials < 40);
  CHECK(survived_trials % 4 == 0);  // whole rounds only (the first: the default and 3 proposals)

  RunResult resumed = tessel(args);
  INFO(resumed.out << resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.out, Catch::Contains(std::to_string(40 - survived_trials) + " candidates measured this session"));
  CHECK_THAT(resumed.err, Catch::Contains("learning from " + std::to_string(survived_trials) + " records"));
  std::vector<nlohmann::json> all = export_records(db);
  std::vector<nlohmann::json> records = trials_of(all);
  REQUIRE(records.size() == 40);
  // Every record from before the kill is still there, unchanged.
  for (const nlohmann::json& old : survived) {
    bool found = false;
    for (const nlohmann::json& r : all) found = found || r == old;
    CHECK(found);
  }
  std::vector<std::string> keys = step_keys(records);
  CHECK(std::set<std::string>(keys.begin(), keys.end()).size() == keys.size());
}

TEST_CASE("tune rejects bad input before measuring anything", "[cli][tune]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  const std::vector<std::string> matmul = {"tune", "--op", "matmul", "--param", "M=4", "--param", "N=4",
                                           "--param", "K=4", "--db", db, "--trials", "4"};
  // The command line with a config file holding `config` (raw text, so that bad JSON can be given).
  int configs = 0;
  auto with_config = [&](const std::string& config, std::vector<std::string> extra = {}) {
    const std::string path = dir.file("config" + std::to_string(++configs) + ".json");
    std::ofstream(path) << config;
    std::vector<std::string> args = matmul;
    args.insert(args.end(), {"--config", path});
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  auto plus = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = matmul;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::string model = dir.file("m.json");
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : {
           Case{{"tune", "--op", "matmul", "--param", "M=4", "--param", "N=4", "--param", "K=4", "--trials", "4"}, "--db"},
           Case{{"tune", "--op", "matmul", "--param", "M=4", "--param", "N=4", "--param", "K=4", "--db", db}, "--trials"},
           Case{{"tune", "--db", db, "--trials", "4"}, "nothing to tune"},
           Case{{"tune", "--suite", tessel_test::source_file("suites/operators.json"), "--db", db, "--trials", "4"},
                "--case NAME"},
           Case{{"tune", "--suite", tessel_test::source_file("suites/operators.json"), "--case", "nope", "--db", db,
                 "--trials", "4"},
                "nope"},
           Case{plus({"--target", "tpu"}), "unknown target 'tpu' (llvm or cuda)"},
           Case{with_config(R"({"search": {"strategy": "annealing"}})"), "search.strategy: 'annealing' is not evolution or random"},
           Case{with_config(R"({"costmodel": {"objective": "listwise"}})"), "costmodel.objective: 'listwise' is not rank or packsum"},
           Case{with_config(R"({"costmodel": {"objective": "packsum"}})", {"--costmodel", model}), "keeps the objective"},
           Case{with_config(R"({"costmodel": {"input": "programs"}})", {"--costmodel", model}), "keeps the input"},
           Case{with_config(R"({"costmodel": {"input": "stores"}})"), "costmodel.input: 'stores' is not rows, programs or pairs"},
           Case{with_config(R"({"costmodel": {"input": "pairs", "objective": "packsum"}})"),
                "costmodel.objective packsum cannot train costmodel.input pairs"},
           Case{with_config(R"({"costmodel": {"mlp_weight": 1}})"),
                "costmodel.mlp_weight blends a neural ranker into a model of program summaries; the 'rows' input has none"},
           Case{with_config(R"({"costmodel": {"mlp_weight": 0}})", {"--costmodel", model}), "keeps the mlp_weight"},
           Case{with_config(R"({"costmodel": {"input": "programs", "network": "transformer"}})"),
                "costmodel.network: 'transformer' is not summary or deepsets"},
           Case{with_config(R"({"costmodel": {"network": "deepsets"}})"),
                "costmodel.network deepsets names the neural ranker of a programs model with a weight above 0"},
           Case{with_config(R"({"costmodel": {"network": "deepsets"}})", {"--costmodel", model}), "keeps the network"},
           Case{with_config(R"({"costmodel": {"mlp_weight": -3}})"), "costmodel.mlp_weight: must be a number from 0"},
           Case{with_config(R"({"costmodel": {"mlp_weight": 1e400}})"), "not valid JSON"},
           Case{with_config(R"({"costmodel": {"kind": "random"}})", {"--save-costmodel", model}), "nothing to save"},
           Case{with_config(R"({"search": {"population": "many"}})"), "search.population: must be an integer"},
           Case{with_config(R"({"leaders": {"retime": -1}})"), "leaders.retime: must be an integer from 0"},
           Case{with_config(R"({"leader": {"retime": 1}})"), "leader: unknown setting"},
           Case{with_config(R"({"search": {"populaton": 10}})"), "search.populaton: unknown setting"},
           Case{with_config("[1, 2]"), "must be a JSON object"},
           Case{with_config("{"), "not valid JSON"},
           Case{plus({"--config", dir.file("missing_config.json")}), "missing_config.json"},
           Case{plus({"--costmodel", dir.file("missing.json")}), "missing.json"},
           Case{plus({"--no-flush-l2"}), "--no-flush-l2 is for --target cuda"},
           Case{plus({"--target", "cuda", "--flush-cache"}), "--flush-cache is for --target llvm"},
       }) {
    RunResult r = tessel(c.args);
    INFO(r.command << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error:") && Catch::Contains(c.says));
  }
  CHECK_FALSE(std::filesystem::exists(db));  // rejected before the log was even opened
}

TEST_CASE("a log keeps timings of one kind: with a cache flush or without, never both", "[cli][tune]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  const std::vector<std::string> workload = {"--op", "matmul", "--param", "M=32", "--param", "N=24", "--param", "K=16"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), workload.begin(), workload.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  // The default schedule timed with the caches evicted before every sample.
  RunResult flushed = tessel(with({"measure"}, {"--schedule", "default", "--flush-cache", "--min-time-ms", "2", "--db", db}));
  INFO(flushed.err);
  REQUIRE(flushed.exit_code == 0);
  const std::vector<nlohmann::json> before = export_records(db);
  REQUIRE(before.size() == 1);
  const std::string info_before = tessel({"db", "info", "--db", db}).out;

  // Every command that would add timings taken without a flush refuses, naming the record, and
  // leaves the log as it was (no record, no session).
  for (const std::vector<std::string>& args : {
           tune_args(db, "4"),
           with({"run"}, {"--schedule", "default", "--min-time", "0.002", "--db", db, "--record"}),
           with({"measure"}, {"--schedule", "default", "--min-time-ms", "2", "--db", db}),
       }) {
    RunResult r = tessel(args);
    INFO(r.command << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("error: the tuning log holds timings of") && Catch::Contains("taken with a cache flush") &&
                          Catch::Contains("record 1") && Catch::Contains("another --db"));
  }
  CHECK(export_records(db) == before);
  CHECK(tessel({"db", "info", "--db", db}).out == info_before);

  // The same setting is welcome, from `measure` and from `tune --flush-cache`, whose every record
  // says it was timed so.
  RunResult again = tessel(with({"measure"}, {"--schedule", "default", "--flush-cache", "--min-time-ms", "2", "--db", db}));
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(export_records(db).size() == 2);
  std::vector<std::string> tune_flushed = tune_args(db, "4");
  tune_flushed.push_back("--flush-cache");
  RunResult tuned = tessel(tune_flushed);
  INFO(tuned.err);
  REQUIRE(tuned.exit_code == 0);
  CHECK_THAT(tuned.err, Catch::Contains("each candidate's inputs evicted from the caches before every sample"));
  const std::vector<nlohmann::json> records = export_records(db);
  CHECK(records.size() > 2);
  for (const nlohmann::json& r : records)
    CHECK(nlohmann::json::parse(r["settings_json"].get<std::string>())["flush"] == true);
}

TEST_CASE("tune --worker: two processes share a suite's budget through one log, exactly, each schedule once",
          "[cli][tune][worker]") {
  TempDir dir;
  const std::string db = dir.file("log.db");
  const std::vector<std::string> worker = {
      "tune",     "--suite", tessel_test::source_file("experiments/workers/suite.json"),
      "--case",   "matmul_61x197x128", "--case", "softmax_197x1000", "--case", "rowsum_1000x61",
      "--target", "llvm",    "--trials", "6",    "--db", db,  "--worker", "--builders", "1", "--threads", "1",
      "--min-time-ms", "2",  "-v"};
  const pid_t a = tessel_test::start_tessel(worker, dir.file("a.txt"));
  const pid_t b = tessel_test::start_tessel(worker, dir.file("b.txt"));
  CHECK(tessel_test::wait_for(a) == 0);
  CHECK(tessel_test::wait_for(b) == 0);
  std::map<std::string, std::set<std::string>> schedules;  // per workload
  size_t trials = 0;
  for (const nlohmann::json& r : trials_of(export_records(db))) {
    ++trials;
    CHECK(schedules[r["workload"]["key"].get<std::string>()].insert(r["trace_json"].get<std::string>()).second);
  }
  CHECK(trials == 18);  // 6 for each of the 3 cases
  CHECK(schedules.size() == 3);
  std::ifstream log_a(dir.file("a.txt"));
  const std::string said((std::istreambuf_iterator<char>(log_a)), std::istreambuf_iterator<char>());
  const size_t named = said.find("joining tuning session 'tune-");
  REQUIRE(named != std::string::npos);
  const std::string session = said.substr(named + 24, said.find('\'', named + 24) - (named + 24));

  // Another budget is another session by default; under the same --session name it is refused.
  std::vector<std::string> other = worker;
  *std::find(other.begin(), other.end(), "6") = "7";
  other.insert(other.end(), {"--session", session});
  RunResult refused = tessel(other);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("budget of 6") != std::string::npos);
}

TEST_CASE("tune --worker, --session and --devices refuse what they cannot do", "[cli][tune][worker]") {
  TempDir dir;
  const std::vector<std::string> matmul = {"tune", "--op", "matmul", "--param", "M=4", "--param", "N=4",
                                           "--param", "K=4", "--db", dir.file("log.db"), "--trials", "2"};
  auto plus = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = matmul;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : {Case{plus({"--session", "s"}), "--session names the shared session of --worker"},
                        Case{plus({"--devices", "0"}), "--devices is for --target cuda"},
                        Case{plus({"--target", "cuda", "--devices", "0,x"}), "'x' is not a GPU index"},
                        Case{plus({"--target", "cuda", "--devices", "1,1"}), "GPU 1 is named twice"},
                        Case{plus({"--worker", "--lease-s", "0.5"}), "--lease-s"}}) {
    RunResult r = tessel(c.args);
    INFO(r.command << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.says) != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("log.db")));  // refused before the log was made
}
