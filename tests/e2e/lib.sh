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
# The catalog's probe kinds, as the build generated them from engine/probes/ (Makefile).
catalog_kinds() { sed -n 's/^PROBE_KIND(\(.*\))$/\1/p' "$ROOT/$BUILD/catalog_list.h"; }
WL="$ROOT/$BUILD/workloads"
export DIAGNOSE_RECIPES="$ROOT/recipes"
# On a disk: the tests' page cache must be evictable and their fsyncs must reach a block device
# (t_memory_host's refaults, t_targets' journals). /tmp is a tmpfs on Debian 13 and in many
# containers: /var/tmp then.
_tmp_base=/tmp
[ "$(stat -f -c %T /tmp 2>/dev/null)" = tmpfs ] && _tmp_base=/var/tmp
TMP=$(mktemp -d "$_tmp_base/diagnose-e2e.XXXXXX")
# One interpreter for every helper: python3 as found on PATH, resolved once and put first on
# PATH (a version manager's shim, pyenv's for one, costs a few shell processes per call, and the
# suite makes thousands). A command, not a function: `python3 ... &` must give the python's pid.
if _py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$_py" ]; then
	mkdir "$TMP/bin" && ln -s "$_py" "$TMP/bin/python3" && export PATH="$TMP/bin:$PATH"
