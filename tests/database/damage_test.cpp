// Damaged and foreign files: flipped bytes, truncation, non-databases, empty files, other SQLite
// files and tampered schemas must give clear DatabaseErrors (never a crash), and check() and
// `tessel db check` must report them.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "database/tuning_log.h"
#include "tests/database/test_support.h"
#include "tools/db_command.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

// A log of a few hundred kilobytes, closed cleanly (so that everything is in the main file).
void write_log(const std::string& path) {
  auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
  std::vector<MeasureRecord> batch;
  for (int i = 0; i < 300; ++i) {
    auto r = make_record("w" + std::to_string(i % 7), 1e-3 * (i + 1),
                         i % 9 ? ErrorCode::Ok : ErrorCode::RunTimeout);
    r.trace_json = std::string(1500, static_cast<char>('a' + i % 26));
    batch.push_back(r);
  }
  log.append(batch);
}

int cli_check(const std::string& path, std::string* messages = nullptr) {
  std::ostringstream out, err;
  int rc = run_db_command({"check", "--db", path}, out, err);
  if (messages) *messages = out.str() + err.str();
  return rc;
}

// Opens and uses the file every way a user could; only DatabaseError may come out.
void use_every_way(const std::string& path) {
  for (auto mode : {TuningLog::Mode::ReadOnly, TuningLog::Mode::ReadWrite}) {
    try {
      auto log = TuningLog::open(path, mode);
      try {
        log.best("w1", cpu_target());
        log.best_per_workload_target();
        log.counts();
        std::ostringstream out;
        log.export_jsonl(out);
      } catch (const DatabaseError& e) {
        CHECK_THAT(e.what(), Catch::Contains(path));
      }
      CHECK_FALSE(log.check().empty());
    } catch (const DatabaseError& e) {
      CHECK_THAT(e.what(), Catch::Contains(path));
    }
  }
}

}  // namespace

TEST_CASE("flipped bytes in the middle of a log are reported", "[database][damage]") {
  ScratchDir dir;
  std::string path = dir.file("log.db");
  write_log(path);
  std::string bytes = read_file(path);
  REQUIRE(bytes.size() > 100'000);
  // Invert one whole page in the middle: every page kind (b-tree or overflow) then has a header or
  // pointer SQLite can tell is wrong.
  size_t start = (bytes.size() / 2) / 4096 * 4096;
  for (size_t i = start; i < start + 4096; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0xFF);
  write_file(path, bytes);

  auto problems = TuningLog::check_file(path);
  REQUIRE_FALSE(problems.empty());
  CHECK_THROWS_AS(TuningLog::open(path, TuningLog::Mode::ReadWrite), DatabaseError);
  CHECK_THROWS_WITH(TuningLog::open(path, TuningLog::Mode::ReadWrite),
                    Catch::Contains("damaged") && Catch::Contains(path));
  std::string messages;
  CHECK(cli_check(path, &messages) == 1);
  CHECK_THAT(messages, Catch::Contains("damaged"));
  use_every_way(path);
}

TEST_CASE("a log truncated to half its size is reported", "[database][damage]") {
  ScratchDir dir;
  std::string path = dir.file("log.db");
  write_log(path);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  CHECK_FALSE(TuningLog::check_file(path).empty());
  CHECK_THROWS_AS(TuningLog::open(path, TuningLog::Mode::ReadWrite), DatabaseError);
  CHECK(cli_check(path) == 1);
  use_every_way(path);
}

TEST_CASE("files that are not tessel logs are refused clearly", "[database][damage]") {
  ScratchDir dir;
  SECTION("a text file") {
    std::string path = dir.file("notes.db");
    std::string text;
    for (int i = 0; i < 200; ++i) text += "this is not a database, line " + std::to_string(i) + "\n";
    write_file(path, text);
    CHECK_THROWS_WITH(TuningLog::open(path, TuningLog::Mode::ReadOnly),
                      Catch::Contains(path) && Catch::Contains("not an SQLite database"));
    CHECK_THROWS_AS(TuningLog::open(path, TuningLog::Mode::ReadWrite), DatabaseError);
    CHECK(read_file(path) == text);  // refusing it did not touch it
    CHECK(cli_check(path) == 1);
    std::ostringstream out, err;
    CHECK(run_db_command({"info", "--db", path}, out, err) == 2);
    CHECK_THAT(err.str(), Catch::StartsWith("error:") && Catch::Contains(path));
  }
  SECTION("an empty file") {
    std::string path = dir.file("empty.db");
    write_file(path, "");
    CHECK_THROWS_WITH(TuningLog::open(path, TuningLog::Mode::ReadOnly),
                      Catch::Contains("is an empty file") && Catch::Contains(path));
    CHECK_THROWS_WITH(TuningLog::open(path, TuningLog::Mode::ReadWrite), Catch::Contains("is an empty file"));
    CHECK(read_file(path).empty());  // not turned into a log
    CHECK(cli_check(path) == 1);
    std::ostringstream out, err;
    CHECK(run_db_command({"best", "--db", path}, out, err) == 2);
    CHECK_THAT(err.str(), Catch::StartsWith("error:"));
  }
  SECTION("another program's SQLite database") {
    std::string path = dir.file("other.db");
    raw_exec(path, "CREATE TABLE records (x); INSERT INTO records VALUES (1);");
    for (auto mode : {TuningLog::Mode::ReadOnly, TuningLog::Mode::ReadWrite}) {
      CHECK_THROWS_WITH(TuningLog::open(path, mode), Catch::Contains("not a tessel tuning log"));
    }
    CHECK(cli_check(path) == 1);
  }
  SECTION("a tessel application id on a foreign schema") {
    std::string path = dir.file("fake.db");
    raw_exec(path, "PRAGMA application_id = 1413829452; PRAGMA user_version = 2; CREATE TABLE records (x);");
    CHECK_THROWS_WITH(TuningLog::open(path, TuningLog::Mode::ReadWrite),
                      Catch::Contains("does not have the tessel schema"));
    CHECK(cli_check(path) == 1);
  }
}

TEST_CASE("a trigger planted in a shared log never runs and check() reports it", "[database][damage]") {
  ScratchDir dir;
  std::string path = dir.file("log.db");
  TuningLog::open(path, TuningLog::Mode::ReadWrite).begin_session({"mine", "{}", "0.1.0", "host", ""});
  raw_exec(path,
           "CREATE TRIGGER sneaky AFTER INSERT ON records BEGIN UPDATE sessions SET label = 'pwned'; END;");
  auto log = TuningLog::open(path, TuningLog::Mode::ReadWrite);
  log.append({make_record("mm", 1e-3)});
  std::ostringstream out;
  log.export_jsonl(out);
  CHECK_THAT(out.str(), !Catch::Contains("pwned"));
  auto problems = log.check();
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("unexpected trigger 'sneaky'"));
}
