// `tessel costmodel train / eval` on a small tuning log made by `tessel measure`.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "subprocess.h"

using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;

TEST_CASE("costmodel train and eval learn from a measured log and report bad input", "[cli][costmodel]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  RunResult m = tessel({"measure", "--op", "matmul", "--param", "M=16", "--param", "N=16", "--param", "K=16",
                        "--random-schedules", "30", "--target", "llvm", "--db", db, "--min-time-ms", "5"});
  INFO(m.out << m.err);
  REQUIRE(m.exit_code == 0);
  RunResult best = tessel({"db", "best", "--db", db, "--json"});
  REQUIRE(best.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(best.out);
  std::string key = j.at(0).at("workload").get<std::string>();

  std::string model = dir.file("model.json");
  RunResult train = tessel({"costmodel", "train", "--db", db, "-o", model});
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  CHECK_THAT(train.out, Catch::Contains("samples: 30") && Catch::Contains("groups: 1") &&
                            Catch::Contains("objective: rank") && Catch::Contains("input: rows") &&
                            Catch::Contains("training time:") && Catch::Contains("saved: " + model));

  RunResult eval = tessel({"costmodel", "eval", "--db", db, "--costmodel", model, "--holdout-workload", key});
  INFO(eval.out << eval.err);
  REQUIRE(eval.exit_code == 0);
  CHECK_THAT(eval.out, Catch::Contains(key) && Catch::Contains("overall") && Catch::Contains("pairwise") &&
                           Catch::Contains("top-5% recall"));

  SECTION("bad input exits 2 with an error line") {
    RunResult unknown = tessel({"costmodel", "eval", "--db", db, "--costmodel", model, "--holdout-workload", "0123"});
    CHECK(unknown.exit_code == 2);
    CHECK_THAT(unknown.err, Catch::StartsWith("error: unknown workload key '0123'"));

    RunResult excluded =
        tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--exclude-workload", key});
    CHECK(excluded.exit_code == 2);
    CHECK_THAT(excluded.err, Catch::Contains("error:") && Catch::Contains("no usable llvm records"));

    RunResult no_cuda = tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--target", "cuda"});
    CHECK(no_cuda.exit_code == 2);

    RunResult packsum = tessel({"costmodel", "train", "--db", db, "-o", dir.file("p.json"), "--config",
                                dir.write("c5.json", R"({"costmodel": {"objective": "packsum"}})")});
    CHECK(packsum.exit_code == 0);
    CHECK_THAT(packsum.out, Catch::Contains("objective: packsum"));

    RunResult programs = tessel({"costmodel", "train", "--db", db, "-o", dir.file("s.json"), "--config",
                                 dir.write("c6.json", R"({"costmodel": {"input": "programs"}})")});
    CHECK(programs.exit_code == 0);
    CHECK_THAT(programs.out, Catch::Contains("input: programs") && Catch::Contains("neural ranker weight: 2") &&
                                 Catch::Contains("neural ranker: deepsets"));
    RunResult summary = tessel({"costmodel", "train", "--db", db, "-o", dir.file("u.json"), "--config",
                                dir.write("c2.json", R"({"costmodel": {"input": "programs", "network": "summary"}})")});
    CHECK(summary.exit_code == 0);
    CHECK_THAT(summary.out, Catch::Contains("neural ranker weight: 1") && Catch::Contains("neural ranker: summary"));
    RunResult trees_only = tessel({"costmodel", "train", "--db", db, "-o", dir.file("t.json"), "--config",
                                   dir.write("c3.json", R"({"costmodel": {"input": "programs", "mlp_weight": 0}})")});
    CHECK(trees_only.exit_code == 0);
    CHECK_THAT(trees_only.out, Catch::Contains("neural ranker weight: 0"));
    RunResult bad_network = tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--config",
                                    dir.write("c4.json", R"({"costmodel": {"input": "programs", "network": "rnn"}})")});
    CHECK(bad_network.exit_code == 2);
    CHECK_THAT(bad_network.err,
               Catch::StartsWith("error: ") && Catch::Contains("costmodel.network: 'rnn' is not summary or deepsets"));
    RunResult rows_network = tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--config",
                                     dir.write("c7.json", R"({"costmodel": {"network": "deepsets"}})")});
    CHECK(rows_network.exit_code == 2);
    CHECK_THAT(rows_network.err, Catch::StartsWith("error: costmodel.network deepsets names the neural ranker"));
    RunResult rows_mlp = tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--config",
                                 dir.write("c8.json", R"({"costmodel": {"mlp_weight": 1}})")});
    CHECK(rows_mlp.exit_code == 2);
    CHECK_THAT(rows_mlp.err,
               Catch::StartsWith("error: costmodel.mlp_weight blends a neural ranker into a model of program "
                                 "summaries; the 'rows' input has none"));
    RunResult programs_eval = tessel({"costmodel", "eval", "--db", db, "--costmodel", dir.file("s.json")});  // deepsets
    CHECK(programs_eval.exit_code == 0);
    CHECK_THAT(programs_eval.out, Catch::Contains("overall"));

    RunResult pairs = tessel({"costmodel", "train", "--db", db, "-o", dir.file("q.json"), "--config",
                              dir.write("c9.json", R"({"costmodel": {"input": "pairs"}})")});
    CHECK(pairs.exit_code == 0);
    CHECK_THAT(pairs.out, Catch::Contains("input: pairs"));
    RunResult pairs_eval =
        tessel({"costmodel", "eval", "--db", db, "--costmodel", dir.file("q.json"), "--holdout-workload", key});
    CHECK(pairs_eval.exit_code == 0);
    CHECK_THAT(pairs_eval.out, Catch::Contains(key) && Catch::Contains("overall"));
    RunResult pairs_packsum =
        tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--config",
                dir.write("c1.json", R"({"costmodel": {"input": "pairs", "objective": "packsum"}})")});
    CHECK(pairs_packsum.exit_code == 2);
    CHECK_THAT(pairs_packsum.err,
               Catch::StartsWith("error: costmodel.objective packsum cannot train costmodel.input pairs"));

    RunResult input = tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--config",
                              dir.write("c10.json", R"({"costmodel": {"input": "stores"}})")});
    CHECK(input.exit_code == 2);
    CHECK_THAT(input.err, Catch::StartsWith("error: ") &&
                              Catch::Contains("costmodel.input: 'stores' is not rows, programs or pairs"));

    RunResult objective = tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--config",
                                  dir.write("c11.json", R"({"costmodel": {"objective": "listwise"}})")});
    CHECK(objective.exit_code == 2);
    CHECK_THAT(objective.err, Catch::StartsWith("error: ") &&
                                  Catch::Contains("costmodel.objective: 'listwise' is not rank or packsum"));
    CHECK_FALSE(std::filesystem::exists(dir.file("x.json")));

    RunResult missing_db = tessel({"costmodel", "train", "--db", dir.file("nope.db"), "-o", dir.file("x.json")});
    CHECK(missing_db.exit_code == 2);
    CHECK_THAT(missing_db.err, Catch::Contains("does not exist"));

    std::string bad = dir.write("bad.json", "{\"format\": \"other\"}");
    RunResult bad_model = tessel({"costmodel", "eval", "--db", db, "--costmodel", bad});
    CHECK(bad_model.exit_code == 2);
    CHECK_THAT(bad_model.err, Catch::Contains(bad) && Catch::Contains("not a tessel cost model"));
  }
}

