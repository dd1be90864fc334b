// The state behind a TuningLog handle, shared by tuning_log.cpp (open, append, queries, check) and
// tuning_log_jsonl.cpp (export, import, merge). Internal to database/.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "database/connection.h"
#include "database/tuning_log.h"

namespace tessel {
namespace db {

// Inserts `batch` (validated) inside the caller's write transaction and returns each record's id, 0
// for a trial that `take_trial(workload id, target id)` refuses (the budget's room, which it also
// spends); retimes are always stored. A record that names no tuning run of its own (id 0) is stored
// under `handle_session`, the run this log handle opened.
std::vector<int64_t> insert_batch(Connection& conn, const std::vector<MeasureRecord>& batch, int64_t handle_session,
                                  const std::function<bool(int64_t, int64_t)>& take_trial);

}  // namespace db

struct TuningLog::Impl {
  explicit Impl(std::unique_ptr<db::Connection> connection) : owned(std::move(connection)), conn(*owned) {}

  // Throws unless the handle may write.
  void require_writable(const char* operation) const {
    if (conn.read_only()) {
      throw DatabaseError("tuning log '" + conn.path() + "' was opened read-only; cannot " + operation);
    }
  }

  // Runs `work` (its own transactions included) again, whole, while the connection to a database
  // server is being recovered; see db::with_retries.
  template <typename Work>
  auto retrying(Work&& work) -> decltype(work()) {
    return db::with_retries(conn, std::forward<Work>(work));
  }

  std::unique_ptr<db::Connection> owned;
  db::Connection& conn;
  int64_t session_id = 0;  // the session begun on this handle, 0 until there is one
};

}  // namespace tessel
