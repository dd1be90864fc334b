// The tessel subcommands. Each returns the process exit code: 0 success, 1 a check failed, 2 bad
// input (the caller prints InputError / ScheduleError messages as `error: ...`).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessel {

struct WorkloadArgs {
  std::string op;
  std::vector<std::string> params;
  std::string suite;
  std::string case_name;
};

struct ShowArgs {
  WorkloadArgs workload;
  std::string schedule = "default";  // a file, "default" or "none"
  std::string target = "llvm";
  std::string emit = "lowered";      // te | schedule | lowered | llvm
  bool dump_passes = false;
};

struct CheckArgs {
  WorkloadArgs workload;
  std::string schedule;  // an extra schedule file to check
  int random_schedules = 0;
  uint64_t seed = 1;
  std::string target = "llvm";
  bool verbose = false;
  bool compile_only = false;  // cuda: build through NVRTC without a GPU
};

struct RunArgs {
  WorkloadArgs workload;
  std::string schedule = "default";
  std::string target = "llvm";
  bool check = false;
  bool json = false;
  int threads = 0;  // 0: every core
  double min_time_s = 0.2;
  std::string db;      // tuning log
  bool record = false; // append the measurement to the log (checks correctness first)
  bool best = false;   // run the best schedule the log holds for this workload and target
  bool flush_l2 = true; // cuda: flush the L2 cache before every sample
};

struct MeasureArgs {
  WorkloadArgs workload;
  std::string target = "llvm";
  std::string db;
  int random_schedules = 0;
  uint64_t seed = 1;
  std::string schedule;  // also measure this schedule (a file or "default") as candidate 0
  std::string inject;    // test faults: "crash@3,hang@5,wrong@7,oob@9"
  int builders = 0;      // 0: every core
  double build_timeout_s = 15;
  double run_timeout_s = 10;
  double min_time_ms = 0;  // 0: the target's default (100 ms CPU, 50 ms GPU)
  int threads = 0;
  bool pin = true;
  bool flush_cache = false;  // llvm: evict caches before every sample
  bool flush_l2 = true;      // cuda
  int batch = 0;             // candidates built, run and committed together; 0: 4 per builder (at least 8)
  bool verbose = false;
};

struct TuneArgs {
  WorkloadArgs workload;             // one workload (--op/--param or --suite with one --case)
  std::vector<std::string> cases;    // --case, repeatable, with --suite
  bool all = false;                  // every case of --suite
  std::string target = "llvm";
  int64_t trials = 0;                // per workload and target, counted over the whole log (required)
  std::string db;
  uint64_t seed = 0;
  std::string model;                 // pre-trained XGBoost model to start from
  std::string save_model;            // save the model at the end
  std::string model_kind = "xgboost";
  std::string objective;             // the new model's loss, rank (when empty) or packsum; not with --model
  std::string model_input;           // the new model's input, rows or programs ("": by target); not with --model
  double mlp_weight = -1;            // the new model's neural-ranker weight (below 0: the input's default); not with --model
  std::string mlp_network;           // the new model's neural ranker, summary ("") or deepsets; not with --model
  std::string strategy = "evolution";
  int population = 0;                // 0: the search default
  int generations = -1;              // -1: the search default
  int batch = 0;
  int retime_leaders = 3;
  int retime_timings = 3;
  bool retime_back_to_back = false;
  std::string yardstick;             // default or none ("": by target)
  double time_budget_s = 0;
  int builders = 0;
  int threads = 0;
  double min_time_ms = 0;
  bool flush_l2 = true;               // cuda: flush the L2 cache before every sample
  bool verbose = false;
};

struct ModelArgs {
  std::string db;
  std::string target = "llvm";
  std::string output;            // train: where to save the model
  std::vector<std::string> exclude_workloads;  // train: leave these workloads out
  std::string objective = "rank";  // train: the loss, rank or packsum
  std::string model_input;         // train: rows or programs ("": programs for cuda, rows for llvm)
  double mlp_weight = -1;          // train: the neural ranker's weight (below 0: the input's default)
  std::string mlp_network;         // train: the neural ranker, summary or deepsets ("": deepsets)
  std::string model;             // eval: the model file
  std::vector<std::string> holdout_workloads;  // eval: score only these workloads (default: every workload)
};

struct ScheduleArgs {
  WorkloadArgs workload;
  int64_t random_seed = -1;  // >= 0: a random schedule instead of the default
  std::string target = "llvm";
};

struct DemoArgs {
  std::string suite = "suites/operators.json";
  std::vector<std::string> cases;  // empty: the embedded default list
  int64_t trials = 64;
  double time_budget_s = 110;
  std::string db;                  // empty: a temporary log
};

struct Workload;
struct Trace;
struct CudaProgram;
Workload workload_of_args(const WorkloadArgs& w);
// The schedule a command runs: a JSON file, "default" (the target's default schedule) or "none".
Trace schedule_for(const Workload& w, const std::string& spec, const std::string& target);
// The kernels' source followed by one `// launch` line per kernel.
void print_cuda_program(std::ostream& out, const CudaProgram& program);

int cmd_ops();
int cmd_demo(const DemoArgs& args);
int cmd_show(const ShowArgs& args);
int cmd_check(const CheckArgs& args);
int cmd_run(const RunArgs& args);
int cmd_schedule(const ScheduleArgs& args);
int cmd_measure(const MeasureArgs& args);  // tools/measure_command.cpp
int cmd_tune(const TuneArgs& args);        // tools/tune_command.cpp
// tessel model train / eval (tools/model_command.cpp).
int cmd_model_train(const ModelArgs& args);
int cmd_model_eval(const ModelArgs& args);

// --target cuda (tools/cuda_commands.cpp).
int cmd_check_cuda(const CheckArgs& args);
int cmd_run_cuda(const RunArgs& args);

}  // namespace tessel
