# t_python_gc.sh — latency's Python GC probe (the usdt kind on CPython's own gc__start/gc__done
# USDT probes, Debian 12's /usr/bin/python3.11; tests/workloads/py_gc.py):
# (a) a service whose requests churn self-referencing objects over a heap of 200,000 long-lived
#     ones → gc-pauses, warning or worse, naming generation 2 and gc.freeze(); the probe attached
#     to the interpreter with its semaphore (hits by generation 0, 1 and 2);
# (b) its control: the same loop allocating strings (nothing for the collector) → no gc-pauses,
#     ruled out with its figures, no warning;
# (c) a target that is not CPython: the probe says it is not there (available false), nothing
#     else changes.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3.11
[ -x "$PY" ] || skip "Debian's python3.11 is not installed"
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"][:120]) for x in r["verdicts"]]'; }

# ---- (a) cyclic garbage ------------------------------------------------------------------------
start "$PY" "$ROOT/tests/workloads/py_gc.py" --cycles --pause-ms 0
sleep 0.5
collect "$TMP/a.json" latency --pid "$PID" --duration 3
CHECK_LET='v = r["verdicts"][0]; g = res["pygc"]'
check "$TMP/a.json" "v['id'] == 'gc-pauses' and v['severity'] in ('warning', 'critical') and 'generation 2' in v['title'] and any('gc.freeze()' in s for s in v['next_steps'])" \
	"(a) the collector is not named: $(verdicts "$TMP/a.json")"
check "$TMP/a.json" "g['available'] and g['binary'] == '$PY' and sorted(k['key'] for k in g['keys']) == [0, 1, 2] and g['timed'] > 100" \
	"(a) the probe's figures"
assert_released "latency with CPython's GC probes"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (b) the control: strings, no collections ---------------------------------------------------
start "$PY" "$ROOT/tests/workloads/py_gc.py" --pause-ms 0
sleep 0.5
"$DIAG" latency --pid "$PID" --duration 3 --json > "$TMP/b.json" 2> "$TMP/b.err"; rc=$?
control_quiet "$TMP/b.json" "$rc" || fail "(b) the control: exit $rc, want 0: $(verdicts "$TMP/b.json" 2>/dev/null)"
check "$TMP/b.json" "not any(x['id'] == 'gc-pauses' for x in r['verdicts']) and any(x['id'] == 'gc-pauses' for x in r['ruled_out']) and g['available']" \
	"(b) the control: $(verdicts "$TMP/b.json")"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (c) not CPython ----------------------------------------------------------------------------
start "$WL/idle_pool"
collect "$TMP/c.json" latency --pid "$PID" --duration 1
check "$TMP/c.json" "not g['available'] and 'no USDT probe python:gc__start' in g['why'] and not any(x['id'] == 'gc-pauses' for x in r['verdicts'] + r['ruled_out'])" \
	"(c) a C program: $(json "$TMP/c.json" 'r["results"]["pygc"]')"
assert_released "latency on a program without CPython's probes"
exit 0
