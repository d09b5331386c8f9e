# CPU burnt on lock hand-offs (futex_storm: threads contending on one mutex around a tiny update):
# high-cpu's verdict is futex-contention, naming update_counters() (the function past
# pthread_mutex_lock in the stacks under futex()) with latency as its next recipe; --follow runs
# latency on the same process, whose waits name the lock's taker. Its control, the same threads
# each with a mutex of its own (no futex calls), is CPU-bound in user code and follows nothing.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"
verdicts() { json "$1" '[(v["id"], v["severity"], v["title"]) for v in r["verdicts"]]'; }

start "$WL/futex_storm" 4
collect "$TMP/r.json" high-cpu --pid "$PID" --duration 3
[ "$collected_rc" != 0 ] || fail "exit 0, want 4 or 5"
CHECK_LET='v = r["verdicts"][0]'
check "$TMP/r.json" "v['id'] == 'futex-contention' and 'update_counters()' in v['title'] and v['next']['recipe'] == 'latency'" \
	"verdicts $(verdicts "$TMP/r.json")"
check "$TMP/r.json" "v['next_steps'][0] == 'Run next: diagnose latency --pid %d: it times the waits on the lock, names the holder and the waiters\\' call paths' % r['target']['pid']" \
	"no exact latency command first: $(json "$TMP/r.json" 'r["verdicts"][0]["next_steps"]')"
assert_released "high-cpu on a futex storm"

# --follow: high-cpu, then latency on the same process
collect "$TMP/chain.json" high-cpu --pid "$PID" --duration 3 --follow
[ "$collected_rc" != 0 ] || fail "--follow: exit 0, want 4 or 5"
got=$(json "$TMP/chain.json" '" ".join("%s:%s" % (s["recipe"], s["stop_reason"]) for s in r["chain"]["stages"])')
# high-cpu's syscall counter and latency's syscall table see each of the storm's ~900k futex()
# calls a second: on a VM their BPF time can pass the recipes' budgets. The governor then samples,
# then stops that probe alone (its figures scaled to the window, the notes say so), and the stage
# goes on to its duration: a chain follows it, and what latency collected must still name the
# lock's taker (below).
case $got in "high-cpu:duration latency:duration") ;; *)
	fail "--follow: stages $got, ended: $(json "$TMP/chain.json" 'r["chain"]["ended"]')" ;;
esac
# latency times the waits: four threads on this machine's two CPUs wait for a CPU more than for
# the lock (cpu-starved), or for the lock (lock-contention); either way its table of waits names
# the lock's taker through glibc (update_counters → pthread_mutex_lock → __lll_lock_wait)
first=$(json "$TMP/chain.json" 'r["chain"]["stages"][1]["report"]["verdicts"][0]["id"]')
case $first in lock-contention | cpu-starved) ;; *)
	fail "--follow: latency's verdicts $(json "$TMP/chain.json" '[(v["id"], v["title"]) for v in r["chain"]["stages"][1]["report"]["verdicts"]]')" ;;
esac
json "$TMP/chain.json" 'json.dumps(r["chain"]["stages"][1]["report"]["sections"], ensure_ascii=False)' |
	grep -q 'update_counters → pthread_mutex_lock' || fail "--follow: latency's waits do not name update_counters taking the lock"
assert_released "high-cpu --follow on a futex storm"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# the control: no contention, no futex, nothing to follow
start "$WL/futex_storm" 4 private
collect "$TMP/ctl.json" high-cpu --pid "$PID" --duration 3 --follow
[ "$collected_rc" != 0 ] || fail "control: exit 0, want 4 or 5 (a CPU burner)"
got=$(json "$TMP/ctl.json" '"%d %s %s" % (len(r["chain"]["stages"]), r["chain"]["stages"][0]["report"]["verdicts"][0]["id"], any(x["id"] == "futex-contention" for x in r["chain"]["stages"][0]["report"]["verdicts"]))')
[ "$got" = "1 cpu-bound-user False" ] ||
	fail "control: $got: $(json "$TMP/ctl.json" '[(x["id"], x["title"]) for x in r["chain"]["stages"][0]["report"]["verdicts"]]')"
json "$TMP/ctl.json" 'r["chain"]["stages"][0]["report"]["verdicts"][0]["title"]' | grep -q 'update_counters()' ||
	fail "control: the user function is not named: $(json "$TMP/ctl.json" 'r["chain"]["stages"][0]["report"]["verdicts"][0]["title"]')"
assert_released "high-cpu on the uncontended control"
exit 0
