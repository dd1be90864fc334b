// `tessel db` subcommands (info, best, check, export, import, merge, migrate) over a tuning log.
// Kept apart from tools/main.cpp so that tests can drive the CLI in-process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tessel {

// Runs `tessel db <args...>`, writing results to `out` and diagnostics to `err`. Returns the exit
// code: 0 success, 1 the log is damaged (check), 2 bad input or an unusable file; every exit-2
// message starts with "error:" and names the file (and line) at fault.
int run_db_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tessel
