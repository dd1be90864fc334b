#!/usr/bin/env bash
# Tuning throughput with several workers sharing one PostgreSQL tuning log, on this machine. Starts a
# throwaway PostgreSQL cluster (initdb + pg_ctl in a temporary folder on a free localhost port; as the
# postgres user when run as root), then, each on a database of its own:
#   1, 2 and 4 workers tune the eight cases of experiments/workers/suite.json to TRIALS trials each:
#     trials per minute, and the log checked: exactly 8 x TRIALS trial records, no schedule twice;
#   2 workers, one killed with SIGKILL after KILL_AFTER_S seconds: the other finishes the session;
#   2 workers while the server is stopped for 5 s and started again: both finish.
# Each worker runs with --builders 1 --threads 1. Writes OUT/README.md (table, command, machine).
#
#   [OUT=experiments/results/workers] [TRIALS=24] [BUILD=build] experiments/workers/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
T="$PWD/$BUILD/tools/tessel"
OUT=${OUT:-experiments/results/workers}
TRIALS=${TRIALS:-24}
KILL_AFTER_S=${KILL_AFTER_S:-15}
SUITE=experiments/workers/suite.json
CASES=8
bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1)")
[ -x "$bin/initdb" ] || { echo "error: PostgreSQL server binaries not found (scripts/setup.sh installs them)" >&2; exit 2; }
WORK=$(mktemp -d)
as_owner=()
if [ "$(id -u)" = 0 ]; then chown postgres "$WORK"; as_owner=(runuser -u postgres --); fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pg() { "${as_owner[@]}" "$bin/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w "$@" >/dev/null; }
"${as_owner[@]}" "$bin/initdb" -D "$WORK/data" -U tessel --auth=trust >/dev/null
start() { pg start -o "-p $PORT -k $WORK -c listen_addresses=127.0.0.1"; }
start
trap 'pg -m immediate stop || true; rm -rf "$WORK"' EXIT
url() { echo "postgresql://tessel@127.0.0.1:$PORT/$1"; }
createdb() { "$bin/psql" -q -h 127.0.0.1 -p "$PORT" -U tessel -d postgres -c "CREATE DATABASE $1" >/dev/null; }

worker() {  # worker DB LOGFILE
  "$T" tune --suite "$SUITE" --all --target llvm --trials "$TRIALS" --db "$(url "$1")" --worker \
    --builders 1 --threads 1 --min-time-ms 20 --seed "$RANDOM" -v > "$2" 2>&1
}

# "trials duplicates" of a log: trial records, and trial records of a (workload, schedule) seen before.
audit() {
  "$T" db export --db "$(url "$1")" | python3 -c '
import json, sys
seen, trials, dup = set(), 0, 0
for line in sys.stdin:
    r = json.loads(line)
    if r.get("purpose", "trial") != "trial": continue
    trials += 1
    key = (r["workload"]["key"], r["trace_json"])
    dup += key in seen
    seen.add(key)
print(trials, dup)'
}

rows=()
for n in 1 2 4; do
  db=w$n; createdb $db
  start_s=$(date +%s.%N)
  pids=()
  for i in $(seq 1 $n); do worker $db "$WORK/$db.$i.txt" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
  wall=$(python3 -c "import time; print(f'{time.time() - $start_s:.1f}')")
  read -r trials dup < <(audit $db)
  rate=$(python3 -c "print(f'{$trials / $wall * 60:.0f}')")
  rows+=("| $n | $wall s | $trials of $((CASES * TRIALS)) | $dup | $rate |")
  echo "workers $n: $trials trials in $wall s, $dup duplicates"
done

createdb killed
worker killed "$WORK/killed.1.txt" & victim=$!
worker killed "$WORK/killed.2.txt" & survivor=$!
sleep "$KILL_AFTER_S"; kill -9 "$victim"; wait "$victim" || true; wait "$survivor"
read -r kill_trials kill_dup < <(audit killed)
echo "kill -9 of one of two workers after $KILL_AFTER_S s: $kill_trials trials, $kill_dup duplicates"

createdb restarted
worker restarted "$WORK/restarted.1.txt" & a=$!
worker restarted "$WORK/restarted.2.txt" & b=$!
sleep 10; pg -m fast stop; sleep 5; start
wait "$a"; wait "$b"
read -r restart_trials restart_dup < <(audit restarted)
echo "server stopped for 5 s: $restart_trials trials, $restart_dup duplicates"

mkdir -p "$OUT"
{
  echo "# Workers sharing one PostgreSQL tuning log"
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; PostgreSQL $("$bin/postgres" --version | awk '{print $3}'), on the same machine;"
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ); tessel $(git rev-parse --short HEAD)"
  echo
  echo "Command: \`TRIALS=$TRIALS experiments/workers/run.sh\`. Each worker: \`tessel tune --suite $SUITE --all"
  echo "--target llvm --trials $TRIALS --db postgresql://... --worker --builders 1 --threads 1 --min-time-ms 20\`"
  echo "($CASES cases, $TRIALS trials each: a budget of $((CASES * TRIALS)) trials)."
  echo
  echo "| workers | wall time | trial records | duplicates | trials per minute |"
  echo "|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "- Two workers, one killed with SIGKILL after $KILL_AFTER_S s: $kill_trials trial records of $((CASES * TRIALS)), $kill_dup duplicates."
  echo "- Two workers, the server stopped (\`pg_ctl -m fast stop\`) 10 s in and started again 5 s later:"
  echo "  $restart_trials trial records of $((CASES * TRIALS)), $restart_dup duplicates."
} > "$OUT/README.md"
cat "$OUT/README.md"