TEST_CASE("costmodel train leaves out and costmodel eval ranks a fold of several workloads", "[cli][costmodel]") {
  TempDir dir;
  std::string db = dir.file("log.db");
  // Three workloads, odd shapes among them.
  for (const char* shape : {"M=16,N=16,K=16", "M=7,N=61,K=13", "M=27,N=9,K=31"}) {
    std::vector<std::string> args = {"measure", "--op", "matmul"};
    std::string dims = shape;
    for (size_t at = 0; at != std::string::npos;) {
      size_t comma = dims.find(',', at);
      args.push_back("--param");
      args.push_back(dims.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      at = comma == std::string::npos ? comma : comma + 1;
    }
    for (const char* a : {"--random-schedules", "12", "--target", "llvm", "--min-time-ms", "5", "--db"})
      args.push_back(a);
    args.push_back(db);
    RunResult m = tessel(args);
    INFO(m.out << m.err);
    REQUIRE(m.exit_code == 0);
  }
  RunResult best = tessel({"db", "best", "--db", db, "--json"});
  REQUIRE(best.exit_code == 0);
  nlohmann::json j = nlohmann::json::parse(best.out);
  REQUIRE(j.size() == 3);
  const std::string a = j.at(0).at("workload").get<std::string>(), b = j.at(1).at("workload").get<std::string>(),
                    c = j.at(2).at("workload").get<std::string>();

  std::string model = dir.file("fold.json");
  RunResult train =
      tessel({"costmodel", "train", "--db", db, "-o", model, "--exclude-workload", a, "--exclude-workload", b});
  INFO(train.out << train.err);
  REQUIRE(train.exit_code == 0);
  CHECK_THAT(train.out, Catch::Contains("samples: 12") && Catch::Contains("groups: 1"));

  RunResult eval =
      tessel({"costmodel", "eval", "--db", db, "--costmodel", model, "--holdout-workload", a, "--holdout-workload", b});
  INFO(eval.out << eval.err);
  REQUIRE(eval.exit_code == 0);
  CHECK_THAT(eval.out, Catch::Contains(a) && Catch::Contains(b) && !Catch::Contains(c) && Catch::Contains("overall") &&
                           Catch::Contains("mean"));

  RunResult one = tessel({"costmodel", "eval", "--db", db, "--costmodel", model, "--holdout-workload", c});
  REQUIRE(one.exit_code == 0);
  CHECK_THAT(one.out, Catch::Contains(c) && !Catch::Contains("mean"));  // one workload: its line is the mean

  RunResult all = tessel({"costmodel", "train", "--db", db, "-o", dir.file("x.json"), "--exclude-workload", a,
                          "--exclude-workload", b, "--exclude-workload", c});
  CHECK(all.exit_code == 2);
  CHECK_THAT(all.err, Catch::StartsWith("error:") && Catch::Contains("outside the excluded workloads"));
  RunResult unknown = tessel(
      {"costmodel", "eval", "--db", db, "--costmodel", model, "--holdout-workload", a, "--holdout-workload", "feedface"});
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::StartsWith("error: unknown workload key 'feedface'"));
}
