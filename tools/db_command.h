// `tessel db` subcommands (info, best, check, export, import, merge, migrate) over a tuning log.
// Kept apart from tools/main.cpp so that tests can drive the CLI in-process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "database/tuning_log.h"

namespace tessel {

// The CLI's check of what the tuning log cannot judge by itself (see RecordValidator): the record's
// workload text parses, its key is that workload's key, and its trace parses and replays on it.
// Used by import, merge, check and best; keeps the workloads it parsed, so use one per command.
RecordValidator record_validator();

// Runs `tessel db <args...>`, writing results to `out` and diagnostics to `err`. Returns the exit
// code: 0 success, 1 a check failed (check found problems), 2 bad input or an unusable file; every
// exit-2 message starts with "error:" and names the file (and line and field) at fault.
int run_db_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessel
