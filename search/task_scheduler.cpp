#include "search/task_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "schedule/te/error.h"

namespace tessel {

TaskScheduler::TaskScheduler(std::vector<double> weights, SchedulerOptions options) : options_(options) {
  for (double w : weights) {
    if (!(w > 0)) throw InputError("task weights must be positive");
    tasks_.push_back(TaskState{w, false, {}});
  }
}

void TaskScheduler::record(size_t task, int64_t trials, double best_s) {
  tasks_.at(task).history.push_back({trials, best_s});
}

void TaskScheduler::finish(size_t task) { tasks_.at(task).finished = true; }

bool TaskScheduler::plateaued(size_t task) const {
  const TaskState& t = tasks_.at(task);
  const size_t rounds = static_cast<size_t>(options_.plateau_rounds);
  if (rounds == 0 || t.history.size() <= rounds) return false;
  const double now = t.history.back().best_s, then = t.history[t.history.size() - 1 - rounds].best_s;
  if (!std::isfinite(now)) return false;  // nothing ran yet: gain() sends it last instead
  return now > then * (1 - options_.plateau_gain);
}

double TaskScheduler::gain(size_t task) const {
  const TaskState& t = tasks_.at(task);
  if (t.history.empty()) return std::numeric_limits<double>::infinity();
  const Point& now = t.history.back();
  // Nothing ran yet after its first round: one more try before tasks that are merely improving;
  // after that it comes last, so a task whose candidates all fail cannot take every round.
  if (!std::isfinite(now.best_s) || now.trials <= 0)
    return t.history.size() <= 2 ? std::numeric_limits<double>::max() : 0;
  const size_t back = static_cast<size_t>(options_.backward_rounds);
  const Point& then = t.history[t.history.size() > back ? t.history.size() - 1 - back : 0];
  double backward = 0;
  if (now.trials > then.trials && std::isfinite(then.best_s))
    backward = (then.best_s - now.best_s) / static_cast<double>(now.trials - then.trials);
  const double forward = now.best_s / static_cast<double>(now.trials);
  const double g = t.weight * (options_.alpha * backward + (1 - options_.alpha) * forward);
  return options_.objective == SchedulerObjective::GeometricMeanSpeedup ? g / now.best_s : g;
}

std::optional<size_t> TaskScheduler::next() const {
  std::vector<size_t> order = ranking();
  if (order.empty()) return std::nullopt;
  return order.front();
}

std::vector<size_t> TaskScheduler::ranking() const {
  std::vector<size_t> warm_up, ranked;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].finished || plateaued(i)) continue;
    (tasks_[i].history.empty() ? warm_up : ranked).push_back(i);  // warm-up: one round each, in order
  }
  // By gain, the larger first; a tie keeps the task order.
  std::stable_sort(ranked.begin(), ranked.end(), [this](size_t a, size_t b) { return gain(a) > gain(b); });
  warm_up.insert(warm_up.end(), ranked.begin(), ranked.end());
  return warm_up;
}

}  // namespace tessel
