# t_postgres_slow.sh — diagnose postgres-slow on a real PostgreSQL (Debian 12's postgresql-15, its
# USDT probes), a temporary cluster of the postgres user on a Unix socket in this test's directory
# (no TCP), shared_buffers 1 MB so that a 20 MB table misses it:
# (a) a row lock: one transaction updates a row and stays open; another session updates the same
#     row with lock_timeout 300 ms, again and again → lock-wait, naming the UPDATE (constants as ?)
#     and the lock in pg_locks' words (the row's tuple or the holder's transaction), critical since
#     its waits end in lock_timeout errors, pg_blocking_pids() first; the lock in lock_waits with
#     the table's OID; --pid on the waiting backend alone says the same;
# (b) a slow statement: a sort of 100,000 md5 strings with work_mem 1 MB, repeated → slow-statement
#     naming it, its sorts spilled to disk, EXPLAIN (ANALYZE, BUFFERS) first;
# (c) reads that miss the cache: a 20 MB table scanned again and again → cache-misses; (c2) the
#     same with the recipe as shipped, whose budget its uprobes' traps exceed → the scan named from
#     the backends' samples (busy-statement or read-wait), never idle;
# (d) the healthy control: point lookups and updates by primary key, no holder, one transaction in
#     ten rolled back → ok, no warning, no failed statement, the buffer cache hit (ruled out);
#     (d2) with the recipe as shipped: no warning, exit 0;
# (e) latency and triage on (a)'s waiting backend name postgres-slow as the follow-up.
# Nothing stays attached; the cluster is stopped and removed on every exit.
# The recipes run from a copy whose postgres-slow has max_cpu_pct 100: (c)'s scans make every
# shared-buffer access a uprobe trap (~200,000-300,000 a second, 7 us each on this VM: 70-80% of
# its 2 CPUs, so a budget of 50 had the governor stop the uprobes in the window's first 50 ms,
# leaving (c) a verdict on a handful of accesses) and the control a few thousand statements a
# second, traps that cost more than the shipped budget (10%), over
# which the pre-flight drops the statements' uprobes and postgres-slow goes on with the backends'
# sampled activity (tests/e2e/t_pg_activity.sh, and the server bench): this test is about the
# verdicts on what the uprobes count.
. "$(dirname "$0")/lib.sh"
mkdir -p "$TMP/r/recipes"
cp "$ROOT"/recipes/*.yaml "$TMP/r/recipes/"
ln -s "$ROOT/lua" "$TMP/r/lua"
sed -i 's/^  max_cpu_pct: .*/  max_cpu_pct: 100/' "$TMP/r/recipes/postgres-slow.yaml"
export DIAGNOSE_RECIPES="$TMP/r/recipes"

pg_cluster 1MB
sql -c "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint);
	INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 1000) g;
	CREATE TABLE big AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 300000) g;" ||
	fail "cannot create the tables"
ACCOUNTS_OID=$(sql -c "SELECT 'accounts'::regclass::oid")
end_sessions() {
	sql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" > /dev/null
	for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done
	PIDS=""
	sleep 0.3
}
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"][:150]) for x in r["verdicts"]]'; }
# KEEP_REPORTS=DIR keeps the reports as DIR/NAME.json: tests/fixtures/trimmed/postgres-slow/ was
# trimmed from them (tests/fixtures/record.sh --trim postgres-slow/NAME --from DIR/NAME.json)
keep() { [ -z "${KEEP_REPORTS:-}" ] || cp "$TMP/$1.json" "$KEEP_REPORTS/$2.json"; }

# ---- (a) a row lock ---------------------------------------------------------------------------
{ echo "BEGIN; UPDATE accounts SET balance = balance + 1 WHERE id = 7; SELECT pg_sleep(120);"; } | session &
PIDS="$PIDS $!"
[ -n "$(backend_where "query LIKE '%pg_sleep(120)%'")" ] || fail "(a) the holder's session did not start"
{ echo "SET lock_timeout = '300ms';"
  for i in $(seq 1 200); do echo "UPDATE accounts SET balance = balance - 1 WHERE id = 7;"; done; } | session &