fi
# Production mode needs an audit trail: these machines run no syslog daemon. Production takes its
# audit files from the policy alone, so the tests' default policy (below) names the same file. As
# root, an audit file the environment names must be NAME.jsonl in a directory root alone can
# change: $TMP (mktemp -d: root's, 0700) is one.
export DIAGNOSE_AUDIT_FILE="$TMP/audit.jsonl"
PIDS=""
# MEM_KEEP_REPORTS=DIR keeps every JSON report a test left in $TMP, as DIR/NAME.json (the recorded
# incidents of tests/fixtures/trimmed/memory-growth/ are trimmed from those of t_memory.sh and
# t_memory_real.sh: tests/fixtures/record.sh --trim memory-growth/NAME --from DIR/NAME.json)
keep_reports() { [ -z "${MEM_KEEP_REPORTS:-}" ] || cp "$TMP"/*.json "$MEM_KEEP_REPORTS/" 2>/dev/null; }
trap 'keep_reports; for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# skip REASON: something the suite needs is missing (root, a tool that make deps installs).
# REQUIRE_E2E=1 (CI) makes it a failure: a suite that skips its e2e tests must not pass.
skip() {
	[ "${REQUIRE_E2E:-0}" = 1 ] && fail "REQUIRE_E2E=1, and this test would skip: $*"
	echo "SKIP: $*" >&2; exit 77
}
# skip_unsupported REASON: this machine lacks a feature the test needs that no install brings
# (cgroup v2, a block device, a tmpfs mount): a skip, even under REQUIRE_E2E=1.
skip_unsupported() { echo "SKIP: unsupported here: $*" >&2; exit 77; }

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

# as_nobody CMD...: runs CMD as nobody (uid and gid 65534, no groups, no capabilities). The
# checkout may be where nobody cannot go (/root is 0700): run what nobody needs from the copies
# that nobody_tree makes readable below $TMP ($NOBODY_DIAG, $NOBODY_RECIPES), never from $ROOT.
as_nobody() {
	nobody_tree
	DIAGNOSE_RECIPES=$NOBODY_RECIPES setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"
}
NOBODY_DIAG="$TMP/as-nobody/diagnose"
NOBODY_RECIPES="$TMP/as-nobody/recipes"
nobody_tree() { # copies the binary, the recipes and their Lua for nobody (once per test)
	[ -x "$NOBODY_DIAG" ] && return 0
	chmod 711 "$TMP" # enter, not list: what nobody reads is under $TMP/as-nobody only
	mkdir -p "$TMP/as-nobody" && cp "$DIAG" "$NOBODY_DIAG" && cp -r "$ROOT/recipes" "$ROOT/lua" "$TMP/as-nobody/" &&
		chmod -R a+rX "$TMP/as-nobody" || fail "cannot copy the binary and recipes for nobody"
	setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$NOBODY_RECIPES/high-cpu.yaml" ||
		fail "nobody cannot read $NOBODY_RECIPES"
}

start() { # start WORKLOAD ARGS... → sets $PID
	"$@" >/dev/null 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
	sleep 0.3
	kill -0 "$PID" 2>/dev/null || fail "workload $1 did not start"
}

# What "ours" means to the release checks (tests/e2e/bpf_ours.py): a BPF program or link that
# appeared since this test began and is held by a process of this test (every process it starts
# carries DIAG_E2E_RUN in its environment, whoever its parent is now), or held by no process at
# all while named as one of ours (pinned, or not freed yet). Other runs on the machine (another
# terminal, a concurrent test, another checkout) hold theirs: they never fail this test.
# Our names are every program of every $BUILD/bpf/*.bpf.o and the doctor's, derived by make
# ($BUILD/bpf/prog_names); a test run without make derives them here.
BPF_OURS="$ROOT/tests/e2e/bpf_ours.py"
export DIAG_E2E_RUN="$TMP"
OUR_PROG_NAMES="$ROOT/$BUILD/bpf/prog_names"
if [ ! -s "$OUR_PROG_NAMES" ] ||
	[ -n "$(find "$ROOT/$BUILD/bpf" "$ROOT/engine" "$BPF_OURS" -newer "$OUR_PROG_NAMES" \
		\( -name '*.bpf.o' -o -name '*.c' -o -name bpf_ours.py \) 2>/dev/null)" ]; then
	OUR_PROG_NAMES="$TMP/prog_names"
	python3 "$BPF_OURS" names "$ROOT" "$BUILD" > "$OUR_PROG_NAMES" || fail "cannot list our BPF program names"
fi
python3 "$BPF_OURS" snapshot > "$TMP/bpf-before" || fail "bpftool cannot list BPF programs"
bpf_left() { # one line per program or link of ours still there (bpf_ours.py left)
	python3 "$BPF_OURS" left "$TMP/bpf-before" "$OUR_PROG_NAMES" "$DIAG_E2E_RUN"
}
our_links() { # prints the number of links of ours (attached by this test's runs)
	bpf_left | grep -c '^link '
}
our_progs() { # loaded programs of ours, attached or not
	bpf_left | grep -c '^prog '
}
assert_released() {
	# The kernel frees a program after its last fd closes, asynchronously (RCU): allow it 5 s
	# (it only costs time when something really is left).
	local left end=$(($(date +%s) + 5))
	while :; do
		left=$(bpf_left) || fail "cannot list the BPF programs and links of this test"
		[ -z "$left" ] && return 0
		[ "$(date +%s)" -le "$end" ] || break
		sleep 0.2
	done
	fail "BPF programs or links of ours still there after: $1
$left"
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
# declared shape (the engine notes it: engine/session/session.c, engine/plan/shape.h), as assert_shapes does,
# and that every probe loaded (a probe that does not load on a kernel is skipped, the run
# degraded: on the kernels the tests run on, that is a fault unless the test says
# ALLOW_LOAD_ERRORS=1), in the same python3: one process per check. (Reports read with json()
# alone are not checked for it: a test that wants the guarantee uses check at least once.)
check() {
	local out
	out=$(python3 -c 'import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit("assert_shapes: %s is not a JSON report (%s)" % (sys.argv[1], e))
_bad = "; ".join(n for n in r.get("notes", []) if "do not match the declared shape" in n)
if _bad:
    sys.exit("results unlike their declaration: " + _bad)
_unloaded = ["%s: %s" % (p.get("id"), p["load_error"]) for p in r.get("probes", []) if "load_error" in p]
if _unloaded and sys.argv[5] != "1":
    sys.exit("probes did not load (a degraded run): " + "; ".join(_unloaded))
res = r.get("results")
_err = ""
try:
    exec(sys.argv[3])
    _ok = eval(sys.argv[2])
except Exception as e:
    _ok, _err = False, " (%s: %s)" % (type(e).__name__, e)
if not _ok:
    sys.exit(sys.argv[4] + _err + ": " + json.dumps(res))' "$1" "$2" "${CHECK_LET:-}" "$3" "${ALLOW_LOAD_ERRORS:-0}" 2>&1) || fail "$out"
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

# redis_server NAME: a private redis-server (Debian 12's 7.0) in $TMP/NAME, as its package runs it
# (as the redis user, not daemonized), on a free port of 127.0.0.1, no persistence; waits until
# it answers and checks the port is its own. Sets SERVER (its pid, killed on exit: $PIDS), PORT
# and RDIR; rcli runs redis-cli on it. Skips without redis-server.
redis_server() {
	local redis=/usr/bin/redis-server
	[ -x "$redis" ] && command -v redis-cli >/dev/null || skip "redis-server is not installed (make deps)"
	# A free port on 127.0.0.1: the kernel picks one, Redis binds it right after.
	PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
		fail "cannot pick a free port"
	RDIR="$TMP/$1"
	mkdir -p "$RDIR"
	printf 'port %s\nbind 127.0.0.1\nsave ""\nappendonly no\ndaemonize no\ndir %s\nlogfile %s/redis.log\n' \
		"$PORT" "$RDIR" "$RDIR" > "$RDIR/redis.conf"
	# setpriv execs: $! is the server's pid
	local as_redis=""
	if id redis >/dev/null 2>&1; then
		chmod 755 "$TMP"
		chown -R redis: "$RDIR"
		as_redis="setpriv --reuid=redis --regid=redis --init-groups"
	fi
	$as_redis "$redis" "$RDIR/redis.conf" > /dev/null 2>&1 &
	SERVER=$!
	PIDS="$PIDS $SERVER"
	for i in $(seq 1 50); do
		[ "$(rcli PING 2>/dev/null)" = PONG ] && break
		kill -0 "$SERVER" 2>/dev/null || fail "redis-server did not start: $(tail -5 "$RDIR/redis.log")"
		sleep 0.1
	done
	[ "$(rcli PING 2>/dev/null)" = PONG ] || fail "redis-server does not answer on port $PORT: $(tail -5 "$RDIR/redis.log")"
	[ "$(rcli INFO server | sed -n 's/^process_id:\([0-9]*\).*/\1/p')" = "$SERVER" ] ||
		fail "port $PORT is not our redis-server ($SERVER): $(rcli INFO server | grep process_id)"
}
rcli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }

