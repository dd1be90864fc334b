// Compilation drivers: optimization pipeline, IR text, in-process JIT (ORC LLJIT), and shared
// objects written with the system `cc` (loaded by shared_object.cpp).
#include <unistd.h>

#include <array>
#include <cstdio>
#include <mutex>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/llvm/llvm_internal.h"
#include "codegen/llvm/parallel_runtime.h"
#include "schedule/te/error.h"

namespace tessel {

namespace llvm_backend {

void optimize_module(llvm::Module& module, llvm::TargetMachine& machine, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopVectorization = opt_level >= 2;
  tuning.SLPVectorization = opt_level >= 2;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes;
  if (opt_level <= 0) {
    passes = builder.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  } else {
    llvm::OptimizationLevel level = opt_level == 1   ? llvm::OptimizationLevel::O1
                                    : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                     : llvm::OptimizationLevel::O3;
    passes = builder.buildPerModuleDefaultPipeline(level);
  }
  passes.run(module, mam);
}

}  // namespace llvm_backend

namespace {

using namespace llvm_backend;

struct CompiledModule {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
};

CompiledModule build_optimized(const LoweredFunc& func, const LLVMOptions& options, llvm::TargetMachine& machine) {
  CompiledModule out;
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = generate_module(func, options, *out.context, machine);
  optimize_module(*out.module, machine, options.opt_level);
  return out;
}

std::string to_message(llvm::Error error) {
  std::string message;
  llvm::handleAllErrors(std::move(error), [&](const llvm::ErrorInfoBase& e) { message += e.message(); });
  return message;
}

template <typename T>
T unwrap(llvm::Expected<T> value, const std::string& what) {
  if (!value) throw CompileError(what + ": " + to_message(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error error, const std::string& what) {
  if (error) throw CompileError(what + ": " + to_message(std::move(error)));
}

class JitKernel : public CompiledKernel {
 public:
  JitKernel(std::unique_ptr<llvm::orc::LLJIT> jit, void (*entry)(void**)) : jit_(std::move(jit)), entry_(entry) {}
  void run(void** args) const override { entry_(args); }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  void (*entry_)(void**);
};

// Runs `command` through the shell, returning its exit status and combined output.
int run_command(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> chunk;
  size_t n;
  while ((n = fread(chunk.data(), 1, chunk.size(), pipe)) > 0) output.append(chunk.data(), n);
  return pclose(pipe);
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string emit_llvm_ir(const LoweredFunc& func, const LLVMOptions& options) {
  auto machine = create_host_target_machine(options.opt_level);
  CompiledModule compiled = build_optimized(func, options, *machine);
  std::string text;
  llvm::raw_string_ostream os(text);
  compiled.module->print(os, nullptr);
  return os.str();
}

std::unique_ptr<CompiledKernel> jit_compile(const LoweredFunc& func, const LLVMOptions& options) {
  auto machine = create_host_target_machine(options.opt_level);
  CompiledModule compiled = build_optimized(func, options, *machine);

  const HostTarget& host = host_target();
  llvm::orc::JITTargetMachineBuilder jtmb((llvm::Triple(host.triple)));
  jtmb.setCPU(host.cpu);
  jtmb.addFeatures(std::vector<std::string>{host.features});
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  jtmb.setCodeGenOptLevel(machine->getOptLevel());
  auto jit = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(jtmb)).create(),
                    "creating the JIT for " + func.name);

  // The parallel runtime is defined by address so the executable needs no exported symbols; the
  // rest (aligned_alloc, free) comes from the process's libraries.
  llvm::orc::JITDylib& dylib = jit->getMainJITDylib();
  llvm::orc::SymbolMap runtime;
  runtime[jit->mangleAndIntern("tessel_parallel_for")] = {
      llvm::orc::ExecutorAddr::fromPtr(&tessel_parallel_for), llvm::JITSymbolFlags::Exported};
  check(dylib.define(llvm::orc::absoluteSymbols(std::move(runtime))), "defining the parallel runtime");
  dylib.addGenerator(unwrap(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                                jit->getDataLayout().getGlobalPrefix()),
                            "opening the process's symbols"));

  llvm::orc::ThreadSafeModule tsm(std::move(compiled.module), std::move(compiled.context));
  check(jit->addIRModule(std::move(tsm)), "adding " + func.name + " to the JIT");
  auto address = unwrap(jit->lookup(func.name), "looking up " + func.name + " in the JIT");
  auto entry = address.toPtr<void (*)(void**)>();
  return std::make_unique<JitKernel>(std::move(jit), entry);
}

void write_shared_object(const LoweredFunc& func, const std::string& path, const LLVMOptions& options) {
  auto machine = create_host_target_machine(options.opt_level);
  CompiledModule compiled = build_optimized(func, options, *machine);

  std::string object_path = path + "." + std::to_string(getpid()) + ".o";
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(object_path, ec, llvm::sys::fs::OF_None);
    if (ec) throw CompileError("cannot write object file " + object_path + ": " + ec.message());
    llvm::legacy::PassManager emit;
    if (machine->addPassesToEmitFile(emit, out, nullptr, llvm::CodeGenFileType::ObjectFile))
      throw CompileError("the host target cannot emit object files");
    emit.run(*compiled.module);
    out.flush();
    if (out.has_error()) throw CompileError("error writing object file " + object_path);
  }
  std::string output;
  int status = run_command("cc -shared -o " + shell_quote(path) + " " + shell_quote(object_path), output);
  std::remove(object_path.c_str());
  if (status != 0)
    throw CompileError("linking " + path + " with `cc -shared` failed (status " + std::to_string(status) +
                       "):\n" + output);
}

}  // namespace tessel
