// The shared tuning session's tables and the lease protocol; see work_queue.h.
//
//   queue_sessions(name, target_id, trial_budget, scope, created)
//   queue_tasks(session, task, workload_key, name, weight, done, lease_token, lease_worker,
//               lease_expires, rounds)
//
// lease_expires is in seconds since the epoch by the database's clock (the server's, for
// PostgreSQL), so workers on hosts whose clocks disagree still agree on when a lease ran out. The
// tables are created by the first worker of the first session in a log; a log without them is an
// ordinary tuning log.
#include "database/work_queue.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <set>

#include "database/record_rows.h"
#include "database/tuning_log_impl.h"

namespace tessel {
namespace {

const char* const kCreateTables =
    "CREATE TABLE IF NOT EXISTS queue_sessions ("
    "  name TEXT PRIMARY KEY,"
    "  target_id BIGINT NOT NULL REFERENCES targets(id),"
    "  trial_budget BIGINT NOT NULL,"
    "  scope TEXT NOT NULL,"
    "  created TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS queue_tasks ("
    "  session TEXT NOT NULL REFERENCES queue_sessions(name),"
    "  task BIGINT NOT NULL,"
    "  workload_key TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  weight DOUBLE PRECISION NOT NULL,"
    "  done BIGINT NOT NULL DEFAULT 0,"
    "  lease_token TEXT NOT NULL DEFAULT '',"
    "  lease_worker TEXT NOT NULL DEFAULT '',"
    "  lease_expires DOUBLE PRECISION NOT NULL DEFAULT 0,"
    "  rounds BIGINT NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (session, task))";

// The database's clock, in seconds since the epoch.
std::string now_sql(const db::Connection& conn) {
  return conn.backend() == db::Backend::PostgreSQL ? "EXTRACT(EPOCH FROM clock_timestamp())::DOUBLE PRECISION"
                                                   : "((julianday('now') - 2440587.5) * 86400.0)";
}

const char* scope_name(BudgetScope scope) { return scope == BudgetScope::Shared ? "shared" : "per task"; }

// A token no other lease of any worker has: the worker's name, a count and 64 random bits.
std::string new_token(const std::string& worker, int64_t count) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  char bits[17];
  std::snprintf(bits, sizeof bits, "%016llx", static_cast<unsigned long long>(random()));
  return worker + "#" + std::to_string(count) + "#" + bits;
}

// Trial records the log holds of `keys` on `target_id`, counted one workload at a time.
int64_t trials_of(db::Connection& conn, const std::vector<std::string>& keys, int64_t target_id) {
  db::Statement count = conn.prepare(
      "SELECT count(*) FROM records r JOIN workloads w ON w.id = r.workload_id "
      "WHERE w.key = ?1 AND r.target_id = ?2 AND r.purpose = 'trial'");
  int64_t total = 0;
  for (const std::string& key : keys) {
    count.bind(1, std::string_view(key)).bind(2, target_id);
    count.step();
    total += count.column_int(0);
    count.reset();
  }
  return total;
}

std::vector<std::string> keys_of(const QueueSession& s) {
  std::vector<std::string> keys;
  for (const QueueTask& t : s.tasks) keys.push_back(t.workload_key);
  return keys;
}

// Why the log's session `stored` cannot be joined by a worker of `wanted`, or nullopt.
std::optional<std::string> mismatch(db::Connection& conn, const QueueSession& wanted, int64_t target_id) {
  db::Statement s =
      conn.prepare("SELECT target_id, trial_budget, scope FROM queue_sessions WHERE name = ?1");
  s.bind(1, std::string_view(wanted.name));
  if (!s.step()) return std::nullopt;
  const std::string where = "tuning session '" + wanted.name + "' in " + conn.path();
  if (s.column_int(0) != target_id)
    return where + " tunes for another target than this worker measures on (" + wanted.target.kind + ", " +
           wanted.target.device_name + ")";
  if (s.column_int(1) != wanted.trial_budget || s.column_text(2) != scope_name(wanted.scope))
    return where + " has a budget of " + std::to_string(s.column_int(1)) + " trials " + s.column_text(2) +
           ", this worker asks for " + std::to_string(wanted.trial_budget) + " " + scope_name(wanted.scope);
  db::Statement tasks = conn.prepare("SELECT workload_key FROM queue_tasks WHERE session = ?1 ORDER BY task");
  tasks.bind(1, std::string_view(wanted.name));
  std::vector<std::string> keys;
  while (tasks.step()) keys.push_back(tasks.column_text(0));
  if (keys.size() != wanted.tasks.size())
    return where + " has " + std::to_string(keys.size()) + " tasks, this worker " +
           std::to_string(wanted.tasks.size()) + "; give this worker's tasks another --session name";
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] != wanted.tasks[i].workload_key)
      return where + " has other tasks than this worker (its task " + std::to_string(i) + " is workload " +
             keys[i] + ", this worker's " + wanted.tasks[i].workload_key +
             "); give this worker's tasks another --session name";
  return std::nullopt;
}

}  // namespace

