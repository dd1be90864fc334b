// Sharing a tuning session's trials among its tasks (the subgraphs of a model, the cases of a
// suite) by expected gain, after Ansor's gradient-based task scheduler. Each round goes to the task
// whose objective is expected to fall fastest per trial:
//   gain_i = weight_i * (alpha * backward_i + (1 - alpha) * forward_i) [/ best_i]
// backward_i: the improvement per trial over its last few rounds (what it just achieved);
// forward_i:  best_i / trials_i, the slope of best ~ c / trials (what it may still achieve).
// The objective is the model's latency, sum_i weight_i * best_i (weights = how often a subgraph
// occurs), or, for unrelated workloads such as a suite's cases, the geometric mean of their
// speed-ups, whose gradient divides each task's gain by its own latency (a 10% gain counts alike for
// a 10 us and a 10 ms kernel).
// Every task gets one round before any gets a second; a task where nothing has run gets one more
// round first, then goes last. A task whose best has not improved by `plateau_gain` in its last
// `plateau_rounds` rounds gets no more (0: never stop early): measured on the H100, a 512x4096x4096
// matmul stopped improving near 320 of its 1344 trials while other tasks still gained.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tessel {

enum class SchedulerObjective { ModelLatency, GeometricMeanSpeedup };

struct SchedulerOptions {
  SchedulerObjective objective = SchedulerObjective::ModelLatency;
  double alpha = 0.2;
  int backward_rounds = 3;
  int plateau_rounds = 0;      // rounds without improvement before a task stops (0: never)
  double plateau_gain = 0.01;  // what counts as an improvement: this share of the best
};

class TaskScheduler {
 public:
  explicit TaskScheduler(std::vector<double> weights, SchedulerOptions options = {});

  // After a round of `task`: its trials so far and best latency (infinity when none ran).
  void record(size_t task, int64_t trials, double best_s);
  // A task that needs no more rounds (budget reached, search space exhausted).
  void finish(size_t task);
  bool finished(size_t task) const { return tasks_[task].finished; }
  // Whether the task's best has stopped improving (see plateau_rounds).
  bool plateaued(size_t task) const;

  // The task to run next; nullopt when every task is finished or plateaued.
  std::optional<size_t> next() const;
  // Every task next() may still choose, in the order it would: the tasks without a round first, in
  // task order, then by gain. A worker of a shared session takes the first one nobody else holds.
  std::vector<size_t> ranking() const;
  // The gain estimate next() ranks by (for display and tests).
  double gain(size_t task) const;

 private:
  struct Point {
    int64_t trials;
    double best_s;
  };
  struct TaskState {
    double weight = 1;
    bool finished = false;
    std::vector<Point> history;  // one per round
  };
  std::vector<TaskState> tasks_;
  SchedulerOptions options_;
};

}  // namespace tessel
