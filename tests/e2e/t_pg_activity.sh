# t_pg_activity.sh — postgres-slow's pg_activity probe (the backends sampled in the server's
# shared memory) on a real PostgreSQL (Debian 12's postgresql-15), a temporary cluster of the
# postgres user on a Unix socket in this test's directory (no TCP). Everything it must see starts
# at least 10 s BEFORE the run, so that no statement starts or finishes in the window (what the
# USDT probes need to see one):
# (a) a transaction updates a row and stays open (idle in transaction, its client silent); two
#     sessions UPDATE the same row and wait → both reported in flight at the window's end, in a
#     Lock wait (transactionid, or tuple for the second in line) for 10 s or more, with their
#     normalized text, each with the pid that holds its lock (the holder, or the first waiter that
#     holds the tuple lock), and in flight at the window's start too; the verdict is `in-flight`
#     (warning, 10 s < in_flight_crit_s) naming the UPDATE and the holder, and never `idle`;
# (b) at the same time, SELECT pg_sleep(60) started 10 s before → in flight for 10 s or more, in
#     Timeout:PgSleep; (b2) and a sort of 400 million md5 strings (top 10: bounded memory)
#     started 10 s before, on CPU all along → in flight, `in-flight` naming it "running for"
#     its time, ahead of the sleeper, which the last in-flight verdict's evidence lists;
# (c) the control: the same server idle for the whole window (the sessions ended) → nothing in
#     flight, every client backend idle, the verdict `idle` with `in-flight` ruled out;
# and the cost: each sample a few reads of the server's memory, its time in diagnose bounded.
# Nothing stays attached; the cluster is stopped and removed on every exit.
. "$(dirname "$0")/lib.sh"

pg_cluster 16MB
sql -c "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint); INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 100) g;" ||
	fail "cannot create the table"
UPDATE_TEXT='UPDATE accounts SET balance = balance - ? WHERE id = ?;'
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"][:160]) for x in r["verdicts"]]'; }
# KEEP_REPORTS=DIR keeps the reports as DIR/NAME.json: tests/fixtures/trimmed/postgres-slow/
# stuck.json and idle.json were trimmed from them (tests/fixtures/record.sh --trim
# postgres-slow/NAME --from DIR/NAME.json)
keep() { [ -z "${KEEP_REPORTS:-}" ] || cp "$TMP/$1.json" "$KEEP_REPORTS/$2.json"; }

