#include "runtime/cpu_support.h"

#include <algorithm>
#include <cstdint>
#include <sstream>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tessel {
namespace {

// Register state the OS must save for a feature's instructions to be usable (XCR0 bits).
enum class OsState { None, Avx, Avx512, Amx };

struct FeatureBit {
  const char* name;  // LLVM's name
  unsigned leaf, subleaf;
  int reg;  // 0 EAX, 1 EBX, 2 ECX, 3 EDX
  int bit;
  OsState state;
};

// The x86 extensions, with their CPUID bits (Intel SDM vol. 2A, CPUID; AMD APM vol. 3, appendix E).
constexpr FeatureBit kFeatures[] = {
    {"cx8", 1, 0, 3, 8, OsState::None},
    {"cmov", 1, 0, 3, 15, OsState::None},
    {"mmx", 1, 0, 3, 23, OsState::None},
    {"fxsr", 1, 0, 3, 24, OsState::None},
    {"sse", 1, 0, 3, 25, OsState::None},
    {"sse2", 1, 0, 3, 26, OsState::None},
    {"sse3", 1, 0, 2, 0, OsState::None},
    {"pclmul", 1, 0, 2, 1, OsState::None},
    {"ssse3", 1, 0, 2, 9, OsState::None},
    {"fma", 1, 0, 2, 12, OsState::Avx},
    {"cx16", 1, 0, 2, 13, OsState::None},
    {"sse4.1", 1, 0, 2, 19, OsState::None},
    {"sse4.2", 1, 0, 2, 20, OsState::None},
    {"movbe", 1, 0, 2, 22, OsState::None},
    {"popcnt", 1, 0, 2, 23, OsState::None},
    {"aes", 1, 0, 2, 25, OsState::None},
    {"xsave", 1, 0, 2, 26, OsState::None},
    {"avx", 1, 0, 2, 28, OsState::Avx},
    {"f16c", 1, 0, 2, 29, OsState::Avx},
    {"rdrnd", 1, 0, 2, 30, OsState::None},
    {"fsgsbase", 7, 0, 1, 0, OsState::None},
    {"bmi", 7, 0, 1, 3, OsState::None},
    {"avx2", 7, 0, 1, 5, OsState::Avx},
    {"bmi2", 7, 0, 1, 8, OsState::None},
    {"avx512f", 7, 0, 1, 16, OsState::Avx512},
    {"avx512dq", 7, 0, 1, 17, OsState::Avx512},
    {"rdseed", 7, 0, 1, 18, OsState::None},
    {"adx", 7, 0, 1, 19, OsState::None},
    {"avx512ifma", 7, 0, 1, 21, OsState::Avx512},
    {"clflushopt", 7, 0, 1, 23, OsState::None},
    {"clwb", 7, 0, 1, 24, OsState::None},
    {"avx512cd", 7, 0, 1, 28, OsState::Avx512},
    {"sha", 7, 0, 1, 29, OsState::None},
    {"avx512bw", 7, 0, 1, 30, OsState::Avx512},
    {"avx512vl", 7, 0, 1, 31, OsState::Avx512},
    {"avx512vbmi", 7, 0, 2, 1, OsState::Avx512},
    {"avx512vbmi2", 7, 0, 2, 6, OsState::Avx512},
    {"gfni", 7, 0, 2, 8, OsState::None},
    {"vaes", 7, 0, 2, 9, OsState::Avx},
    {"vpclmulqdq", 7, 0, 2, 10, OsState::Avx},
    {"avx512vnni", 7, 0, 2, 11, OsState::Avx512},
    {"avx512bitalg", 7, 0, 2, 12, OsState::Avx512},
    {"avx512vpopcntdq", 7, 0, 2, 14, OsState::Avx512},
    {"avx512vp2intersect", 7, 0, 3, 8, OsState::Avx512},
    {"amx-bf16", 7, 0, 3, 22, OsState::Amx},
    {"avx512fp16", 7, 0, 3, 23, OsState::Avx512},
    {"amx-tile", 7, 0, 3, 24, OsState::Amx},
    {"amx-int8", 7, 0, 3, 25, OsState::Amx},
    {"avxvnni", 7, 1, 0, 4, OsState::Avx},
    {"avx512bf16", 7, 1, 0, 5, OsState::Avx512},
    {"avxifma", 7, 1, 0, 23, OsState::Avx},
    {"avxvnniint8", 7, 1, 3, 4, OsState::Avx},
    {"avxneconvert", 7, 1, 3, 5, OsState::Avx},
    {"sahf", 0x80000001, 0, 2, 0, OsState::None},
    {"lzcnt", 0x80000001, 0, 2, 5, OsState::None},
    {"sse4a", 0x80000001, 0, 2, 6, OsState::None},
    {"prfchw", 0x80000001, 0, 2, 8, OsState::None},
    {"xop", 0x80000001, 0, 2, 11, OsState::Avx},
    {"fma4", 0x80000001, 0, 2, 16, OsState::Avx},
    {"tbm", 0x80000001, 0, 2, 21, OsState::None},
};

// The x86-64 micro-architecture levels (the psABI's list), each adding to the one before.
const std::vector<std::vector<const char*>>& level_features() {
  static const std::vector<std::vector<const char*>> levels = {
      {"cmov", "cx8", "fxsr", "mmx", "sse", "sse2"},
      {"cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"},
      {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"},
      {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
  };
  return levels;
}

#if defined(__x86_64__)
bool cpuid_bit(const FeatureBit& f) {
  unsigned max = __get_cpuid_max(f.leaf & 0x80000000u, nullptr);
  if (max < f.leaf) return false;
  unsigned r[4] = {0, 0, 0, 0};
  __cpuid_count(f.leaf, f.subleaf, r[0], r[1], r[2], r[3]);
  return (r[f.reg] >> f.bit) & 1u;
}

uint64_t xcr0() {
  unsigned r[4] = {0, 0, 0, 0};
  __cpuid_count(1, 0, r[0], r[1], r[2], r[3]);
  if (!((r[2] >> 27) & 1u)) return 0;  // OSXSAVE: without it XGETBV faults and no AVX state is saved
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

bool os_saves(OsState state) {
  static const uint64_t xcr = xcr0();
  switch (state) {
    case OsState::None:
      return true;
    case OsState::Avx:
      return (xcr & 0x6) == 0x6;  // SSE and AVX state
    case OsState::Avx512:
      return (xcr & 0xe6) == 0xe6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
    case OsState::Amx:
      return (xcr & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  }
  return false;
}
#endif

std::vector<std::string> split_features(const std::string& list) {
  std::vector<std::string> enabled;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ','))
    if (item.size() > 1 && item[0] == '+') enabled.push_back(item.substr(1));
  return enabled;
}

// "x86-64" is level 1, "x86-64-v2" .. "-v4" levels 2..4; 0 for any other name.
int level_of(const std::string& arch) {
  if (arch == "x86-64") return 1;
  for (int v = 2; v <= 4; ++v)
    if (arch == "x86-64-v" + std::to_string(v)) return v;
  return 0;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::optional<bool> cpu_has_feature(const std::string& feature) {
  for (const FeatureBit& f : kFeatures) {
    if (feature != f.name) continue;
#if defined(__x86_64__)
    return cpuid_bit(f) && os_saves(f.state);
#else
    return false;
#endif
  }
  return std::nullopt;
}

std::vector<std::string> missing_cpu_features(const std::string& llvm_features) {
  std::vector<std::string> missing;
  for (const std::string& name : split_features(llvm_features))
    if (cpu_has_feature(name) == std::optional<bool>(false)) missing.push_back(name);
  return missing;
}

std::string host_x86_64_level() {
#if defined(__x86_64__)
  int level = 0;
  for (const std::vector<const char*>& features : level_features()) {
    bool all =
        std::all_of(features.begin(), features.end(), [](const char* f) { return cpu_has_feature(f).value_or(false); });
    if (!all) break;
    ++level;
  }
  return level <= 1 ? "x86-64" : "x86-64-v" + std::to_string(level);
#else
  return "";
#endif
}

void check_cpu_can_run(const ModelArtifact& artifact, const std::string& path) {
  if (artifact.target != TargetKind::Llvm) return;
  const std::string here = host_x86_64_level();
  const std::string rebuild = "; rebuild it on this machine with `tessel build`";
  const int wanted = level_of(artifact.arch);
  if (wanted > 0 && (here.empty() || level_of(here) < wanted))
    throw ArtifactError("'" + path + "' was built for " + artifact.arch + " CPUs; this CPU is " +
                        (here.empty() ? "not an x86-64 CPU" : here) + rebuild);
  if (!artifact.cpu_features.empty() && here.empty())
    throw ArtifactError("'" + path + "' was built for an x86-64 CPU (" + artifact.arch + "); this CPU is not one" +
                        rebuild);
  const std::vector<std::string> missing = missing_cpu_features(artifact.cpu_features);
  if (!missing.empty())
    throw ArtifactError("'" + path + "' was built for a CPU with " + joined(missing) + " (" + artifact.arch +
                        (artifact.device.empty() ? "" : ", " + artifact.device) + "), which this CPU (" + here +
                        ") lacks" + rebuild);
}

}  // namespace tessel
