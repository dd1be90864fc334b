// tessel demo: the main job on its embedded default. A short real tuning session on this CPU: a few
// suite cases, each searched from its default schedule (sketches, evolution, the XGBoost cost
// model), every trial recorded in a tuning log, then the before / after table.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "schedule/te/error.h"
#include "tools/commands.h"

namespace tessel {

namespace {

// Small enough that a session of about two minutes on two cores shows each case improve.
const std::vector<std::string> kDefaultCases = {"softmax_attn_96x128x128", "bias_residual_layernorm_1024x768",
                                                "bmm_qk_96x128x64x128"};

}  // namespace

int cmd_demo(const DemoArgs& args) {
  TuneArgs tune;
  tune.workload.suite = args.suite;
  tune.cases = args.cases.empty() ? kDefaultCases : args.cases;
  tune.target = TargetKind::Llvm;
  tune.trials = args.trials;
  tune.time_budget_s = args.time_budget_s;
  tune.seed = 1;
  // A fresh log unless the user names one: a demo rerun should tune again, not resume.
  std::string temporary;
  if (args.db.empty()) {
    temporary = (std::filesystem::temp_directory_path() / ("tessel-demo-" + std::to_string(getpid()) + ".db")).string();
    std::filesystem::remove(temporary);
  }
  tune.db = args.db.empty() ? temporary : args.db;
  std::cout << "tessel demo: tuning " << tune.cases.size() << " suite cases on this CPU, " << tune.trials
            << " trials each (at most " << static_cast<int>(args.time_budget_s) << " s)\n";
  auto remove_temporary = [&] {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(temporary + suffix);
  };
  int status = 0;
  try {
    status = cmd_tune(tune);
  } catch (...) {
    if (!temporary.empty()) remove_temporary();
    throw;
  }
  if (!temporary.empty()) {
    remove_temporary();
    std::cout << "(the demo's tuning log was temporary; pass --db PATH to keep it and `tessel run --best` from it)\n";
  }
  return status;
}

}  // namespace tessel
