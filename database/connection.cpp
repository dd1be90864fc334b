// The backend-neutral parts of the connection layer: single-value queries and the retry policy.
#include "database/connection.h"

#include <algorithm>
#include <functional>
#include <random>
#include <thread>

namespace tessel::db {
namespace {

// How long work is retried after its first transient failure: long enough to ride out a database
// server's restart or fail-over, short enough that a server gone for good is reported while the
// user still waits for an answer.
constexpr auto kRetryDeadline = std::chrono::seconds(60);
constexpr int kFirstPauseMs = 50;
constexpr int kLongestPauseMs = 4000;

}  // namespace

int64_t Connection::query_int(const char* sql) {
  Statement stmt = prepare(sql);
  if (!stmt.step()) throw DatabaseError("tuning log '" + path() + "': `" + sql + "` returned no row");
  return stmt.column_int(0);
}

Retrier::Retrier(Connection& conn) : conn_(conn), start_(std::chrono::steady_clock::now()) {}

void Retrier::after(const TransientError& error) {
  // Randomised pauses, so that many tuners that lost the server together do not return in lock-step.
  static thread_local std::minstd_rand jitter(
      static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id()) ^
                            std::chrono::steady_clock::now().time_since_epoch().count()));
  std::string last = error.what();
  for (;;) {
    if (std::chrono::steady_clock::now() - start_ > kRetryDeadline) {
      throw DatabaseError(last + " (gave up after retrying for " +
                          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kRetryDeadline).count()) +
                          " s)");
    }
    const int cap_ms = std::min(kLongestPauseMs, kFirstPauseMs << std::min(attempt_++, 10));
    std::this_thread::sleep_for(std::chrono::milliseconds(cap_ms / 2 + static_cast<int>(jitter() % (cap_ms / 2 + 1))));
    try {
      conn_.recover();
      return;
    } catch (const TransientError& again) {
      last = again.what();
    }
  }
}

}  // namespace tessel::db
