// The tuning loop (search/tuner.h) on a stand-in machine whose timings are a function of each
// schedule's lowered program: the budget and resume, the default first, retimes and the yardstick,
// the ranking rule shared with replay, the time budget, progress callbacks, and the real cost model
// guiding the search; GPU schedules for the GPU the session measures on.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "costmodel/features.h"
#include "schedule/ops/op_library.h"
#include "search/default_schedule.h"
#include "search/gpu_schedule.h"
#include "search/tuner.h"
#include "tests/search/stand_in_machine.h"

using namespace tessel;
using namespace tessel_test;

namespace {

TuneTask matmul_task(int m, int n, int k) {
  return TuneTask{
      "matmul", build_op("matmul", {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}}), 1};
}

TuneOptions small_options(int64_t trials, int batch, CostModelKind model = CostModelKind::Random) {
  TuneOptions o;
  o.trials = trials;
  o.batch = batch;
  o.seed = 7;
  o.costmodel.kind = model;
  o.search.population = 24;
  o.search.generations = 1;
  o.cpu = CpuTargetSpec{8, 2};
  return o;
}

std::vector<MeasureRecord> trials_of(const std::vector<MeasureRecord>& records) {
  std::vector<MeasureRecord> out;
  for (const MeasureRecord& r : records)
    if (r.purpose == RecordPurpose::Trial) out.push_back(r);
  return out;
}

std::string steps_of(const MeasureRecord& r) { return trace_steps_key(trace_from_json(r.trace_json, "record")); }

}  // namespace

TEST_CASE("tuner: the budget counts over the log, the default comes first, a rerun measures the remainder",
          "[search][tuner]") {
  TempLog scratch;
  TuningLog log = scratch.open();
  const std::vector<TuneTask> tasks = {matmul_task(61, 13, 7)};
  StandInMachine machine;
  std::vector<TaskStatus> first = tune(tasks, log, small_options(20, 6), machine);
  REQUIRE(first.size() == 1);
  CHECK(first[0].trials == 20);
  CHECK(first[0].trials_at_start == 0);
  CHECK(first[0].done);
  const TargetInfo target = machine.target();
  std::vector<MeasureRecord> trials = trials_of(log.records(tasks[0].dag.workload_key(), target));
  REQUIRE(trials.size() == 20);
  CHECK(steps_of(trials[0]) == trace_steps_key(default_schedule(tasks[0].dag, small_options(1, 1).cpu)));
  std::set<std::string> distinct;
  for (const MeasureRecord& r : trials) distinct.insert(steps_of(r));
  CHECK(distinct.size() == trials.size());  // never a schedule twice

  // The same budget again: nothing to measure. A larger one: only the difference, none repeated.
  StandInMachine again_machine;
  std::vector<TaskStatus> again = tune(tasks, log, small_options(20, 6), again_machine);
  CHECK(again[0].trials == 20);
  CHECK(again[0].trials_at_start == 20);
  StandInMachine more_machine;
  std::vector<TaskStatus> more = tune(tasks, log, small_options(31, 6), more_machine);
  CHECK(more[0].trials == 31);
  CHECK(more[0].trials_at_start == 20);
  trials = trials_of(log.records(tasks[0].dag.workload_key(), target));
  REQUIRE(trials.size() == 31);
  distinct.clear();
  for (const MeasureRecord& r : trials) distinct.insert(steps_of(r));
  CHECK(distinct.size() == trials.size());
}

