# lib.sh — shared helpers for the end-to-end tests: run the real binary against real workloads
# on the running kernel, read its JSON report, and prove no probe stays attached.
# Sourced by tests/e2e/t_*.sh; each test exits 0 (pass), 77 (skip) or anything else (fail).
set -u
BUILD=${BUILD:-build}
# Files written under build/ and the test directories belong to whoever ran make: do not write
# them with a sudo caller's rights (diagnose does that for --output/--folded under sudo).
unset SUDO_UID SUDO_GID
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIAG="$ROOT/$BUILD/diagnose"
WL="$ROOT/$BUILD/workloads"
export DIAGNOSE_RECIPES="$ROOT/recipes"
TMP=$(mktemp -d /tmp/diagnose-e2e.XXXXXX)
# Production mode needs an audit trail: these machines run no syslog daemon. Production takes its
# audit files from the policy alone, so the tests' default policy (below) names the same file. As
# root, an audit file the environment names must be NAME.jsonl in a directory root alone can
# change: $TMP (mktemp -d: root's, 0700) is one.
export DIAGNOSE_AUDIT_FILE="$TMP/audit.jsonl"
PIDS=""
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "end-to-end tests load BPF programs: run as root"
printf 'mode: development\naudit_file: %s\n' "$DIAGNOSE_AUDIT_FILE" > "$TMP/e2e-policy.yaml"
chmod 644 "$TMP/e2e-policy.yaml"
export DIAGNOSE_POLICY="$TMP/e2e-policy.yaml"

# trust_root DIR: a production install in DIR as `make install` lays it out: DIR/bin/diagnose, a
# copy of the binary (production's trust root is PREFIX/share/diagnose/recipes beside the running
# binary's PREFIX/bin; only /etc/diagnose/policy.yaml may move it), and root-owned copies of
# recipes/ (without its lock) and lua/ in DIR/share/diagnose that no one else can write. Sets
# PDIAG (that binary) and P (DIR/share/diagnose).
trust_root() {
	mkdir -p "$1/bin" "$1/share/diagnose"
	cp "$DIAG" "$1/bin/diagnose"
	cp -r "$ROOT/recipes" "$ROOT/lua" "$1/share/diagnose/"
	rm -f "$1/share/diagnose/recipes/approved.lock"
	chmod -R go-w "$1" # whatever the checkout's umask: production trusts only what root alone can change
	PDIAG="$1/bin/diagnose" P="$1/share/diagnose"
}

start() { # start WORKLOAD ARGS... → sets $PID
	"$@" >/dev/null 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
	sleep 0.3
	kill -0 "$PID" 2>/dev/null || fail "workload $1 did not start"
}

