// The tuning log in a PostgreSQL database behaves as in a SQLite file: the same records, ranking,
// checksums, budget under concurrent writers, byte-identical exports (across backends too), checks
// and refusals, and appends that ride out a server restart. Each test takes a database of its own
// on a throwaway server (tests/database/postgres_server.h) and is skipped where PostgreSQL is not
// installed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "database/tuning_log.h"
#include "tests/database/postgres_server.h"
#include "tests/database/real_records.h"
#include "tests/database/test_support.h"
#include "tools/db_command.h"

using namespace tessel;
using namespace tessel::testing;

namespace {

using Mode = TuningLog::Mode;

// A fresh database for the running test, or "" when the test is skipped.
std::string fresh_database() {
  PostgresServer* server = PostgresServer::shared_or_skip();
  return server ? server->create_database() : "";
}



void require_exit_0(pid_t child) {
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}


// Twenty records over two workloads and two targets, with equal timestamps on purpose (the export
// then orders by id), doubles that need all 17 digits, failures and a retime with a yardstick.
// "Zconv" sorts first bytewise, as SQLite sorts, and last in the test server's ICU locale.
void write_varied_records(TuningLog& log) {
  log.begin_session({"first", "{}", "0.1.0", "host-a", "2024-01-01T00:00:00.000Z"});
  for (int i = 0; i < 20; ++i) {
    MeasureRecord r =
        make_record(i % 3 ? "mm" : "Zconv", (i + 1) / 7.0 * 1e-3, i % 5 == 0 ? ErrorCode::WrongAnswer : ErrorCode::Ok,
                    i % 2 ? cpu_target() : gpu_target());
    r.timestamp = "2024-01-01T00:00:0" + std::to_string(i % 4) + ".000Z";
    r.trace_json = R"({"i":)" + std::to_string(i) + "}";
    log.append({r});
  }
  log.begin_session({"second", R"({"x":1})", "0.1.0", "host-b", "2024-02-01T00:00:00.000Z"});
  std::vector<MeasureRecord> gemv = {make_record("gemv", 0.1 + 0.2),
                                     make_record("gemv", 1e-300, ErrorCode::BuildTimeout),
                                     make_record("gemv", 0.1 + 0.2)};
  gemv[2].purpose = RecordPurpose::Retime;
  gemv[2].reference_s = 1.0 / 3.0;
  for (MeasureRecord& r : gemv) r.timestamp = "2024-02-01T00:00:01.000Z";
  log.append(gemv);
}

}  // namespace

