#include "measure/work_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "schedule/te/error.h"

namespace tessel {
namespace {

constexpr const char* kPrefix = "tessel-measure-";

// The pid a work folder's name carries ("tessel-measure-<pid>-XXXXXX"), or 0.
pid_t owner_of(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return 0;
  const size_t start = std::string(kPrefix).size();
  const size_t dash = name.find('-', start);
  if (dash == std::string::npos || dash == start) return 0;
  pid_t pid = 0;
  for (size_t i = start; i < dash; ++i) {
    if (name[i] < '0' || name[i] > '9' || pid > 100000000) return 0;
    pid = pid * 10 + (name[i] - '0');
  }
  return pid;
}

// A zombie counts as ended: in a container whose first process does not reap orphans, a killed
// owner stays a zombie, and kill(pid, 0) still succeeds on it.
bool zombie(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const size_t name_end = text.rfind(')');  // the state follows the command name, which may hold spaces
  return name_end != std::string::npos && name_end + 2 < text.size() && text[name_end + 2] == 'Z';
}

bool running(pid_t pid) { return (kill(pid, 0) == 0 || errno == EPERM) && !zombie(pid); }

// The watchdog: closes everything but its end of the pipe (so that it holds no other process's pipe
// open), ignores the signals a terminal sends the whole group, waits for the owner's end to close,
// then removes the folder.
[[noreturn]] void watch(int read_fd, const std::string& path) {
  if (read_fd != 3) {
    dup2(read_fd, 3);
    read_fd = 3;
  }
  closefrom(4);
  for (int fd : {0, 1, 2}) {
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0 && null_fd != fd) {
      dup2(null_fd, fd);
      close(null_fd);
    }
  }
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  char byte;
  while (read(read_fd, &byte, 1) != 0 && errno == EINTR) {
  }
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  _exit(0);
}

}  // namespace

int remove_stale_work_dirs() {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
    const pid_t owner = owner_of(entry.path().filename().string());
    if (owner <= 0 || running(owner) || !entry.is_directory(ec)) continue;
    std::error_code remove_ec;
    if (std::filesystem::remove_all(entry.path(), remove_ec) > 0) ++removed;
  }
  return removed;
}

WorkDir::WorkDir() {
  remove_stale_work_dirs();
  std::string pattern =
      (std::filesystem::temp_directory_path() / (std::string(kPrefix) + std::to_string(getpid()) + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data())) throw Error("cannot create a work directory under " + pattern);
  path_ = pattern;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;  // no watchdog: the destructor and the next start still clean up
  watchdog_ = fork();
  if (watchdog_ == 0) {
    close(fds[1]);
    watch(fds[0], path_);
  }
  close(fds[0]);
  if (watchdog_ < 0) {
    close(fds[1]);
    return;
  }
  pipe_fd_ = fds[1];
}

WorkDir::~WorkDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  if (pipe_fd_ >= 0) close(pipe_fd_);
  if (watchdog_ > 0) waitpid(watchdog_, nullptr, 0);
}

}  // namespace tessel