# pg_cluster SHARED_BUFFERS: a temporary PostgreSQL 15 cluster of the postgres user in $TMP/pg,
# on a Unix socket there (no TCP), started as its package starts it; skips without postgresql-15.
# Defines PGBIN, PGDIR, as_pg, sql (psql -XAtq on it, stopping at the first error), session (psql
# reading its statements from stdin, output dropped), backend_where SQL-CONDITION (the pid of a
# client backend matching it, waited for up to 5 s), and pg_stop; sets the EXIT trap that stops
# it, kills $PIDS and removes $TMP.
pg_cluster() {
	PGBIN=/usr/lib/postgresql/15/bin
	[ -x "$PGBIN/postgres" ] && command -v psql >/dev/null || skip "postgresql-15 is not installed (make deps)"
	id postgres >/dev/null 2>&1 || skip "no postgres user (make deps installs postgresql)"
	PGDIR="$TMP/pg"
	mkdir -p "$PGDIR/data" "$PGDIR/sock"
	chmod 755 "$TMP"
	chown -R postgres: "$PGDIR"
	trap 'keep_reports; pg_stop; for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP"' EXIT
	as_pg "$PGBIN/initdb" -D "$PGDIR/data" -A trust -U postgres > "$PGDIR/initdb.log" 2>&1 ||
		fail "initdb: $(tail -3 "$PGDIR/initdb.log")"
	as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w \
		-o "-c listen_addresses='' -k $PGDIR/sock -c shared_buffers=$1" start > /dev/null ||
		fail "postgres did not start: $(tail -5 "$PGDIR/log")"
}
as_pg() { runuser -u postgres -- "$@"; }
pg_stop() { [ -f "$PGDIR/data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1; }
sql() { as_pg psql -h "$PGDIR/sock" -U postgres -d postgres -XAtq -v ON_ERROR_STOP=1 "$@"; }
session() { as_pg psql -h "$PGDIR/sock" -U postgres -d postgres -Xq > /dev/null 2>&1; }
backend_where() {
	local pid="" i
	for i in $(seq 1 50); do
		pid=$(sql -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND $1 LIMIT 1")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	echo "$pid"
}

# control_quiet FILE RC: a healthy control's run exited 0, or 4 with `cpu-starved` its only
# warning — the machine itself short of CPU (other jobs on a loaded CI machine: measured, said,
# and no fault of the workload's); anything else fails.
control_quiet() {
	[ "$2" = 0 ] && return 0
	[ "$2" = 4 ] && python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
w = [x["id"] for x in r["verdicts"] if x["severity"] in ("warning", "critical")]
sys.exit(0 if w and set(w) == {"cpu-starved"} else 1)' "$1" 2>/dev/null && {
		echo "note: $(basename "$1"): the machine was short of CPU (cpu-starved), the control otherwise quiet" >&2
		return 0
	}
	return 1
}
