#include "measure/runner_client.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "schedule/te/error.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kStartTimeoutS = 120;  // CUDA context creation can take a while on a cold GPU
constexpr size_t kLogTail = 1500;

}  // namespace

std::string default_runner_path() {
  if (const char* env = std::getenv("TESSEL_RUNNER"); env && *env) return env;
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "tessel-runner").string();
}

RunnerClient::RunnerClient(RunnerOptions options) : options_(std::move(options)) {}

RunnerClient::~RunnerClient() { stop(); }

void RunnerClient::stop() {
  child_.stop(2.0);
  hello_.clear();
}

const std::string& RunnerClient::start() {
  if (child_.running()) return hello_;
  std::vector<std::string> argv = {options_.executable, "--target", target_kind_name(options_.target), "--workload",
                                   options_.workload_path};
  if (options_.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(options_.threads)});
  if (!options_.pin) argv.push_back("--no-pin");
  if (options_.gpu >= 0) argv.insert(argv.end(), {"--gpu", std::to_string(options_.gpu)});
  if (access(options_.executable.c_str(), X_OK) != 0)
    throw Error("runner executable " + options_.executable + " not found (set TESSEL_RUNNER to its path)");
  child_ = ChildProcess::spawn(argv, options_.log_path);
  ++starts_;
  std::string line;
  ChildProcess::ReadStatus status = child_.read_line(line, kStartTimeoutS);
  std::string why;
  bool no_device = false;
  if (status == ChildProcess::ReadStatus::Line) {
    try {
      nlohmann::json hello = nlohmann::json::parse(line);
      if (hello.value("ready", false)) {
        hello_ = line;
        return hello_;
      }
      why = hello.value("error", "not ready");
      no_device = hello.value("no_device", false);
    } catch (const nlohmann::json::exception&) {
      why = "unreadable hello: " + line;
    }
  } else {
    why = status == ChildProcess::ReadStatus::TimedOut ? "no answer" : "exited at start";
  }
  child_.kill_and_reap();
  std::string tail = file_tail(options_.log_path, kLogTail);
  std::string message = std::string("the ") + target_kind_name(options_.target) + " runner cannot start: " + why +
                        (tail.empty() ? "" : " (" + tail + ")");
  // Measuring on a GPU this machine does not have is a usage problem, as it is for `tessel run`.
  if (no_device) throw InputError(message);
  throw Error(message);
}

RunOutcome RunnerClient::lost_worker(ErrorCode code, const std::string& what) {
  std::string how = code == ErrorCode::RunTimeout ? (child_.kill_and_reap(), std::string("killed")) : child_.reap();
  RunOutcome r;
  r.error = code;
  r.message = what + (how.empty() ? "" : "; runner " + how);
  std::string tail = file_tail(options_.log_path, 300);
  if (code == ErrorCode::RuntimeError && !tail.empty()) r.message += " (runner log: " + tail + ")";
  hello_.clear();
  return r;
}

RunOutcome RunnerClient::run(const std::string& artifact_path, const RunSettings& settings) {
  start();
  auto t0 = Clock::now();
  nlohmann::json request = {{"artifact", artifact_path}, {"settings", nlohmann::json::parse(run_settings_to_json(settings))}};
  RunOutcome outcome;
  if (!child_.send(request.dump())) {
    outcome = lost_worker(ErrorCode::RuntimeError, "the runner stopped reading requests");
  } else {
    double timeout = options_.timeout_s;
    for (;;) {
      std::string line;
      ChildProcess::ReadStatus status = child_.read_line(line, timeout);
      if (status == ChildProcess::ReadStatus::TimedOut) {
        outcome = lost_worker(ErrorCode::RunTimeout,
                              "no result within " + format_seconds(timeout) + " (run timeout)");
        break;
      }
      if (status == ChildProcess::ReadStatus::Closed) {
        outcome = lost_worker(ErrorCode::RuntimeError, "the candidate crashed its runner");
        break;
      }
      nlohmann::json reply;
      try {
        reply = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        continue;  // not a protocol line (a kernel library printing to stdout): skip it
      }
      if (reply.value("event", "") == "checked") {
        // The timing phase: the sampling budget, plus a few runs as long as the checked one.
        double once = std::chrono::duration<double>(Clock::now() - t0).count();
        timeout = options_.timeout_s + settings.budget_s + (settings.warmup + 2) * once;
        continue;
      }
      std::string result = reply.value("result", "");
      outcome.error = error_code_from_string(result).value_or(ErrorCode::Unknown);
      outcome.message = reply.value("message", "");
      if (outcome.error == ErrorCode::Ok) outcome.samples_s = reply.value("samples_s", std::vector<double>{});
      if (reply.value("poisoned", false)) {
        outcome.message += " (the CUDA context is unusable; runner restarted)";
        child_.stop(5.0);
        hello_.clear();
      }
      break;
    }
  }
  outcome.run_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return outcome;
}

}  // namespace tessel