TEST_CASE("postgres: appended records come back exactly, with counts, ranking and settings", "[database][postgres]") {
  const std::string url = fresh_database();
  if (url.empty()) return;
  auto log = TuningLog::open(url, Mode::ReadWrite);
  CHECK(log.path() == url);
  log.begin_session({"unit test", R"({"trials":10})", "0.1.0", "host-a", ""});
  std::vector<MeasureRecord> batch = {make_record("mm", 1.0 / 3.0), make_record("mm", 2e-7),
                                      make_record("mm", 1e-3, ErrorCode::RunTimeout)};
  batch[1].samples_s = {2e-7, 2.0000000000000004e-7, 1.9999999999999998e-7};
  batch[2].settings_json = R"({"repeat":5})";
  auto ids = log.append(batch);
  REQUIRE(ids.size() == 3);
  CHECK(ids[0] < ids[1]);
  CHECK(ids[1] < ids[2]);

  auto stored = log.records("mm", cpu_target());
  REQUIRE(stored.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(stored[i].id == ids[i]);
    CHECK(stored[i].samples_s == batch[i].samples_s);
    CHECK(stored[i].median_s == batch[i].median_s);
    CHECK(stored[i].workload.flops == batch[i].workload.flops);
    CHECK(stored[i].trace_json == batch[i].trace_json);
    CHECK(stored[i].error == batch[i].error);
    CHECK(stored[i].timestamp.size() == 24);
  }
  auto counts = log.counts();
  CHECK(counts.workloads == 1);
  CHECK(counts.targets == 1);
  CHECK(counts.sessions == 1);
  CHECK(counts.records == 3);
  CHECK(counts.error_records == 1);
  CHECK(log.holds("mm", cpu_target(), batch[2].trace_json));
  CHECK_FALSE(log.holds("mm", gpu_target(), batch[2].trace_json));
  CHECK(log.settings("mm", cpu_target()) == std::vector<std::pair<int64_t, std::string>>{
                                                {ids[0], batch[0].settings_json}, {ids[2], batch[2].settings_json}});
  CHECK(log.trial_count("mm", cpu_target()) == 3);

  // Ranking: the fastest ok record; failures and wrong answers never; retimes by the upper median.
  log.append({make_record("mm", 1e-7, ErrorCode::WrongAnswer), make_record("mm", 1e-3, ErrorCode::Ok, gpu_target())});
  CHECK(log.best("mm", cpu_target())->median_s == 2e-7);
  MeasureRecord slower = batch[1];
  slower.purpose = RecordPurpose::Retime;
  slower.median_s = 0.5;
  slower.samples_s = {0.5};
  log.append({slower});
  CHECK(log.best("mm", cpu_target())->median_s == 1.0 / 3.0);  // 2e-7's schedule now counts 0.5
  CHECK(log.trial_count("mm", cpu_target()) == 4);
  auto all = log.best_per_workload_target();
  REQUIRE(all.size() == 2);
  CHECK(all[0].target.kind == "cuda");
  CHECK(all[1].target.kind == "llvm");
  CHECK_FALSE(log.best("absent", cpu_target()).has_value());
  CHECK(log.check().empty());
}

TEST_CASE("postgres: 6 processes create a fresh log at once, and the trial budget holds with 6 writers",
          "[database][postgres][budget]") {
  const std::string url = fresh_database();
  if (url.empty()) return;
  constexpr int kProcesses = 6, kBatches = 8, kBudget = 25;
  // Every process creates the schema if nobody has: exactly one must do it, and none may fail.
  std::vector<pid_t> openers;
  for (int p = 0; p < kProcesses; ++p) {
    openers.push_back(spawn([&] { TuningLog::open(url, Mode::ReadWrite).begin_session({}); }));
  }
  for (pid_t child : openers) require_exit_0(child);
  CHECK(TuningLog::open(url, Mode::ReadOnly).counts().sessions == kProcesses);

  std::vector<pid_t> writers;
  for (int p = 0; p < kProcesses; ++p) {
    writers.push_back(spawn([&, p] {
      auto log = TuningLog::open(url, Mode::ReadWrite);
      for (int i = 0; i < kBatches; ++i) {
        MeasureRecord retime = make_record("mm", 1e-3 * (p + 1));
        retime.purpose = RecordPurpose::Retime;
        log.append_within_budget(
            {make_record("mm", 1e-3 * (p * 100 + i + 1)), make_record("mm", 1e-3 * (p * 100 + i + 50)), retime},
            kBudget);
      }
    }));
  }
  for (pid_t child : writers) require_exit_0(child);
  auto log = TuningLog::open(url, Mode::ReadOnly);
  CHECK(log.trial_count("mm", cpu_target()) == kBudget);
  CHECK(log.counts().retimes == kProcesses * kBatches);  // a retime is always stored
  CHECK(log.counts().sessions == 2 * kProcesses);
  CHECK(log.counts().workloads == 1);
  CHECK(log.check().empty());
}

TEST_CASE("postgres: export, import into a fresh database, export again is byte-identical", "[database][postgres]") {
  PostgresServer* server = PostgresServer::shared_or_skip();
  if (server == nullptr) return;
  auto log = TuningLog::open(server->create_database(), Mode::ReadWrite);
  write_varied_records(log);
  std::string first = export_to_string(log);
  CHECK(std::count(first.begin(), first.end(), '\n') == 23);
  CHECK(first.find(R"("median_s":0.30000000000000004)") != std::string::npos);

  auto fresh = TuningLog::open(server->create_database(), Mode::ReadWrite);
  check_import_round_trip(fresh, first, 23);

  // And it is what a SQLite log of the same records exports.
  ScratchDir dir;
  auto file = TuningLog::open(dir.file("same.db"), Mode::ReadWrite);
  write_varied_records(file);
  CHECK(export_to_string(file) == first);
}

