// Child processes for the measurement harness: forked builders and exec'd runner workers, talked to
// through pipes of newline-terminated JSON messages, with deadlines, and always reaped.
//
// Every child asks the kernel to SIGKILL it when its parent dies (PR_SET_PDEATHSIG), so a killed
// tuning session never leaves builders or runners behind.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tessel {

// A running child with a pipe to its standard input (exec'd children only) and a pipe it writes
// messages to. Destruction kills (SIGKILL) and reaps it if it is still running.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // Forks; the child runs `body(message_fd)` with every other descriptor above stderr closed, then
  // _exit(0) (or 70 when body throws). stdout and stderr go to `log_path` (appended).
  static ChildProcess fork_function(const std::function<void(int message_fd)>& body, const std::string& log_path);

  // Forks and execs `argv`; the child's stdin reads what send() writes, its stdout is the message
  // pipe, its stderr goes to `log_path` (appended). Throws Error when the program cannot be started.
  static ChildProcess spawn(const std::vector<std::string>& argv, const std::string& log_path);

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int message_fd() const { return out_fd_; }

  // Writes one line (a newline is appended). False when the child no longer reads (it died).
  bool send(const std::string& line);

  enum class ReadStatus { Line, Closed, TimedOut };
  // Waits up to `timeout_s` for the next complete line. Closed: the child closed its end (it exited
  // or crashed); reap() then says how.
  ReadStatus read_line(std::string& line, double timeout_s);
  // Reads whatever is available without waiting; false at end of file.
  bool read_available();
  // Everything received so far that did not end in a newline yet, plus complete unread lines.
  const std::string& buffered() const { return buffer_; }

  // Waits for the child to exit (after its message pipe closed) and returns how it ended, e.g.
  // "exited with status 3" or "killed by signal 11 (Segmentation fault)"; empty after a clean exit 0.
  std::string reap();
  // SIGKILLs the child and reaps it. No-op when not running.
  void kill_and_reap();
  // Closes stdin (a well-behaved worker exits on end of input), waits up to `grace_s`, then kills.
  void stop(double grace_s);

 private:
  ChildProcess(pid_t pid, int in_fd, int out_fd) : pid_(pid), in_fd_(in_fd), out_fd_(out_fd) {}
  void close_fds();

  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  std::string buffer_;
};

// How a wait status reads: "" for exit 0, else "exited with status N" / "killed by signal N (name)".
std::string describe_wait_status(int status);

// "15 s", "2.5 s": a duration for messages.
std::string format_seconds(double s);

// The last `max_chars` of a text file (for messages about a child that died), or "".
std::string file_tail(const std::string& path, size_t max_chars);

// The PIDs of this process's live children and of any process it adopted (for tests).
std::vector<pid_t> child_pids_of(pid_t parent);

}  // namespace tessel
