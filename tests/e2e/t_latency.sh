# diagnose latency on the real kernel, each workload with a known cause:
# (a) a process that sleeps in slow_op() (func_workload: nanosleep 2 ms per call, in a loop with no
#     request: no socket at all) → `pacing` (info, exit 0) names slow_op: a sleep with no request
#     of the thread's open is by design (t_pacing.sh has the sleep inside a request, a warning);
# (b) lock contention (lock_contention: 4 pool workers take one mutex in handle_request() for
#     50 us while compact_state() holds it 3 ms at a time) → `lock-contention` first, naming the
#     waiters' function (only reachable by unwinding through glibc's frameless lock code) and the
#     holder, compact_state(), from the wakeups of the waiters;
# (c) its healthy control: the same pool with one worker and no compactor (the mutex is never
#     contended; the worker mostly waits for work) → exit 0, no lock-contention, no warning;
# (d) the healthy control of waiting: a thread pool parked on a condition variable with no work (idle_pool)
#     → `idle` (info), exit 0, no warning or critical verdict.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"

start "$WL/func_workload" 5
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/sleep.json" 2> "$TMP/sleep.err"; rc=$?
[ "$rc" = 0 ] || fail "sleeping: exit $rc, want 0 (pacing is info): $(cat "$TMP/sleep.err")"
CHECK_LET='v = {x["id"]: x for x in r["verdicts"]}'
check "$TMP/sleep.json" "'pacing' in v and v['pacing']['severity'] == 'info' and 'slow_op()' in v['pacing']['title'] and 'sleeping' not in v" \
	"sleeping: verdicts $(json "$TMP/sleep.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
check "$TMP/sleep.json" "r['verdicts'][0]['id'] == 'pacing' and res['peers']['sleeps']['between'] > 100 and res['peers']['sleeps']['in_request'] == 0" \
	"pacing is not the first verdict, or the sleeps not placed between requests: $(json "$TMP/sleep.json" 'r["results"]["peers"]["sleeps"]')"
check "$TMP/sleep.json" "res['offcpu']['states']['sleeping']['ns'] > 0.5e9" "off-CPU sleeping time too small"
assert_shapes "$TMP/sleep.json"
assert_released "latency on a sleeping process"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

start "$WL/lock_contention" 4
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/lock.json" 2> "$TMP/lock.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "lock: exit $rc: $(cat "$TMP/lock.err")"
check "$TMP/lock.json" "r['verdicts'][0]['id'] == 'lock-contention' and 'handle_request()' in r['verdicts'][0]['title'] and 'held by compact_state()' in r['verdicts'][0]['title']" \
	"lock: verdicts $(json "$TMP/lock.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
# the waiters' heaviest stack has the frames the frame-pointer walk loses, unwound by CFI
check "$TMP/lock.json" "any(s['user'][:3] == ['__GI___lll_lock_wait', 'pthread_mutex_lock', 'handle_request'] and 'dwarf' in s.get('user_from', []) for s in res['offcpu']['stacks'][:3])" \
	"lock: no waiter stack through pthread_mutex_lock: $(json "$TMP/lock.json" '[s["user"][:4] for s in r["results"]["offcpu"]["stacks"][:3]]')"
assert_released "latency on lock contention"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

start "$WL/lock_contention" 1
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/nolock.json" 2> "$TMP/nolock.err"; rc=$?
[ "$rc" = 0 ] || fail "uncontended: exit $rc, want 0: $(json "$TMP/nolock.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]')"
check "$TMP/nolock.json" "[x['id'] for x in r['verdicts']] in (['ok'], ['idle'])" \
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
