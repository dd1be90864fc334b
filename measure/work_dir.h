// The scratch folder of a measurer (the workload's data, built kernels, build and runner logs): made
// fresh under the system's temporary folder and removed however the process ends. A normal end
// removes it in the destructor; for an end by a signal (Ctrl-C, SIGTERM, even SIGKILL) a small
// watchdog process, which waits on a pipe the owner holds, removes it once the pipe closes; and
// folders left by a process that no longer runs (the watchdog killed too) are removed when the next
// one is made.
#pragma once

#include <sys/types.h>

#include <string>

namespace tessel {

class WorkDir {
 public:
  // Makes "<tmp>/tessel-measure-<pid>-XXXXXX". Throws Error when it cannot.
  WorkDir();
  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int pipe_fd_ = -1;  // the owner's end: its closing tells the watchdog to clean up
  pid_t watchdog_ = -1;
};

// Removes the work folders under the temporary folder whose owning process no longer runs; returns
// how many it removed.
int remove_stale_work_dirs();

}  // namespace tessel
