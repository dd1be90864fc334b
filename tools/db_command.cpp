// `tessel db` subcommands: thin argument handling and formatting over database/tuning_log.h.
#include "tools/db_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "database/tuning_log.h"
#include "database/tuning_log_json.h"
#include "schedule/state/trace.h"
#include "schedule/te/dag_parser.h"
#include "tools/format_duration.h"

namespace tessel {
namespace {

constexpr const char* kUsage =
    "usage: tessel db <command> --db PATH [options]\n"
    "  info    --db PATH [--json]      counts of workloads, targets, sessions, records, errors\n"
    "  best    --db PATH [--json]      best valid record per (workload, target)\n"
    "  check   --db PATH               integrity and record checks; exit 1 when a check fails\n"
    "  export  --db PATH [-o FILE]     JSON lines to FILE (default: standard output)\n"
    "  import  --db PATH SOURCE...     add the records of JSON-lines files, or of other logs (all, or none\n"
    "                                  if one is bad)\n"
    "  merge   --db PATH OTHER...      add every record of other logs (all, or none if one is bad)\n"
    "  migrate --db PATH               upgrade an existing older log to the current schema\n"
    "A log (PATH, OTHER, SOURCE) is a SQLite file or a PostgreSQL database URL,\n"
    "postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME[?PARAMETERS].\n";

// Errors printed for a refused import; the rest are counted.
constexpr size_t kMaxPrintedImportErrors = 100;

// A bad command line or an unusable file: reported as "error: ..." with exit code 2.
struct UsageError {
  std::string message;
};

struct Arguments {
  std::string command;
  std::string db;
  std::optional<std::string> output;
  bool json = false;
  std::vector<std::string> files;
};

Arguments parse(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError{"tessel db: missing command\n" + std::string(kUsage)};
  Arguments parsed;
  parsed.command = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&](const char* flag) {
      if (i + 1 >= args.size())
        throw UsageError{"tessel db " + parsed.command + ": " + flag + " needs a value"};
      return args[++i];
    };
    if (arg == "--db") {
      parsed.db = value("--db");
    } else if (arg == "-o" || arg == "--output") {
      parsed.output = value("-o");
    } else if (arg == "--json") {
      parsed.json = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError{"tessel db " + parsed.command + ": unknown option '" + arg + "'"};
    } else {
      parsed.files.push_back(arg);
    }
  }
  return parsed;
}

void expect_no_files(const Arguments& a) {
  if (!a.files.empty()) {
    throw UsageError{"tessel db " + a.command + ": unexpected argument '" + a.files.front() + "'"};
  }
}

// How output names a log or file: a URL without its password.
std::string shown(const std::string& location) {
  return TuningLog::display_name(location);
}

std::string describe(const TargetInfo& t) {
  std::string text = t.kind;
  if (!t.arch.empty()) text += "/" + t.arch;
  if (!t.device_name.empty()) text += " (" + t.device_name + ")";
  return text;
}

int info(const Arguments& a, std::ostream& out) {
  expect_no_files(a);
  auto c = TuningLog::open(a.db, TuningLog::Mode::ReadOnly).counts();
  if (a.json) {
    out << nlohmann::json{{"workloads", c.workloads},
                          {"targets", c.targets},
                          {"sessions", c.sessions},
                          {"records", c.records},
                          {"error_records", c.error_records},
                          {"retimes", c.retimes}}
               .dump()
        << '\n';
  } else {
    out << "workloads      " << c.workloads << "\n"
        << "targets        " << c.targets << "\n"
        << "sessions       " << c.sessions << "\n"
        << "records        " << c.records << "\n"
        << "error records  " << c.error_records << "\n"
        << "retimes        " << c.retimes << " (of the records: leaders measured again)\n";
  }
  return 0;
}

