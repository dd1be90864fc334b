#include "schedule/target_kind.h"

#include <string>

#include "schedule/te/error.h"

namespace tessel {

const char* target_kind_name(TargetKind kind) { return kind == TargetKind::Cuda ? "cuda" : "llvm"; }

std::optional<TargetKind> target_kind_named(std::string_view name) {
  if (name == "llvm") return TargetKind::Llvm;
  if (name == "cuda") return TargetKind::Cuda;
  return std::nullopt;
}

TargetKind parse_target_kind(std::string_view name) {
  if (std::optional<TargetKind> kind = target_kind_named(name)) return *kind;
  throw InputError("unknown target '" + std::string(name) + "' (llvm or cuda)");
}

}  // namespace tessel
