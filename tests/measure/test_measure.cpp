// The pieces of the harness on their own: fault plans, fault code, workload data files, child processes.
#include <catch2/catch.hpp>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "measure/child_process.h"
#include "measure/fault_injection.h"
#include "measure/workload_data.h"
#include "schedule/ops/op_library.h"
#include "schedule/te/error.h"

using namespace tessel;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(getpid()))).string();
}

ComputeDAG small_matmul() { return build_op("matmul", {{"M", "7"}, {"N", "13"}, {"K", "5"}}); }

}  // namespace

TEST_CASE("fault plans parse KIND@INDEX lists and name a bad entry", "[measure]") {
  auto plan = parse_fault_plan("crash@3,hang@5,wrong@7,oob@9");
  REQUIRE(plan.size() == 4);
  CHECK(plan.at(3) == Fault::Crash);
  CHECK(plan.at(5) == Fault::Hang);
  CHECK(plan.at(7) == Fault::Wrong);
  CHECK(plan.at(9) == Fault::OutOfBounds);
  for (const char* bad : {"crash", "boom@1", "crash@x", "crash@-1", "crash@1,hang@1", ""}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_fault_plan(bad), InputError);
  }
  CHECK_THROWS_AS(parse_fault_plan("crash@2,boom@1"), InputError);
  CHECK_THROWS_WITH(parse_fault_plan("crash@2,boom@1"), Catch::Contains("boom@1"));
}

TEST_CASE("an injected fault appends code that writes the first output", "[measure]") {
  LoweredFunc f;
  f.name = "k";
  f.params = {BufferParam{"A", DType::Float32, {4}, false}, BufferParam{"Y", DType::Float32, {4}, true}};
  f.body = make_store("Y", make_int(0), make_float(1));
  CHECK(inject_fault(f, Fault::None).body == f.body);
  for (Fault fault : {Fault::Crash, Fault::Hang, Fault::Wrong, Fault::OutOfBounds}) {
    LoweredFunc g = inject_fault(f, fault);
    INFO(to_string(fault));
    REQUIRE(g.body->op == StmtOp::Seq);
    REQUIRE(g.body->body.size() == 2);
    bool writes_y = false;
    visit(g.body->body[1], [&](const Stmt& s) { writes_y |= s->op == StmtOp::Store && s->buffer == "Y"; });
    CHECK(writes_y);
  }
}

TEST_CASE("workload data holds inputs and references, mapped read-only", "[measure]") {
  ComputeDAG dag = small_matmul();
  HostTensors inputs = make_random_inputs(dag, 3);
  ReferenceTensors ref = evaluate_reference(dag, inputs);
  std::string path = temp_path("tessel-wd");
  write_workload_data(path, dag, inputs, ref);
  {
    WorkloadData data = WorkloadData::map(path);
    REQUIRE(data.tensors().size() == 3);
    const WorkloadData::Tensor* a = data.find("A");
    REQUIRE(a);
    CHECK_FALSE(a->is_output);
    CHECK(a->shape == std::vector<int64_t>{7, 5});
    for (int64_t i = 0; i < a->elements; ++i) REQUIRE(a->input[i] == inputs.at("A")[static_cast<size_t>(i)]);
    const WorkloadData::Tensor* c = data.find("C");
    REQUIRE(c);
    CHECK(c->is_output);
    for (int64_t i = 0; i < c->elements; ++i) REQUIRE(c->reference[i] == ref.at("C")[static_cast<size_t>(i)]);
    CHECK(c->tolerance.rtol > 0);
    CHECK(data.find("nope") == nullptr);
  }
  // Truncated: the tensors no longer fit.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  CHECK_THROWS_WITH(WorkloadData::map(path), Catch::Contains(path));
  std::ofstream(path) << "not a data file";
  CHECK_THROWS_WITH(WorkloadData::map(path), Catch::Contains("not a workload data file"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(WorkloadData::map(path), Catch::Contains("cannot open"));
}

TEST_CASE("child processes report how they ended and are always reaped", "[measure]") {
  std::string log = temp_path("tessel-child-log");
  ChildProcess ok = ChildProcess::fork_function([](int fd) { (void)!write(fd, "hello\n", 6); }, log);
  std::string line;
  REQUIRE(ok.read_line(line, 10) == ChildProcess::ReadStatus::Line);
  CHECK(line == "hello");
  CHECK(ok.read_line(line, 10) == ChildProcess::ReadStatus::Closed);
  CHECK(ok.reap() == "");

  // The default action: a sanitizer's handler would otherwise report the fault and exit with 1.
  ChildProcess crash = ChildProcess::fork_function(
      [](int) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
      },
      log);
  CHECK(crash.read_line(line, 10) == ChildProcess::ReadStatus::Closed);
  CHECK(crash.reap().find("signal 11") != std::string::npos);

  ChildProcess hang = ChildProcess::fork_function([](int) { pause(); }, log);
  CHECK(hang.read_line(line, 0.2) == ChildProcess::ReadStatus::TimedOut);
  hang.kill_and_reap();
  CHECK_FALSE(hang.running());

  CHECK_THROWS_WITH(ChildProcess::spawn({"/no/such/program"}, log), Catch::Contains("cannot start"));
  CHECK(child_pids_of(getpid()).empty());
  std::filesystem::remove(log);
}
