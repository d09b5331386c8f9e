# t_python.sh — Python frames in the stacks, on Debian 12's own /usr/bin/python3.11 (CPython's
# frame chain read in BPF: engine/abi/diag_python.h, engine/symbolize/python.c) and on
# the CPython 3.12 and 3.13 this machine's pyenv holds, when it holds them (tests/workloads/py_service.py):
# (a) a service whose requests spend their time in checksum_rows(): high-cpu's cpu-bound-user
#     names checksum_rows, the file and a line of it, in Python's terms; every sample carries
#     Python frames, and the evaluation loop's native frame is gone from the stacks;
# (b) its control, the same loop sleeping 50 ms a request: no CPU-bound verdict, no warning;
# (c) a request waiting for a threading.Lock another thread holds: latency's off-CPU stacks run
#     through fetch_row (py_service.py), and name flush_batch for the holder's sleep;
# (d) python_frames: false: the native frames only (the evaluation loop's), as before;
# (f) a list that only grows: memory-growth's verdict names remember_rows (py_service.py), the
#     Python function appending, and its allocation stacks carry Python frames; its control,
#     the same rows built and dropped, is not called a leak;
# (e) CPython 3.12 and 3.13 (pyenv's, libpython shared; 3.13's own debug offsets checked): (a)'s
#     verdict, when those interpreters are on the machine.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3.11
[ -x "$PY" ] || skip "Debian's python3.11 is not installed"
SVC="$ROOT/tests/workloads/py_service.py"
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"][:140]) for x in r["verdicts"]]'; }
stop() { { kill -9 "$PID"; wait "$PID"; } 2>/dev/null; }

hot_case() { # PYTHON LABEL VERSION: (a) on that interpreter
	start "$1" "$SVC" --hot
	sleep 0.5
	collect "$TMP/$2.json" high-cpu --pid "$PID" --duration 3
	CHECK_LET='v = r["verdicts"][0]; u = res["profile"]["unwind"]; st = res["profile"]["stacks"]'
	check "$TMP/$2.json" "v['id'] == 'cpu-bound-user' and 'in Python code' in v['title'] and 'checksum_rows (' in v['title'] and 'py_service.py' in v['title'] and 'hottest line' in v['title']" \
		"($2) the hot Python function is not named: $(verdicts "$TMP/$2.json")"
	check "$TMP/$2.json" "u['python_runtime'].startswith('CPython $3') and u['python_samples'] >= 0.9 * u['sent'] and u['python_frames_avg'] >= 3" \
		"($2) Python frames were not read in most samples"
	check "$TMP/$2.json" "any(f.startswith('checksum_rows (') and f.endswith(')') and ':' in f for s in st for f in s['user']) and not any(f == '_PyEval_EvalFrameDefault' for s in st for f in s['user'])" \
		"($2) the stacks: Python frames in place of the evaluation loop's"
	assert_released "high-cpu on CPython $3"
	stop
}

# ---- (a) a hot Python function ------------------------------------------------------------------
hot_case "$PY" a 3.11

# ---- (b) the control: the same loop, sleeping ----------------------------------------------------
start "$PY" "$SVC" --idle
sleep 0.5
collect "$TMP/b.json" high-cpu --pid "$PID" --duration 3
control_quiet "$TMP/b.json" "$collected_rc" || fail "(b) the control: exit $collected_rc, want 0: $(verdicts "$TMP/b.json")"
check "$TMP/b.json" "not any(x['id'].startswith('cpu-bound') for x in r['verdicts'])" \
	"(b) the control cries wolf: $(verdicts "$TMP/b.json")"
stop

# ---- (c) waiting for a lock ----------------------------------------------------------------------
start "$PY" "$SVC" --lock
sleep 0.5
collect "$TMP/c.json" latency --pid "$PID" --duration 3
CHECK_LET='st = res["offcpu"]["stacks"]; u = res["offcpu"]["unwind"]'
check "$TMP/c.json" "u['python_samples'] > 0 and any(s['user_from'][i] == 'python' and f.startswith('fetch_row (') for s in st if 'user_from' in s for i, f in enumerate(s['user']))" \
	"(c) the waiting request's Python function is not in the off-CPU stacks"
check "$TMP/c.json" "any(f.startswith('flush_batch (') for s in st for f in s['user'])" \
	"(c) the lock holder's sleep is not in the off-CPU stacks"
assert_released "latency on CPython"
stop

# ---- (d) python_frames off -----------------------------------------------------------------------
mkdir -p "$TMP/recipes"
cp "$ROOT/recipes/high-cpu.yaml" "$TMP/recipes/"
cp -r "$ROOT/lua" "$TMP/"
sed -i 's/python_frames: true/python_frames: false/' "$TMP/recipes/high-cpu.yaml"
grep -q 'python_frames: false' "$TMP/recipes/high-cpu.yaml" || fail "(d) could not turn python_frames off in a copy of high-cpu.yaml"
start "$PY" "$SVC" --hot
sleep 0.5
collect "$TMP/d.json" high-cpu --pid "$PID" --duration 2 --recipes "$TMP/recipes"
CHECK_LET='st = res["profile"]["stacks"]; u = res["profile"]["unwind"]'
check "$TMP/d.json" "u['python_samples'] == 0 and not any('python' in s.get('user_from', []) for s in st) and 'in Python code' not in r['verdicts'][0]['title']" \
	"(d) python_frames: false still reads Python frames"
stop

# ---- (f) memory: a list that only grows, and its control ------------------------------------------
start "$PY" "$SVC" --grow
sleep 0.5
collect "$TMP/f.json" memory-growth --pid "$PID" --duration 3
CHECK_LET='st = res["allocs"]["stacks"]; w = [x for x in r["verdicts"] if x["severity"] in ("warning", "critical")]'
check "$TMP/f.json" "w and 'remember_rows (' in w[0]['title'] and 'py_service.py' in w[0]['title']" \
	"(f) the growing list's Python function is not named: $(verdicts "$TMP/f.json")"
check "$TMP/f.json" "any('python' in s.get('user_from', []) for s in st)" \
	"(f) the allocation stacks carry no Python frames"
assert_released "memory-growth on CPython"
stop
start "$PY" "$SVC" --churn
sleep 0.5
collect "$TMP/f2.json" memory-growth --pid "$PID" --duration 3
control_quiet "$TMP/f2.json" "$collected_rc" || fail "(f) the control (rows built and dropped): exit $collected_rc, want 0: $(verdicts "$TMP/f2.json")"
check "$TMP/f2.json" "not any(x['id'] == 'leak' for x in r['verdicts'])" \
	"(f) the control (rows built and dropped) is called a leak: $(verdicts "$TMP/f2.json")"
stop

# ---- (e) CPython 3.12 and 3.13, where pyenv has them -----------------------------------------------
for v in 3.12 3.13; do
	for py in /root/.pyenv/versions/$v.*/bin/python$v; do
		[ -x "$py" ] || { echo "note: no CPython $v here (pyenv), (e) not run for it" >&2; continue; }
		hot_case "$py" "e$v" "$v"
		break
	done
done
exit 0
