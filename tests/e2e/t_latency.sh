# diagnose latency on the real kernel, each workload with a known cause:
# (a) a process that sleeps in slow_op() (func_workload: nanosleep 2 ms per call) → the
#     `sleeping` verdict names slow_op, at most a warning (a sleep may be by design);
# (b) lock contention (lock_contention: 4 workers take one mutex in handle_request() and hold it
#     in update_shared_state()) → `lock-contention` first, naming the workers' own code;
# (c) its healthy control: the same workload with one worker (the mutex is never contended; it
#     computes 97% of the time) → no warning, no lock-contention, no sleeping, and not idle;
# (d) the healthy control of waiting: a thread pool parked on a condition variable with no work (idle_pool)
#     → `idle` (info), exit 0, no warning or critical verdict.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"

start "$WL/func_workload" 5
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/sleep.json" 2> "$TMP/sleep.err"; rc=$?
[ "$rc" = 4 ] || fail "sleeping: exit $rc, want 4 (warning): $(cat "$TMP/sleep.err")"
CHECK_LET='v = {x["id"]: x for x in r["verdicts"]}'
check "$TMP/sleep.json" "'sleeping' in v and v['sleeping']['severity'] == 'warning' and 'slow_op()' in v['sleeping']['title']" \
	"sleeping: verdicts $(json "$TMP/sleep.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
check "$TMP/sleep.json" "r['verdicts'][0]['id'] == 'sleeping'" "sleeping is not the first verdict"
check "$TMP/sleep.json" "res['offcpu']['states']['sleeping']['ns'] > 0.5e9" "off-CPU sleeping time too small"
assert_shapes "$TMP/sleep.json"
assert_released "latency on a sleeping process"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

start "$WL/lock_contention" 4
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/lock.json" 2> "$TMP/lock.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "lock: exit $rc: $(cat "$TMP/lock.err")"
# The waiter's path through glibc (no frame pointers) loses handle_request: worker() is the
# nearest function of the target's own code that the frame-pointer walk keeps.
check "$TMP/lock.json" "r['verdicts'][0]['id'] == 'lock-contention' and ('handle_request()' in r['verdicts'][0]['title'] or 'worker()' in r['verdicts'][0]['title'])" \
	"lock: verdicts $(json "$TMP/lock.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
assert_released "latency on lock contention"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

start "$WL/lock_contention" 1
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/nolock.json" 2> "$TMP/nolock.err"; rc=$?
[ "$rc" = 0 ] || fail "uncontended: exit $rc, want 0: $(json "$TMP/nolock.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]')"
check "$TMP/nolock.json" "[x['id'] for x in r['verdicts']] == ['ok']" \
	"uncontended: verdicts $(json "$TMP/nolock.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
assert_released "latency on an uncontended lock"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

start "$WL/idle_pool" 4
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/idle.json" 2> "$TMP/idle.err"; rc=$?
[ "$rc" = 0 ] || fail "idle pool: exit $rc, want 0: $(json "$TMP/idle.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]')"
check "$TMP/idle.json" "[x['id'] for x in r['verdicts']] == ['idle'] and r['verdicts'][0]['severity'] == 'info'" \
	"idle pool: verdicts $(json "$TMP/idle.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
assert_released "latency on an idle pool"
exit 0