# Names of our BPF programs (as the kernel truncates them, 15 chars).
# one per line: each probe kind's programs (a new kind adds its own lines)
OUR_PROG_NAMES=(
	'on_cpu_sample'
	'tp_btf_wakeup'
	'tp_btf_wakeup_n'
	'tp_btf_switch'
	'raw_tp_wakeup'
	'raw_tp_wakeup_n'
	'raw_tp_switch'
	'count_sys_enter'
	'timed_sys_enter'
	'timed_sys_exit'
	'tracepoint_cnt'
	'tp_btf_off_swit'
	'raw_tp_off_swit'
	'tp_btf_wake_swi'
	'tp_btf_wake_wak'
	'raw_tp_wake_swi'
	'raw_tp_wake_wak'
	'func_lat_entry'
	'func_lat_return'
	'lookup_entry'
	'lookup_return'
	'alloc_.*'
	'tp_btf_page_fau'
	'raw_tp_page_fau'
	'tracepoint_page'
	'(tp_btf|raw_tp)_(io_start|rq_inser|rq_issue|rq_compl|rq_merge|dirty_fo)'
	'file_io_enter'
	'file_io_exit'
	'tcpe_.*'
	'skbd_.*'
	'doctor_.*'
	'kalloc_.*'
	'diag_set_.*' # engine/procset.c's fork follower (bpf/procset.bpf.c)
)
OUR_PROGS="^($(IFS='|'; echo "${OUR_PROG_NAMES[*]}"))\$"
our_links() { # prints the number of attached links whose program is one of ours
	bpftool -j link list 2>/dev/null | python3 -c '
import json, re, subprocess, sys
links = json.load(sys.stdin) or []
progs = {p["id"]: p.get("name", "") for p in json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout or "[]")}
pat = re.compile(sys.argv[1])
print(sum(1 for l in links if pat.match(progs.get(l.get("prog_id"), ""))))' "$OUR_PROGS"
}
our_progs() { # loaded programs of ours, attached or not
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, re, sys
pat = re.compile(sys.argv[1])
print(sum(1 for p in (json.load(sys.stdin) or []) if pat.match(p.get("name", ""))))' "$OUR_PROGS"
}
assert_released() {
	# The kernel frees a program after its last fd closes, asynchronously (RCU): allow it 5 s
	# (it only costs time when something really is left).
	local l p i
	for i in $(seq 25); do
		l=$(our_links); p=$(our_progs)
		[ "$l" = 0 ] && [ "$p" = 0 ] && return 0
		sleep 0.2
	done
	[ "$l" = 0 ] || fail "$l BPF links of ours still attached after: $1"
	fail "$p BPF programs of ours still loaded after: $1"
}

# json FILE PYTHON-EXPR: evaluates the expression with `r` bound to the report; prints the result.
# collect OUT.json ARGS...: a run of diagnose ARGS --json that must collect and judge (exit 0, 4 or
# 5), its report in OUT.json and its stderr in OUT.json.err; $collected_rc gets its exit code.
collect() {
	local out=$1
	shift
	"$DIAG" "$@" --json > "$out" 2> "$out.err"
	collected_rc=$?
	case $collected_rc in 0 | 4 | 5) ;; *) fail "$*: exit $collected_rc: $(cat "$out.err")" ;; esac
}

json() {
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# test_recipe NAME [DURATION]: writes $TMP/recipes/NAME.yaml, a recipe for testing probe kinds
# (target: pid, generous budgets, a Lua snippet that returns nothing: the JSON results are what
# a test checks); its probes come on stdin, as YAML list items of probes:; $TEST_BUDGETS, when
# set, adds lines to its budgets. Prints its path.
test_recipe() {
	mkdir -p "$TMP/recipes" "$TMP/lua/lib"
	[ -f "$TMP/lua/test.lua" ] || echo 'return { verdicts = {}, report = {} }' > "$TMP/lua/test.lua"
	{ cat <<EOF
name: $1
symptom: probe kind test
summary: probe kind test
lua: test.lua
target: pid
duration_s: ${2:-2}
budgets:
  max_duration_s: 10
  max_sample_hz: 0
  max_cpu_pct: 50
  max_map_bytes: 67108864
${TEST_BUDGETS:-}
probes:
EOF
	  cat; } > "$TMP/recipes/$1.yaml"
	echo "$TMP/recipes/$1.yaml"
}

# check FILE PYTHON-CONDITION MESSAGE: the condition, with `r` the report, `res` its results and
# whatever $CHECK_LET binds (e.g. CHECK_LET='c = res["ctx"]'), must hold; else fail with MESSAGE
# and the results. Every check also asserts that no probe's results departed from its kind's
# declared shape (the engine notes it: engine/session.c, engine/shape.h).
check() {
	assert_shapes "$1"
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); res = r["results"]
exec(sys.argv[3])
sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" "${CHECK_LET:-}" ||
		fail "$3: $(python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["results"]))' "$1")"
}

# assert_shapes FILE: the report has no "results do not match the declared shape" note.
assert_shapes() {
	local bad
	bad=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("; ".join(n for n in r.get("notes", []) if "do not match the declared shape" in n))' "$1") ||
		fail "assert_shapes: $1 is not a JSON report"
	[ -z "$bad" ] || fail "results unlike their declaration: $bad"
}