int best(const Arguments& a, std::ostream& out) {
  expect_no_files(a);
  auto records = TuningLog::open(a.db, TuningLog::Mode::ReadOnly).best_per_workload_target(record_validator());
  if (a.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : records) {
      list.push_back({{"workload", r.workload.key},
                      {"target", target_json(r.target)},
                      {"median_s", r.median_s},
                      {"gflops", r.median_s > 0 ? r.workload.flops / r.median_s * 1e-9 : 0.0},
                      {"record_id", r.id},
                      {"timestamp", r.timestamp},
                      {"trace_json", r.trace_json}});
      // A retime timed against the yardstick: replay ranked it by median_s relative to this.
      if (r.reference_s > 0) list.back()["reference_s"] = r.reference_s;
    }
    out << list.dump() << '\n';
    return 0;
  }
  if (records.empty()) {
    out << "no valid records in " << shown(a.db) << "\n";
    return 0;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-24s  %-28s  %12s  %10s  %8s\n", "workload", "target", "median",
                "GFLOP/s", "record");
  out << line;
  for (const auto& r : records) {
    double gflops = r.median_s > 0 ? r.workload.flops / r.median_s * 1e-9 : 0.0;
    std::snprintf(line, sizeof line, "%-24s  %-28s  %12s  %10.2f  %8lld\n", r.workload.key.c_str(),
                  describe(r.target).c_str(), format_duration(r.median_s).c_str(), gflops,
                  static_cast<long long>(r.id));
    out << line;
  }
  return 0;
}

int check(const Arguments& a, std::ostream& out, std::ostream& err) {
  expect_no_files(a);
  if (!is_postgres_url(a.db) && !std::filesystem::exists(a.db))
    throw UsageError{"tuning log '" + a.db + "' does not exist"};
  auto problems = TuningLog::check_file(a.db, record_validator());
  if (problems.empty()) {
    out << "ok\n";
    return 0;
  }
  err << shown(a.db) << ": " << problems.size() << " problem" << (problems.size() == 1 ? "" : "s")
      << " (the tuning log is damaged or holds records that cannot be used):\n";
  for (const auto& problem : problems) err << "  " << problem << "\n";
  return 1;
}

int export_log(const Arguments& a, std::ostream& out) {
  expect_no_files(a);
  auto log = TuningLog::open(a.db, TuningLog::Mode::ReadOnly);
  if (!a.output) {
    log.export_jsonl(out);
    return 0;
  }
  const std::string& output = *a.output;
  if (std::filesystem::is_directory(output))
    throw UsageError{"export output '" + output + "' is a directory; name a file to write"};
  // Write beside the destination and rename, so an interrupted export never leaves half a file
  // under the requested name; a failed one removes what it wrote.
  std::string temporary = output + ".partial";
  try {
    {
      std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
      if (!file) throw UsageError{"cannot write export output '" + output + "': its directory does not exist or is not writable"};
      log.export_jsonl(file);
    }
    std::error_code ec;
    std::filesystem::rename(temporary, output, ec);
    if (ec) throw UsageError{"cannot write export output '" + output + "': " + ec.message()};
  } catch (...) {
    std::error_code ignored;
    if (!std::filesystem::is_directory(temporary, ignored)) std::filesystem::remove(temporary, ignored);
    throw;
  }
  return 0;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// Whether an input of import or merge is a tuning log rather than JSON lines: a PostgreSQL URL, or
// a file that starts with SQLite's header.
bool is_log(const std::string& source) {
  if (is_postgres_url(source)) return true;
  static constexpr char kSqliteHeader[] = "SQLite format 3";  // with its NUL: the file's first 16 bytes
  char header[sizeof kSqliteHeader] = {};
  std::ifstream in(source, std::ios::binary);
  return in.read(header, sizeof header) && std::equal(header, header + sizeof header, kSqliteHeader);
}

int import_or_merge(const Arguments& a, std::ostream& out, std::ostream& err, bool merge) {
  if (a.files.empty()) {
    throw UsageError{"tessel db " + a.command + ": give at least one " + (merge ? "log" : "JSON-lines file or log")};
  }
  // Check every input up front, so that a typo costs no work.
  std::vector<std::string> sources;
  for (const auto& file : a.files) {
    if (!is_postgres_url(file) && !std::filesystem::is_regular_file(file))
      throw UsageError{"'" + file + "' does not exist or is not a file"};
    sources.push_back(shown(file));
  }
  // import takes logs too, so that a log moves between SQLite and PostgreSQL by one import.
  const bool logs = merge || std::all_of(a.files.begin(), a.files.end(), is_log);
  if (!logs && std::any_of(a.files.begin(), a.files.end(), is_log)) {
    throw UsageError{"tessel db import: give JSON-lines files or tuning logs, not both in one import"};
  }
  // A database (URL) is never removed: only a file this command created.
  const bool existed = is_postgres_url(a.db) || std::filesystem::exists(a.db);
  ImportReport r;
  bool left_empty = false;
  std::string name;
  {
    auto log = TuningLog::open(a.db, TuningLog::Mode::ReadWrite);
    name = log.path();
    r = logs ? log.merge(a.files, record_validator()) : log.import_jsonl_files(a.files, record_validator());
    left_empty = !existed && !r.errors.empty() && log.counts().records == 0;
  }
  if (r.errors.empty()) {
    out << joined(sources) << ": imported " << r.imported << ", duplicates skipped " << r.duplicates << "\n";
    return 0;
  }
  for (size_t i = 0; i < r.errors.size() && i < kMaxPrintedImportErrors; ++i) err << "error: " << r.errors[i] << "\n";
  if (r.errors.size() > kMaxPrintedImportErrors)
    err << "error: ... and " << r.errors.size() - kMaxPrintedImportErrors << " more bad records\n";
  err << "error: tuning log '" << name << "': nothing imported (" << r.errors.size() << " bad record"
      << (r.errors.size() == 1 ? "" : "s") << " in " << joined(sources) << "); the log is unchanged\n";
  // A log file this command created and left empty: leave no file behind.
  if (left_empty) {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(a.db + suffix, ignored);
  }
  return 2;
}

int migrate(const Arguments& a, std::ostream& out) {
  expect_no_files(a);
  // Opening a database without a log for writing would create one; a read-only open refuses it.
  if (is_postgres_url(a.db)) TuningLog::open(a.db, TuningLog::Mode::ReadOnly);
  if (!is_postgres_url(a.db) && !std::filesystem::exists(a.db))
    throw UsageError{"tuning log '" + a.db + "' does not exist; there is nothing to migrate"};
  auto log = TuningLog::open(a.db, TuningLog::Mode::ReadWrite);  // opening for writing migrates
  out << log.path() << ": schema is current\n";
  return 0;
}

}  // namespace

