// The kinds of machine tessel compiles for. Parsed once where a name enters (a command-line option,
// a file) and passed inward as this type; the tuning log stores the name.
#pragma once

#include <optional>
#include <string_view>

namespace tessel {

enum class TargetKind { Llvm, Cuda };

// "llvm" or "cuda".
const char* target_kind_name(TargetKind kind);
// The kind of that name; nullopt for any other name.
std::optional<TargetKind> target_kind_named(std::string_view name);
// The kind of that name; throws InputError "unknown target 'NAME' (llvm or cuda)" for any other.
TargetKind parse_target_kind(std::string_view name);

}  // namespace tessel
