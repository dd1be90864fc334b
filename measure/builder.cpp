#include "measure/builder.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "codegen/llvm/llvm_backend.h"
#include "measure/artifact.h"
#include "measure/child_process.h"
#include "measure/cuda_kernel.h"
#include "schedule/lower/lower.h"
#include "schedule/te/error.h"

namespace tessel {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxMessage = 2000;  // characters of a compiler log kept in a record

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string truncated(const std::string& s) {
  return s.size() > kMaxMessage ? s.substr(0, kMaxMessage) + "... (truncated)" : s;
}

Artifact compile(const ComputeDAG& dag, const BuildTask& task, const BuilderOptions& o, const std::string& stem) {
  State state = replay(dag, *task.trace);
  Artifact a;
  a.target = o.target;
  a.kernel_name = "kernel";
  if (o.target == TargetKind::Cuda) {
    LoweredFunc func =
        inject_fault(lower(state, a.kernel_name, gpu_lower_options(o.device)), task.fault, kGpuFarElements);
    CudaProgram program = emit_cuda(func);
    std::vector<char> cubin = nvrtc_compile(program, o.device.arch);
    a.binary_path = stem + ".cubin";
    write_binary_file(a.binary_path, cubin.data(), cubin.size());
    a.params = func.params;
    a.launches = program.launches;
    a.scratch = program.scratch;
  } else {
    LoweredFunc func = inject_fault(lower(state, a.kernel_name), task.fault, kCpuFarElements);
    a.binary_path = stem + ".so";
    write_shared_object(func, a.binary_path);
    a.params = func.params;
  }
  return a;
}

BuildResult parse_report(const std::string& line) {
  BuildResult r;
  try {
    nlohmann::json j = nlohmann::json::parse(line);
    r.error = error_code_from_string(j.at("error").get<std::string>()).value_or(ErrorCode::Unknown);
    r.message = j.at("message").get<std::string>();
    r.build_s = j.at("build_s").get<double>();
    r.artifact_path = j.at("artifact").get<std::string>();
    r.binary_path = j.at("binary").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    r.error = ErrorCode::Unknown;
    r.message = "unreadable builder report: " + truncated(line);
  }
  return r;
}

}  // namespace

BuildResult build_one(const ComputeDAG& dag, const BuildTask& task, const BuilderOptions& options) {
  auto t0 = Clock::now();
  BuildResult r;
  std::string stem = options.work_dir + "/candidate_" + std::to_string(task.index);
  try {
    Artifact a = compile(dag, task, options, stem);
    r.artifact_path = stem + ".json";
    r.binary_path = a.binary_path;
    std::string manifest = artifact_to_json(a);
    write_binary_file(r.artifact_path, manifest.data(), manifest.size());
  } catch (const ScheduleError& e) {
    r.error = ErrorCode::Instantiation;
    r.message = e.what();
  } catch (const InputError& e) {
    r.error = ErrorCode::Instantiation;
    r.message = e.what();
  } catch (const CompileError& e) {
    r.error = options.target == TargetKind::Cuda ? ErrorCode::CompileDevice : ErrorCode::CompileHost;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.error = ErrorCode::Unknown;
    r.message = e.what();
  }
  r.message = truncated(r.message);
  r.build_s = seconds_since(t0);
  return r;
}

std::vector<BuildResult> build_candidates(const ComputeDAG& dag, const std::vector<BuildTask>& tasks,
                                          const BuilderOptions& options,
                                          const std::function<void(size_t, const BuildResult&)>& on_done) {
  struct Running {
    size_t task;
    ChildProcess child;
    Clock::time_point start;
    std::string log;
  };
  size_t jobs = static_cast<size_t>(options.jobs > 0 ? options.jobs : available_cores());
  std::vector<BuildResult> results(tasks.size());
  std::vector<Running> running;
  size_t next = 0;

  auto finish = [&](size_t slot, BuildResult r) {
    results[running[slot].task] = r;
    if (on_done) on_done(running[slot].task, results[running[slot].task]);
    running.erase(running.begin() + static_cast<long>(slot));
  };

  while (next < tasks.size() || !running.empty()) {
    while (running.size() < jobs && next < tasks.size()) {
      const BuildTask& task = tasks[next];
      std::string log = options.work_dir + "/candidate_" + std::to_string(task.index) + ".build.log";
      ChildProcess child = ChildProcess::fork_function(
          [&](int fd) {
            BuildResult r = build_one(dag, task, options);
            std::string report = nlohmann::json{{"error", to_string(r.error)},
                                                {"message", r.message},
                                                {"build_s", r.build_s},
                                                {"artifact", r.artifact_path},
                                                {"binary", r.binary_path}}
                                     .dump() +
                                 "\n";
            size_t done = 0;
            while (done < report.size()) {
              ssize_t n = write(fd, report.data() + done, report.size() - done);
              if (n <= 0) break;
              done += static_cast<size_t>(n);
            }
          },
          log);
      running.push_back({next++, std::move(child), Clock::now(), log});
    }

    std::vector<pollfd> fds;
    double wait_s = options.timeout_s;
    for (const Running& r : running) {
      fds.push_back({r.child.message_fd(), POLLIN, 0});
      wait_s = std::min(wait_s, options.timeout_s - seconds_since(r.start));
    }
    poll(fds.data(), fds.size(), static_cast<int>(std::max(0.0, wait_s) * 1e3) + 1);

    for (size_t slot = running.size(); slot-- > 0;) {
      Running& r = running[slot];
      if (fds[slot].revents != 0 && !r.child.read_available()) {
        std::string report = r.child.buffered();
        std::string how = r.child.reap();
        size_t newline = report.find('\n');
        if (newline != std::string::npos && how.empty()) {
          finish(slot, parse_report(report.substr(0, newline)));
        } else {
          BuildResult died;
          died.error = ErrorCode::Unknown;
          died.build_s = seconds_since(r.start);
          died.message = "builder " + (how.empty() ? std::string("exited without a report") : how);
          std::string tail = file_tail(r.log, 1500);
          if (!tail.empty()) died.message += ": " + tail;
          finish(slot, died);
        }
      } else if (seconds_since(r.start) >= options.timeout_s) {
        r.child.kill_and_reap();
        BuildResult timeout;
        timeout.error = ErrorCode::BuildTimeout;
        timeout.build_s = options.timeout_s;
        timeout.message = "build did not finish within " + format_seconds(options.timeout_s) + "; builder killed";
        finish(slot, timeout);
      }
    }
  }
  return results;
}

}  // namespace tessel
