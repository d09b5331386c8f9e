# t_postgres.sh — diagnose latency and triage on a real PostgreSQL (Debian 12's postgresql-15),
# a temporary cluster of the postgres user on a Unix socket in this test's directory (no TCP):
# (a) a backend whose UPDATE waits for a row lock another open transaction holds → latency's
#     first verdict is `lock-contention`, a warning or worse, naming the heavyweight lock in
#     PostgreSQL's own functions (LockAcquireExtended ← XactLockTableWait, through the wait table
#     of lua/lib/wait_table.lua) with the pg_blocking_pids() query as a next step; never `idle`;
#     triage names postgres-slow (the wait table's recipe for PostgreSQL's locks) as the
#     follow-up, the lock in its reason;
# (b) its healthy control: the same updates on the same row from one session with no holder →
#     no warning (the backend waits for its client's next command: idle).
# Nothing stays attached; the cluster is stopped and removed on every exit.
. "$(dirname "$0")/lib.sh"

pg_cluster 32MB
sql -c "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint); INSERT INTO accounts VALUES (1, 0);" ||
	fail "cannot create the table"

# (a) the holder updates the row and keeps its transaction open; the waiter's UPDATE blocks
{ echo "BEGIN; UPDATE accounts SET balance = balance + 1 WHERE id = 1; SELECT pg_sleep(60);"; } |
	as_pg psql -h "$PGDIR/sock" -U postgres -d postgres -Xq > /dev/null 2>&1 &
PIDS="$PIDS $!"
[ -n "$(backend_where "query LIKE '%pg_sleep(60)%'")" ] || fail "the holder's session did not start"
# The waiter gives up after lock_timeout and tries again, as applications that set one do: each
# wait ends inside the window. (A backend blocked for the whole window, from before the probes
# attached, switches neither out nor in while they are there, and is not seen yet.)
{ echo "SET lock_timeout = '400ms';"
  for i in $(seq 1 100); do echo "UPDATE accounts SET balance = balance - 1 WHERE id = 1;"; done; } |
	as_pg psql -h "$PGDIR/sock" -U postgres -d postgres -Xq > /dev/null 2>&1 &
PIDS="$PIDS $!"
WAITER=$(backend_where "wait_event_type = 'Lock'")
[ -n "$WAITER" ] || fail "no backend waits for the row lock: $(sql -c 'SELECT pid, state, wait_event_type, wait_event, query FROM pg_stat_activity')"

"$DIAG" latency --pid "$WAITER" --duration 3 --json > "$TMP/lock.json" 2> "$TMP/lock.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] ||
	fail "row lock: exit $rc, want 4 or 5: $(json "$TMP/lock.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]' 2>/dev/null) $(tail -3 "$TMP/lock.err")"
check "$TMP/lock.json" "r['verdicts'][0]['id'] == 'lock-contention' and 'heavyweight lock' in r['verdicts'][0]['title'] and 'XactLockTableWait' in r['verdicts'][0]['title']" \
	"row lock: verdicts $(json "$TMP/lock.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
check "$TMP/lock.json" "any('pg_blocking_pids' in s for s in r['verdicts'][0]['next_steps'])" \
	"row lock: no pg_blocking_pids() step: $(json "$TMP/lock.json" 'r["verdicts"][0]["next_steps"]')"
check "$TMP/lock.json" "'idle' not in [x['id'] for x in r['verdicts']]" "row lock: called idle"
assert_released "latency on a PostgreSQL backend waiting for a row lock"

"$DIAG" triage --pid "$WAITER" --duration 3 --json > "$TMP/triage.json" 2> "$TMP/triage.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] ||
	fail "triage on the row lock: exit $rc, want 4 or 5: $(json "$TMP/triage.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]' 2>/dev/null) $(tail -3 "$TMP/triage.err")"
check "$TMP/triage.json" "any(x['id'] == 'waiting' and (x.get('next') or {}).get('recipe') == 'postgres-slow' and 'XactLockTableWait' in x['title'] for x in r['verdicts'])" \
	"triage on the row lock: verdicts $(json "$TMP/triage.json" '[(x["id"], x["title"], x.get("next")) for x in r["verdicts"]]')"
assert_released "triage on a PostgreSQL backend waiting for a row lock"

# release the lock: end the holder's session, and the waiter's
sql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" > /dev/null
sleep 0.5
[ -z "$(sql -c "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'")" ] || fail "the waiter still waits"
kill -9 $PIDS 2>/dev/null

# (b) control: one session updating the same row 20 times a second, nothing holding it
{ for i in $(seq 1 400); do echo "UPDATE accounts SET balance = balance + 1 WHERE id = 1;"; sleep 0.05; done; } |
	as_pg psql -h "$PGDIR/sock" -U postgres -d postgres -Xq > /dev/null 2>&1 &
PIDS="$PIDS $!"
CONTROL=$(backend_where "query LIKE 'UPDATE accounts%'")
[ -n "$CONTROL" ] || fail "the control's session did not start"
"$DIAG" latency --pid "$CONTROL" --duration 3 --json > "$TMP/control.json" 2> "$TMP/control.err"; rc=$?
[ "$rc" = 0 ] || fail "control: exit $rc, want 0: $(json "$TMP/control.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]')"
check "$TMP/control.json" "not any(x['severity'] in ('warning', 'critical') for x in r['verdicts'])" "control: a warning"
assert_released "latency on an uncontended PostgreSQL backend"
exit 0