RecordValidator record_validator() {
  // Workloads recur on every line of a log, so each text is parsed once; traces are replayed each
  // time (a cache keyed by the trace text would hold a second copy of the log).
  struct Parsed {
    std::unique_ptr<ComputeDAG> dag;  // null when the text does not parse
    std::string problem;
  };
  auto parsed = std::make_shared<std::map<std::string, Parsed>>();
  return [parsed](const MeasureRecord& r) -> std::optional<std::string> {
    auto [it, fresh] = parsed->try_emplace(r.workload.text);
    if (fresh) {
      try {
        it->second.dag = std::make_unique<ComputeDAG>(parse_dag_text(r.workload.text, "workload.text"));
      } catch (const std::exception& e) {
        it->second.problem = e.what();
      }
    }
    const Parsed& workload = it->second;
    if (!workload.dag) return workload.problem;
    const std::string key = workload.dag->workload_key();
    if (key != r.workload.key)
      return "workload.key: '" + r.workload.key + "' is not the key of the workload's text (" + key + ")";
    try {
      replay(*workload.dag, trace_from_json(r.trace_json, "trace_json"));
    } catch (const ScheduleError& e) {
      return "trace_json: " + std::string(e.what());
    } catch (const std::exception& e) {
      const std::string what = e.what();
      return what.rfind("trace_json", 0) == 0 ? what : "trace_json: " + what;
    }
    return std::nullopt;
  };
}

int run_db_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    if (!args.empty() && (args[0] == "help" || args[0] == "--help" || args[0] == "-h")) {
      out << kUsage;
      return 0;
    }
    Arguments a = parse(args);
    static const char* const kCommands[] = {"info", "best", "check", "export", "import", "merge", "migrate"};
    if (std::find(std::begin(kCommands), std::end(kCommands), a.command) == std::end(kCommands)) {
      throw UsageError{"tessel db: unknown command '" + a.command + "'\n" + kUsage};
    }
    if (a.db.empty()) throw UsageError{"tessel db " + a.command + ": missing --db PATH"};
    if (a.command == "info") return info(a, out);
    if (a.command == "best") return best(a, out);
    if (a.command == "check") return check(a, out, err);
    if (a.command == "export") return export_log(a, out);
    if (a.command == "import") return import_or_merge(a, out, err, /*merge=*/false);
    if (a.command == "merge") return import_or_merge(a, out, err, /*merge=*/true);
    return migrate(a, out);
  } catch (const UsageError& e) {
    err << "error: " << e.message << "\n";
  } catch (const std::exception& e) {
    // DatabaseError messages already name the file and say what to do.
    err << "error: " << e.what() << "\n";
  }
  return 2;
}

}  // namespace tessel