TEST_CASE("postgres: SQLite to PostgreSQL to SQLite by merge and by db import gives byte-identical exports",
          "[database][postgres][cli]") {
  PostgresServer* server = PostgresServer::shared_or_skip();
  if (server == nullptr) return;
  ScratchDir dir;
  const std::string source = dir.file("source.db");
  const WorkloadInfo mm = matmul_workload(4, 4, 4), big = matmul_workload(16, 8, 8);
  {
    auto log = TuningLog::open(source, Mode::ReadWrite);
    log.begin_session({"tune", R"({"trials":64})", "0.1.0", "host-a", ""});
    log.append({real_record(mm, "a", 2e-3), real_record(mm, "b", 1e-3 / 3),
                real_record(mm, "c", 1e-4, ErrorCode::WrongAnswer),
                real_record(big, "a", 5e-3, ErrorCode::Ok, gpu_target()),
                real_record(big, "b", 0, ErrorCode::CompileDevice, gpu_target())});
  }
  const std::string expected = export_to_string(TuningLog::open(source, Mode::ReadOnly));

  SECTION("TuningLog::merge") {
    const std::string url = server->create_database();
    auto pg = TuningLog::open(url, Mode::ReadWrite);
    auto in = pg.merge(source, record_validator());
    CHECK(in.errors.empty());
    CHECK(in.imported == 5);
    CHECK(export_to_string(pg) == expected);
    auto back = TuningLog::open(dir.file("back.db"), Mode::ReadWrite);
    auto out = back.merge(url, record_validator());
    CHECK(out.errors.empty());
    CHECK(out.imported == 5);
    CHECK(export_to_string(back) == expected);
    CHECK(pg.merge(dir.file("back.db")).duplicates == 5);
    CHECK(back.best(mm.key, cpu_target())->median_s == 1e-3 / 3);
  }
  SECTION("tessel db import of a log") {
    const std::string url = server->create_database();
    DbResult to_pg = db({"import", "--db", url, source});
    INFO(to_pg.err);
    REQUIRE(to_pg.code == 0);
    CHECK_THAT(to_pg.out, Catch::Contains("imported 5"));
    const std::string back = dir.file("back.db");
    DbResult to_file = db({"import", "--db", back, url});
    INFO(to_file.err);
    REQUIRE(to_file.code == 0);
    CHECK(read_file(back).substr(0, 15) == "SQLite format 3");
    CHECK(db({"export", "--db", back}).out == expected);
    CHECK(db({"export", "--db", url}).out == expected);
    // A JSON-lines file and a log in one import would be two transactions: refused.
    write_file(dir.file("lines.jsonl"), expected);
    DbResult mixed = db({"import", "--db", url, source, dir.file("lines.jsonl")});
    CHECK(mixed.code == 2);
    CHECK_THAT(mixed.err, Catch::Contains("not both"));
    DbResult lines = db({"import", "--db", url, dir.file("lines.jsonl")});
    CHECK(lines.code == 0);
    CHECK_THAT(lines.out, Catch::Contains("duplicates skipped 5"));
  }
}