PIDS="$PIDS $!"
WAITER=$(backend_where "wait_event_type = 'Lock'")
[ -n "$WAITER" ] || fail "(a) no backend waits for the row lock"
collect "$TMP/a.json" postgres-slow --comm postgres --duration 3
CHECK_LET='v = r["verdicts"][0]; pg = res["pg"]'
check "$TMP/a.json" "v['id'] == 'lock-wait' and v['severity'] == 'critical' and 'UPDATE accounts SET balance = balance - ? WHERE id = ?' in v['title']" \
	"(a) the waiting UPDATE is not named: $(verdicts "$TMP/a.json")"
check "$TMP/a.json" "('transaction' in v['title'] or 'a row of relation $ACCOUNTS_OID' in v['title']) and ('ShareLock' in v['title'] or 'ExclusiveLock' in v['title'])" \
	"(a) the lock is not named: $(verdicts "$TMP/a.json")"
check "$TMP/a.json" "'pg_blocking_pids' in v['next_steps'][0] and pg['lock_waits_failed'] > 0" "(a) steps or lock_timeout errors: $(json "$TMP/a.json" 'r["verdicts"][0]["next_steps"]')"
check "$TMP/a.json" "pg['lock_waits'][0]['locktype'] in ('tuple', 'transactionid') and (pg['lock_waits'][0].get('relation', $ACCOUNTS_OID) == $ACCOUNTS_OID) and pg['major_version'] == 15" \
	"(a) lock_waits: $(json "$TMP/a.json" 'r["results"]["pg"]["lock_waits"]')"
assert_released "postgres-slow on a row lock"
keep a lock
collect "$TMP/a2.json" postgres-slow --pid "$WAITER" --duration 2
check "$TMP/a2.json" "v['id'] == 'lock-wait' and 'UPDATE accounts' in v['title']" "(a) --pid on the waiter: $(verdicts "$TMP/a2.json")"

# ---- (e) latency and triage on the waiter follow with postgres-slow ---------------------------
CHECK_LET='v = r["verdicts"][0]'
collect "$TMP/e1.json" latency --pid "$WAITER" --duration 3
check "$TMP/e1.json" "v['id'] == 'lock-contention' and (v.get('next') or {}).get('recipe') == 'postgres-slow' and v['next_steps'][0].startswith('Run next: diagnose postgres-slow --pid $WAITER')" \
	"(e) latency does not name postgres-slow: $(json "$TMP/e1.json" '[(x["id"], x.get("next"), x["next_steps"][:1]) for x in r["verdicts"]]')"
collect "$TMP/e2.json" triage --pid "$WAITER" --duration 3
check "$TMP/e2.json" "any(x['id'] == 'waiting' and (x.get('next') or {}).get('recipe') == 'postgres-slow' for x in r['verdicts'])" \
	"(e) triage does not name postgres-slow: $(json "$TMP/e2.json" '[(x["id"], x.get("next")) for x in r["verdicts"]]')"
assert_released "latency and triage on a PostgreSQL lock waiter"
end_sessions
CHECK_LET='v = r["verdicts"][0]; pg = res["pg"]'

# ---- (b) a slow statement: a sort spilling to disk ---------------------------------------------
{ echo "SET work_mem = '1MB';"
  for i in $(seq 1 100); do echo "SELECT count(*) FROM (SELECT md5(g::text) AS h FROM generate_series(1, 100000) g ORDER BY 1) s;"; done; } | session &
PIDS="$PIDS $!"
sleep 0.5
collect "$TMP/b.json" postgres-slow --comm postgres --duration 3
check "$TMP/b.json" "v['id'] == 'slow-statement' and 'ORDER BY' in v['title'] and 'sorts spill to disk' in v['title'] and v['next_steps'][0].startswith('Its plan, with buffers: EXPLAIN (ANALYZE, BUFFERS)')" \
	"(b) the slow sort is not named: $(verdicts "$TMP/b.json")"
check "$TMP/b.json" "res['pg']['sorts']['disk'] > 0 and not any(x['id'] == 'lock-wait' for x in r['verdicts'])" "(b) sorts or a lock wait"
keep b sort
end_sessions

# ---- (c) reads that miss the buffer cache ------------------------------------------------------
{ for i in $(seq 1 300); do echo "SELECT count(*) FROM big WHERE v LIKE 'ab%';"; done; } | session &
PIDS="$PIDS $!"
sleep 0.5
collect "$TMP/c.json" postgres-slow --comm postgres --duration 3
check "$TMP/c.json" "any(x['id'] == 'cache-misses' and x['severity'] == 'warning' for x in r['verdicts']) and res['pg']['buffers']['misses'] > res['pg']['buffers']['hits']" \
	"(c) the misses are not named: $(verdicts "$TMP/c.json") $(json "$TMP/c.json" 'r["results"]["pg"]["buffers"]')"
