// Feature extraction cost per program: random CPU and GPU schedules of a few workloads are replayed
// and lowered (timed apart), then their features extracted. Prints one line per workload and target
// with the mean time of each part per program; `--dump` also prints the rows of the first program.
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>

#include "costmodel/features.h"
#include "schedule/lower/lower.h"
#include "schedule/ops/op_library.h"
#include "search/gpu_schedule.h"
#include "search/random_schedule.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void dump(const tessel::ProgramFeatures& f) {
  const auto& names = tessel::feature_names();
  for (int r = 0; r < f.rows; ++r) {
    std::cout << "row " << r << ":";
    for (int c = 0; c < tessel::feature_width(); ++c) {
      float v = f.values[static_cast<size_t>(r) * tessel::feature_width() + c];
      if (v != 0) std::cout << " " << names[c] << "=" << v;
    }
    std::cout << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessel;
  bool want_dump = argc > 1 && std::strcmp(argv[1], "--dump") == 0;
  const int programs = 200;
  struct Case {
    const char* op;
    std::map<std::string, std::string> params;
  };
  std::vector<Case> cases = {
      {"matmul", {{"M", "64"}, {"N", "64"}, {"K", "64"}}},
      {"matmul", {{"M", "512"}, {"N", "512"}, {"K", "512"}}},
      {"softmax", {{"rows", "128"}, {"cols", "1000"}}},
      {"conv2d", {{"N", "1"}, {"C", "64"}, {"H", "56"}, {"W", "56"}, {"F", "64"}, {"KH", "3"}, {"KW", "3"}, {"pad", "1"}}},
  };
  std::cout << std::left << std::setw(50) << "workload" << "target  rows/program  lower_ms  extract_ms\n";
  for (const Case& c : cases) {
    ComputeDAG dag = build_op(c.op, c.params);
    for (bool gpu : {false, true}) {
      double lower_s = 0, extract_s = 0;
      int64_t rows = 0;
      for (int seed = 0; seed < programs; ++seed) {
        Trace trace = gpu ? random_gpu_schedule(dag, seed, GpuTargetSpec{}) : random_schedule(dag, seed, CpuTargetSpec{16, 2});
        auto t0 = Clock::now();
        LowerOptions options;
        options.target = gpu ? LowerTarget::Gpu : LowerTarget::Cpu;
        LoweredFunc func = lower(replay(dag, trace), "bench", options);
        lower_s += since(t0);
        // Several extractions of one program: the search scores a program once, but its time should
        // not include the cache misses lowering left behind.
        const int repeats = 5;
        ProgramFeatures f;
        t0 = Clock::now();
        for (int r = 0; r < repeats; ++r) f = extract_features(func, FeatureTarget{gpu});
        extract_s += since(t0) / repeats;
        rows += f.rows;
        if (want_dump && seed == 0) {
          std::cout << to_string(func) << "\n";
          dump(f);
        }
      }
      std::string name = std::string(c.op);
      for (const auto& [k, v] : c.params) name += " " + k + "=" + v;
      std::cout << std::left << std::setw(50) << name << std::setw(8) << (gpu ? "cuda" : "llvm") << std::right
                << std::setw(12) << std::fixed << std::setprecision(1) << static_cast<double>(rows) / programs
                << std::setw(10) << std::setprecision(3) << 1e3 * lower_s / programs << std::setw(12)
                << 1e3 * extract_s / programs << "\n";
    }
  }
}