TEST_CASE("postgres: tessel db info, best, check, export, import, merge and migrate take a URL",
          "[database][postgres][cli]") {
  PostgresServer* server = PostgresServer::shared_or_skip();
  if (server == nullptr) return;
  const std::string url = server->create_database();
  const WorkloadInfo mm = matmul_workload(4, 4, 4);
  ScratchDir dir;
  const std::string lines = dir.file("lines.jsonl");
  {
    auto file = TuningLog::open(dir.file("a.db"), Mode::ReadWrite);
    file.append({real_record(mm, "a", 2e-3), real_record(mm, "b", 1e-3)});
    write_file(lines, export_to_string(file));
  }
  DbResult empty = db({"info", "--db", url});
  CHECK(empty.code == 2);
  CHECK_THAT(empty.err, Catch::Contains("does not exist") && Catch::Contains(url));
  CHECK(db({"migrate", "--db", url}).code == 2);  // no log there: nothing to migrate, nothing created
  CHECK(db({"import", "--db", url, lines}).code == 0);
  DbResult info = db({"info", "--db", url, "--json"});
  REQUIRE(info.code == 0);
  CHECK(nlohmann::json::parse(info.out)["records"] == 2);
  DbResult best = db({"best", "--db", url, "--json"});
  REQUIRE(best.code == 0);
  CHECK(nlohmann::json::parse(best.out)[0]["median_s"] == 1e-3);
  CHECK(db({"check", "--db", url}).out == "ok\n");
  CHECK(db({"export", "--db", url}).out == read_file(lines));
  CHECK(db({"export", "--db", url, "-o", dir.file("out.jsonl")}).code == 0);
  CHECK(read_file(dir.file("out.jsonl")) == read_file(lines));
  DbResult merged = db({"merge", "--db", dir.file("b.db"), url});
  CHECK(merged.code == 0);
  CHECK_THAT(merged.out, Catch::Contains("imported 2"));
  DbResult migrated = db({"migrate", "--db", url});
  CHECK(migrated.code == 0);
  CHECK_THAT(migrated.out, Catch::Contains("schema is current"));

  postgres_exec(url, "UPDATE records SET trace_json = replace(trace_json, 'sketch', 'sketcH') WHERE id = 1");
  DbResult check = db({"check", "--db", url});
  CHECK(check.code == 1);
  CHECK_THAT(check.err, Catch::Contains("record 1") && Catch::Contains("checksum"));
}

TEST_CASE("postgres: check() finds a record whose stored bytes were altered, and a planted trigger",
          "[database][postgres][damage]") {
  const std::string url = fresh_database();
  if (url.empty()) return;
  auto log = TuningLog::open(url, Mode::ReadWrite);
  auto ids = log.append({make_record("mm", 1e-3), make_record("mm", 2e-3), make_record("mm", 3e-3)});
  CHECK(log.check().empty());

  // One byte of a trace, and a sample changed in its last digit: nothing the database can see.
  postgres_exec(url, "UPDATE records SET trace_json = overlay(trace_json placing 'X' from 3 for 1) WHERE id = " +
                         std::to_string(ids[0]));
  postgres_exec(url, "UPDATE records SET median_s = median_s + 1e-18 WHERE id = " + std::to_string(ids[1]));
  auto problems = log.check();
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::Contains("record " + std::to_string(ids[0])) && Catch::Contains("checksum"));
  CHECK_THAT(problems[1], Catch::Contains("record " + std::to_string(ids[1])) && Catch::Contains("checksum"));
  CHECK_THROWS_WITH(log.best("mm", cpu_target()), Catch::Contains("checksum") && Catch::Contains(url));
  std::ostringstream out;
  CHECK_THROWS_AS(log.export_jsonl(out), DatabaseError);
  CHECK(TuningLog::check_file(url).size() == 2);

  postgres_exec(url,
                "CREATE FUNCTION sneaky() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;"
                "CREATE TRIGGER sneaky AFTER INSERT ON records FOR EACH ROW EXECUTE FUNCTION sneaky()");
  problems = log.check();
  REQUIRE(problems.size() == 1);
  CHECK_THAT(problems[0], Catch::Contains("unexpected trigger 'sneaky'"));
}

