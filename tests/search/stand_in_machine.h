// What the tuning-loop tests share: a scratch tuning log and a stand-in machine whose timings are a
// function of each schedule's lowered program.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "costmodel/features.h"
#include "search/tuning_machine.h"

namespace tessel_test {

using namespace tessel;

// A scratch tuning log, removed at the end.
class TempLog {
 public:
  TempLog() {
    path_ = (std::filesystem::temp_directory_path() /
             ("tessel-tuner-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++) + ".db"))
                .string();
    std::filesystem::remove(path_);
  }
  ~TempLog() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }
  TuningLog open() const { return TuningLog::open(path_, TuningLog::Mode::ReadWrite); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

// The largest value of a feature column over a program's rows.
inline double column_max(const ProgramFeatures& f, const std::string& name) {
  const std::vector<std::string>& names = feature_names();
  const size_t col = static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
  REQUIRE(col < names.size());
  double best = 0;
  for (int r = 0; r < f.rows; ++r) best = std::max(best, static_cast<double>(f.values[r * feature_width() + col]));
  return best;
}

// A machine whose "timing" of a schedule is a fixed function of its lowered program's features
// (docs/costmodel_features.md): vector stores of 8 lanes, parallel_prod 4 and unroll_copies 3 are
// best, guarded tiles and integer division cost. Deterministic, so that a test can say what the loop must have done;
// learnable from the features (and not found by chance in a few rounds), so that a cost model can guide a search.
class StandInMachine : public TuningMachine {
 public:
  // With `flat`, every schedule takes the same time: nothing ever improves.
  bool flat = false;
  // Seconds each candidate takes to "measure" (a worker killed mid-round needs a round to be in).
  double delay_s = 0;

  struct Measurer : CandidateMeasurer {
    explicit Measurer(ComputeDAG dag, StandInMachine* machine) : dag(std::move(dag)), machine(machine) {}
    std::vector<MeasureResult> measure(const std::vector<Candidate>& candidates,
                                       const std::function<void(size_t, const MeasureResult&)>& on_result) override {
      std::vector<MeasureResult> results;
      for (size_t i = 0; i < candidates.size(); ++i) {
        MeasureResult r;
        try {
          const ProgramFeatures f = features_of_schedule(dag, candidates[i].trace, FeatureTarget{});
          r.median_s = machine->flat ? 1e-3
                                     : 1e-3 * (1 + std::abs(std::log2(std::max(1.0, column_max(f, "vec_len"))) - 3)) *
                                           (1 + 0.5 * column_max(f, "num_guards")) *
                                           (1 + 0.3 * std::abs(column_max(f, "parallel_prod") - 4)) *
                                           (1 + 0.2 * std::abs(column_max(f, "unroll_copies") - 3)) *
                                           (1 + 0.1 * column_max(f, "int_divmod"));
          r.samples_s = {r.median_s};
        } catch (const ScheduleError& e) {
          r.error = ErrorCode::Instantiation;
          r.message = e.what();
        }
        if (machine->delay_s > 0) usleep(static_cast<useconds_t>(machine->delay_s * 1e6));
        ++machine->measured;
        if (build_progress) build_progress(i + 1, candidates.size());
        if (on_result) on_result(i, r);
        results.push_back(r);
      }
      machine->batches.push_back(candidates.size());
      return results;
    }
    void on_build_progress(std::function<void(size_t, size_t)> callback) override { build_progress = callback; }
    void set_run_timeout(double) override {}
    const std::string& settings_json() const override { return settings; }

    ComputeDAG dag;
    StandInMachine* machine;
    std::function<void(size_t, size_t)> build_progress;
    std::string settings = R"({"flush":false})";
  };

  std::unique_ptr<CandidateMeasurer> measurer(const ComputeDAG& dag, const MeasureOptions&) override {
    ++measurers;
    return std::make_unique<Measurer>(dag, this);
  }
  TargetInfo target() const override { return TargetInfo{"llvm", "stand-in", "a test machine", "", "", ""}; }

  int measurers = 0;
  int64_t measured = 0;
  std::vector<size_t> batches;
};

}  // namespace tessel_test
