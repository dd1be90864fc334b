#include "measure/error_code.h"

namespace tessel {
namespace {

struct ErrorName {
  ErrorCode code;
  const char* name;
};
constexpr ErrorName kErrorNames[] = {
    {ErrorCode::Ok, "ok"},
    {ErrorCode::Instantiation, "instantiation"},
    {ErrorCode::CompileHost, "compile_host"},
    {ErrorCode::CompileDevice, "compile_device"},
    {ErrorCode::BuildTimeout, "build_timeout"},
    {ErrorCode::RuntimeError, "runtime_error"},
    {ErrorCode::RunTimeout, "run_timeout"},
    {ErrorCode::WrongAnswer, "wrong_answer"},
    {ErrorCode::Unknown, "unknown"},
};

}  // namespace

const char* to_string(ErrorCode code) {
  for (const auto& entry : kErrorNames)
    if (entry.code == code) return entry.name;
  return "unknown";
}

std::optional<ErrorCode> error_code_from_string(std::string_view name) {
  for (const auto& entry : kErrorNames)
    if (name == entry.name) return entry.code;
  return std::nullopt;
}

}  // namespace tessel
