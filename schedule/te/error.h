// Typed errors shared by every layer of tessel. User-facing errors carry a message that says what
// was wrong and where; the CLI maps InputError and ScheduleError to exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace tessel {

// Base of every error tessel throws on purpose.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Bad user input: an unknown op, a malformed parameter, expression or file.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(message) {}
};

// A schedule step that cannot be applied. `step_index` is the position of the step in its trace
// (-1 when the step is not part of a trace yet).
class ScheduleError : public Error {
 public:
  ScheduleError(int step_index, const std::string& step, const std::string& reason)
      : Error(format(step_index, step, reason)), step_index_(step_index), step_(step), reason_(reason) {}

  int step_index() const { return step_index_; }
  const std::string& step() const { return step_; }
  const std::string& reason() const { return reason_; }

 private:
  static std::string format(int index, const std::string& step, const std::string& reason) {
    std::string where = index >= 0 ? "step " + std::to_string(index) + " (" + step + ")" : step;
    return "invalid schedule: " + where + ": " + reason;
  }
  int step_index_;
  std::string step_;
  std::string reason_;
};

// Code generation or compilation failed (a bug in tessel or a target limit, never user input).
class CompileError : public Error {
 public:
  explicit CompileError(const std::string& message) : Error(message) {}
};

// An internal invariant that must hold; stays on in release builds.
[[noreturn]] void internal_error(const char* file, int line, const std::string& message);

}  // namespace tessel

#define TESSEL_CHECK(cond, msg)                                    \
  do {                                                             \
    if (!(cond)) ::tessel::internal_error(__FILE__, __LINE__, msg); \
  } while (0)
