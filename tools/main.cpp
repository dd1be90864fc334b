// The tessel command-line program: parse arguments, call the library, print. Exit codes: 0 success,
// 1 a check failed, 2 bad input (with a message that starts with `error:`).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <new>
#include <sstream>

#include "schedule/te/error.h"
#include "tools/commands.h"
#include "tools/db_command.h"

namespace {

// --dtype, checked when the workload is resolved (the op template says whether it takes one).
void add_dtype_option(CLI::App* cmd, tessel::WorkloadArgs& w) {
  cmd->add_option("--dtype", w.dtype,
                  "element type of the op or suite case: fp32, fp16 or bf16 (16-bit types compute and accumulate in "
                  "fp32; matmul, dense, batch_matmul, conv2d)");
}

// --dtype of a model: how its weights and the values between kernels are stored.
void add_model_dtype_option(CLI::App* cmd, std::string& dtype) {
  cmd->add_option("--dtype", dtype,
                  "the model's weights and the values between its kernels in fp32 (default), fp16 or bf16; each "
                  "kernel computes in fp32, and the model's inputs and outputs stay fp32");
}

void add_workload_options(CLI::App* cmd, tessel::WorkloadArgs& w) {
  cmd->add_option("--op", w.op, "op template (see `tessel ops`)");
  cmd->add_option("--param", w.params, "op parameter NAME=VALUE (repeatable)")->allow_extra_args(false);
  cmd->add_option("--suite", w.suite, "suite JSON file");
  cmd->add_option("--case", w.case_name, "case name in the suite");
  add_dtype_option(cmd, w);
}

// --target llvm|cuda, parsed into its kind here.
void add_target_option(CLI::App* cmd, tessel::TargetKind& target) {
  cmd->add_option_function<std::string>(
         "--target", [&target](const std::string& name) { target = *tessel::target_kind_named(name); },
         "llvm (default) or cuda")
      ->check([](const std::string& name) {
        return tessel::target_kind_named(name) ? std::string() : "unknown target '" + name + "' (llvm or cuda)";
      });
}

void add_cpu_layout_option(CLI::App* cmd, bool& channel_blocks) {
  cmd->add_option_function<std::string>(
         "--cpu-layout", [&channel_blocks](const std::string& layout) { channel_blocks = layout == "blocked"; },
         "llvm: convolutions and pools with channels in blocks (blocked, the default) or as the model has them "
         "(nchw); a log tuned one way holds no records of the other's tasks")
      ->check([](const std::string& v) {
        return v == "blocked" || v == "nchw" ? std::string() : "'" + v + "' is neither blocked nor nchw";
      });
}

// A finite number above 0 and at most `max` (CLI11's own range checks let NaN through).
CLI::Validator positive_up_to(double max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        size_t used = 0;
        double value = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !std::isfinite(value) || value <= 0 || value > max) {
          std::ostringstream out;
          out << "'" << text << "' is not a number above 0 and at most " << max;
          return out.str();
        }
        return {};
      },
      "POSITIVE");
}

bool is_cuda(tessel::TargetKind target) { return target == tessel::TargetKind::Cuda; }

}  // namespace