TEST_CASE("postgres: a read-only handle never writes, and an empty database holds no log", "[database][postgres]") {
  const std::string url = fresh_database();
  if (url.empty()) return;
  CHECK_THROWS_WITH(TuningLog::open(url, Mode::ReadOnly), Catch::Contains("does not exist") && Catch::Contains(url));
  CHECK_THAT(TuningLog::check_file(url).at(0), Catch::Contains("does not exist"));
  TuningLog::open(url, Mode::ReadWrite).append({make_record("mm", 1e-3)});
  auto reader = TuningLog::open(url, Mode::ReadOnly);
  CHECK(reader.best("mm", cpu_target())->median_s == 1e-3);
  CHECK_THROWS_WITH(reader.append({make_record("mm", 2e-3)}), Catch::Contains("read-only"));
  CHECK_THROWS_WITH(reader.begin_session({}), Catch::Contains("read-only"));
  std::istringstream in(export_to_string(reader));
  CHECK_THROWS_WITH(reader.import_jsonl(in, "x.jsonl"), Catch::Contains("read-only"));
  CHECK(reader.counts().records == 1);
  CHECK(reader.counts().sessions == 1);
}

TEST_CASE("postgres: a newer schema, an unknown version and a foreign database are refused", "[database][postgres]") {
  PostgresServer* server = PostgresServer::shared_or_skip();
  if (server == nullptr) return;
  SECTION("newer") {
    const std::string url = server->create_database();
    TuningLog::open(url, Mode::ReadWrite).append({make_record("mm", 1e-3)});
    postgres_exec(url, "UPDATE tessel_schema SET version = 7");
    for (auto mode : {Mode::ReadOnly, Mode::ReadWrite}) {
      CHECK_THROWS_WITH(TuningLog::open(url, mode), Catch::Contains("schema version 7") && Catch::Contains("up to 4") &&
                                                        Catch::Contains(url) && Catch::Contains("Upgrade tessel"));
    }
  }
  SECTION("older than any PostgreSQL log") {
    const std::string url = server->create_database();
    TuningLog::open(url, Mode::ReadWrite);
    postgres_exec(url, "UPDATE tessel_schema SET version = 3");
    CHECK_THROWS_WITH(TuningLog::open(url, Mode::ReadWrite), Catch::Contains("schema version 3"));
  }
  SECTION("another program's tables") {
    const std::string url = server->create_database();
    postgres_exec(url, "CREATE TABLE records (x INTEGER); INSERT INTO records VALUES (1)");
    for (auto mode : {Mode::ReadOnly, Mode::ReadWrite}) {
      CHECK_THROWS_WITH(TuningLog::open(url, mode),
                        Catch::Contains("not a tessel log") && Catch::Contains("records") && Catch::Contains(url));
    }
    CHECK(db({"check", "--db", url}).code == 1);
  }
  SECTION("a tessel_schema table of someone else's") {
    const std::string url = server->create_database();
    TuningLog::open(url, Mode::ReadWrite);
    postgres_exec(url, "UPDATE tessel_schema SET application = 'other'");
    CHECK_THROWS_WITH(TuningLog::open(url, Mode::ReadWrite), Catch::Contains("not a tessel log"));
  }
  SECTION("a dropped column") {
    const std::string url = server->create_database();
    TuningLog::open(url, Mode::ReadWrite);
    postgres_exec(url, "ALTER TABLE records DROP COLUMN reference_s");
    CHECK_THROWS_WITH(TuningLog::open(url, Mode::ReadOnly),
                      Catch::Contains("does not have the tessel schema") && Catch::Contains("reference_s"));
  }
}

