// The lease protocol of a shared tuning session (database/work_queue.h) on an SQLite log: leases by
// preference, a held task skipped, an expired lease taken over and its old holder's records refused,
// the budget counted over the session's tasks, done tasks never leased again.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "database/work_queue.h"
#include "tests/database/test_support.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

QueueSession two_tasks(int64_t budget, BudgetScope scope = BudgetScope::Shared) {
  return QueueSession{"s", {{"k0", "first", 1}, {"k1", "second", 2}}, cpu_target(), budget, scope};
}

MeasureRecord trial(const std::string& key, double median) {
  MeasureRecord r = make_record(key, median);
  r.purpose = RecordPurpose::Trial;
  return r;
}

// Two workers, each with its own handle on one log, joined to the session of two_tasks(10).
struct TwoWorkers {
  ScratchDir dir;
  TuningLog a_log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  TuningLog b_log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  WorkQueue a = WorkQueue::join(a_log, two_tasks(10), "a");
  WorkQueue b = WorkQueue::join(b_log, two_tasks(10), "b");
};

}  // namespace

TEST_CASE("work queue: a task is leased by one worker at a time, in the worker's order of preference",
          "[database][queue]") {
  TwoWorkers w;
  WorkQueue &a = w.a, &b = w.b;

  std::optional<Lease> first = a.lease({1, 0}, 60);
  REQUIRE(first);
  CHECK(first->task == 1);
  std::optional<Lease> second = b.lease({1, 0}, 60);  // task 1 is held: b gets task 0
  REQUIRE(second);
  CHECK(second->task == 0);
  CHECK_FALSE(b.lease({0, 1}, 60));  // both held
  CHECK(a.progress().leased == 2);

  a.release(*first, /*done=*/true);
  CHECK_FALSE(b.lease({1}, 60));  // done: never leased again
  b.release(*second, false);
  std::optional<Lease> again = a.lease({0, 1}, 60);
  REQUIRE(again);
  CHECK(again->task == 0);
  CHECK(again->token != second->token);
  const WorkQueue::Progress p = a.progress();
  CHECK(p.tasks == 2);
  CHECK(p.done == 1);
  CHECK(p.leased == 1);
}

TEST_CASE("work queue: an expired lease goes to another worker and its old holder stores nothing",
          "[database][queue]") {
  TwoWorkers w;
  WorkQueue &a = w.a, &b = w.b;

  std::optional<Lease> stale = a.lease({0}, 0.5);
  REQUIRE(stale);
  CHECK_FALSE(b.lease({0}, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  std::optional<Lease> taken = b.lease({0}, 60);
  REQUIRE(taken);
  CHECK(taken->task == 0);

  CHECK_THROWS_AS(a.record(*stale, {trial("k0", 1e-3)}), LeaseLost);
  CHECK(w.a_log.trial_count("k0", cpu_target()) == 0);
  a.release(*stale, true);  // no longer a's: changes nothing
  CHECK(b.progress().done == 0);
  const std::vector<int64_t> ids = b.record(*taken, {trial("k0", 2e-3)});
  REQUIRE(ids.size() == 1);
  CHECK(ids[0] > 0);
}

TEST_CASE("work queue: a shared budget counts the trials of every task of the session, retimes are free",
          "[database][queue]") {
  ScratchDir dir;
  TuningLog log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  log.append({trial("k1", 5e-3), trial("k1", 6e-3)});  // stored before the session: they count
  WorkQueue q = WorkQueue::join(log, two_tasks(5), "w");
  std::optional<Lease> lease = q.lease({0}, 60);
  REQUIRE(lease);
  MeasureRecord retime = trial("k0", 1e-3);
  retime.purpose = RecordPurpose::Retime;
  const std::vector<int64_t> ids =
      q.record(*lease, {trial("k0", 1e-3), trial("k0", 2e-3), retime, trial("k0", 3e-3), trial("k0", 4e-3)});
  REQUIRE(ids.size() == 5);
  CHECK(ids[0] > 0);
  CHECK(ids[1] > 0);
  CHECK(ids[2] > 0);   // a retime is no trial
  CHECK(ids[3] > 0);   // the fifth trial of the session
  CHECK(ids[4] == 0);  // over the budget of 5
  CHECK(q.progress().trials == 5);
  CHECK(q.finished());

  // Per task, the same log gives each task its own budget.
  WorkQueue per_task = WorkQueue::join(log, QueueSession{"p", {{"k0", "first", 1}, {"k1", "second", 1}},
                                                         cpu_target(), 3, BudgetScope::PerTask},
                                       "w");
  CHECK(per_task.progress().budget == 6);
  CHECK_FALSE(per_task.finished());
}

TEST_CASE("work queue: joining a session with other tasks, another target or budget is refused",
          "[database][queue]") {
  ScratchDir dir;
  TuningLog log = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadWrite);
  WorkQueue::join(log, two_tasks(10), "a");
  CHECK_NOTHROW(WorkQueue::join(log, two_tasks(10), "b"));
  CHECK_THROWS_WITH(WorkQueue::join(log, two_tasks(11), "b"), Catch::Contains("budget of 10"));
  QueueSession other = two_tasks(10);
  other.tasks[1].workload_key = "k2";
  CHECK_THROWS_WITH(WorkQueue::join(log, other, "b"), Catch::Contains("other tasks"));
  other = two_tasks(10);
  other.tasks.pop_back();
  CHECK_THROWS_WITH(WorkQueue::join(log, other, "b"), Catch::Contains("has 2 tasks"));
  other = two_tasks(10);
  other.target = gpu_target();
  CHECK_THROWS_WITH(WorkQueue::join(log, other, "b"), Catch::Contains("another target"));
  TuningLog read_only = TuningLog::open(dir.file("log.db"), TuningLog::Mode::ReadOnly);
  CHECK_THROWS_AS(WorkQueue::join(read_only, two_tasks(10), "c"), DatabaseError);
}
