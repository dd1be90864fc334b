// Host CPU detection and the TargetMachine every kernel is compiled for.
#include "codegen/llvm/llvm_internal.h"

#include <mutex>
#include <thread>

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include "schedule/te/error.h"

namespace tessel {

namespace {

HostTarget detect_host() {
  HostTarget t;
  t.triple = llvm::sys::getProcessTriple();
  t.cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  bool avx512f = false, avx = false;
  std::string list;
  for (const auto& f : features) {
    if (!list.empty()) list += ',';
    list += (f.second ? '+' : '-') + f.first().str();
    if (f.second && f.first() == "avx512f") avx512f = true;
    if (f.second && (f.first() == "avx" || f.first() == "avx2")) avx = true;
  }
  t.features = list;
  t.vector_bits = avx512f ? 512 : avx ? 256 : 128;
  unsigned cores = std::thread::hardware_concurrency();
  t.num_cores = cores > 0 ? static_cast<int>(cores) : 1;
  return t;
}

}  // namespace

const HostTarget& host_target() {
  static const HostTarget target = detect_host();
  return target;
}

int host_vector_lanes() { return host_target().vector_bits / 32; }

namespace llvm_backend {

void initialize_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::unique_ptr<llvm::TargetMachine> create_host_target_machine(int opt_level) {
  initialize_native_target();
  const HostTarget& host = host_target();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(host.triple, error);
  if (!target) throw CompileError("LLVM has no target for host triple " + host.triple + ": " + error);
  llvm::TargetOptions options;
  llvm::CodeGenOptLevel level = opt_level <= 0   ? llvm::CodeGenOptLevel::None
                                : opt_level == 1 ? llvm::CodeGenOptLevel::Less
                                : opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                                 : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      host.triple, host.cpu, host.features, options, llvm::Reloc::PIC_, std::nullopt, level));
  if (!machine) throw CompileError("LLVM could not create a target machine for " + host.cpu);
  return machine;
}

void add_target_attributes(llvm::Function* fn) {
  const HostTarget& host = host_target();
  std::string width = std::to_string(host.vector_bits);
  fn->addFnAttr("target-cpu", host.cpu);
  fn->addFnAttr("target-features", host.features);
  fn->addFnAttr("prefer-vector-width", width);
  fn->addFnAttr("min-legal-vector-width", width);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
}

}  // namespace llvm_backend
}  // namespace tessel
