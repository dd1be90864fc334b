// tessel demo: the model flow on its embedded default, start to finish on this CPU. A small CNN
// (frontend/demo_model.h) is imported and split into kernels, built once as it comes (every kernel on
// its default schedule), tuned for about two minutes, built again from the tuning log, and both
// builds are run on the same input: their speed side by side (timed in alternating rounds), and
// their outputs compared.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <string>

#include "deploy/model_builder.h"
#include "frontend/demo_model.h"
#include "frontend/model.h"
#include "measure/timer.h"
#include "schedule/te/error.h"
#include "tools/commands.h"
#include "tools/format_duration.h"
#include "tools/model_bench.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

// A built model loaded and bound to one image.
struct Loaded {
  explicit Loaded(const std::string& path, const std::vector<float>& image)
      : model(LoadedModel::load(path)), ctx(model) {
    ctx.set_input(0, DType::Float32, model.inputs()[0].shape, image.data());
  }
  std::vector<float> output() {
    std::vector<float> out(static_cast<size_t>(model.outputs()[0].bytes / 4));
    ctx.copy_output(0, out.data(), MemoryKind::Host);
    return out;
  }
  LoadedModel model;
  ExecutionContext ctx;
};

// The two builds timed in alternating rounds, so that a slow spell of the machine falls on both:
// each build's median over rounds, and the median of the rounds' speed-ups.
struct Comparison {
  double before_s = 0, after_s = 0, speedup = 0;
  double slowest = 0, fastest = 0;  // the rounds' speed-ups: how far the machine's noise reaches
};
constexpr int kRounds = 5;

Comparison compare_builds(Loaded& before, Loaded& after, double round_s = 0.4) {
  std::vector<double> b, a, ratio;
  for (int r = 0; r < kRounds; ++r) {
    b.push_back(bench_runs(before.ctx, round_s).median_s);
    a.push_back(bench_runs(after.ctx, round_s).median_s);
    ratio.push_back(b.back() / a.back());
  }
  return {median(b), median(a), median(ratio), *std::min_element(ratio.begin(), ratio.end()),
          *std::max_element(ratio.begin(), ratio.end())};
}

// What the speed-up says, in words: a change inside the rounds' spread is no change.
std::string verdict(const Comparison& c, int reverted) {
  const double noise = std::max(0.03, (c.fastest - c.slowest) / 2);
  if (c.speedup > 1 + noise) return "Tuning made the model faster.";
  if (c.speedup < 1 - noise)
    return "The tuned build ran slower here: each kernel was tuned alone, and what it gained alone did not carry "
           "over to the whole model on this machine.";
  if (reverted > 0) return "About the same.";
  return "About the same: the default schedules were already close to the best the search found in this time.";
}

std::string folder_for_demo() {
  fs::path dir = fs::temp_directory_path() / ("tessel-demo-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir.string();
}

}  // namespace