std::string this_worker_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + ":" + std::to_string(getpid());
}

WorkQueue::WorkQueue(TuningLog& log, QueueSession session, std::string worker)
    : log_(&log), session_(std::move(session)), worker_(std::move(worker)) {}

WorkQueue WorkQueue::join(TuningLog& log, const QueueSession& session, const std::string& worker) {
  if (session.name.empty()) throw InputError("a shared tuning session needs a name");
  if (session.tasks.empty()) throw InputError("tuning session '" + session.name + "' has no tasks");
  if (session.trial_budget < 1) throw InputError("tuning session '" + session.name + "' needs a trial budget");
  TuningLog::Impl& impl = *log.impl_;
  impl.require_writable("join a shared tuning session");
  impl.retrying([&] {
    db::Transaction txn(impl.conn);
    impl.conn.exec(kCreateTables);
    const int64_t target = db::target_id(impl.conn, session.target);
    if (auto problem = mismatch(impl.conn, session, target)) throw InputError(*problem);
    db::Statement exists = impl.conn.prepare("SELECT 1 FROM queue_sessions WHERE name = ?1");
    exists.bind(1, std::string_view(session.name));
    if (!exists.step()) {
      db::Statement add = impl.conn.prepare(
          "INSERT INTO queue_sessions(name, target_id, trial_budget, scope, created) VALUES (?1, ?2, ?3, ?4, ?5)");
      add.bind(1, std::string_view(session.name))
          .bind(2, target)
          .bind(3, session.trial_budget)
          .bind(4, std::string_view(scope_name(session.scope)))
          .bind(5, std::string_view(db::utc_timestamp()));
      add.run();
      db::Statement task = impl.conn.prepare(
          "INSERT INTO queue_tasks(session, task, workload_key, name, weight) VALUES (?1, ?2, ?3, ?4, ?5)");
      for (size_t i = 0; i < session.tasks.size(); ++i) {
        const QueueTask& t = session.tasks[i];
        task.bind(1, std::string_view(session.name))
            .bind(2, static_cast<int64_t>(i))
            .bind(3, std::string_view(t.workload_key))
            .bind(4, std::string_view(t.name))
            .bind(5, t.weight);
        task.run();
        task.reset();
      }
    }
    txn.commit();
  });
  return WorkQueue(log, session, worker);
}

std::optional<Lease> WorkQueue::lease(const std::vector<size_t>& preference, double lease_s) {
  TuningLog::Impl& impl = *log_->impl_;
  const std::string token = new_token(worker_, ++leases_);
  return impl.retrying([&]() -> std::optional<Lease> {
    db::Transaction txn(impl.conn);
    // Rows another worker is leasing at this moment are skipped rather than waited for; on SQLite
    // the write transaction already keeps every other writer out.
    const std::string lock = impl.conn.backend() == db::Backend::PostgreSQL ? " FOR UPDATE SKIP LOCKED" : "";
    db::Statement free_tasks = impl.conn.prepare(
        ("SELECT task FROM queue_tasks WHERE session = ?1 AND done = 0 AND (lease_token = '' OR lease_expires < " +
         now_sql(impl.conn) + ") ORDER BY task" + lock)
            .c_str());
    free_tasks.bind(1, std::string_view(session_.name));
    std::set<size_t> free;
    while (free_tasks.step()) free.insert(static_cast<size_t>(free_tasks.column_int(0)));
    for (size_t task : preference) {
      if (!free.count(task)) continue;
      db::Statement take = impl.conn.prepare(
          ("UPDATE queue_tasks SET lease_token = ?3, lease_worker = ?4, lease_expires = " + now_sql(impl.conn) +
           " + ?5, rounds = rounds + 1 WHERE session = ?1 AND task = ?2")
              .c_str());
      take.bind(1, std::string_view(session_.name))
          .bind(2, static_cast<int64_t>(task))
          .bind(3, std::string_view(token))
          .bind(4, std::string_view(worker_))
          .bind(5, lease_s);
      take.run();
      txn.commit();
      return Lease{task, token};
    }
    return std::nullopt;
  });
}