TEST_CASE("tuner: best and default follow the ranking rule replay uses, and retimes are not trials", "[search][tuner]") {
  TempLog scratch;
  TuningLog log = scratch.open();
  const std::vector<TuneTask> tasks = {matmul_task(33, 17, 9)};
  StandInMachine machine;
  TuneOptions options = small_options(24, 8);
  options.leaders.yardstick = true;
  std::vector<TaskStatus> result = tune(tasks, log, options, machine);
  const std::string key = tasks[0].dag.workload_key();
  const std::vector<MeasureRecord> all = log.records(key, machine.target());
  const std::vector<MeasureRecord> trials = trials_of(all);
  REQUIRE(trials.size() == 24);
  REQUIRE(all.size() > trials.size());  // the leaders were re-timed
  CHECK(result[0].retimes == static_cast<int64_t>(all.size() - trials.size()));
  // Every retime repeats a trial's schedule, as stored.
  std::set<std::string> tried;
  for (const MeasureRecord& r : trials) tried.insert(r.trace_json);
  for (const MeasureRecord& r : all)
    if (r.purpose == RecordPurpose::Retime) CHECK(tried.count(r.trace_json) == 1);
  // The yardstick: the default is timed around every re-timed leader (D A D B D ...).
  const std::string default_json = trials.front().trace_json;
  std::vector<MeasureRecord> retimes;
  for (const MeasureRecord& r : all)
    if (r.purpose == RecordPurpose::Retime) retimes.push_back(r);
  CHECK(retimes.front().trace_json == default_json);
  CHECK(retimes.back().trace_json == default_json);
  for (size_t k = 1; k + 1 < retimes.size(); ++k)
    if (retimes[k].trace_json != default_json) {
      CHECK(retimes[k - 1].trace_json == default_json);
      CHECK(retimes[k + 1].trace_json == default_json);
      CHECK(retimes[k].reference_s == Approx(trials.front().median_s));  // the stand-in's default never varies
    }
  // The session's best is the schedule replay deploys, at the same estimate.
  std::optional<MeasureRecord> best = log.best(key, machine.target());
  REQUIRE(best.has_value());
  REQUIRE(result[0].best_s.has_value());
  CHECK(result[0].best_trace_json == best->trace_json);
  CHECK(*result[0].best_s == Approx(best->median_s));
  REQUIRE(result[0].default_s.has_value());
  CHECK(*result[0].default_s == Approx(trials.front().median_s));
  CHECK(*result[0].best_s <= *result[0].default_s);
}

TEST_CASE("tuner: tasks share the budget, each gets a first round, progress is reported per round", "[search][tuner]") {
  TempLog scratch;
  TuningLog log = scratch.open();
  const std::vector<TuneTask> tasks = {matmul_task(61, 13, 7), matmul_task(7, 61, 13)};
  StandInMachine machine;
  std::vector<size_t> rounds;
  std::vector<std::string> notes;
  size_t builds = 0;
  TuneCallbacks callbacks;
  callbacks.on_round = [&](const std::vector<TaskStatus>& statuses, size_t current) {
    REQUIRE(statuses.size() == 2);
    rounds.push_back(current);
  };
  std::set<size_t> built_tasks;
  callbacks.on_build = [&](size_t task, size_t, size_t) {
    ++builds;
    built_tasks.insert(task);
  };
  callbacks.on_note = [&](const std::string& text) { notes.push_back(text); };
  std::vector<TaskStatus> result = tune(tasks, log, small_options(12, 4), machine, callbacks);
  CHECK(result[0].trials == 12);
  CHECK(result[1].trials == 12);
  REQUIRE(rounds.size() == 6);  // 3 rounds of 4 trials each
  CHECK(rounds[0] == 0);        // the warm-up: one round each, in order
  CHECK(rounds[1] == 1);
  CHECK(machine.measurers == 2);  // one measurer per task, made once
  // A build progress report for each trial candidate and none for re-timing leaders (the measurer is
  // shared with the re-timing, and a progress callback left in it from a round once outlived the
  // round's frame), each naming a task that exists.
  CHECK(builds == 24);
  CHECK(built_tasks == std::set<size_t>{0, 1});
  CHECK(result[0].retimes + result[1].retimes > 0);
  // The same workload twice is refused before anything runs.
  StandInMachine unused;
  CHECK_THROWS_AS(tune({tasks[0], tasks[0]}, log, small_options(12, 4), unused), InputError);
  CHECK(unused.measured == 0);
}

TEST_CASE("tuner: a spent time budget ends the session before its next round", "[search][tuner]") {
  TempLog scratch;
  TuningLog log = scratch.open();
  StandInMachine machine;
  TuneOptions options = small_options(12, 4);
  options.time_budget_s = 1e-9;  // spent before the first round
  std::vector<std::string> notes;
  TuneCallbacks callbacks;
  callbacks.on_note = [&](const std::string& text) { notes.push_back(text); };
  std::vector<TaskStatus> result = tune({matmul_task(9, 9, 9)}, log, options, machine, callbacks);
  CHECK(result[0].trials == 0);
  CHECK(machine.measured == 0);
  CHECK(std::any_of(notes.begin(), notes.end(),
                    [](const std::string& n) { return n.find("time budget") != std::string::npos; }));
}