TEST_CASE("postgres: bad URLs and unreachable servers give clear errors that never show the password",
          "[database][postgres]") {
  PostgresServer* server = PostgresServer::shared_or_skip();
  if (server == nullptr) return;
  const std::string secret = "s3cret-Pa55";
  auto message_of = [](const std::string& url) -> std::string {
    try {
      TuningLog::open(url, Mode::ReadWrite);
    } catch (const DatabaseError& e) {
      return e.what();
    }
    return "(opened)";
  };
  // Nothing listens on the port of a server that is not there.
  const std::string refused = "postgresql://tessel:" + secret + "@127.0.0.1:1/tessel";
  std::string message = message_of(refused);
  CHECK_THAT(message, Catch::Contains("cannot connect to PostgreSQL at postgresql://tessel@127.0.0.1:1/tessel") &&
                          Catch::Contains("is the server running"));
  CHECK_THAT(message, !Catch::Contains(secret));

  const std::string absent = "postgres://tessel:" + secret + "@127.0.0.1:" + std::to_string(server->port()) +
                             "/no_such_db?connect_timeout=5&password=" + secret;
  message = message_of(absent);
  CHECK_THAT(message, Catch::Contains("no_such_db") && Catch::Contains("does not exist") &&
                          Catch::Contains("connect_timeout=5") && !Catch::Contains(secret));
  CHECK_THAT(message_of("postgresql://127.0.0.1:notaport/x"), Catch::Contains("cannot connect to PostgreSQL"));

  // A password in the URL of a log that opens never shows in path() either.
  std::string url = server->create_database();
  url.insert(url.find('@'), ":" + secret);
  auto log = TuningLog::open(url + "?application_name=tessel-test&password=" + secret, Mode::ReadWrite);
  CHECK_THAT(log.path(), !Catch::Contains(secret) && Catch::Contains("application_name=tessel-test"));
  DbResult cli = db({"info", "--db", refused});
  CHECK(cli.code == 2);
  CHECK_THAT(cli.err, Catch::StartsWith("error: cannot connect") && !Catch::Contains(secret));
}

TEST_CASE("postgres: quotes, placeholders and multi-byte text are stored verbatim", "[database][postgres]") {
  const std::string url = fresh_database();
  if (url.empty()) return;
  auto log = TuningLog::open(url, Mode::ReadWrite);
  const HostileRecords h = hostile_records();
  const SessionInfo& session = h.session;
  const std::string& megabyte = h.megabyte;
  const MeasureRecord &r = h.ok, &failed = h.failed;
  log.begin_session(session);
  log.append({r, failed});

  auto stored = log.records(r.workload.key, r.target);
  REQUIRE(stored.size() == 2);
  CHECK(stored[0].workload.key == r.workload.key);
  CHECK(stored[0].workload.text == megabyte);
  CHECK(stored[0].target.cpu_features == r.target.cpu_features);
  CHECK(stored[0].trace_json == r.trace_json);
  CHECK(stored[0].settings_json == r.settings_json);
  CHECK(stored[1].error_message == failed.error_message);
  CHECK(log.best(r.workload.key, r.target)->trace_json == r.trace_json);
  CHECK(log.counts().records == 2);  // the "DROP TABLE" text did nothing
  CHECK(log.check().empty());

  // Through an export into SQLite and back into another database, byte for byte.
  const std::string exported = export_to_string(log);
  CHECK(nlohmann::json::parse(exported.substr(0, exported.find('\n')))["session"]["label"] == session.label);
  ScratchDir dir;
  auto file = TuningLog::open(dir.file("copy.db"), Mode::ReadWrite);
  CHECK(file.merge(url).imported == 2);
  CHECK(export_to_string(file) == exported);

  // PostgreSQL text cannot hold a NUL byte: such a record is refused by name, and nothing is stored.
  MeasureRecord nul = make_record("mm", 1e-3);
  nul.error_message = std::string("a\0b", 3);
  CHECK_THROWS_WITH(log.append({make_record("mm", 2e-3), nul}), Catch::Contains("NUL byte") && Catch::Contains(url));
  CHECK(log.counts().records == 2);
}

