#include "measure/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "schedule/te/error.h"

namespace tessel {
namespace {

// In the child right after fork: die with the parent, and send output to the log file.
void prepare_child(pid_t parent, const std::string& log_path) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(71);  // the parent died before prctl took effect
  int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) log = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (log >= 0) {
    dup2(log, STDERR_FILENO);
    if (log != STDERR_FILENO) close(log);
  }
  signal(SIGPIPE, SIG_DFL);
}

// Closes every descriptor from `first` up.
void close_from(int first) {
  if (close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  long max_fd = sysconf(_SC_OPEN_MAX);
  if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
  for (int fd = first; fd < max_fd; ++fd) close(fd);
}

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
}

}  // namespace

ChildProcess::ChildProcess(ChildProcess&& other) noexcept { *this = std::move(other); }

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    kill_and_reap();
    pid_ = other.pid_;
    in_fd_ = other.in_fd_;
    out_fd_ = other.out_fd_;
    buffer_ = std::move(other.buffer_);
    other.pid_ = -1;
    other.in_fd_ = other.out_fd_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() { kill_and_reap(); }

ChildProcess ChildProcess::fork_function(const std::function<void(int)>& body, const std::string& log_path) {
  int fds[2];
  make_pipe(fds);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    throw Error(std::string("cannot fork a builder: ") + std::strerror(errno));
  }
  if (pid == 0) {
    prepare_child(parent, log_path);
    dup2(STDERR_FILENO, STDOUT_FILENO);  // stray prints go to the log, never into the message pipe
    if (fds[1] != 3) dup2(fds[1], 3);
    fcntl(3, F_SETFD, FD_CLOEXEC);       // not inherited by programs the body runs (the linker)
    close_from(4);
    try {
      body(3);
    } catch (...) {
      _exit(70);
    }
    _exit(0);
  }
  close(fds[1]);
  return ChildProcess(pid, -1, fds[0]);
}

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) throw Error("spawn: no program");
  int to_child[2], from_child[2], exec_error[2];
  make_pipe(to_child);
  make_pipe(from_child);
  make_pipe(exec_error);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw Error(std::string("cannot fork: ") + std::strerror(errno));
  if (pid == 0) {
    prepare_child(parent, log_path);
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    int err_fd = exec_error[1];
    if (err_fd != 3) {
      dup2(err_fd, 3);
      err_fd = 3;
    }
    fcntl(3, F_SETFD, FD_CLOEXEC);
    close_from(4);
    execv(args[0], args.data());
    int e = errno;
    (void)!write(3, &e, sizeof e);
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  close(exec_error[1]);
  int e = 0;
  ssize_t n = read(exec_error[0], &e, sizeof e);
  close(exec_error[0]);
  ChildProcess child(pid, to_child[1], from_child[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    child.kill_and_reap();
    throw Error("cannot start " + argv[0] + ": " + std::strerror(e));
  }
  return child;
}

bool ChildProcess::send(const std::string& line) {
  if (in_fd_ < 0) return false;
  std::string data = line + "\n";
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(in_fd_, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool ChildProcess::read_available() {
  if (out_fd_ < 0) return false;
  char chunk[65536];
  for (;;) {
    pollfd p{out_fd_, POLLIN, 0};
    int r = poll(&p, 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return true;
    ssize_t n = read(out_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

ChildProcess::ReadStatus ChildProcess::read_line(std::string& line, double timeout_s) {
  using clock = std::chrono::steady_clock;
  auto deadline = clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return ReadStatus::Line;
    }
    if (out_fd_ < 0) return ReadStatus::Closed;
    double left = std::chrono::duration<double>(deadline - clock::now()).count();
    if (left <= 0) return ReadStatus::TimedOut;
    pollfd p{out_fd_, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(std::min(left * 1e3 + 1, 1e9)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;  // re-check the deadline
    char chunk[65536];
    ssize_t n = read(out_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadStatus::Closed;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::string ChildProcess::reap() {
  if (pid_ <= 0) return "";
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  close_fds();
  return describe_wait_status(status);
}

void ChildProcess::kill_and_reap() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    reap();
  }
  close_fds();
}

void ChildProcess::stop(double grace_s) {
  if (pid_ <= 0) return;
  if (in_fd_ >= 0) {
    close(in_fd_);
    in_fd_ = -1;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) {
      pid_ = -1;
      close_fds();
      return;
    }
    usleep(2000);
  }
  kill_and_reap();
}

void ChildProcess::close_fds() {
  if (in_fd_ >= 0) close(in_fd_);
  if (out_fd_ >= 0) close(out_fd_);
  in_fd_ = out_fd_ = -1;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status) == 0 ? "" : "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

std::string format_seconds(double s) {
  std::ostringstream out;
  out << s << " s";
  return out.str();
}

std::string file_tail(const std::string& path, size_t max_chars) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.size() > max_chars ? "..." + text.substr(text.size() - max_chars) : text;
}

std::vector<pid_t> child_pids_of(pid_t parent) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream fields(line.substr(close_paren + 2));
    char state = 0;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid == parent) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

}  // namespace tessel
