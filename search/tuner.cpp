#include "search/tuner.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "schedule/te/error.h"
#include "search/leader_retiming.h"
#include "search/task_scheduler.h"
#include "search/tuning_round.h"
#include "database/work_queue.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void check_distinct(const std::vector<TuneTask>& tasks) {
  if (tasks.empty()) throw InputError("nothing to tune: no tasks");
  for (size_t i = 0; i < tasks.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (tasks[i].dag.workload_key() == tasks[j].dag.workload_key())
        throw InputError("'" + tasks[j].name + "' and '" + tasks[i].name + "' are the same workload (key " +
                         tasks[i].dag.workload_key() + "); tune it once");
}

class Tuner {
 public:
  Tuner(const std::vector<TuneTask>& tasks, TuningLog& log, const TuneOptions& options, TuningMachine& machine,
        const TuneCallbacks& callbacks)
      : options_(options),
        model_(make_cost_model(options.costmodel, options.target, options.model_path, options.seed)),
        session_{options_, log, machine, TargetInfo{}, *model_, callbacks} {
    for (size_t i = 0; i < tasks.size(); ++i) tasks_.push_back(std::make_unique<TuningTask>(tasks[i], i, options_));
  }

  std::vector<TaskStatus> run() {
    open();
    TaskScheduler scheduler = start_scheduler();
    if (session_.options.shared_budget) measure_defaults(scheduler);
    while (std::optional<size_t> next = scheduler.next()) {
      if (out_of_time()) {
        settle_after_budget();
        break;
      }
      round(scheduler, *next, trials_left(*tasks_[*next]));
    }
    save_model();
    return statuses();
  }

  // The worker's loop: take in the others' records, lease the task this worker's scheduler ranks
  // first among those nobody holds, run its round while a second connection renews the lease,
  // release it. The rounds' trials are stored under the lease (WorkQueue::record).
  std::vector<TaskStatus> run_worker(const WorkerOptions& worker) {
    open();
    WorkQueue queue = WorkQueue::join(session_.log, queue_session(worker.session), this_worker_name());
    session_.note("worker " + queue.worker() + " of tuning session '" + worker.session + "'");
    TaskScheduler scheduler = start_scheduler();
    LeaseKeeper keeper(worker.log_url, worker.session, worker.lease_s);
    std::optional<Lease> held;
    session_.store = [&](const std::vector<MeasureRecord>& records) {
      if (keeper.lost())
        throw LeaseLost("the lease of '" + tasks_[held->task]->status.name + "' expired while it measured");
      return queue.record(*held, records);
    };
    for (;;) {
      if (out_of_time()) {
        settle_after_budget();
        break;
      }
      take_in_others(scheduler);
      if (trials_left_shared() <= 0 || queue.finished()) break;
      const std::vector<size_t> order = scheduler.ranking();
      if (order.empty()) break;  // nothing left that this worker would run
      held = queue.lease(order, worker.lease_s);
      if (!held) {  // every task still open is another worker's for now
        std::this_thread::sleep_for(std::chrono::duration<double>(worker.idle_poll_s));
        continue;
      }
      keeper.keep(*held);
      TuningTask& task = *tasks_[held->task];
      // The task's last holder may have stored a round between this worker's look at the log and
      // its lease: take that in first, or this round could measure the same schedules again.
      take_in_others(scheduler, held->task);
      if (!task.status.done && !scheduler.finished(held->task) && trials_left_shared() > 0) {
        try {
          round(scheduler, held->task, trials_left(task));
        } catch (const LeaseLost& e) {
          session_.note(e.what());
        }
      }
      keeper.drop();
      queue.release(*held, task.status.done);
      held.reset();
    }
    session_.store = nullptr;
    save_model();
    return statuses();
  }

 private:
  enum class RoundKind { Search, DefaultOnly };

