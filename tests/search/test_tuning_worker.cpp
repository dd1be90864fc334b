// Workers of a tuning session shared through the log (search/tuner.h tune_as_worker,
// database/work_queue.h), on an SQLite log and the stand-in machine: the budget holds exactly across
// workers, no schedule is measured twice, a worker killed mid-round loses nothing it committed and
// its lease goes to another, a worker that asks for another session's budget is refused, and four
// worker processes on a PostgreSQL log ride out a restart of the server.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

#include "database/work_queue.h"
#include "schedule/ops/op_library.h"
#include "search/tuner.h"
#include "tests/database/postgres_server.h"
#include "tests/search/stand_in_machine.h"

using namespace tessel;
using namespace tessel_test;

namespace {

TuneTask matmul(const std::string& name, int m, int n, int k) {
  return TuneTask{name,
                  build_op("matmul", {{"M", std::to_string(m)}, {"N", std::to_string(n)}, {"K", std::to_string(k)}}),
                  1};
}

TuneOptions worker_options(int64_t trials, bool shared, uint64_t seed) {
  TuneOptions o;
  o.trials = trials;
  o.shared_budget = shared;
  o.batch = 4;
  o.seed = seed;
  o.costmodel.kind = CostModelKind::Random;
  o.search.population = 24;
  o.search.generations = 1;
  o.cpu = CpuTargetSpec{8, 2};
  return o;
}

struct Trials {
  int64_t count = 0;
  std::set<int64_t> sessions;                         // the log sessions (one per worker) that stored them
  std::set<std::pair<std::string, std::string>> keys;  // (workload, trace): each once
  double best_median = 0;                              // of the fastest correct one
};

Trials trials_in(const std::string& path, const TuneTask& task) {
  TuningLog log = TuningLog::open(path, TuningLog::Mode::ReadOnly);
  Trials t;
  t.best_median = std::numeric_limits<double>::infinity();
  for (const MeasureRecord& r : log.records(task.dag.workload_key(), StandInMachine().target())) {
    if (r.purpose != RecordPurpose::Trial) continue;
    ++t.count;
    t.sessions.insert(r.session_id);
    t.keys.emplace(r.workload.key, r.trace_json);
    if (r.error == ErrorCode::Ok) t.best_median = std::min(t.best_median, r.median_s);
  }
  return t;
}

}  // namespace

TEST_CASE("worker: four workers of one session tune a model's tasks to exactly its budget, no schedule twice",
          "[search][worker]") {
  TempLog scratch;
  { TuningLog made = scratch.open(); }
  const std::vector<TuneTask> tasks = {matmul("a", 61, 13, 7), matmul("b", 31, 17, 9), matmul("c", 19, 23, 5)};
  const int64_t budget = 40;
  std::vector<std::vector<TaskStatus>> statuses(4);
  std::vector<std::thread> workers;
  for (size_t w = 0; w < statuses.size(); ++w)
    workers.emplace_back([&, w] {
      TuningLog log = scratch.open();
      StandInMachine machine;
      machine.delay_s = 0.01;  // rounds long enough to overlap
      statuses[w] = tune_as_worker(tasks, log, worker_options(budget, true, 11 + w), machine,
                                   WorkerOptions{"model", scratch.path(), 5, 0.05});
    });
  for (std::thread& t : workers) t.join();

  int64_t total = 0;
  std::set<int64_t> sessions;
  TuningLog log = TuningLog::open(scratch.path(), TuningLog::Mode::ReadOnly);
  for (const TuneTask& task : tasks) {
    const Trials t = trials_in(scratch.path(), task);
    CHECK(t.keys.size() == static_cast<size_t>(t.count));  // no schedule measured twice
    CHECK(t.count >= 1);                                    // every task had its first round
    total += t.count;
    sessions.insert(t.sessions.begin(), t.sessions.end());
    // The log's best is what one tuner reading the same records would take: the fastest trial
    // (the stand-in machine's timings of a schedule never differ).
    const std::optional<MeasureRecord> best = log.best(task.dag.workload_key(), StandInMachine().target());
    REQUIRE(best);
    CHECK(best->median_s == t.best_median);
  }
  CHECK(total == budget);
  CHECK(sessions.size() >= 2);  // the work was shared
  // Every worker saw the session end with the budget spent: its tasks' trials add up to it.
  for (const std::vector<TaskStatus>& s : statuses) {
    int64_t seen = 0;
    for (const TaskStatus& task : s) seen += task.trials;
    CHECK(seen <= budget);
  }
}

TEST_CASE("worker: a suite's budget holds for each task across workers", "[search][worker]") {
  TempLog scratch;
  { TuningLog made = scratch.open(); }
  const std::vector<TuneTask> tasks = {matmul("a", 7, 61, 5), matmul("b", 13, 11, 9)};
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w)
    workers.emplace_back([&, w] {
      TuningLog log = scratch.open();
      StandInMachine machine;
      tune_as_worker(tasks, log, worker_options(10, false, 5 + w), machine,
                     WorkerOptions{"suite", scratch.path(), 5, 0.05});
    });
  for (std::thread& t : workers) t.join();
  for (const TuneTask& task : tasks) {
    const Trials t = trials_in(scratch.path(), task);
    CHECK(t.count == 10);
    CHECK(t.keys.size() == 10);
  }
}