TEST_CASE("tuner: bad options are refused before the log or the machine is touched", "[search][tuner]") {
  TempLog scratch;
  TuningLog log = scratch.open();
  StandInMachine machine;
  TuneOptions bad = small_options(0, 4);
  CHECK_THROWS_WITH(tune({matmul_task(9, 9, 9)}, log, bad, machine), Catch::Contains("at least 1"));
  bad = small_options(4, 4, CostModelKind::XGBoost);
  bad.costmodel.input = XGBoostModelOptions::Input::Pairs;
  bad.costmodel.objective = XGBoostModelOptions::Objective::PackSum;
  CHECK_THROWS_WITH(tune({matmul_task(9, 9, 9)}, log, bad, machine), Catch::Contains("cannot train"));
  CHECK(machine.measurers == 0);
  CHECK(log.counts().sessions == 0);
}

// The real XGBoost model, learning as the session measures, finds faster schedules than the same
// search ranking at random, given the same trials: summed over six seeds, so that one lucky draw of
// either does not decide it. (On this stand-in the model's sessions find a best about 7% faster in
// sum, winning four seeds, tying one and losing one.)
TEST_CASE("tuner: the learned cost model guides the search to faster schedules than random ranking",
          "[search][tuner][costmodel]") {
  double guided = 0, unguided = 0;
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    for (CostModelKind kind : {CostModelKind::XGBoost, CostModelKind::Random}) {
      TempLog scratch;
      TuningLog log = scratch.open();
      StandInMachine machine;
      TuneOptions options = small_options(96, 24, kind);
      options.seed = seed;
      options.search.population = 96;
      options.search.generations = 2;
      options.leaders.leaders = 0;
      std::vector<TaskStatus> result = tune({matmul_task(61, 61, 61)}, log, options, machine);
      REQUIRE(result[0].best_s.has_value());
      (kind == CostModelKind::XGBoost ? guided : unguided) += *result[0].best_s;
    }
  }
  INFO("guided " << guided << " s, random ranking " << unguided << " s (sum of three sessions' best)");
  CHECK(guided < unguided);
}

TEST_CASE("tuner: a model's budget is shared by its tasks, counted over the log", "[search][tuner]") {
  TempLog scratch;
  TuningLog log = scratch.open();
  std::vector<TuneTask> tasks = {matmul_task(61, 13, 7), matmul_task(7, 61, 13)};
  tasks[1].weight = 3;
  TuneOptions options = small_options(22, 4);
  options.shared_budget = true;
  options.scheduling.plateau_rounds = 0;
  StandInMachine machine;
  std::vector<size_t> rounds;
  std::vector<TaskStatus> after_defaults;
  TuneCallbacks callbacks;
  callbacks.on_round = [&](const std::vector<TaskStatus>& statuses, size_t current) {
    rounds.push_back(current);
    if (rounds.size() == 2) after_defaults = statuses;
  };
  std::vector<TaskStatus> result = tune(tasks, log, options, machine, callbacks);
  CHECK(result[0].trials + result[1].trials == 22);
  // Each task's default first, a trial each; then the first search round goes where the model's
  // time is: the larger weight x default latency.
  REQUIRE(rounds.size() >= 3);
  CHECK(rounds[0] == 0);
  CHECK(rounds[1] == 1);
  REQUIRE(after_defaults.size() == 2);
  CHECK(after_defaults[0].trials == 1);
  CHECK(after_defaults[1].trials == 1);
  REQUIRE(after_defaults[0].default_s.has_value());
  REQUIRE(after_defaults[1].default_s.has_value());
  const size_t heavier = 3 * *after_defaults[1].default_s > *after_defaults[0].default_s ? 1 : 0;
  CHECK(rounds[2] == heavier);
  CHECK(result[0].trials >= 5);  // every task has a search round after its default
  CHECK(result[1].trials >= 5);
  CHECK(result[1].weight == 3);
  CHECK(result[0].done);
  CHECK(result[1].done);
  // Resumed with a larger total: only the difference, wherever the scheduler sends it.
  options.trials = 30;
  StandInMachine again;
  result = tune(tasks, log, options, again);
  CHECK(result[0].trials + result[1].trials == 30);
  CHECK(again.measured >= 8);
}

