// The outcome of measuring one candidate schedule: the error taxonomy every tuning-log record
// carries. Codes are stored and printed by name (see to_string) so that logs stay readable and a new
// code never shifts the meaning of old rows.
#pragma once

#include <optional>
#include <string_view>

namespace tessel {

enum class ErrorCode {
  Ok,
  Instantiation,  // the schedule could not be applied to the workload (or lowered for the target)
  CompileHost,    // host (LLVM) compilation failed
  CompileDevice,  // device (CUDA C / NVRTC) compilation failed
  BuildTimeout,   // the builder did not finish within the build timeout; it was killed
  RuntimeError,   // crashed or returned an error while running (signal, CUDA error)
  RunTimeout,     // did not finish within the run timeout; its runner was killed
  WrongAnswer,    // ran, but the output disagrees with the reference
  Unknown,        // anything else (e.g. a builder that died without a report)
};

const char* to_string(ErrorCode code);
std::optional<ErrorCode> error_code_from_string(std::string_view name);

}  // namespace tessel
