// The state behind a TuningLog handle, shared by tuning_log.cpp (open, append, queries, check) and
// tuning_log_jsonl.cpp (export, import, merge). Internal to database/.
#pragma once

#include <string>

#include "database/sqlite_connection.h"
#include "database/tuning_log.h"

namespace tessel {

struct TuningLog::Impl {
  Impl(const std::string& path, bool read_only) : conn(path, read_only) {}

  // Throws unless the handle may write.
  void require_writable(const char* operation) const {
    if (conn.read_only()) {
      throw DatabaseError("tuning log '" + conn.path() + "' was opened read-only; cannot " + operation);
    }
  }

  db::Connection conn;
  int64_t session_id = 0;  // the session begun on this handle, 0 until there is one
};

}  // namespace tessel
