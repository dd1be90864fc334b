#include "search/task_scheduler.h"

#include <cmath>
#include <limits>

#include "schedule/te/error.h"

namespace tessel {

TaskScheduler::TaskScheduler(std::vector<double> weights, double alpha, int backward_rounds)
    : alpha_(alpha), backward_rounds_(backward_rounds) {
  for (double w : weights) {
    if (!(w > 0)) throw InputError("task weights must be positive");
    tasks_.push_back(TaskState{w, false, {}});
  }
}

void TaskScheduler::record(size_t task, int64_t trials, double best_s) { tasks_.at(task).history.push_back({trials, best_s}); }

void TaskScheduler::finish(size_t task) { tasks_.at(task).finished = true; }

double TaskScheduler::gain(size_t task) const {
  const TaskState& t = tasks_.at(task);
  if (t.history.empty()) return std::numeric_limits<double>::infinity();
  const Point& now = t.history.back();
  // Nothing ran yet after its first round: one more try before tasks that are merely improving;
  // after that it comes last, so a task whose candidates all fail cannot take every round.
  if (!std::isfinite(now.best_s) || now.trials <= 0)
    return t.history.size() <= 2 ? std::numeric_limits<double>::max() : 0;
  const Point& then = t.history[t.history.size() > static_cast<size_t>(backward_rounds_)
                                    ? t.history.size() - 1 - static_cast<size_t>(backward_rounds_)
                                    : 0];
  double backward = 0;
  if (now.trials > then.trials && std::isfinite(then.best_s))
    backward = (then.best_s - now.best_s) / static_cast<double>(now.trials - then.trials);
  double forward = now.best_s / static_cast<double>(now.trials);
  return t.weight * (alpha_ * backward + (1 - alpha_) * forward);
}

std::optional<size_t> TaskScheduler::next() const {
  std::optional<size_t> best;
  double best_gain = -1;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].finished) continue;
    if (tasks_[i].history.empty()) return i;  // warm-up: one round each, in order
    double g = gain(i);
    if (!best || g > best_gain) {
      best = i;
      best_gain = g;
    }
  }
  return best;
}

}  // namespace tessel