std::vector<int64_t> WorkQueue::record(const Lease& lease, const std::vector<MeasureRecord>& records) {
  TuningLog::Impl& impl = *log_->impl_;
  for (size_t i = 0; i < records.size(); ++i)
    if (auto problem = db::validate_record(records[i]))
      throw DatabaseError("tuning log '" + impl.conn.path() + "': cannot append record " + std::to_string(i) +
                          " of the batch: " + *problem);
  if (impl.session_id == 0) log_->begin_session(SessionInfo{});
  return impl.retrying([&] {
    db::Transaction txn(impl.conn);
    db::Statement held =
        impl.conn.prepare("SELECT lease_token FROM queue_tasks WHERE session = ?1 AND task = ?2");
    held.bind(1, std::string_view(session_.name)).bind(2, static_cast<int64_t>(lease.task));
    if (!held.step() || held.column_text(0) != lease.token)
      throw LeaseLost("the lease of '" + session_.tasks[lease.task].name + "' went to another worker (" +
                      "it was not renewed in time); this round's measurements are not stored");
    const int64_t target = db::target_id(impl.conn, session_.target);
    const std::vector<std::string> keys =
        session_.scope == BudgetScope::Shared ? keys_of(session_)
                                              : std::vector<std::string>{session_.tasks[lease.task].workload_key};
    int64_t room = std::max<int64_t>(0, session_.trial_budget - trials_of(impl.conn, keys, target));
    std::vector<int64_t> ids = db::insert_batch(impl.conn, records, impl.session_id, [&room](int64_t, int64_t) {
      if (room == 0) return false;
      --room;
      return true;
    });
    txn.commit();
    return ids;
  });
}

void WorkQueue::release(const Lease& lease, bool done) {
  TuningLog::Impl& impl = *log_->impl_;
  impl.retrying([&] {
    db::Transaction txn(impl.conn);
    db::Statement free = impl.conn.prepare(
        "UPDATE queue_tasks SET lease_token = '', lease_worker = '', lease_expires = 0, "
        "done = CASE WHEN ?4 <> 0 THEN 1 ELSE done END WHERE session = ?1 AND task = ?2 AND lease_token = ?3");
    free.bind(1, std::string_view(session_.name))
        .bind(2, static_cast<int64_t>(lease.task))
        .bind(3, std::string_view(lease.token))
        .bind(4, static_cast<int64_t>(done ? 1 : 0));
    free.run();
    txn.commit();
  });
}

WorkQueue::Progress WorkQueue::progress() {
  TuningLog::Impl& impl = *log_->impl_;
  return impl.retrying([&] {
    Progress p;
    db::ReadTransaction txn(impl.conn);
    db::Statement tasks = impl.conn.prepare(
        ("SELECT count(*), COALESCE(SUM(done), 0), COALESCE(SUM(CASE WHEN done = 0 AND lease_token <> '' AND "
         "lease_expires >= " +
         now_sql(impl.conn) + " THEN 1 ELSE 0 END), 0) FROM queue_tasks WHERE session = ?1")
            .c_str());
    tasks.bind(1, std::string_view(session_.name));
    tasks.step();
    p.tasks = static_cast<size_t>(tasks.column_int(0));
    p.done = static_cast<size_t>(tasks.column_int(1));
    p.leased = static_cast<size_t>(tasks.column_int(2));
    const std::optional<int64_t> target = db::find_target(impl.conn, session_.target);
    p.trials = !target ? 0 : trials_of(impl.conn, keys_of(session_), *target);
    txn.finish();
    p.budget = session_.scope == BudgetScope::Shared
                   ? session_.trial_budget
                   : session_.trial_budget * static_cast<int64_t>(session_.tasks.size());
    return p;
  });
}

bool WorkQueue::finished() {
  const Progress p = progress();
  return p.done == p.tasks || (session_.scope == BudgetScope::Shared && p.trials >= p.budget);
}

LeaseKeeper::LeaseKeeper(const std::string& log_url, const std::string& session, double lease_s)
    : log_url_(log_url), session_(session), lease_s_(lease_s), thread_([this] { run(); }) {}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void LeaseKeeper::keep(const Lease& lease) {
  std::lock_guard<std::mutex> lock(mutex_);
  lease_ = lease;
  lost_ = false;
}

void LeaseKeeper::drop() {
  std::lock_guard<std::mutex> lock(mutex_);
  lease_.reset();
}

void LeaseKeeper::run() {
  const auto period = std::chrono::duration<double>(lease_s_ / 4);
  std::optional<TuningLog> log;
  for (;;) {
    std::optional<Lease> lease;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, period, [this] { return stop_; })) return;
      lease = lease_;
    }
    if (!lease) continue;
    try {
      if (!log) log.emplace(TuningLog::open(log_url_, TuningLog::Mode::ReadWrite));
      TuningLog::Impl& impl = *log->impl_;
      const bool held = impl.retrying([&] {
        db::Transaction txn(impl.conn);
        db::Statement renew = impl.conn.prepare(
            ("UPDATE queue_tasks SET lease_expires = " + now_sql(impl.conn) +
             " + ?4 WHERE session = ?1 AND task = ?2 AND lease_token = ?3 RETURNING task")
                .c_str());
        renew.bind(1, std::string_view(session_))
            .bind(2, static_cast<int64_t>(lease->task))
            .bind(3, std::string_view(lease->token))
            .bind(4, lease_s_);
        const bool found = renew.step();
        renew.run();
        txn.commit();
        return found;
      });
      if (!held) lost_ = true;
    } catch (const Error&) {
      // The log could not be reached for longer than its retries wait: the lease runs out, and the
      // round's record() finds that out. The next period tries again with a fresh connection.
      log.reset();
    }
  }
}

}  // namespace tessel