TEST_CASE("postgres: appends ride out a server restart and lose nothing committed", "[database][postgres][crash]") {
  PostgresServer* server = PostgresServer::shared_or_skip();
  if (server == nullptr) return;
  const std::string url = server->create_database();
  TuningLog::open(url, Mode::ReadWrite);  // the schema, before the writer starts
  constexpr int kAppends = 150;
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t child = spawn([&] {
    close(fds[0]);
    auto log = TuningLog::open(url, Mode::ReadWrite);
    for (int i = 0; i < kAppends; ++i) {
      for (int64_t id : log.append_within_budget({make_record("w" + std::to_string(i % 3), 1e-3 + 1e-6 * i)}, 1000)) {
        // Reported only after append returned, i.e. after COMMIT.
        char line[32];
        int n = std::snprintf(line, sizeof line, "%lld\n", static_cast<long long>(id));
        if (write(fds[1], line, n) != n) _exit(3);
      }
      if (i % 10 == 0) log.best("w0", cpu_target());  // reads must ride it out too
    }
  });
  close(fds[1]);
  // Wait for a few commits, then take the server away in the middle of the appends for a while.
  std::string text;
  char buffer[256];
  while (std::count(text.begin(), text.end(), '\n') < 20) {
    ssize_t n = read(fds[0], buffer, sizeof buffer);
    REQUIRE(n > 0);  // the writer died before its 20th commit
    text.append(buffer, static_cast<size_t>(n));
  }
  server->stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server->start();
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  require_exit_0(child);

  std::set<int64_t> reported;
  for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    reported.insert(std::stoll(text.substr(start, end - start)));
  }
  CHECK(reported.size() == kAppends);
  auto log = TuningLog::open(url, Mode::ReadOnly);
  std::set<int64_t> stored;
  for (const char* key : {"w0", "w1", "w2"}) {
    for (const auto& r : log.records(key, cpu_target())) stored.insert(r.id);
  }
  CHECK(stored == reported);  // every committed record, and no record twice
  CHECK(log.check().empty());
}

TEST_CASE("postgres: a COMMIT cut off by a server crash is not run again when it took effect",
          "[database][postgres][crash]") {
  PostgresServer* server = PostgresServer::shared_or_skip();
  if (server == nullptr) return;
  const std::string url = server->create_database();
  // The writer appends to this session, so that its append is its only transaction.
  const int64_t session = TuningLog::open(url, Mode::ReadWrite).begin_session({"setup", "{}", "0.1.0", "host", ""});
  // A synchronous standby that never comes: the server writes the commit record of the next
  // transaction and then waits, with COMMIT unanswered, until it is stopped.
  const std::string admin = server->url("postgres");
  postgres_exec(admin, "ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
  postgres_exec(admin, "SELECT pg_reload_conf()");
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t child = spawn([&] {
    close(fds[0]);
    auto log = TuningLog::open(url, Mode::ReadWrite);
    MeasureRecord record = make_record("mm", 1e-3);
    record.session_id = session;
    std::vector<int64_t> ids = log.append({record});
    std::string line = std::to_string(ids.at(0)) + "\n";
    if (write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(3);
  });
  close(fds[1]);
  std::string waiting;
  for (int i = 0; i < 600 && waiting.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    waiting = postgres_query(admin, "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
  }
  REQUIRE_FALSE(waiting.empty());  // the writer's COMMIT is waiting for the standby
  postgres_exec(admin, "ALTER SYSTEM RESET synchronous_standby_names");  // read at the next start
  server->stop();
  server->start();
  std::string text;
  char buffer[64];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  require_exit_0(child);
  REQUIRE_FALSE(text.empty());
  auto log = TuningLog::open(url, Mode::ReadOnly);
  auto records = log.records("mm", cpu_target());
  REQUIRE(records.size() == 1);  // committed before the crash, and not stored again after it
  CHECK(records[0].id == std::stoll(text));
  CHECK(log.counts().sessions == 1);
}

TEST_CASE("postgres: a server gone for longer than the retries wait is reported, naming the URL",
          "[database][postgres][crash]") {
  PostgresServer* server = PostgresServer::shared_or_skip();
  if (server == nullptr) return;
  const std::string url = server->create_database();
  auto log = TuningLog::open(url, Mode::ReadWrite);
  log.append({make_record("mm", 1e-3)});
  server->stop();
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(log.append({make_record("mm", 2e-3)}),
                    Catch::Contains(url) && Catch::Contains("is the server running") && Catch::Contains("gave up"));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(waited > 55);
  CHECK(waited < 120);
  server->start();
  CHECK(log.records("mm", cpu_target()).size() == 1);  // the handle works again once the server is back
}