TEST_CASE("tuner: a resumed session goes on by expected gain, not from the first task again", "[search][tuner]") {
  // Found tuning ResNet-50 on an H100 in steps: a resumed step of 60 s spent its rounds on the
  // model's first three tasks, in list order, and never reached the classifier, a quarter of the
  // model's time.
  TempLog scratch;
  TuningLog log = scratch.open();
  std::vector<TuneTask> tasks = {matmul_task(61, 13, 7), matmul_task(7, 61, 13)};
  TuneOptions options = small_options(10, 4);
  options.shared_budget = true;
  options.scheduling.plateau_rounds = 0;
  StandInMachine first;
  tune(tasks, log, options, first);
  tasks[1].weight = 1000;  // the same workloads, the second now where the model's time goes
  options.trials = 18;     // 8 more: two rounds of 4
  StandInMachine again;
  std::vector<size_t> rounds;
  TuneCallbacks callbacks;
  callbacks.on_round = [&](const std::vector<TaskStatus>&, size_t current) { rounds.push_back(current); };
  std::vector<TaskStatus> result = tune(tasks, log, options, again, callbacks);
  CHECK(rounds == std::vector<size_t>{1, 1});
  CHECK(result[0].trials + result[1].trials == 18);
}

TEST_CASE("tuner: a resumed task whose default schedule the log lacks measures it first", "[search][tuner]") {
  // Found resuming MobileNetV2 on an H100: the log held 64 trials of the classifier, all older than
  // its current default and the best 622 us; the default (8 us) was never measured, the resumed
  // rounds going to other tasks, and the build took the 622 us record.
  TempLog scratch;
  TuningLog log = scratch.open();
  const std::vector<TuneTask> tasks = {matmul_task(61, 13, 7), matmul_task(7, 61, 13)};
  TuneOptions options = small_options(10, 4);
  options.shared_budget = true;
  options.scheduling.plateau_rounds = 0;
  StandInMachine first;
  const std::vector<TaskStatus> before = tune(tasks, log, options, first);
  options.cpu = CpuTargetSpec{16, 2};  // another default schedule for the same workloads
  const std::string fresh = trace_steps_key(default_schedule(tasks[0].dag, options.cpu));
  REQUIRE(fresh != trace_steps_key(default_schedule(tasks[0].dag, small_options(1, 1).cpu)));
  options.trials = 16;
  StandInMachine again;
  tune(tasks, log, options, again);
  REQUIRE(again.batches.size() >= 2);
  CHECK(again.batches[0] == 1);  // each default alone, before any search round
  CHECK(again.batches[1] == 1);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::vector<MeasureRecord> trials = trials_of(log.records(tasks[i].dag.workload_key(), again.target()));
    const size_t logged = static_cast<size_t>(before[i].trials);
    REQUIRE(trials.size() > logged);
    CHECK(steps_of(trials[logged]) == trace_steps_key(default_schedule(tasks[i].dag, options.cpu)));
  }
}

TEST_CASE("tuner: a task whose best stops improving gets no more trials", "[search][tuner]") {
  TempLog scratch;
  TuningLog log = scratch.open();
  TuneOptions options = small_options(400, 4);
  options.shared_budget = true;  // plateau stopping after 5 rounds is the default for a model
  StandInMachine machine;
  machine.flat = true;
  std::vector<std::string> notes;
  TuneCallbacks callbacks;
  callbacks.on_note = [&](const std::string& text) { notes.push_back(text); };
  std::vector<TaskStatus> result =
      tune({matmul_task(61, 13, 7), matmul_task(7, 61, 13)}, log, options, machine, callbacks);
  // Each measures its default alone first, then stops after five search rounds without a gain
  // over it: 1 + 5 x 4 = 21 trials each.
  CHECK(result[0].trials == 21);
  CHECK(result[1].trials == 21);
  CHECK(std::count_if(notes.begin(), notes.end(),
                      [](const std::string& n) { return n.find("best unchanged") != std::string::npos; }) == 2);
}