TEST_CASE("worker: a worker killed mid-round loses nothing it stored, its lease expires and another finishes",
          "[search][worker]") {
  TempLog scratch;
  { TuningLog made = scratch.open(); }
  const std::vector<TuneTask> tasks = {matmul("a", 61, 13, 7)};
  const int64_t budget = 16;
  const double lease_s = 2;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      TuningLog log = scratch.open();
      StandInMachine machine;
      machine.delay_s = 0.25;  // a round of 4 takes a second
      tune_as_worker(tasks, log, worker_options(budget, true, 3), machine,
                     WorkerOptions{"killed", scratch.path(), lease_s, 0.05});
    } catch (...) {
    }
    _exit(0);
  }
  // Wait for the child's first round to be stored, then kill it inside its second.
  int64_t stored = 0;
  for (int i = 0; i < 400 && stored < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stored = trials_in(scratch.path(), tasks[0]).count;
  }
  REQUIRE(stored >= 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  const Trials before = trials_in(scratch.path(), tasks[0]);
  REQUIRE(before.count < budget);

  const auto start = std::chrono::steady_clock::now();
  TuningLog log = scratch.open();
  StandInMachine machine;
  tune_as_worker(tasks, log, worker_options(budget, true, 4), machine,
                 WorkerOptions{"killed", scratch.path(), lease_s, 0.05});
  const Trials after = trials_in(scratch.path(), tasks[0]);
  CHECK(after.count == budget);
  CHECK(after.keys.size() == static_cast<size_t>(budget));
  CHECK(after.sessions.size() == 2);  // the dead worker's trials are all still there
  for (const auto& key : before.keys) CHECK(after.keys.count(key) == 1);
  // The task stayed the dead worker's until its lease ran out.
  if (before.count % 4 == 0)
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= lease_s * 0.5);
}

TEST_CASE("worker: a worker with another budget or other tasks than the session's is refused", "[search][worker]") {
  TempLog scratch;
  const std::vector<TuneTask> tasks = {matmul("a", 7, 5, 3)};
  {
    TuningLog log = scratch.open();
    StandInMachine machine;
    tune_as_worker(tasks, log, worker_options(4, true, 1), machine, WorkerOptions{"s", scratch.path(), 5, 0.05});
  }
  TuningLog log = scratch.open();
  StandInMachine machine;
  CHECK_THROWS_WITH(
      tune_as_worker(tasks, log, worker_options(8, true, 1), machine, WorkerOptions{"s", scratch.path(), 5, 0.05}),
      Catch::Contains("tuning session 's'") && Catch::Contains("budget of 4"));
  CHECK_THROWS_WITH(tune_as_worker({matmul("b", 9, 5, 3)}, log, worker_options(4, true, 1), machine,
                                   WorkerOptions{"s", scratch.path(), 5, 0.05}),
                    Catch::Contains("other tasks"));
}

TEST_CASE("worker: four worker processes on PostgreSQL reach exactly the budget through a server restart",
          "[search][worker][postgres]") {
  testing::PostgresServer* server = testing::PostgresServer::shared_or_skip();
  if (!server) return;
  const std::string url = server->create_database();
  { TuningLog made = TuningLog::open(url, TuningLog::Mode::ReadWrite); }
  const std::vector<TuneTask> tasks = {matmul("a", 61, 13, 7), matmul("b", 31, 17, 9), matmul("c", 19, 23, 5)};
  const int64_t budget = 48;
  std::vector<pid_t> workers;
  for (int w = 0; w < 4; ++w) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      int code = 0;
      try {
        TuningLog log = TuningLog::open(url, TuningLog::Mode::ReadWrite);
        StandInMachine machine;
        machine.delay_s = 0.02;
        tune_as_worker(tasks, log, worker_options(budget, true, 21 + w), machine, WorkerOptions{"pg", url, 5, 0.05});
      } catch (const std::exception& e) {
        std::fprintf(stderr, "worker %d: %s\n", w, e.what());
        code = 1;
      }
      _exit(code);
    }
    workers.push_back(pid);
  }
  // The server goes down while the workers measure and comes back two seconds later.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  server->stop();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  server->start();
  for (pid_t pid : workers) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  int64_t total = 0;
  std::set<int64_t> sessions;
  for (const TuneTask& task : tasks) {
    const Trials t = trials_in(url, task);
    CHECK(t.keys.size() == static_cast<size_t>(t.count));
    total += t.count;
    sessions.insert(t.sessions.begin(), t.sessions.end());
  }
  CHECK(total == budget);
  CHECK(sessions.size() >= 2);
}
