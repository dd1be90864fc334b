// The parallel-loop runtime, directly and through JIT-compiled parallel loops.
#include "codegen/llvm/parallel_runtime.h"

#include <atomic>
#include <chrono>
#include <catch2/catch.hpp>
#include <memory>
#include <thread>
#include <vector>

#include "codegen/llvm/llvm_backend.h"
#include "tests/codegen/kernel_test_util.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  std::atomic<int> nested_calls{0};
  std::thread::id caller;
  explicit Counts(int n) : hits(n) {}
};

void count_body(int64_t i, void* closure) { static_cast<Counts*>(closure)->hits[i]++; }

struct NestedState {
  std::atomic<int> inner_total{0};
  std::atomic<int> inner_on_other_thread{0};
};

void nested_inner(int64_t, void* closure) {
  auto* s = static_cast<std::pair<NestedState*, std::thread::id>*>(closure);
  s->first->inner_total++;
  if (std::this_thread::get_id() != s->second) s->first->inner_on_other_thread++;
}

void nested_outer(int64_t, void* closure) {
  std::pair<NestedState*, std::thread::id> inner{static_cast<NestedState*>(closure), std::this_thread::get_id()};
  tessel_parallel_for(10, nested_inner, &inner);
}

// Restores the default thread count when a test ends.
struct ThreadCountGuard {
  int saved = num_threads();
  ~ThreadCountGuard() { set_num_threads(saved); }
};

}  // namespace

TEST_CASE("parallel_for runs every iteration exactly once", "[codegen][runtime]") {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    REQUIRE(num_threads() == threads);
    for (int n : {0, 1, 2, 5, 1000}) {
      CAPTURE(threads, n);
      Counts counts(n);
      tessel_parallel_for(n, count_body, &counts);
      for (int i = 0; i < n; ++i) REQUIRE(counts.hits[i].load() == 1);
    }
  }
}

TEST_CASE("parallel_for after the workers went to sleep wakes them and runs every iteration once",
          "[codegen][runtime]") {
  // Idle workers spin for about 2 ms, then wait on the job counter; every job after a longer pause
  // finds them asleep. Alternating short and long pauses covers a worker going to sleep just as a
  // job is posted.
  ThreadCountGuard guard;
  set_num_threads(3);
  for (int round = 0; round < 12; ++round) {
    std::this_thread::sleep_for(std::chrono::microseconds(round % 2 ? 2000 : 4000 + 150 * round));
    Counts counts(50);
    tessel_parallel_for(50, count_body, &counts);
    for (int i = 0; i < 50; ++i) REQUIRE(counts.hits[i].load() == 1);
  }
}

TEST_CASE("parallel_for on more threads than cores runs every iteration once, and none after it returns",
          "[codegen][runtime]") {
  // Eight threads on fewer cores: some are not running when a job is posted, and the threads that
  // are take their chunks; a thread that wakes after its job has finished must run nothing of it.
  // Every job's counts are checked when it returns and again at the end.
  ThreadCountGuard guard;
  set_num_threads(8);
  std::vector<std::unique_ptr<Counts>> jobs;
  for (int job = 0; job < 300; ++job) {
    const int n = 1 + (job * 7) % 37;  // fewer iterations than threads, and more
    jobs.push_back(std::make_unique<Counts>(n));
    tessel_parallel_for(n, count_body, jobs.back().get());
    for (int i = 0; i < n; ++i) REQUIRE(jobs.back()->hits[i].load() == 1);
    if (job % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // workers fall asleep
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (const auto& counts : jobs)
    for (const std::atomic<int>& hit : counts->hits) REQUIRE(hit.load() == 1);
}

TEST_CASE("nested parallel_for runs serially in the calling thread", "[codegen][runtime]") {
  ThreadCountGuard guard;
  set_num_threads(2);
  NestedState state;
  tessel_parallel_for(8, nested_outer, &state);
  REQUIRE(state.inner_total.load() == 80);
  REQUIRE(state.inner_on_other_thread.load() == 0);
}

TEST_CASE("jit-compiled parallel loops match serial ones", "[codegen][runtime]") {
  ThreadCountGuard guard;
  // Out[i*64 + j] = In[i*64 + j] * i + j, with the outer loop serial or parallel; a nested variant
  // makes the inner loop parallel too; the body uses an outer serial variable `r` and a scratch buffer.
  const int64_t rows = 37, cols = 64;
  auto make = [&](ForKind outer, ForKind inner) {
    Expr idx = var("i") * cols + var("j");
    Expr value = fload("In", idx) * make_cast(kFloat32, var("i") + var("r")) + make_cast(kFloat32, var("j"));
    Stmt row = make_allocate(
        "T", DType::Float32, {cols}, MemScope::Local,
        make_seq({serial("j", cols, make_store("T", var("j"), value), inner),
                  serial("j2", cols, make_store("Out", var("i") * cols + var("j2"), fload("T", var("j2"))))}));
    Stmt nest = make_for("r", make_int(2), make_int(1), ForKind::Serial, serial("i", rows, row, outer));
    return LoweredFunc{"par_rows", {param("In", DType::Float32, rows * cols), param("Out", DType::Float32, rows * cols, true)},
                       nest};
  };
  AlignedBuffer<float> in(rows * cols), expected(rows * cols), out(rows * cols);
  for (int64_t k = 0; k < rows * cols; ++k) in[k] = static_cast<float>((k * 31) % 17) - 8;
  // The reference is plain C++ (r = 2); small integers keep every value exact in float.
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      expected[i * cols + j] = in[i * cols + j] * static_cast<float>(i + 2) + static_cast<float>(j);
  auto serial_kernel = jit_compile(make(ForKind::Serial, ForKind::Serial));
  auto parallel = jit_compile(make(ForKind::Parallel, ForKind::Serial));
  auto nested = jit_compile(make(ForKind::Parallel, ForKind::Parallel));
  REQUIRE(emit_llvm_ir(make(ForKind::Parallel, ForKind::Serial)).find("tessel_parallel_for") != std::string::npos);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (auto* kernel : {serial_kernel.get(), parallel.get(), nested.get()}) {
      for (int64_t k = 0; k < rows * cols; ++k) out[k] = NAN;
      void* args[] = {in.data(), out.data()};
      kernel->run(args);
      for (int64_t k = 0; k < rows * cols; ++k) REQUIRE(out[k] == expected[k]);
    }
  }
}