keep c misses
# (c2) the same scans with the recipe as shipped (max_cpu_pct 10): their traps are over the budget,
# so pg's uprobes are dropped before the window or stopped in it; the backends' samples still
# show the scan running all along: named from them (busy-statement, or read-wait when its reads
# dominate), never idle, and the partial data said
DIAGNOSE_RECIPES="$ROOT/recipes" collect "$TMP/c2.json" postgres-slow --comm postgres --duration 3
check "$TMP/c2.json" "'pg' in r['run'].get('stopped', {}) and 'idle' not in [x['id'] for x in r['verdicts']] and any(x['id'] in ('busy-statement', 'read-wait') and x['title'].startswith('SELECT count(*) FROM big WHERE v LIKE ?;') for x in r['verdicts']) and any(x['id'] == 'incomplete-data' and 'pg' in x['title'] for x in r['verdicts'])" \
	"(c2) at the shipped budget: $(verdicts "$TMP/c2.json") $(json "$TMP/c2.json" 'r["run"].get("stopped")')"
end_sessions

# ---- (d) the healthy control -----------------------------------------------------------------------
# (one transaction in ten rolled back, as pools and ORMs do: a ROLLBACK is no failed statement),
# paced by a 1 ms pause every ten so that it lasts past the window (3,000 unpaced ones could all
# finish before diagnose's window opened: 0 statements, "idle", in a CI run)
{ for i in $(seq 1 60000); do k=$((i % 1000 + 1)); echo "SELECT balance FROM accounts WHERE id = $k; UPDATE accounts SET balance = balance + 1 WHERE id = $k;"
    [ $((i % 10)) = 0 ] && echo "BEGIN; UPDATE accounts SET balance = 0 WHERE id = $k; ROLLBACK; SELECT pg_sleep(0.001);"; done; } | session &
PIDS="$PIDS $!"
sleep 0.5
"$DIAG" postgres-slow --comm postgres --duration 3 --json > "$TMP/d.json" 2> "$TMP/d.err"; rc=$?
[ "$rc" = 0 ] || fail "(d) the control: exit $rc, want 0: $(verdicts "$TMP/d.json" 2>/dev/null) $(tail -2 "$TMP/d.err")"
check "$TMP/d.json" "v['id'] == 'ok' and res['pg']['statements_finished'] > 100 and res['pg']['statements_failed'] == 0 and any(x['id'] == 'cache-misses' for x in r['ruled_out'])" \
	"(d) the control: $(verdicts "$TMP/d.json") $(json "$TMP/d.json" 'r.get("ruled_out")')"
# the key figure diagnose watch exports tells (c) from the control: most of (c)'s shared-buffer
# lookups miss, few of the control's (its rows stay cached); both report their statement rate
python3 - "$TMP/c.json" "$TMP/d.json" <<'EOP' || fail "metrics: buffer miss ratio of (c) vs the control: $(json "$TMP/c.json" 'r["metrics"]') / $(json "$TMP/d.json" 'r["metrics"]')"
import json, sys
c, d = ({x["name"]: x["value"] for x in json.load(open(f))["metrics"]} for f in sys.argv[1:])
sys.exit(0 if c["pg_buffer_miss_ratio"] > 0.5 and d["pg_buffer_miss_ratio"] < 0.1 and d["pg_statements_per_second"] > 30 else 1)
EOP
# (d2) the control with the recipe as shipped: its statements' traps may be over the budget too
# (pg dropped or stopped): whatever the samples show, nothing cries wolf
DIAGNOSE_RECIPES="$ROOT/recipes" "$DIAG" postgres-slow --comm postgres --duration 3 --json > "$TMP/d2.json" 2> "$TMP/d2.err"; rc=$?
[ "$rc" = 0 ] || fail "(d2) the control at the shipped budget: exit $rc, want 0: $(verdicts "$TMP/d2.json" 2>/dev/null) $(tail -2 "$TMP/d2.err")"
check "$TMP/d2.json" "all(x['severity'] in ('ok', 'info') for x in r['verdicts'])" "(d2) the control at the shipped budget: $(verdicts "$TMP/d2.json")"
assert_released "postgres-slow's control"
keep d control
end_sessions
exit 0