# ---- (a) and (b): stuck since before the run ------------------------------------------------
# the holder: its client sends the UPDATE and then nothing (idle in transaction) for 120 s
{ echo "BEGIN; UPDATE accounts SET balance = balance + 1 WHERE id = 7;"; sleep 120; } | session &
PIDS="$PIDS $!"
HOLDER=$(backend_where "state = 'idle in transaction'")
[ -n "$HOLDER" ] || fail "(a) the holder's session did not start"
echo "UPDATE accounts SET balance = balance - 1 WHERE id = 7;" | session &
PIDS="$PIDS $!"
W1=$(backend_where "wait_event_type = 'Lock'")
[ -n "$W1" ] || fail "(a) the first waiter does not wait"
echo "UPDATE accounts SET balance = balance - 2 WHERE id = 7;" | session &
PIDS="$PIDS $!"
W2=$(backend_where "wait_event_type = 'Lock' AND pid <> $W1")
[ -n "$W2" ] || fail "(a) the second waiter does not wait"
echo "SELECT pg_sleep(60);" | session &
PIDS="$PIDS $!"
SLEEPER=$(backend_where "query LIKE 'SELECT pg_sleep(60)%'")
[ -n "$SLEEPER" ] || fail "(b) the sleeper did not start"
# (b2) a sort on one CPU, far longer than the test waits (ended by (c)'s terminations): running,
# not waiting on anything, for 10 s before the run
# (a top-N heapsort of 400 million md5 strings from two 20,000-row series: bounded memory, no
# temporary file)
echo "SELECT m FROM (SELECT md5((a * 20000 + b)::text) AS m FROM generate_series(1, 20000) a, generate_series(1, 20000) b) s ORDER BY m LIMIT 10;" | session &
PIDS="$PIDS $!"
SORTER=$(backend_where "query LIKE 'SELECT m FROM (SELECT md5%'")
[ -n "$SORTER" ] || fail "(b2) the sort did not start"
sleep 10
WANT=$(sql -c "SELECT string_agg(pid || ':' || coalesce(wait_event, '-') || ':' || pg_blocking_pids(pid)::text, ' ') FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
# --pid on a waiting backend: its USDT probes see nothing finish; the server's memory says it all
collect "$TMP/a.json" postgres-slow --pid "$W2" --duration 3
[ "$collected_rc" = 4 ] || fail "(a) exit $collected_rc, want 4 (warning): $(verdicts "$TMP/a.json")"
CHECK_LET='act = res["activity"]; fl = {f["pid"]: f for f in act["in_flight"]}; st = {f["pid"]: f for f in act["in_flight_at_start"]}; v = r["verdicts"][0]'
check "$TMP/a.json" "act['available'] and act['server']['major_version'] == 15 and act['samples'] >= 30" \
	"(a) the server was not sampled: $(json "$TMP/a.json" '{k: v for k, v in r["results"]["activity"].items() if k in ("available", "unavailable", "server", "samples", "samples_failed", "last_error")}')"
for W in $W1 $W2; do
	check "$TMP/a.json" "fl[$W]['state'] == 'active' and fl[$W]['wait_event_type'] == 'Lock' and fl[$W]['wait_event'] in ('transactionid', 'tuple') and fl[$W]['query_elapsed_s'] >= 10 and fl[$W]['query'] == '$UPDATE_TEXT' and $W in st" \
		"(a) waiter $W not reported in flight in a Lock wait for 10 s: $(json "$TMP/a.json" 'r["results"]["activity"]["in_flight"]')"
done
# pg_stat_activity said who blocks whom: pg_activity says the same (the holders of each lock)
check "$TMP/a.json" "fl[$W1]['blocked_by'] == [$HOLDER] and fl[$W2]['blocked_by'] == [$W1] and fl[$W1]['lock']['locktype'] == 'transactionid' and fl[$W2]['lock']['locktype'] == 'tuple'" \
	"(a) blockers: $(json "$TMP/a.json" '[(f["pid"], f.get("lock"), f.get("blocked_by")) for f in r["results"]["activity"]["in_flight"]]') (pg_stat_activity: $WANT)"
check "$TMP/a.json" "fl[$HOLDER]['state'] == 'idle in transaction' and fl[$HOLDER]['xact_elapsed_s'] >= 10 and 'UPDATE accounts SET balance = balance + ?' in fl[$HOLDER]['query']" \
	"(a) the holder idle in transaction: $(json "$TMP/a.json" 'r["results"]["activity"]["in_flight"]')"
check "$TMP/a.json" "v['id'] == 'in-flight' and v['severity'] == 'warning' and '$UPDATE_TEXT' in v['title'] and 'held by pid' in v['title'] and 'idle' not in [x['id'] for x in r['verdicts']]" \
	"(a) the stuck UPDATE is not the verdict: $(verdicts "$TMP/a.json")"
check "$TMP/a.json" "any('pid $HOLDER (idle in transaction' in e for e in v['evidence']) and any('pg_terminate_backend($HOLDER)' in s for x in r['verdicts'] for s in x['next_steps'])" \
	"(a) the idle-in-transaction holder is not named: $(json "$TMP/a.json" 'r["verdicts"][0]')"
# ---- (b) the sleeper, at the same time
check "$TMP/a.json" "fl[$SLEEPER]['wait_event_type'] == 'Timeout' and fl[$SLEEPER]['wait_event'] == 'PgSleep' and fl[$SLEEPER]['query_elapsed_s'] >= 10 and fl[$SLEEPER]['query'] == 'SELECT pg_sleep(?);'" \
	"(b) the sleeper: $(json "$TMP/a.json" 'r["results"]["activity"]["in_flight"]')"
# (ranked after the two lock waits and the sort: past the three in-flight verdicts, said in the
# last one's evidence)
check "$TMP/a.json" "any(x['id'] == 'in-flight' and any('more statement' in e and 'pid $SLEEPER SELECT pg_sleep(?);' in e for e in x['evidence']) for x in r['verdicts'])" \
	"(b) the sleeper is not named: $(json "$TMP/a.json" '[(x["title"][:60], x["evidence"][-1:]) for x in r["verdicts"]]')"
# ---- (b2) the sort, at the same time: in flight, running for 10 s or more, and named so
check "$TMP/a.json" "fl[$SORTER]['state'] == 'active' and fl[$SORTER]['query_elapsed_s'] >= 10 and fl[$SORTER]['query'].startswith('SELECT m FROM (SELECT md5((a * ? + b)::text) AS m FROM generate_series(') and $SORTER in st" \
	"(b2) the sort: $(json "$TMP/a.json" '[f for f in r["results"]["activity"]["in_flight"] if f["pid"] == '"$SORTER"']')"
check "$TMP/a.json" "any(x['id'] == 'in-flight' and 'SELECT m FROM (SELECT md5(' in x['title'] and 'running for' in x['title'] for x in r['verdicts'])" \
	"(b2) the sort has no verdict naming it and its time: $(verdicts "$TMP/a.json")"
# ---- the cost: a few reads a sample, bounded time in diagnose, nothing per statement
check "$TMP/a.json" "act['cost']['reads_per_sample'] < 8 and act['cost']['cpu_us_per_sample'] < 5000 and act['slots_torn'] == 0" \
	"cost: $(json "$TMP/a.json" '(r["results"]["activity"]["cost"], r["results"]["activity"]["slots_torn"])')"
assert_released "postgres-slow with pg_activity on a server with stuck statements"
keep a stuck

# ---- (c) the control: the same server, idle --------------------------------------------------
sql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" > /dev/null
for p in $PIDS; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
PIDS=""
sleep 1
"$DIAG" postgres-slow --pid "$(head -1 "$PGDIR/data/postmaster.pid")" --duration 3 --json > "$TMP/c.json" 2> "$TMP/c.err"; rc=$?
[ "$rc" = 0 ] || fail "(c) the control: exit $rc, want 0: $(verdicts "$TMP/c.json" 2>/dev/null) $(tail -2 "$TMP/c.err")"
CHECK_LET='act = res["activity"]; v = r["verdicts"][0]'
check "$TMP/c.json" "act['available'] and not [f for f in act['in_flight'] if f['backend_type'] == 'client backend'] and not [a for a in act['activity'] if a['backend_type'] == 'client backend' and a['state'] != 'idle'] and not act['statements']" \
	"(c) the control has something in flight: $(json "$TMP/c.json" '(r["results"]["activity"]["in_flight"], r["results"]["activity"]["activity"])')"
check "$TMP/c.json" "v['id'] == 'idle' and any(x['id'] == 'in-flight' for x in r['ruled_out'])" "(c) the control: $(verdicts "$TMP/c.json") $(json "$TMP/c.json" 'r["ruled_out"]')"
assert_released "postgres-slow with pg_activity on an idle server"
keep c idle
exit 0