TEST_CASE("tuner: two tuners of one log keep its budget between them", "[search][tuner]") {
  TempLog scratch;
  { TuningLog made = scratch.open(); }  // the file exists before both open it
  const std::vector<TuneTask> tasks = {matmul_task(61, 13, 7)};
  std::vector<TaskStatus> a, b;
  auto session = [&](std::vector<TaskStatus>& out, uint64_t seed) {
    TuningLog log = scratch.open();
    StandInMachine machine;
    TuneOptions options = small_options(12, 4);
    options.seed = seed;
    out = tune(tasks, log, options, machine);
  };
  std::thread first(session, std::ref(a), 1), second(session, std::ref(b), 2);
  first.join();
  second.join();
  TuningLog log = scratch.open();
  const std::vector<MeasureRecord> trials =
      trials_of(log.records(tasks[0].dag.workload_key(), StandInMachine().target()));
  CHECK(trials.size() == 12);  // not 24: the budget belongs to the log
  CHECK(log.trial_count(tasks[0].dag.workload_key(), StandInMachine().target()) == 12);
}

namespace {

// A GPU that times every schedule alike and says what it is, keeping the candidates it was given.
class StandInGpu : public TuningMachine {
 public:
  explicit StandInGpu(std::string arch) { device_.name = "stand-in GPU", device_.arch = std::move(arch); }

  struct Measurer : CandidateMeasurer {
    explicit Measurer(StandInGpu* gpu) : gpu(gpu) {}
    std::vector<MeasureResult> measure(const std::vector<Candidate>& candidates,
                                       const std::function<void(size_t, const MeasureResult&)>& on_result) override {
      std::vector<MeasureResult> results;
      for (size_t i = 0; i < candidates.size(); ++i) {
        gpu->traces.push_back(candidates[i].trace);
        MeasureResult r;
        r.median_s = 1e-3;
        r.samples_s = {r.median_s};
        if (on_result) on_result(i, r);
        results.push_back(r);
      }
      return results;
    }
    void on_build_progress(std::function<void(size_t, size_t)>) override {}
    void set_run_timeout(double) override {}
    const std::string& settings_json() const override { return settings; }
    StandInGpu* gpu;
    std::string settings = R"({"flush":false})";
  };

  std::unique_ptr<CandidateMeasurer> measurer(const ComputeDAG&, const MeasureOptions&) override {
    return std::make_unique<Measurer>(this);
  }
  TargetInfo target() const override { return cuda_target(device_); }
  std::optional<CudaDeviceInfo> device() const override { return device_; }

  std::vector<Trace> traces;

 private:
  CudaDeviceInfo device_;
};

bool takes_warpgroup_tiles(const Trace& t) {
  return std::any_of(t.steps.begin(), t.steps.end(), [](const Step& s) { return s.kind == StepKind::StorageSwizzle; });
}

}  // namespace

TEST_CASE("tuner: GPU schedules are for the GPU measured on, warpgroup tensor cores only on sm_90",
          "[search][tuner]") {
  const std::vector<TuneTask> tasks = {
      TuneTask{"matmul", build_op("matmul", {{"M", "256"}, {"N", "192"}, {"K", "128"}, {"dtype", "bfloat16"}}), 1}};
  TuneOptions o = small_options(24, 8);
  o.target = TargetKind::Cuda;
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    TempLog scratch;
    TuningLog log = scratch.open();
    StandInGpu gpu(arch);
    tune(tasks, log, o, gpu);
    REQUIRE(gpu.traces.size() >= 24);  // the trials, then the leaders timed again
    const bool hopper = std::string(arch) == "sm_90";
    GpuTargetSpec spec;
    spec.warpgroup_mma = hopper;
    // The default comes first, as the device's default, and the search stays within what it runs.
    CHECK(trace_steps_key(gpu.traces.front()) == trace_steps_key(default_gpu_schedule(tasks[0].dag, spec)));
    CHECK(takes_warpgroup_tiles(gpu.traces.front()) == hopper);
    if (!hopper)
      for (const Trace& t : gpu.traces) CHECK_FALSE(takes_warpgroup_tiles(t));
  }
}
