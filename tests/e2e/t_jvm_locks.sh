# t_jvm_locks.sh — a JVM (Debian's openjdk-17) shaped like a server: 40 pool threads idle on their
# empty queue since before the run, beside three connection threads that each loop over ~10 ms of
# work inside a synchronized block (tests/workloads/LockPool.java, compiled here with javac).
# (a) the three share one monitor: two of them wait to enter it most of the time → latency's
#     `lock-contention`, at warning or above, in the wait table's words for a Java monitor, on the
#     share of the threads that ran or waited on something (not of the 40 idle ones); triage on the
#     same process says the threads wait on a lock and names latency as the follow-up, never idle;
# (b) the control: each connection thread has its own monitor, the same work and the same idle
#     pool → no lock verdict at warning in either, and triage's first verdict is not a lock wait.
# Nothing stays attached after any run.
. "$(dirname "$0")/lib.sh"

command -v javac >/dev/null && command -v java >/dev/null ||
	skip "javac is not installed (openjdk-17-jdk-headless: make deps)"

mkdir "$TMP/java" && javac -d "$TMP/java" "$ROOT/tests/workloads/LockPool.java" 2> "$TMP/javac.err" ||
	fail "javac: $(head -3 "$TMP/javac.err")"

# start_pool MODE: the JVM in MODE, its threads all started ($PID)
start_pool() {
	(cd "$TMP/java" && exec java -XX:-UsePerfData -cp "$TMP/java" LockPool "$1" > "$TMP/java/$1.out" 2>&1) &
	PID=$!
	PIDS="$PIDS $PID"
	local end=$(($(date +%s) + 30))
	until grep -q '^ready$' "$TMP/java/$1.out" 2>/dev/null; do
		kill -0 "$PID" 2>/dev/null || fail "java $1 exited: $(head -5 "$TMP/java/$1.out")"
		[ "$(date +%s)" -le "$end" ] || fail "java $1: not ready in 30 s"
		sleep 0.2
	done
	sleep 3 # the pool idle since before the run; the JIT done with the work's loop
}
stop() { kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]' 2>/dev/null; }
severity_of() { # FILE ID: the verdict's severity, or "none"
	json "$1" "next((x['severity'] for x in r['verdicts'] if x['id'] == '$2'), 'none')"
}

# --- (a) three connection threads on one monitor ----------------------------------------------
start_pool contend
collect "$TMP/contend-latency.json" latency --pid "$PID" --duration 4
assert_released "latency on the contended JVM"
sev=$(severity_of "$TMP/contend-latency.json" lock-contention)
case $sev in warning | critical) ;; *) fail "contended JVM: latency's lock-contention is $sev: $(verdicts "$TMP/contend-latency.json")" ;; esac
check "$TMP/contend-latency.json" "any(x['id'] == 'lock-contention' and 'monitor' in x['title'] for x in r['verdicts'])" \
	"contended JVM: the lock is not named a Java monitor: $(verdicts "$TMP/contend-latency.json")"
check "$TMP/contend-latency.json" "r['verdicts'][0]['id'] != 'idle'" \
	"contended JVM: latency's first verdict is idle: $(verdicts "$TMP/contend-latency.json")"

collect "$TMP/contend-triage.json" triage --pid "$PID" --duration 4
assert_released "triage on the contended JVM"
check "$TMP/contend-triage.json" "r['verdicts'][0]['id'] == 'waiting' and 'lock' in r['verdicts'][0]['title'] and 'monitor' in r['verdicts'][0]['title'] and r['verdicts'][0]['severity'] in ('warning', 'critical')" \
	"contended JVM: triage's first verdict: $(verdicts "$TMP/contend-triage.json")"
check "$TMP/contend-triage.json" "(r['verdicts'][0].get('next') or {}).get('recipe') == 'latency'" \
	"contended JVM: triage does not send on to latency: $(json "$TMP/contend-triage.json" '[(x["id"], x.get("next")) for x in r["verdicts"][:1]]')"
stop

# --- (b) the control: a monitor each ----------------------------------------------------------
start_pool own
collect "$TMP/own-latency.json" latency --pid "$PID" --duration 4
assert_released "latency on the JVM without contention"
check "$TMP/own-latency.json" "not any(x['id'] in ('lock-contention', 'held-lock', 'deadlock', 'likely-deadlock', 'park-wait', 'futex-wait') and x['severity'] in ('warning', 'critical') for x in r['verdicts'])" \
	"JVM without contention: a lock verdict: $(verdicts "$TMP/own-latency.json")"
collect "$TMP/own-triage.json" triage --pid "$PID" --duration 4
assert_released "triage on the JVM without contention"
check "$TMP/own-triage.json" "r['verdicts'][0]['id'] not in ('waiting', 'lock-contention', 'deadlock')" \
	"JVM without contention: triage's first verdict: $(verdicts "$TMP/own-triage.json")"
stop
exit 0
