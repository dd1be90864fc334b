// The `tessel db` command line: output formats, exit codes and error messages.
#include "tools/db_command.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "database/tuning_log.h"
#include "tests/database/real_records.h"
#include "tests/database/test_support.h"

using namespace tessel;
using namespace tessel::testing;

namespace {


}  // namespace

TEST_CASE("tessel db info, best, check and export on a sound log", "[database][cli]") {
  ScratchDir dir;
  std::string path = dir.file("log.db");
  const WorkloadInfo mm = matmul_workload(4, 4, 4), conv = matmul_workload(8, 8, 8);  // keys: mm's sorts after
  REQUIRE(conv.key < mm.key);
  TuningLog::open(path, TuningLog::Mode::ReadWrite)
      .append({real_record(mm, "a", 2e-3), real_record(mm, "b", 1e-3),
               real_record(mm, "c", 1e-4, ErrorCode::WrongAnswer),
               real_record(conv, "a", 5e-3, ErrorCode::Ok, gpu_target())});

  auto info = db({"info", "--db", path, "--json"});
  REQUIRE(info.code == 0);
  auto counts = nlohmann::json::parse(info.out);
  CHECK(counts ==
        nlohmann::json{
            {"workloads", 2}, {"targets", 2}, {"sessions", 1}, {"records", 4}, {"error_records", 1}, {"retimes", 0}});
  auto text = db({"info", "--db", path});
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("error records  1"));

  auto best = db({"best", "--db", path, "--json"});
  REQUIRE(best.code == 0);
  auto list = nlohmann::json::parse(best.out);
  REQUIRE(list.size() == 2);
  CHECK(list[0]["workload"] == conv.key);
  CHECK(list[1]["workload"] == mm.key);
  CHECK(list[1]["median_s"] == 1e-3);
  CHECK(list[1]["gflops"] == Approx(mm.flops / 1e-3 * 1e-9));
  auto table = db({"best", "--db", path});
  CHECK(table.code == 0);
  CHECK_THAT(table.out, Catch::Contains("1.000 ms") && Catch::Contains("llvm/x86-64-v3"));

  auto check = db({"check", "--db", path});
  CHECK(check.code == 0);
  CHECK(check.out == "ok\n");

  std::string exported = dir.file("out.jsonl");
  CHECK(db({"export", "--db", path, "-o", exported}).code == 0);
  auto to_stdout = db({"export", "--db", path});
  CHECK(to_stdout.code == 0);
  CHECK(read_file(exported) == to_stdout.out);

  std::string copy = dir.file("copy.db");
  auto imported = db({"import", "--db", copy, exported});
  CHECK(imported.code == 0);
  CHECK_THAT(imported.out, Catch::Contains("imported 4"));
  CHECK(db({"export", "--db", copy}).out == to_stdout.out);

  std::string merged = dir.file("merged.db");
  CHECK(db({"merge", "--db", merged, path, copy}).code == 0);
  CHECK(TuningLog::open(merged, TuningLog::Mode::ReadOnly).counts().records ==
        4);  // copy adds only duplicates
}

TEST_CASE("tessel db reports bad arguments and bad files with exit code 2", "[database][cli]") {
  ScratchDir dir;
  std::string path = dir.file("log.db");
  TuningLog::open(path, TuningLog::Mode::ReadWrite).append({real_record(matmul_workload(), "a", 1e-3)});

  auto expect_error = [](const DbResult& r, const std::string& fragment) {
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("error:") && Catch::Contains(fragment));
  };
  expect_error(db({}), "missing command");
  expect_error(db({"frobnicate", "--db", path}), "unknown command 'frobnicate'");
  expect_error(db({"info"}), "missing --db");
  expect_error(db({"info", "--db"}), "--db needs a value");
  expect_error(db({"info", "--db", path, "--color"}), "unknown option '--color'");
  expect_error(db({"info", "--db", dir.file("absent.db")}), "absent.db' does not exist");
  expect_error(db({"check", "--db", dir.file("absent.db")}), "does not exist");
  expect_error(db({"import", "--db", path}), "at least one");
  expect_error(db({"import", "--db", path, dir.file("absent.jsonl")}), "absent.jsonl");
  expect_error(db({"merge", "--db", path, dir.file("absent.db")}), "absent.db");

  std::string bad = dir.file("bad.jsonl");
  std::string good_line = db({"export", "--db", path}).out;
  write_file(bad, "{\"v\":1}\n" + good_line);
  std::string target = dir.file("target.db");
  auto imported = db({"import", "--db", target, bad});
  expect_error(imported, "bad.jsonl: line 1: workload: missing");
  CHECK_THAT(imported.err, Catch::Contains("nothing imported"));
  CHECK(imported.out.empty());  // the good line waits for the bad one to be fixed
  CHECK_FALSE(std::filesystem::exists(target));  // and the log the import would have created is not left behind
  CHECK(db({"help"}).code == 0);
}
