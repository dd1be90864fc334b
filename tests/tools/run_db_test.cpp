// `tessel run --db PATH --record / --best`: measurements go into the tuning log and come back.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "subprocess.h"

using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;

namespace {

std::vector<std::string> matmul_run(const std::string& db, std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", "--op", "matmul", "--param", "M=33", "--param", "N=17", "--param",
                                   "K=29", "--db", db, "--min-time", "0.02"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

nlohmann::json info(const std::string& db) {
  RunResult r = tessel({"db", "info", "--db", db, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("run --record appends one checked record per run and prints after the commit", "[cli][db]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  RunResult a = tessel(matmul_run(db, {"--record"}));
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  CHECK(a.out.find("recorded as record 1") != std::string::npos);
  RunResult b = tessel(matmul_run(db, {"--record", "--schedule", "none", "--json"}));
  REQUIRE(b.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(b.out);
  CHECK(j["record_id"] == 2);
  CHECK(j["correct"] == true);
  nlohmann::json counts = info(db);
  CHECK(counts["records"] == 2);
  CHECK(counts["workloads"] == 1);
  CHECK(counts["error_records"] == 0);
  CHECK(counts["retimes"] == 0);
  // The default schedule once more: the log holds it, so this is a retime, not a second trial.
  REQUIRE(tessel(matmul_run(db, {"--record"})).exit_code == 0);
  counts = info(db);
  CHECK(counts["records"] == 3);
  CHECK(counts["retimes"] == 1);
}

TEST_CASE("run --best replays the fastest recorded schedule", "[cli][db]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  REQUIRE(tessel(matmul_run(db, {"--record", "--schedule", "none"})).exit_code == 0);
  REQUIRE(tessel(matmul_run(db, {"--record"})).exit_code == 0);
  RunResult best = tessel({"db", "best", "--db", db, "--json"});
  REQUIRE(best.exit_code == 0);
  nlohmann::json rows = nlohmann::json::parse(best.out);
  REQUIRE(rows.size() == 1);
  RunResult r = tessel(matmul_run(db, {"--best", "--json", "--check"}));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["schedule_source"] == "tuning log");
  CHECK(j["correct"] == true);
}

TEST_CASE("run --best on a miss warns and uses the default schedule", "[cli][db]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  REQUIRE(tessel(matmul_run(db, {"--record"})).exit_code == 0);
  RunResult r = tessel({"run", "--op", "matmul", "--param", "M=8", "--param", "N=8", "--param", "K=8", "--db", db,
                        "--best", "--json", "--min-time", "0.01"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.rfind("warning: no tuned schedule for workload", 0) == 0);
  CHECK(nlohmann::json::parse(r.out)["schedule_source"] == "default");
}

TEST_CASE("run --best against a damaged log is bad input, not a run of another schedule", "[cli][db]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  REQUIRE(tessel(matmul_run(db, {"--record"})).exit_code == 0);
  {  // flip a byte in every 512 past the file header
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (size_t i = 100; i < bytes.size(); i += 512) bytes[i] = static_cast<char>(~bytes[i]);
    f.seekp(0);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto bytes_of = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string damaged = bytes_of(db);
  RunResult r = tessel(matmul_run(db, {"--best", "--json", "--check"}));
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("error: tuning log '" + db + "' is damaged", 0) == 0);
  CHECK(r.out.empty());
  CHECK(bytes_of(db) == damaged);
}

TEST_CASE("run: record and best need a log, and best excludes a schedule", "[cli][db][input]") {
  TempDir dir;
  for (auto args : {std::vector<std::string>{"run", "--op", "matmul", "--param", "M=8", "--param", "N=8", "--param",
                                             "K=8", "--record"},
                    matmul_run(dir.file("x.db"), {"--best", "--schedule", "none"}),
                    matmul_run(dir.file("x.db"), {})}) {
    RunResult r = tessel(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind("error:", 0) == 0);
  }
}
