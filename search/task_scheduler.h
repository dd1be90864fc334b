// Sharing a tuning session's trials among its tasks (the subgraphs of a model, the cases of a
// suite) by expected end-to-end gain, after Ansor's gradient-based task scheduler. The objective is
// sum_i weight_i * best_latency_i (weights = how often a subgraph occurs); each round goes to the
// task whose latency is expected to fall fastest per trial, weighted:
//   gain_i = weight_i * (alpha * backward_i + (1 - alpha) * forward_i)
// backward_i: the improvement per trial over its last few rounds (what it just achieved);
// forward_i:  best_i / trials_i, the slope of best ~ c / trials (what it may still achieve).
// Every task gets one round before any gets a second; a task where nothing has run gets one more
// round first, then goes last.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tessel {

class TaskScheduler {
 public:
  explicit TaskScheduler(std::vector<double> weights, double alpha = 0.2, int backward_rounds = 3);

  // After a round of `task`: its trials so far and best latency (infinity when none ran).
  void record(size_t task, int64_t trials, double best_s);
  // A task that needs no more rounds (budget reached, search space exhausted).
  void finish(size_t task);
  bool finished(size_t task) const { return tasks_[task].finished; }

  // The task to run next; nullopt when every task is finished.
  std::optional<size_t> next() const;
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
  double alpha_;
  int backward_rounds_;
};

}  // namespace tessel