int cmd_demo(const DemoArgs& args) {
  const std::string dir = folder_for_demo();
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  const std::string onnx = dir + "/demo_cnn.onnx";
  std::ofstream(onnx, std::ios::binary) << demo_cnn_onnx();
  const std::string db = args.db.empty() ? dir + "/tuning.db" : args.db;

  const Model model = load_model(onnx, import_options({}, true, ""), TargetKind::Llvm);
  std::cout << "tessel demo: a small CNN (" << model.graph.nodes.size() << " ONNX nodes: convolutions, batch norm, "
            << "ReLU, a residual add, pooling, a classifier) becomes " << model.partition.subgraphs.size()
            << " kernels; " << model.tasks.size() << " distinct ones are tuned on this CPU.\n\n";
  std::cout << "1. building it as it comes (every kernel with tessel's default loop schedule) ...\n";
  BuildOptions options;
  build_model(model, options, dir + "/untuned.tsl");

  std::cout << "2. tuning: searching loop schedules, timing every candidate, for about "
            << static_cast<int>(args.time_budget_s) << " s ...\n";
  TuneArgs tune;
  tune.model = onnx;
  tune.trials = args.trials;
  tune.time_budget_s = args.time_budget_s;
  tune.db = db;
  tune.seed = 1;
  if (cmd_tune(tune) != 0) return 1;

  std::cout << "\n3. building it again from the tuning log (the fastest schedule found for each kernel) ...\n";
  options.db = db;
  const BuildReport tuned = build_model(model, options, dir + "/tuned.tsl");

  std::vector<float> image(3 * 32 * 32);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(0, 1);
  for (float& v : image) v = pixel(rng);

  // Each kernel was timed alone, over and over on data its own threads left in their caches; in the
  // model it reads what the kernel before it wrote, from whichever core wrote it, and leaves its
  // output where the next one reads it. So each tuned kernel is tried in the whole model against
  // its default (the rest as chosen so far), and kept only where the model runs faster with it.
  std::cout << "4. checking each tuned kernel inside the whole model ...\n";
  std::string current = dir + "/tuned.tsl";
  int reverted = 0;
  for (size_t t = 0; t < tuned.tasks.size(); ++t) {
    const BuiltTask& task = tuned.tasks[t];
    if (task.record_id < 0 || task.default_trace) continue;
    BuildOptions without = options;
    without.default_for.push_back(task.key);
    const std::string candidate = dir + "/check" + std::to_string(t) + ".tsl";
    build_model(model, without, candidate);
    Comparison c;
    {
      Loaded with_default(candidate, image), with_tuned(current, image);
      c = compare_builds(with_default, with_tuned, 0.2);
    }
    const bool keep = c.speedup > 1;
    std::cout << "   t" << t << " " << task.name << ": " << std::fixed << std::setprecision(2)
              << "in the model " << c.speedup << "x its default -> "
              << (keep ? "tuned schedule kept" : "default kept") << "\n";
    if (!keep) {
      options.default_for.push_back(task.key);
      current = candidate;
      ++reverted;
    }
  }
  std::cout << "5. running both on the same image ...\n\n";
  Loaded before(dir + "/untuned.tsl", image), after(current, image);
  const Comparison timed = compare_builds(before, after);
  const std::vector<float> before_out = before.output(), after_out = after.output();
  double difference = 0;
  for (size_t i = 0; i < before_out.size(); ++i)
    difference = std::max(difference, static_cast<double>(std::abs(before_out[i] - after_out[i])));
  std::cout << std::left << std::setw(34) << "" << std::right << std::setw(14) << "time per image" << "\n"
            << std::left << std::setw(34) << "before tuning (default schedules)" << std::right << std::setw(14)
            << format_duration(timed.before_s) << "\n"
            << std::left << std::setw(34) << "after tuning" << std::right << std::setw(14)
            << format_duration(timed.after_s) << "\n"
            << std::left << std::setw(34) << "speed-up" << std::right << std::setw(13) << std::fixed
            << std::setprecision(2) << timed.speedup << "x  (" << kRounds << " rounds: " << timed.slowest << "x to "
            << timed.fastest << "x)\n"
            << verdict(timed, reverted) << "\n";
  if (reverted > 0)
    std::cout << reverted << (reverted == 1 ? " kernel" : " kernels")
              << " the search made faster alone ran slower inside the whole model (there each reads what the kernel "
                 "before it just wrote, often on another core), so the tuned build keeps "
              << (reverted == 1 ? "its default schedule" : "their default schedules") << ".\n";
  std::cout << "\n";
  std::cout << "Both give the same answer: the 10 class probabilities differ by at most " << std::scientific
            << std::setprecision(1) << difference << ".\n";
  if (args.db.empty())
    std::cout << "(The tuning log was temporary; `tessel demo --db log.db` keeps it, and `tessel build` and `tessel "
                 "tune` take your own ONNX models: see README.md.)\n";
  return 0;
}

}  // namespace tessel
