// The tessel subcommands. Each returns the process exit code: 0 success, 1 a check failed, 2 bad
// input (the caller prints InputError / ScheduleError messages as `error: ...`).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "schedule/target_kind.h"

namespace tessel {

struct WorkloadArgs {
  std::string op;
  std::vector<std::string> params;
  std::string suite;
  std::string case_name;
  std::string dtype;  // --dtype: the element type of an op template or suite case; empty: as given
};

struct ShowArgs {
  WorkloadArgs workload;
  std::string schedule = "default";  // a file, "default" or "none"
  TargetKind target = TargetKind::Llvm;
  std::string emit = "lowered";  // te | schedule | lowered | llvm
  bool dump_passes = false;
};

struct CheckArgs {
  WorkloadArgs workload;
  std::string schedule;  // an extra schedule file to check
  int random_schedules = 0;
  uint64_t seed = 1;
  TargetKind target = TargetKind::Llvm;
  bool verbose = false;
  bool compile_only = false;  // cuda: build through NVRTC without a GPU
};

struct RunArgs {
  WorkloadArgs workload;
  std::string schedule = "default";
  TargetKind target = TargetKind::Llvm;
  bool check = false;
  bool json = false;
  int threads = 0;                   // 0: every core
  std::optional<double> min_time_s;  // of samples (unset: 0.2 s on the CPU, 0.05 s on the GPU)
  std::string db;                    // tuning log
  bool record = false;               // append the measurement to the log (checks correctness first)
  bool best = false;                 // run the best schedule the log holds for this workload and target
  bool flush_l2 = true;              // cuda: flush the L2 cache before every sample
};

struct MeasureArgs {
  WorkloadArgs workload;
  TargetKind target = TargetKind::Llvm;
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
  bool flush_cache = false;  // llvm: evict the inputs from the caches before every sample
  bool flush_l2 = true;      // cuda
  int batch = 0;             // candidates built, run and committed together; 0: 4 per builder (at least 8)
  bool verbose = false;
};

// What `tessel tune` reads off its command line. The research settings (the cost model's design, the
// search's population, re-timing the leaders) come from a tuning config file (search/tune_config.h).
struct TuneArgs {
  std::optional<std::string> model;       // an ONNX model: its tasks share the trial budget
  std::vector<std::string> input_shapes;  // with a model: NAME=8x128, repeatable
  bool cpu_channel_blocks = true;         // with a model on llvm: --cpu-layout blocked (true) | nchw
  WorkloadArgs workload;                  // one workload (--op/--param)
  std::vector<std::string> cases;         // --case, repeatable, with --suite
  bool all = false;                       // every case of --suite
  TargetKind target = TargetKind::Llvm;
  int64_t trials = 0;  // per workload and target, counted over the whole log (required)
  std::string db;
  uint64_t seed = 0;
  std::optional<std::string> config;     // a tuning config file
  std::optional<std::string> costmodel;  // a pre-trained cost model to start from
  std::optional<std::string> save_costmodel;
  std::optional<double> time_budget_s;
  int builders = 0;                  // 0: every core
  int threads = 0;                   // llvm: kernel threads (0: every core)
  std::optional<double> min_time_s;  // of samples per candidate (unset: the target's default)
  bool flush_l2 = true;              // cuda: flush the L2 cache before every sample
  bool flush_cache = false;          // llvm: evict each candidate's inputs before every sample
  bool verbose = false;
  bool worker = false;                  // one worker of a tuning session shared through the log
  std::optional<std::string> session;   // --worker: the session's name (default: from its tasks)
  double lease_s = 60;                  // --worker: seconds a lease lasts without renewal
  std::optional<std::string> devices;   // cuda: "all" or GPU indexes "0,1": batches spread over them
};

struct TasksArgs {
  std::string model;                      // an ONNX file
  std::vector<std::string> input_shapes;  // NAME=8x128, repeatable
  bool cpu_channel_blocks = true;         // llvm: --cpu-layout blocked (true) | nchw
  std::string dtype;                      // --dtype: the model stored in fp32 (default), fp16 or bf16
  TargetKind target = TargetKind::Llvm;
  bool json = false;
};

struct BuildArgs {
  std::string model;                      // an ONNX file
  std::vector<std::string> input_shapes;  // NAME=8x128, repeatable
  bool cpu_channel_blocks = true;         // llvm: --cpu-layout blocked (true) | nchw
  std::string dtype;                      // --dtype: the model stored in fp32 (default), fp16 or bf16
  TargetKind target = TargetKind::Llvm;
  std::optional<std::string> db;  // the tuning log (none: default schedules)
  std::string output;             // the model file to write
  bool memory_target = false;     // cuda: --memory-target, the default (BuildOptions::memory_target)
  bool no_memory_target = false;  // cuda: --no-memory-target, the fastest records whatever their scratch
  bool json = false;              // the build report as one JSON object
};

// tessel run MODEL.tsl: a built model on inputs from files.
struct RunModelArgs {
  std::string model;                 // the model file
  std::vector<std::string> inputs;   // [NAME=]FILE (.pb or .npy), by position when unnamed
  std::vector<std::string> outputs;  // [NAME=]FILE to write
  int threads = 0;                   // llvm models: kernel threads (0: the runtime's default)
  bool bench = false;
  bool profile = false;  // time each kernel in the run, and report them by task
  bool json = false;
};

struct CostModelArgs {
  std::string db;
  TargetKind target = TargetKind::Llvm;
  std::string output;                          // train: where to save the model
  std::vector<std::string> exclude_workloads;  // train: leave these workloads out
  std::optional<std::string> config;           // train: a tuning config (its "costmodel" section)
  std::string model;                           // eval: the model file
  std::vector<std::string> holdout_workloads;  // eval: score only these workloads (default: every workload)
};

struct ScheduleArgs {
  WorkloadArgs workload;
  int64_t random_seed = -1;  // >= 0: a random schedule instead of the default
  TargetKind target = TargetKind::Llvm;
};

struct DemoArgs {
  int64_t trials = 2000;      // in all (the time budget usually ends the tuning first)
  double time_budget_s = 100;
  std::string db;             // empty: a temporary log
};

struct Workload;
struct Trace;
struct CudaProgram;
Workload workload_of_args(const WorkloadArgs& w);
// The schedule a command runs: a JSON file, "default" (the target's default schedule) or "none".
Trace schedule_for(const Workload& w, const std::string& spec, TargetKind target);
// The kernels' source followed by one `// launch` line per kernel.
void print_cuda_program(std::ostream& out, const CudaProgram& program);

int cmd_ops();
int cmd_demo(const DemoArgs& args);
int cmd_show(const ShowArgs& args);
int cmd_check(const CheckArgs& args);
int cmd_run(const RunArgs& args);
int cmd_schedule(const ScheduleArgs& args);
int cmd_measure(const MeasureArgs& args);     // tools/measure_command.cpp
int cmd_tune(const TuneArgs& args);           // tools/tune_command.cpp
int cmd_tasks(const TasksArgs& args);         // tools/tasks_command.cpp
int cmd_build(const BuildArgs& args);         // tools/build_command.cpp
int cmd_run_model(const RunModelArgs& args);  // tools/run_model_command.cpp
struct ImportOptions;
// The import options of `--input-shape NAME=8x128 ...` (InputError for a malformed or repeated one)
// and `--cpu-layout blocked|nchw` (blocked: channels in blocks of the host's vector lanes).
ImportOptions import_options(const std::vector<std::string>& input_shapes, bool cpu_channel_blocks,
                             const std::string& dtype);
// tessel costmodel train / eval (tools/costmodel_command.cpp).
int cmd_costmodel_train(const CostModelArgs& args);
int cmd_costmodel_eval(const CostModelArgs& args);

// --target cuda (tools/cuda_commands.cpp).
int cmd_check_cuda(const CheckArgs& args);
int cmd_run_cuda(const RunArgs& args);

}  // namespace tessel
