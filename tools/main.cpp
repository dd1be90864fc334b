// The tessel command-line program: parse arguments, call the library, print. Exit codes: 0 success,
// 1 a check failed, 2 bad input (with a message that starts with `error:`).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "schedule/te/error.h"
#include "tools/commands.h"
#include "tools/db_command.h"

namespace {

void add_workload_options(CLI::App* cmd, tessel::WorkloadArgs& w) {
  cmd->add_option("--op", w.op, "op template (see `tessel ops`)");
  cmd->add_option("--param", w.params, "op parameter NAME=VALUE (repeatable)")->allow_extra_args(false);
  cmd->add_option("--suite", w.suite, "suite JSON file");
  cmd->add_option("--case", w.case_name, "case name in the suite");
}

bool is_cuda(const std::string& target) {
  if (target != "llvm" && target != "cuda")
    throw tessel::InputError("unknown --target '" + target + "' (llvm or cuda)");
  return target == "cuda";
}

}  // namespace

int main(int argc, char** argv) {
  // `tessel db ...` has its own parser (database/ tools).
  if (argc >= 2 && std::string(argv[1]) == "db") {
    std::vector<std::string> rest(argv + 2, argv + argc);
    return tessel::run_db_command(rest, std::cout, std::cerr);
  }

  const std::vector<std::string> commands = {"ops", "show", "check", "run", "measure", "tune", "schedule", "demo", "db", "model"};
  if (argc >= 2 && argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    std::cerr << "error: unknown command '" << argv[1] << "' (commands: ops, show, check, run, measure, tune, schedule, demo, db, model)\n";
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
  show_cmd->add_option("--target", show.target, "llvm (default) or cuda");
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
  check_cmd->add_option("--target", check.target, "llvm (default) or cuda");
  check_cmd->add_flag("--compile-only", check.compile_only, "cuda: compile through NVRTC, do not run");
  check_cmd->add_flag("-v,--verbose", check.verbose, "print a line per schedule");

  tessel::RunArgs run;
  CLI::App* run_cmd = app.add_subcommand("run", "build a schedule and time it");
  add_workload_options(run_cmd, run.workload);
  run_cmd->add_option("--schedule", run.schedule, "schedule JSON file, 'default' or 'none'");
  run_cmd->add_option("--target", run.target, "llvm (default) or cuda");
  run_cmd->add_flag("!--no-flush-l2", run.flush_l2, "cuda: do not flush the L2 cache between samples");
  run_cmd->add_flag("--check", run.check, "also compare the result with the reference interpreter");
  run_cmd->add_flag("--json", run.json, "print one JSON object");
  run_cmd->add_option("--threads", run.threads, "worker threads, 1 to 1024 (default: every core)")
      ->check(CLI::Range(1, 1024));
  run_cmd->add_option("--min-time", run.min_time_s, "seconds of samples to collect (default 0.2)")
      ->check(CLI::PositiveNumber);
  run_cmd->add_option("--db", run.db, "tuning log (SQLite) for --record / --best");
  run_cmd->add_flag("--record", run.record, "append the measurement to the tuning log (implies --check)");
  run_cmd->add_flag("--best", run.best, "run the best schedule recorded in the tuning log");

  tessel::MeasureArgs measure;
  CLI::App* measure_cmd = app.add_subcommand(
      "measure", "build and measure candidate schedules in isolated workers, recording each in the tuning log");
  add_workload_options(measure_cmd, measure.workload);
  measure_cmd->add_option("--target", measure.target, "llvm (default) or cuda");
  measure_cmd->add_option("--db", measure.db, "tuning log (SQLite) to record every candidate in (required)");
  measure_cmd->add_option("--random-schedules", measure.random_schedules, "measure N random schedules")
      ->check(CLI::NonNegativeNumber);
  measure_cmd->add_option("--seed", measure.seed, "seed of the first random schedule")->check(CLI::NonNegativeNumber);
  measure_cmd->add_option("--schedule", measure.schedule, "also measure this schedule (JSON file or 'default') first");
  measure_cmd->add_option("--inject", measure.inject,
                          "for tests: faults KIND@I,... (crash, hang, wrong, oob; I counts candidates from 0)");
  measure_cmd->add_option("--builders", measure.builders, "parallel builds (default: every core)")
      ->check(CLI::Range(1, 256));
  measure_cmd->add_option("--build-timeout", measure.build_timeout_s, "seconds per build (default 15)")
      ->check(CLI::PositiveNumber);
  measure_cmd->add_option("--run-timeout", measure.run_timeout_s, "seconds for a candidate's checked run (default 10)")
      ->check(CLI::PositiveNumber);
  measure_cmd->add_option("--min-time-ms", measure.min_time_ms,
                          "milliseconds of samples per candidate (default 100 CPU, 50 GPU)")
      ->check(CLI::PositiveNumber);
  measure_cmd->add_option("--threads", measure.threads, "llvm: kernel threads (default: every core)")
      ->check(CLI::Range(1, 1024));
  measure_cmd->add_flag("!--no-pin", measure.pin, "llvm: do not pin kernel threads to cores");
  measure_cmd->add_flag("--flush-cache", measure.flush_cache, "llvm: evict the caches before every sample");
  measure_cmd->add_flag("!--no-flush-l2", measure.flush_l2, "cuda: do not flush L2 before every sample");
  measure_cmd->add_option("--batch", measure.batch, "candidates built, run and committed together")
      ->check(CLI::Range(1, 100000));
  measure_cmd->add_flag("-v,--verbose", measure.verbose, "print a line per candidate");

  tessel::TuneArgs tune;
  CLI::App* tune_cmd = app.add_subcommand(
      "tune", "search schedules (sketches, evolution, XGBoost cost model), recording every trial in the tuning log");
  tune_cmd->add_option("--op", tune.workload.op, "op template (see `tessel ops`)");
  tune_cmd->add_option("--param", tune.workload.params, "op parameter NAME=VALUE (repeatable)")->allow_extra_args(false);
  tune_cmd->add_option("--suite", tune.workload.suite, "suite JSON file");
  tune_cmd->add_option("--case", tune.cases, "a suite case to tune (repeatable)")->allow_extra_args(false);
  tune_cmd->add_flag("--all", tune.all, "tune every case of the suite");
  tune_cmd->add_option("--target", tune.target, "llvm (default) or cuda");
  tune_cmd->add_option("--trials", tune.trials, "measured candidates per workload, counted over the whole log (required)")
      ->check(CLI::PositiveNumber);
  tune_cmd->add_option("--db", tune.db, "tuning log (SQLite): records every trial; a rerun resumes from it (required)");
  tune_cmd->add_option("--seed", tune.seed, "search seed")->check(CLI::NonNegativeNumber);
  tune_cmd->add_option("--model", tune.model, "pre-trained XGBoost cost model to start from (tessel model train)");
  tune_cmd->add_option("--save-model", tune.save_model, "save the cost model at the end");
  tune_cmd->add_option("--model-kind", tune.model_kind, "xgboost (default) or random (no model, for ablations)");
  tune_cmd->add_option("--objective", tune.objective, "cost-model loss: rank (default, pairwise within a workload) or packsum");
  tune_cmd->add_option("--model-input", tune.model_input,
                       "what the cost model scores: programs (one summary each; default for cuda), rows (every "
                       "store, summed; default for llvm) or pairs (two programs' summaries: which is faster)");
  tune_cmd->add_option("--mlp-weight", tune.mlp_weight,
                       "programs input: the neural ranker's share of the cost model's score (default 1, 2 for "
                       "deepsets; 0: trees only)")
      ->check(CLI::NonNegativeNumber);
  tune_cmd->add_option("--mlp-network", tune.mlp_network,
                       "programs input: the neural ranker, summary (default: retrained every round, so kept "
                       "cheap) or deepsets (reads every feature row; ranks better, about 14x the arithmetic)");
  tune_cmd->add_option("--strategy", tune.strategy, "evolution (default) or random (sketch samples only)");
  tune_cmd->add_option("--population", tune.population, "schedules per generation (default 192)")
      ->check(CLI::Range(2, 100000));
  tune_cmd->add_option("--generations", tune.generations, "generations per round (default 3)")->check(CLI::Range(0, 1000));
  tune_cmd->add_option("--batch", tune.batch, "candidates measured per round (default 32 CPU, 64 GPU)")
      ->check(CLI::Range(1, 100000));
  tune_cmd->add_option("--retime-leaders", tune.retime_leaders,
                       "fastest schedules measured again after each round, with the default (default 3; 0: none)")
      ->check(CLI::Range(0, 1000));
  tune_cmd->add_option("--retime-timings", tune.retime_timings, "timings a leader is brought up to (default 3)")
      ->check(CLI::Range(1, 1000));
  tune_cmd->add_flag("--retime-back-to-back", tune.retime_back_to_back,
                     "a leader's timings all at once (default: one a round, so that they lie rounds apart)");
  tune_cmd->add_option("--yardstick", tune.yardstick,
                       "default: time the default schedule around every retimed leader and rank leaders relative to "
                       "it; none (default: default on llvm, none on cuda)")
      ->check(CLI::IsMember({"default", "none"}));
  tune_cmd->add_option("--time-budget-s", tune.time_budget_s,
                       "stop after the round that passes this many seconds (then re-time the leaders still owed timings)")
      ->check(CLI::PositiveNumber);
  tune_cmd->add_option("--builders", tune.builders, "parallel builds (default: every core)")->check(CLI::Range(1, 256));
  tune_cmd->add_option("--threads", tune.threads, "llvm: kernel threads (default: every core)")->check(CLI::Range(1, 1024));
  tune_cmd->add_option("--min-time-ms", tune.min_time_ms, "milliseconds of samples per candidate (default 100 CPU, 50 GPU)")
      ->check(CLI::PositiveNumber);
  tune_cmd->add_flag("!--no-flush-l2", tune.flush_l2,
                    "cuda: time without an L2 flush before every sample (as a CUDA-graph replay runs); "
                    "a log keeps one setting per workload and target");
  tune_cmd->add_flag("-v,--verbose", tune.verbose, "a line per round instead of the live table");
  tessel::ModelArgs model;
  CLI::App* model_cmd = app.add_subcommand("model", "train the cost model on a tuning log, or evaluate its ranking");
  model_cmd->require_subcommand(1);
  CLI::App* train_cmd =
      model_cmd->add_subcommand("train", "train the XGBoost cost model on every trial record of a target");
  train_cmd->add_option("--db", model.db, "tuning log (SQLite) to learn from (required)");
  train_cmd->add_option("-o,--output", model.output, "where to save the model (JSON, required)");
  train_cmd->add_option("--target", model.target, "llvm (default) or cuda");
  train_cmd->add_option("--exclude-workload", model.exclude_workloads,
                        "leave this workload key out, to evaluate on it (repeatable: a fold of several)");
  train_cmd->add_option("--objective", model.objective, "loss: rank (default, pairwise within a workload) or packsum");
  train_cmd->add_option("--model-input", model.model_input,
                        "what the model scores: programs (default for cuda), rows (default for llvm) or pairs");
  train_cmd->add_option("--mlp-weight", model.mlp_weight,
                        "programs input: the neural ranker's share of the score (default 2 for deepsets, 1 for "
                        "summary; 0: trees only)")
      ->check(CLI::NonNegativeNumber);
  train_cmd->add_option("--mlp-network", model.mlp_network,
                        "programs input: the neural ranker, deepsets (default: reads every feature row) or summary "
                        "(the program summary alone: ranks worse, about 1/14 of the arithmetic)");
  CLI::App* eval_cmd = model_cmd->add_subcommand("eval", "how well a model ranks the records of a tuning log");
  eval_cmd->add_option("--db", model.db, "tuning log (SQLite) with the records to rank (required)");
  eval_cmd->add_option("--model", model.model, "a model saved by `tessel model train` (required)");
  eval_cmd->add_option("--target", model.target, "llvm (default) or cuda");
  eval_cmd->add_option("--holdout-workload", model.holdout_workloads,
                       "rank only this workload key's records (repeatable)");

  tessel::DemoArgs demo;
  CLI::App* demo_cmd = app.add_subcommand("demo", "a short tuning session of a few suite cases on this CPU");
  demo_cmd->add_option("--suite", demo.suite, "suite JSON file");
  demo_cmd->add_option("--case", demo.cases, "a case to tune (repeatable; default: a representative few)");
  demo_cmd->add_option("--trials", demo.trials, "trials per case (default 64)")->check(CLI::PositiveNumber);
  demo_cmd->add_option("--time-budget-s", demo.time_budget_s, "stop after this many seconds (default 110)")
      ->check(CLI::PositiveNumber);
  demo_cmd->add_option("--db", demo.db, "keep the tuning log here (default: a temporary one)");

  tessel::ScheduleArgs sched;
  CLI::App* sched_cmd = app.add_subcommand("schedule", "print the default (or a random) schedule as JSON");
  add_workload_options(sched_cmd, sched.workload);
  sched_cmd->add_option("--random-seed", sched.random_seed, "print the random schedule of this seed")
      ->check(CLI::NonNegativeNumber);
  sched_cmd->add_option("--target", sched.target, "llvm (default) or cuda");

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
    if (app.got_subcommand("show")) return is_cuda(show.target), tessel::cmd_show(show);
    if (app.got_subcommand("check"))
      return is_cuda(check.target) ? tessel::cmd_check_cuda(check) : tessel::cmd_check(check);
    if (app.got_subcommand("run")) return is_cuda(run.target) ? tessel::cmd_run_cuda(run) : tessel::cmd_run(run);
    if (app.got_subcommand("measure")) return tessel::cmd_measure(measure);
    if (app.got_subcommand("tune")) return tessel::cmd_tune(tune);
    if (app.got_subcommand("schedule")) return is_cuda(sched.target), tessel::cmd_schedule(sched);
    if (app.got_subcommand("demo")) return tessel::cmd_demo(demo);
    if (model_cmd->got_subcommand("train")) return tessel::cmd_model_train(model);
    if (model_cmd->got_subcommand("eval")) return tessel::cmd_model_eval(model);
  } catch (const tessel::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const tessel::ScheduleError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const tessel::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
