// A tuning session shared by many worker processes, on any number of hosts, through the tuning log
// itself: the session's tasks are rows of the log's database, and a worker takes a round of one task
// at a time under a lease. The database is the only thing workers share; there is no coordinator.
//
//   join:    the first worker writes the session (its tasks, target and trial budget); later ones
//            check that they tune the same tasks on the same kind of target
//   lease:   a task nobody holds (or whose holder stopped renewing: it died or lost its network)
//            is taken for one round with SELECT ... FOR UPDATE SKIP LOCKED, in the order of the
//            worker's own preference (its task scheduler's)
//   renew:   while the round measures, a second connection extends the lease (LeaseKeeper)
//   record:  the round's trials are stored in the transaction that checks the lease is still
//            held and counts the budget, so a worker whose lease went to another stores nothing
//            (its round is measured by the new holder instead) and the session's trials never
//            exceed its budget, however many workers write at once
//   release: the task is free again, or done for good
//
// A worker that dies loses nothing it committed; its lease expires and the round goes to another.
// Works on PostgreSQL (many hosts) and on an SQLite file (many processes of one host).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "database/tuning_log.h"

namespace tessel {

// A task of a shared session, as its workers must all see it.
struct QueueTask {
  std::string workload_key;
  std::string name;
  double weight = 1;
};

// How the session's trial budget counts: for every task alone (a suite's cases), or for all of them
// together (a model's subgraphs), over the trial records the log holds for the session's target.
enum class BudgetScope { PerTask, Shared };

struct QueueSession {
  std::string name;
  std::vector<QueueTask> tasks;
  TargetInfo target;
  int64_t trial_budget = 0;
  BudgetScope scope = BudgetScope::Shared;
};

// A task taken for one round.
struct Lease {
  size_t task = 0;
  std::string token;  // unique to this lease: a later lease of the task has another
};

// The lease went to another worker before the round's trials were stored (it was not renewed in
// time); nothing of the round was stored.
class LeaseLost : public Error {
 public:
  explicit LeaseLost(const std::string& message) : Error(message) {}
};

class WorkQueue {
 public:
  // Joins `session` in `log`, writing it when the log does not hold it yet. Throws InputError when
  // the log holds a session of that name with other tasks, another target or another budget.
  // `worker` names this worker in the log ("host:pid").
  static WorkQueue join(TuningLog& log, const QueueSession& session, const std::string& worker);

  // Takes the first task of `preference` (task indexes) that is neither done nor held by a live
  // lease, for `lease_s` seconds; nullopt when every task in it is done or held.
  std::optional<Lease> lease(const std::vector<size_t>& preference, double lease_s);

  // Stores the round's records (trials and retimes) if `lease` is still this worker's, within the
  // budget: returns each record's id, or 0 for a trial the budget had no room for. Throws LeaseLost.
  std::vector<int64_t> record(const Lease& lease, const std::vector<MeasureRecord>& records);

  // Gives the task back; `done`: it needs no more rounds (budget, search space or plateau).
  void release(const Lease& lease, bool done);

  struct Progress {
    size_t tasks = 0, done = 0, leased = 0;
    int64_t trials = 0;  // trial records of the session's tasks on its target, in the log
    int64_t budget = 0;  // the whole session's: budget per task times tasks when per task
  };
  Progress progress();
  // Every task done, or (a shared budget) no trial left.
  bool finished();

  const QueueSession& session() const { return session_; }
  const std::string& worker() const { return worker_; }

 private:
  WorkQueue(TuningLog& log, QueueSession session, std::string worker);
  TuningLog* log_;
  QueueSession session_;
  std::string worker_;
  int64_t leases_ = 0;
};

// Renews this worker's current lease every `lease_s / 4` seconds, from a thread of its own over its
// own connection to the log (the worker's is busy measuring), until destroyed. lost() turns true
// when a renewal finds the lease gone (it expired and another worker took the task).
class LeaseKeeper {
 public:
  // `log_url`: the log as the user named it (a PostgreSQL URL with its password, if any).
  LeaseKeeper(const std::string& log_url, const std::string& session, double lease_s);
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Starts renewing `lease` (and no other).
  void keep(const Lease& lease);
  // Stops renewing; the lease is about to be released.
  void drop();
  bool lost() const { return lost_; }

 private:
  void run();
  const std::string log_url_, session_;
  const double lease_s_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Lease> lease_;  // guarded by mutex_
  bool stop_ = false;           // guarded by mutex_
  std::atomic<bool> lost_{false};
  std::thread thread_;
};

// "host:pid", naming a worker in the log.
std::string this_worker_name();

}  // namespace tessel