  TaskScheduler start_scheduler() {
    TaskScheduler scheduler(weights(), scheduler_options(session_.options));
    if (trials_left_shared() <= 0)
      for (auto& task : tasks_) task->status.done = true;
    for (size_t i = 0; i < tasks_.size(); ++i)
      if (tasks_[i]->status.done) scheduler.finish(i);
    // A resumed session goes on where the log left off: a task with trials in the log has had its
    // first round, at the best the log holds, so the next rounds go by expected gain at once (a
    // model's slowest task first), not round the task list again from its first task.
    for (size_t i = 0; i < tasks_.size(); ++i)
      if (tasks_[i]->status.trials > 0 && !scheduler.finished(i))
        scheduler.record(i, tasks_[i]->status.trials,
                         tasks_[i]->status.best_s.value_or(std::numeric_limits<double>::infinity()));
    return scheduler;
  }

  QueueSession queue_session(const std::string& name) const {
    QueueSession q{name, {}, session_.target, session_.options.trials,
                   session_.options.shared_budget ? BudgetScope::Shared : BudgetScope::PerTask};
    for (const auto& task : tasks_) q.tasks.push_back(QueueTask{task->status.workload_key, task->status.name,
                                                                task->task.weight});
    return q;
  }

  // Takes in what other workers stored since this one last looked (at every task, or at `only`):
  // their trials count, rank schedules and teach the search and the cost model, as the log's records
  // did at the start.
  void take_in_others(TaskScheduler& scheduler, std::optional<size_t> only = std::nullopt) {
    std::vector<TrainingSample> fresh;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (only && i != *only) continue;
      TuningTask& task = *tasks_[i];
      const int64_t trials_before = task.status.trials;
      TuningTask::LoggedTrials logged;
      for (const MeasureRecord& r :
           session_.log.records_after(task.status.workload_key, session_.target, task.last_record_id)) {
        if (r.session_id == session_.log.session_id()) {  // this worker's own, known already
          task.last_record_id = std::max(task.last_record_id, r.id);
          continue;
        }
        task.absorb(r, session_, logged);
      }
      if (task.status.trials == trials_before && logged.traces.empty()) continue;
      // Trials measured elsewhere: "measured this session" counts this worker's own.
      task.status.trials_at_start += task.status.trials - trials_before;
      task.refresh_latencies();
      if (!session_.options.shared_budget && task.status.trials >= task.status.budget) {
        task.status.done = true;  // its own budget spent by the others
        scheduler.finish(i);
      }
      if (!task.status.done && !scheduler.finished(i))
        scheduler.record(i, task.status.trials,
                         task.status.best_s.value_or(std::numeric_limits<double>::infinity()));
      std::vector<const Trace*> traces;
      for (const Trace& t : logged.traces) traces.push_back(&t);
      std::vector<std::optional<ProgramFeatures>> features = task.policy.features(traces);
      for (size_t k = 0; k < features.size(); ++k)
        if (features[k])
          fresh.push_back(TrainingSample{std::move(*features[k]), task.group(session_.target), logged.latencies_s[k]});
    }
    if (!fresh.empty()) session_.model.update(fresh);
  }


  // One round of `index` with at most `trials` (a search round) or of its default schedule alone,
  // its outcome told to the scheduler and the callback.
  void round(TaskScheduler& scheduler, size_t index, int64_t trials, RoundKind kind = RoundKind::Search) {
    TuningTask& task = *tasks_[index];
    const bool measured = kind == RoundKind::DefaultOnly ? run_default_round(task, session_, index)
                                                         : run_round(task, session_, index, trials);
    if (measured)
      scheduler.record(index, task.status.trials, task.status.best_s.value_or(std::numeric_limits<double>::infinity()));
    if (!task.status.done && scheduler.plateaued(index)) stop_plateaued(task);
    if (task.status.done) scheduler.finish(index);
    if (session_.options.shared_budget && trials_left_shared() <= 0) finish_all(scheduler);
    if (measured && session_.callbacks.on_round) session_.callbacks.on_round(statuses(), index);
  }

  // A model's tasks whose default schedule the log lacks get it measured first, a trial each, so
  // that the scheduler knows where the model's time goes before any search: a default far slower
  // than its estimate (a GPU gemv on a generic schedule) gets the first search rounds, not the last
  // ones a time budget may never reach. A resumed task counts too: its default may be newer than
  // the log's trials and faster than all of them, and a build only picks what the log holds.
  void measure_defaults(TaskScheduler& scheduler) {
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i]->status.done || tasks_[i]->status.default_measured || scheduler.finished(i)) continue;
      if (out_of_time() || trials_left_shared() <= 0) return;
      round(scheduler, i, 1, RoundKind::DefaultOnly);
    }
  }

  // Every task reads the log before the session enters it; only then does the model learn.
  void open() {
    tasks_[0]->start_measurer(session_);  // the first task's measurer names the target (a GPU's name, driver)
    session_.target = session_.machine.target();
    // GPU schedules for the GPU measured on: its limits, its multiprocessors, its tensor cores.
    if (std::optional<CudaDeviceInfo> device = session_.machine.device()) {
      options_.gpu = gpu_target_spec(*device, options_.gpu);
      for (auto& task : tasks_) task->retarget();
    }
    std::vector<TuningTask::LoggedTrials> logged;
    for (auto& task : tasks_) logged.push_back(task->resume(session_));
    session_.log.begin_session(
        SessionInfo{"tessel tune: " + tasks_[0]->status.name + (tasks_.size() > 1 ? " and others" : ""),
                    tune_options_json(session_.options, *model_), std::string("tessel ") + TESSEL_VERSION, "", ""});
    learn_from_log(logged);
    // A task done before the session starts gets no round; its leaders (in a log written before
    // retimes existed, or by a session killed while re-timing) are settled here.
    const LeaderOptions& l = session_.options.leaders;
    for (auto& task : tasks_)
      if (task->status.done && !task->timings.retime_list(l.leaders, l.timings).empty()) {
        session_.note(task->status.name + ": re-timing the leaders the log holds");
        retime_leaders(*task, session_, false);
      }
  }

  // The log's trials train the model (only when some task has trials left: a session that only
  // settles leaders trains nothing). Features are extracted on every core.
  void learn_from_log(const std::vector<TuningTask::LoggedTrials>& logged) {
    bool any_left = false;
    for (const auto& task : tasks_) any_left = any_left || !task->status.done;
    if (!any_left) return;
    std::vector<TrainingSample> history;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      std::vector<const Trace*> traces;
      for (const Trace& t : logged[i].traces) traces.push_back(&t);
      std::vector<std::optional<ProgramFeatures>> features = tasks_[i]->policy.features(traces);
      for (size_t k = 0; k < features.size(); ++k)
        if (features[k])
          history.push_back(
              TrainingSample{std::move(*features[k]), tasks_[i]->group(session_.target), logged[i].latencies_s[k]});
    }
    if (history.empty()) return;
    session_.note("learning from " + std::to_string(history.size()) + " records already in the log (" +
                  std::to_string(static_cast<int>(seconds_since(start_))) + " s since the start)");
    const Clock::time_point learn_start = Clock::now();
    model_->update(history);
    session_.note("learned in " + std::to_string(static_cast<int>(seconds_since(learn_start))) + " s");
  }

  // What the budget leaves for a task's next round: its own remainder, or the session's when shared.
  // A shared budget keeps enough for a first round of every task not yet measured: a task's share
  // of what is left is then at most an equal part.
  int64_t trials_left(const TuningTask& task) const {
    // Another tuner of the same log may have stored trials of the task since this one read it.
    if (!session_.options.shared_budget)
      return task.status.budget -
             std::max(task.status.trials, session_.log.trial_count(task.status.workload_key, session_.target));
    const int64_t left = trials_left_shared();
    if (task.status.trials > 0) return left;
    int64_t unmeasured = 0;
    for (const auto& t : tasks_) unmeasured += t->status.trials == 0 && !t->status.done ? 1 : 0;
    return std::max<int64_t>(1, left / std::max<int64_t>(1, unmeasured));
  }
  int64_t trials_left_shared() const {
    if (!session_.options.shared_budget) return 1;
    int64_t used = 0;
    for (const auto& task : tasks_) used += task->status.trials;
    return session_.options.trials - used;
  }

  // A shared budget spent: every task is done, and the ones still owed leader timings get them.
  void finish_all(TaskScheduler& scheduler) {
    for (size_t i = 0; i < tasks_.size(); ++i) {
      TuningTask& task = *tasks_[i];
      if (!task.status.done && task.had_round) retime_leaders(task, session_, false);
      task.status.done = true;
      scheduler.finish(i);
    }
  }

  void stop_plateaued(TuningTask& task) {
    const SchedulerOptions s = scheduler_options(session_.options);
    session_.note(task.status.name + ": best unchanged (under " +
                  std::to_string(static_cast<int>(s.plateau_gain * 100)) + "% better) for " +
                  std::to_string(s.plateau_rounds) + " rounds; its trials go to the other tasks");
    retime_leaders(task, session_, false);
    task.status.done = true;
  }

  bool out_of_time() const {
    const std::optional<double>& budget = session_.options.time_budget_s;
    if (!budget || seconds_since(start_) < *budget) return false;
    session_.note("time budget of " + std::to_string(static_cast<int>(*budget)) + " s reached");
    return true;
  }

  // Leaders still owed timings spread over rounds get them now (of the tasks that had a round in
  // this session), so that the table's best rests on as many timings as a finished task's.
  void settle_after_budget() {
    for (auto& task : tasks_) {
      if (task->status.done || !task->had_round) continue;
      const Clock::time_point settle_start = Clock::now();
      retime_leaders(*task, session_, false);
      const double settle_s = seconds_since(settle_start);
      task->status.seconds += settle_s;
      task->status.time.retime_s += settle_s;
    }
  }

  void save_model() {
    const std::optional<std::string>& path = session_.options.save_model_path;
    if (!path) return;
    model_->save(*path);
    session_.note("cost model saved to " + *path);
  }

  std::vector<double> weights() const {
    std::vector<double> w;
    for (const auto& task : tasks_) w.push_back(task->task.weight);
    return w;
  }

  std::vector<TaskStatus> statuses() const {
    std::vector<TaskStatus> out;
    for (const auto& task : tasks_) out.push_back(task->status);
    return out;
  }

  const Clock::time_point start_ = Clock::now();
  TuneOptions options_;  // the session's, the GPU's description taken from the device measured on
  std::unique_ptr<CostModel> model_;
  SessionContext session_;
  std::vector<std::unique_ptr<TuningTask>> tasks_;
};

}  // namespace

std::vector<TaskStatus> tune(const std::vector<TuneTask>& tasks, TuningLog& log, const TuneOptions& options,
                             TuningMachine& machine, const TuneCallbacks& callbacks) {
  check_distinct(tasks);
  validate_tune_options(options);
  return Tuner(tasks, log, options, machine, callbacks).run();
}

std::vector<TaskStatus> tune_as_worker(const std::vector<TuneTask>& tasks, TuningLog& log,
                                       const TuneOptions& options, TuningMachine& machine,
                                       const WorkerOptions& worker, const TuneCallbacks& callbacks) {
  check_distinct(tasks);
  validate_tune_options(options);
  if (!(worker.lease_s >= 1)) throw InputError("a worker's lease must last at least 1 s");
  return Tuner(tasks, log, options, machine, callbacks).run_worker(worker);
}

}  // namespace tessel