int main(int argc, char** argv) {
  // `tessel db ...` has its own parser (database/ tools).
  if (argc >= 2 && std::string(argv[1]) == "db") {
    std::vector<std::string> rest(argv + 2, argv + argc);
    return tessel::run_db_command(rest, std::cout, std::cerr);
  }

  const std::vector<std::string> commands = {"ops",      "show", "check", "run",       "measure", "tune",
                                             "schedule", "demo", "db",    "costmodel", "tasks",   "build"};
  if (argc >= 2 && argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    std::cerr << "error: unknown command '" << argv[1]
              << "' (commands: ops, show, check, run, measure, tune, tasks, build, schedule, demo, db, costmodel)\n";
    return 2;
  }

  CLI::App app{"tessel: tensor-program schedules, compiled and tuned"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tessel ") + TESSEL_VERSION);

  app.add_subcommand("ops", "list the op templates and their parameters");

  tessel::ShowArgs show;
  CLI::App* show_cmd = app.add_subcommand("show", "print the TE, the schedule, the lowered loop nest or LLVM IR");
  add_workload_options(show_cmd, show.workload);
  show_cmd->add_option("--schedule", show.schedule, "schedule JSON file, 'default' or 'none'");
  add_target_option(show_cmd, show.target);
  show_cmd->add_option("--emit", show.emit, "te | schedule | lowered | llvm | cuda")
      ->check(CLI::IsMember({"te", "schedule", "lowered", "llvm", "cuda"}));
  show_cmd->add_flag("--dump-passes", show.dump_passes, "print the IR after every lowering pass");

  tessel::CheckArgs check;
  CLI::App* check_cmd = app.add_subcommand("check", "check schedules against the reference interpreter");
  add_workload_options(check_cmd, check.workload);
  check_cmd->add_option("--schedule", check.schedule, "an extra schedule JSON file to check");
  check_cmd->add_option("--random-schedules", check.random_schedules, "also check N random schedules")
      ->check(CLI::NonNegativeNumber);
  check_cmd->add_option("--seed", check.seed, "seed of the first random schedule")->check(CLI::NonNegativeNumber);
  add_target_option(check_cmd, check.target);
  check_cmd->add_flag("--compile-only", check.compile_only, "cuda: compile through NVRTC, do not run");
  check_cmd->add_flag("-v,--verbose", check.verbose, "print a line per schedule");

  tessel::RunArgs run;
  CLI::App* run_cmd = app.add_subcommand("run", "build a schedule and time it");
  add_workload_options(run_cmd, run.workload);
  run_cmd->add_option("--schedule", run.schedule, "schedule JSON file, 'default' or 'none'");
  tessel::RunModelArgs run_model;
  run_cmd->add_option("model", run_model.model, "a built model (MODEL.tsl, from tessel build) to run instead of --op");
  run_cmd->add_option("--input", run_model.inputs, "with a model: [NAME=]FILE, an .npy or ONNX .pb tensor (repeatable)")
      ->allow_extra_args(false);
  run_cmd->add_option("--output", run_model.outputs, "with a model: [NAME=]FILE to write an output to (repeatable)")
      ->allow_extra_args(false);
  run_cmd->add_flag("--bench", run_model.bench, "with a model: time repeated runs (median and spread)");
  run_cmd->add_flag("--profile", run_model.profile,
                    "with a model: time each kernel in repeated runs and list the time by task, slowest first");
  add_target_option(run_cmd, run.target);
  run_cmd->add_flag("!--no-flush-l2", run.flush_l2, "cuda: do not flush the L2 cache between samples");
  run_cmd->add_flag("--check", run.check, "also compare the result with the reference interpreter");
  run_cmd->add_flag("--json", run.json, "print one JSON object");
  run_cmd->add_option("--threads", run.threads,
                      "worker threads, 1 to 1024 (default: TESSEL_NUM_THREADS, else every core)")
      ->check(CLI::Range(1, 1024));
  run_cmd->add_option("--min-time", run.min_time_s, "seconds of samples to collect (default 0.2 CPU, 0.05 GPU)")
      ->check(positive_up_to(3600));
  run_cmd->add_option("--db", run.db, "tuning log (SQLite file or postgresql:// URL) for --record / --best");
  run_cmd->add_flag("--record", run.record, "append the measurement to the tuning log (implies --check)");
  run_cmd->add_flag("--best", run.best, "run the best schedule recorded in the tuning log");

  tessel::MeasureArgs measure;
  CLI::App* measure_cmd = app.add_subcommand(
      "measure", "build and measure candidate schedules in isolated workers, recording each in the tuning log");
  add_workload_options(measure_cmd, measure.workload);
  add_target_option(measure_cmd, measure.target);
  measure_cmd->add_option("--db", measure.db,
                          "tuning log (SQLite file or postgresql:// URL) to record every candidate in (required)");
  measure_cmd->add_option("--random-schedules", measure.random_schedules, "measure N random schedules")
      ->check(CLI::NonNegativeNumber);
  measure_cmd->add_option("--seed", measure.seed, "seed of the first random schedule")->check(CLI::NonNegativeNumber);
  measure_cmd->add_option("--schedule", measure.schedule, "also measure this schedule (JSON file or 'default') first");
  measure_cmd->add_option("--inject", measure.inject,
                          "for tests: faults KIND@I,... (crash, hang, wrong, oob; I counts candidates from 0)");
  measure_cmd->add_option("--builders", measure.builders, "parallel builds (default: every core)")
      ->check(CLI::Range(1, 256));
  measure_cmd->add_option("--build-timeout", measure.build_timeout_s, "seconds per build (default 15)")
      ->check(positive_up_to(86400));
  measure_cmd->add_option("--run-timeout", measure.run_timeout_s, "seconds for a candidate's checked run (default 10)")
      ->check(positive_up_to(86400));
  measure_cmd
      ->add_option("--min-time-ms", measure.min_time_ms,
                   "milliseconds of samples per candidate (default 100 CPU, 50 GPU)")
      ->check(positive_up_to(1e6));
  measure_cmd->add_option("--threads", measure.threads, "llvm: kernel threads (default: every core)")
      ->check(CLI::Range(1, 1024));
  measure_cmd->add_flag("!--no-pin", measure.pin, "llvm: do not pin kernel threads to cores");
  measure_cmd->add_flag("--flush-cache", measure.flush_cache,
                        "llvm: evict the inputs from every cache level before every sample");
  measure_cmd->add_flag("!--no-flush-l2", measure.flush_l2, "cuda: do not flush L2 before every sample");
  measure_cmd->add_option("--batch", measure.batch, "candidates built, run and committed together")
      ->check(CLI::Range(1, 100000));
  measure_cmd->add_flag("-v,--verbose", measure.verbose, "print a line per candidate");

  tessel::TuneArgs tune;
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "search schedules (sketches, evolution, a learned cost model), recording every trial in the tuning log");
  tune_cmd->add_option("model", tune.model, "an ONNX model: its fused subgraphs share the --trials budget");
  tune_cmd
      ->add_option("--input-shape", tune.input_shapes, "with a model: NAME=8x128 binds an input's shape (repeatable)")
      ->allow_extra_args(false);
  add_cpu_layout_option(tune_cmd, tune.cpu_channel_blocks);
  tune_cmd->add_option("--op", tune.workload.op, "op template (see `tessel ops`)");
  tune_cmd->add_option("--param", tune.workload.params, "op parameter NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  tune_cmd->add_option("--suite", tune.workload.suite, "suite JSON file");
  tune_cmd->add_option("--dtype", tune.workload.dtype,
                       "fp32, fp16 or bf16: the op or suite case's element type (16-bit types compute and "
                       "accumulate in fp32; matmul, dense, batch_matmul, conv2d), or a model's weights and the "
                       "values between its kernels (each kernel computes in fp32; inputs and outputs stay fp32)");
  tune_cmd->add_option("--case", tune.cases, "a suite case to tune (repeatable)")->allow_extra_args(false);
  tune_cmd->add_flag("--all", tune.all, "tune every case of the suite");
  add_target_option(tune_cmd, tune.target);
  tune_cmd
      ->add_option("--trials", tune.trials,
                   "measured candidates per workload (a model: in all), counted over the whole log (required)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  tune_cmd->add_option("--db", tune.db,
                       "tuning log (SQLite file or postgresql:// URL): records every trial; a rerun resumes from it "
                       "(required)");
  tune_cmd->add_option("--seed", tune.seed, "search seed")->check(CLI::NonNegativeNumber);
  tune_cmd
      ->add_option("--time-budget-s", tune.time_budget_s,
                   "stop after the round that passes this many seconds (then re-time the leaders still owed timings)")
      ->check(positive_up_to(1e9));
  tune_cmd->add_option("--config", tune.config,
                       "tuning config (JSON): cost model, search and re-timing settings (docs/tuning_config.md)");
  tune_cmd->add_option("--costmodel", tune.costmodel, "pre-trained cost model to start from (tessel costmodel train)");
  tune_cmd->add_option("--save-costmodel", tune.save_costmodel, "save the cost model at the end");
  tune_cmd->add_option("--builders", tune.builders, "parallel builds (default: every core)")->check(CLI::Range(1, 256));
  tune_cmd->add_option("--threads", tune.threads, "llvm: kernel threads (default: every core)")
      ->check(CLI::Range(1, 1024));
  tune_cmd
      ->add_option_function<double>(
          "--min-time-ms", [&tune](double ms) { tune.min_time_s = ms * 1e-3; },
          "milliseconds of samples per candidate (default 100 CPU, 50 GPU)")
      ->check(positive_up_to(1e6));
  tune_cmd->add_flag("!--no-flush-l2", tune.flush_l2,
                     "cuda: time without an L2 flush before every sample (as a CUDA-graph replay runs); "
                     "a log keeps one setting per workload and target");
  tune_cmd->add_flag("--flush-cache", tune.flush_cache,
                     "llvm: evict each candidate's inputs from every cache level before every sample, as a model's "
                     "kernels find their weights; a log keeps one setting per workload and target");
  tune_cmd->add_flag("-v,--verbose", tune.verbose, "a line per round instead of the live table");
  tune_cmd->add_flag("--worker", tune.worker,
                     "be one worker of a tuning session shared through --db by any number of processes and hosts "
                     "(docs/workers.md)");
  tune_cmd->add_option("--session", tune.session,
                       "--worker: the shared session's name (default: one derived from the tasks, the target and "
                       "--trials)");
  tune_cmd->add_option("--lease-s", tune.lease_s,
                       "--worker: a task's round whose worker stops renewing its lease for this long goes to "
                       "another worker (default 60)")
      ->check(CLI::Range(1.0, 86400.0));
  tune_cmd
      ->add_option("--devices", tune.devices,
                   "cuda: all, or GPU indexes (0,1): each batch spread over these GPUs, one runner on each")
      ->type_name("all|LIST");

  tessel::TasksArgs tasks;
  CLI::App* tasks_cmd = app.add_subcommand("tasks", "list a model's tuning tasks: its fused subgraphs by workload");
  tasks_cmd->add_option("model", tasks.model, "an ONNX model")->required();
  tasks_cmd->add_option("--input-shape", tasks.input_shapes, "NAME=8x128 binds an input's shape (repeatable)")
      ->allow_extra_args(false);
  add_cpu_layout_option(tasks_cmd, tasks.cpu_channel_blocks);
  add_model_dtype_option(tasks_cmd, tasks.dtype);
  add_target_option(tasks_cmd, tasks.target);
  tasks_cmd->add_flag("--json", tasks.json, "print one JSON object");

  tessel::BuildArgs build;
  CLI::App* build_cmd =
      app.add_subcommand("build", "build a model into a deployable file from its tuning log (no search)");
  build_cmd->add_option("model", build.model, "an ONNX model")->required();
  build_cmd->add_option("--input-shape", build.input_shapes, "NAME=8x128 binds an input's shape (repeatable)")
      ->allow_extra_args(false);
  add_cpu_layout_option(build_cmd, build.cpu_channel_blocks);
  add_model_dtype_option(build_cmd, build.dtype);
  add_target_option(build_cmd, build.target);
  build_cmd->add_option("--db", build.db, "tuning log: each task's best schedule (default: default schedules)");
  build_cmd->add_option("-o,--output", build.output, "the model file to write (MODEL.tsl; required)");
  build_cmd->add_flag("--json", build.json, "print the build report as one JSON object");
  build_cmd->add_flag("--memory-target", build.memory_target,
                      "cuda, the default: keep memory within weights + 1.2x the intermediates' liveness bound: a "
                      "kernel whose scratch (split-K partial sums, padded inputs) does not fit beside the values "
                      "of its step takes its best schedule that fits, maybe a slower one (each noted)");
  build_cmd->add_flag("--no-memory-target", build.no_memory_target,
                      "cuda: each task's fastest record, whatever memory its scratch takes");

  tessel::CostModelArgs costmodel;
  CLI::App* costmodel_cmd =
      app.add_subcommand("costmodel", "train the cost model on a tuning log, or evaluate how it ranks");
  costmodel_cmd->require_subcommand(1);
  CLI::App* train_cmd =
      costmodel_cmd->add_subcommand("train", "train the cost model on every trial record of a target");
  train_cmd->add_option("--db", costmodel.db, "tuning log (SQLite file or postgresql:// URL) to learn from (required)");
  train_cmd->add_option("-o,--output", costmodel.output, "where to save the model (JSON, required)");
  add_target_option(train_cmd, costmodel.target);
  train_cmd->add_option("--exclude-workload", costmodel.exclude_workloads,
                        "leave this workload key out, to evaluate on it (repeatable: a fold of several)");
  train_cmd->add_option("--config", costmodel.config,
                        "tuning config (JSON) whose costmodel section designs the model (docs/tuning_config.md)");
  CLI::App* eval_cmd = costmodel_cmd->add_subcommand("eval", "how well a model ranks the records of a tuning log");
  eval_cmd->add_option("--db", costmodel.db,
                       "tuning log (SQLite file or postgresql:// URL) with the records to rank (required)");
  eval_cmd->add_option("--costmodel", costmodel.model, "a cost model saved by `tessel costmodel train` (required)");
  add_target_option(eval_cmd, costmodel.target);
  eval_cmd->add_option("--holdout-workload", costmodel.holdout_workloads,
                       "rank only this workload key's records (repeatable)");

  tessel::DemoArgs demo;
  CLI::App* demo_cmd =
      app.add_subcommand("demo", "tune a small built-in CNN on this CPU for about two minutes: before and after");
  demo_cmd->add_option("--trials", demo.trials, "candidates to measure in all (default 2000; the time budget ends first)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  demo_cmd->add_option("--time-budget-s", demo.time_budget_s, "seconds of tuning (default 100)")
      ->check(positive_up_to(1e9));
  demo_cmd->add_option("--db", demo.db, "keep the tuning log here (default: a temporary one)");

  tessel::ScheduleArgs sched;
  CLI::App* sched_cmd = app.add_subcommand("schedule", "print the default (or a random) schedule as JSON");
  add_workload_options(sched_cmd, sched.workload);
  sched_cmd->add_option("--random-seed", sched.random_seed, "print the random schedule of this seed")
      ->check(CLI::NonNegativeNumber);
  add_target_option(sched_cmd, sched.target);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << " (see tessel --help)\n";
    return 2;
  }

  try {
    if (app.got_subcommand("ops")) return tessel::cmd_ops();
    if (app.got_subcommand("show")) return tessel::cmd_show(show);
    if (app.got_subcommand("check"))
      return is_cuda(check.target) ? tessel::cmd_check_cuda(check) : tessel::cmd_check(check);
    if (app.got_subcommand("run")) {
      if (!run_model.model.empty()) {
        if (!run.workload.dtype.empty())
          throw tessel::InputError("--dtype goes with --op or --suite; a built model keeps the types it was built with");
        run_model.json = run.json;
        run_model.threads = run.threads;
        return tessel::cmd_run_model(run_model);
      }
      for (const auto& [given, flag] :
           {std::pair{run_model.bench, "--bench"}, {run_model.profile, "--profile"},
            {!run_model.inputs.empty(), "--input"}, {!run_model.outputs.empty(), "--output"}})
        if (given) throw tessel::InputError(std::string(flag) + " is for a built model: tessel run MODEL.tsl " + flag);
      return is_cuda(run.target) ? tessel::cmd_run_cuda(run) : tessel::cmd_run(run);
    }
    if (app.got_subcommand("measure")) return tessel::cmd_measure(measure);
    if (app.got_subcommand("tune")) return tessel::cmd_tune(tune);
    if (app.got_subcommand("tasks")) return tessel::cmd_tasks(tasks);
    if (app.got_subcommand("build")) return tessel::cmd_build(build);
    if (app.got_subcommand("schedule")) return tessel::cmd_schedule(sched);
    if (app.got_subcommand("demo")) return tessel::cmd_demo(demo);
    if (costmodel_cmd->got_subcommand("train")) return tessel::cmd_costmodel_train(costmodel);
    if (costmodel_cmd->got_subcommand("eval")) return tessel::cmd_costmodel_eval(costmodel);
  } catch (const tessel::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const tessel::ScheduleError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const tessel::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // Workloads are sized before anything is allocated (schedule/interpreter/host_memory.h); this
    // catches whatever else runs out of memory, so that it ends with a message, not an abort.
    std::cerr << "error: out of memory\n";
    return 1;
  }
  return 2;
}
