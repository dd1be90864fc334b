// Hostile and unusable tuning logs through the real binary: every command that takes --db refuses a
// log it cannot use as bad input (exit 2, an `error:` line naming the file) without touching it, and
// `db import` refuses records nobody measured correctly, naming the file, line and field. Each
// refusal comes before any real work; CTest's timeout is the hang guard.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "subprocess.h"
#include "tests/skip.h"

using tessel_test::RunResult;
using tessel_test::TempDir;
using tessel_test::tessel;
using nlohmann::json;

namespace {

using Args = std::vector<std::string>;

const Args kMatmul = {"--op", "matmul", "--param", "M=8", "--param", "N=8", "--param", "K=8"};

Args with_workload(Args head, const Args& tail) {
  head.insert(head.end(), kMatmul.begin(), kMatmul.end());
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// What a path holds, to tell that a refusal left it alone: the bytes of a file, or a directory's
// entry names.
std::string state_of(const std::string& path) {
  if (std::filesystem::is_directory(path)) {
    std::string names = "dir:";
    for (const auto& entry : std::filesystem::directory_iterator(path)) names += entry.path().filename().string() + ";";
    return names;
  }
  return std::filesystem::exists(path) ? "file:" + bytes_of(path) : "absent";
}

// Exit 2, nothing on stdout, and an `error:` line that names `path` and says `what`.
void require_refused(const RunResult& r, const std::string& path, const std::string& what = "") {
  INFO("command: " << r.command << "\nexit code: " << r.exit_code << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.rfind("error:", 0) == 0);
  CHECK(r.err.find(path) != std::string::npos);
  if (!what.empty()) CHECK(r.err.find(what) != std::string::npos);
}

// A real log of one measured record (the default schedule of an 8x8x8 matmul), as bytes.
const std::string& real_log_bytes() {
  static const std::string bytes = [] {
    TempDir dir;
    const std::string db = dir.file("log.db");
    RunResult r = tessel(with_workload({"run"}, {"--db", db, "--record", "--min-time", "0.01"}));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return bytes_of(db);
  }();
  return bytes;
}

// The one line of that log's export.
std::string real_line() {
  TempDir dir;
  const std::string db = dir.file("log.db");
  write_bytes(db, real_log_bytes());
  RunResult r = tessel({"db", "export", "--db", db});
  REQUIRE(r.exit_code == 0);
  REQUIRE(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  return r.out.substr(0, r.out.size() - 1);
}

// SQLite header fields, patched in place: user_version (offset 60) and application_id (offset 68),
// both big-endian.
std::string with_header_int(std::string bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<char>((value >> (24 - 8 * i)) & 0xff);
  return bytes;
}

struct Unusable {
  const char* name;
  const char* what;  // what the message says about it
  std::function<void(const std::string&)> make;
};

std::vector<Unusable> unusable_logs() {
  return {
      {"a text file", "not an SQLite database",
       [](const std::string& p) { write_bytes(p, std::string(4096, 'x') + "not a database\n"); }},
      {"an empty file", "is an empty file, not a tessel log: remove it or name a new path",
       [](const std::string& p) { write_bytes(p, ""); }},
      {"a directory", "is a directory", [](const std::string& p) { std::filesystem::create_directory(p); }},
      {"a damaged log", "damaged",
       [](const std::string& p) {
         std::string bytes = real_log_bytes();
         for (size_t i = 100; i < bytes.size(); i += 512) bytes[i] = static_cast<char>(~bytes[i]);
         write_bytes(p, bytes);
       }},
      {"a log from a newer tessel", "newer tessel",
       [](const std::string& p) { write_bytes(p, with_header_int(real_log_bytes(), 60, 99)); }},
      {"another program's database", "not a tessel tuning log",
       [](const std::string& p) { write_bytes(p, with_header_int(real_log_bytes(), 68, 0x12345678)); }},
  };
}

// Every command that takes --db, writing or reading.
std::vector<Args> commands_on(const std::string& db, const TempDir& dir) {
  const std::string line_file = dir.write("records.jsonl", real_line() + "\n");
  const std::string other = dir.file("other.db");
  if (!std::filesystem::exists(other)) write_bytes(other, real_log_bytes());
  return {
      with_workload({"tune"}, {"--trials", "1", "--db", db}),
      with_workload({"measure"}, {"--random-schedules", "1", "--db", db}),
      with_workload({"run"}, {"--record", "--db", db, "--min-time", "0.01"}),
      with_workload({"run"}, {"--best", "--db", db, "--min-time", "0.01"}),
      {"demo", "--db", db, "--trials", "1"},
      {"costmodel", "train", "--db", db, "-o", dir.file("model.json")},
      {"db", "info", "--db", db},
      {"db", "best", "--db", db},
      {"db", "export", "--db", db},
      {"db", "import", "--db", db, line_file},
      {"db", "merge", "--db", db, other},
      {"db", "migrate", "--db", db},
  };
}

}  // namespace

TEST_CASE("every command refuses a log it cannot use as bad input and leaves it alone", "[cli][db][hostile]") {
  TempDir dir;
  int refusals = 0;
  for (const Unusable& kind : unusable_logs()) {
    const std::string db = dir.file(std::string("log-") + std::to_string(refusals) + ".db");
    kind.make(db);
    const std::string before = state_of(db);
    for (const Args& args : commands_on(db, dir)) {
      INFO(kind.name);
      RunResult r = tessel(args);
      require_refused(r, db, kind.what);
      CHECK(state_of(db) == before);
      ++refusals;
    }
    // `db check` is a check: a log that cannot be used fails it (exit 1), naming the file.
    RunResult check = tessel({"db", "check", "--db", db});
    CHECK(check.exit_code == 1);
    CHECK(check.err.find(db) != std::string::npos);
    CHECK(state_of(db) == before);
  }
  CHECK(refusals == 72);
  CHECK_FALSE(std::filesystem::exists(dir.file("model.json")));
}

TEST_CASE("a read-only log is refused by every command that writes", "[cli][db][hostile]") {
  if (geteuid() == 0) {
    tessel_test::skip_test("running as root, whom file permissions do not bind: a read-only log cannot be made here");
    return;
  }
  TempDir dir;
  const std::string db = dir.file("log.db");
  write_bytes(db, real_log_bytes());
  chmod(db.c_str(), 0444);
  const std::string before = state_of(db);
  for (const Args& args : commands_on(db, dir)) {
    const bool writes = args[0] == "tune" || args[0] == "measure" || args[0] == "demo" ||
                        std::find(args.begin(), args.end(), "--record") != args.end() ||
                        (args[0] == "db" && (args[1] == "import" || args[1] == "merge" || args[1] == "migrate"));
    if (!writes) continue;
    require_refused(tessel(args), db, "read-only");
    CHECK(state_of(db) == before);
  }
}

TEST_CASE("a log path that cannot be created, migrated or exported to is refused", "[cli][db][hostile]") {
  TempDir dir;
  // tune into a directory that does not exist
  const std::string nowhere = dir.file("missing/log.db");
  require_refused(tessel(with_workload({"tune"}, {"--trials", "1", "--db", nowhere})), nowhere, "cannot create");
  CHECK_FALSE(std::filesystem::exists(dir.file("missing")));

  // db migrate of a path that does not exist creates nothing
  const std::string absent = dir.file("absent.db");
  require_refused(tessel({"db", "migrate", "--db", absent}), absent, "does not exist");
  CHECK_FALSE(std::filesystem::exists(absent));

  // run --best of a log that does not exist is an unusable log, not a miss
  require_refused(tessel(with_workload({"run"}, {"--best", "--db", absent, "--min-time", "0.01"})), absent,
                  "does not exist");
  CHECK_FALSE(std::filesystem::exists(absent));

  // export into a directory, or into a directory that does not exist, leaves no partial file
  const std::string db = dir.file("log.db");
  write_bytes(db, real_log_bytes());
  const std::string out_dir = dir.file("exports");
  std::filesystem::create_directory(out_dir);
  require_refused(tessel({"db", "export", "--db", db, "-o", out_dir}), out_dir, "is a directory");
  CHECK(std::filesystem::is_empty(out_dir));
  CHECK_FALSE(std::filesystem::exists(out_dir + ".partial"));
  const std::string lost = dir.file("nowhere/out.jsonl");
  require_refused(tessel({"db", "export", "--db", db, "-o", lost}), lost);
  CHECK_FALSE(std::filesystem::exists(dir.file("nowhere")));
  CHECK(bytes_of(db) == real_log_bytes());
}

TEST_CASE("db import refuses records nobody measured correctly, naming file, line and field", "[cli][db][hostile]") {
  TempDir dir;
  const std::string good = real_line();
  const std::string db = dir.file("log.db");
  write_bytes(db, real_log_bytes());
  const std::string before = bytes_of(db);

  auto edited = [&](const std::function<void(json&)>& edit) {
    json j = json::parse(good);
    j["timestamp"] = "2030-01-01T00:00:00.000Z";  // a new record, not a duplicate of the log's
    edit(j);
    return j.dump();
  };
  auto textual = [&](const std::string& field, const std::string& text) {
    std::string line = edited([&](json& j) { j[field] = "@@"; });
    return line.replace(line.find("\"@@\""), 4, text);
  };
  std::string trace_1e400 = json::parse(good)["trace_json"].get<std::string>();
  trace_1e400.replace(trace_1e400.find("\"steps\":"), 8, "\"huge\":1e400,\"steps\":");
  const std::string key = json::parse(good)["workload"]["key"];
  const std::vector<std::pair<std::string, std::string>> cases = {
      {textual("median_s", "1e400"), "not valid JSON"},
      {edited([](json& j) { j["median_s"] = -1e-3; }), "median_s: must be a number from 0"},
      {edited([](json& j) { j["median_s"] = 0; }), "median_s: must be above 0 in an ok record"},
      {edited([](json& j) { j["samples_s"] = json::array({0.0}); }), "samples_s: sample 0 must be"},
      {edited([&](json& j) { j["trace_json"] = trace_1e400; }), "trace_json:"},
      {edited([](json& j) { j["trace_json"] = "not a schedule"; }), "trace_json:"},
      {edited([](json& j) {
         j["trace_json"] = R"({"version":1,"steps":[{"kind":"split","stage":"C","loop":"nope","factors":[2]}]})";
       }),
       "trace_json: invalid schedule: step 0"},
      {edited([](json& j) { j["workload"]["key"] = "00000000deadbeef"; }), "workload.key:"},
      {edited([](json& j) { j["error"] = "exploded"; }), "error: unknown error code"},
      {edited([](json& j) { j["run_s"] = -1; }), "run_s: must be a number from 0"},
  };
  for (const auto& [line, problem] : cases) {
    const std::string file = dir.write("hostile.jsonl", good + "\n" + line + "\n");
    RunResult r = tessel({"db", "import", "--db", db, file});
    require_refused(r, file, file + ": line 2: " + problem);
    CHECK(r.err.find("nothing imported") != std::string::npos);
    CHECK(bytes_of(db) == before);
  }
  // The same line, fixed, imports; a second time it is a duplicate.
  const std::string fixed = dir.write("fixed.jsonl", good + "\n" + edited([](json&) {}) + "\n");
  RunResult ok = tessel({"db", "import", "--db", db, fixed});
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("imported 1, duplicates skipped 1") != std::string::npos);
  RunResult check = tessel({"db", "check", "--db", db});
  CHECK(check.exit_code == 0);
  CHECK(check.out == "ok\n");
}
