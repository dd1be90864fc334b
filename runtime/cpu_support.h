// Whether this CPU can run a model's kernels: the x86 features they were compiled with (LLVM's
// names, recorded in the artifact) against what CPUID and the operating system report here. No LLVM:
// a deployment only has the runtime, so the names LLVM uses are mapped to CPUID bits by hand.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/model_artifact.h"

namespace tessel {

// Whether this CPU (and the OS, for the vector registers' state) offers `feature`, named as LLVM
// names it ("avx512f", "sse4.2", "fma"); nullopt for a name this check does not know.
std::optional<bool> cpu_has_feature(const std::string& feature);

// The features enabled in `llvm_features` ("+avx2,+fma,-sse4a") that this CPU lacks. Names this check
// does not know are not counted: they are extensions the code generator does not use for tessel's
// kernels (or newer than this list), and refusing every model that names one would refuse too much.
std::vector<std::string> missing_cpu_features(const std::string& llvm_features);

// This CPU's x86-64 micro-architecture level ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"), or
// "" when this is not an x86-64 CPU.
std::string host_x86_64_level();

// Throws ArtifactError naming `path`, what the kernels need and what this CPU has, when an llvm
// artifact's kernels cannot run here: an x86-64 level above this CPU's, or compiled-in features it
// lacks (kernels built for AVX-512 would die of an illegal instruction on a CPU without it).
void check_cpu_can_run(const ModelArtifact& artifact, const std::string& path);

}  // namespace tessel
