# t_compat.sh — the programs meant for kernels older than this one, run here
# (DIAGNOSE_TEST_COMPAT_PROGRAMS=1, engine/probes/runtime.h): the stack probes' twins without the
# Python walk (no bpf_loop before Linux 5.17: engine/abi/diag_bpf.h's DIAG_COMPAT_SUFFIX), the
# resolver probe's entry program per function (no BPF cookies before 5.15), and uprobes a link a
# site (no multi-uprobe links before 6.6). The matrix's 5.10 guest runs them for real (make
# check-kernel KERNEL=5.10); this test keeps them right on every CI run. Each case is a verdict of
# its recipe's own e2e test:
# (a) latency on lock contention (4 workers) → `lock-contention` naming handle_request() and its
#     holder compact_state() (CFI unwinding through glibc's lock code from the twins' stack
#     copies), with a `degraded:` note and probes[].degraded for offcpu and wakers; its control,
#     one worker → no warning;
# (b) high-cpu on cpu_burner → `cpu-bound-user` naming compute_checksum() (the profile's twin);
# (c) memory-growth on mem_leaker's leak → `leak` naming remember_request(), never the churning
#     handle_request() (the allocations twin, its blocks' per-CPU cookies; page faults' twin
#     unwound through malloc).
# (d) doctor says so: the stack probes' kinds and the recipes using them `degraded`, none that
#     cannot run, exit 0.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"
export DIAGNOSE_TEST_COMPAT_PROGRAMS=1
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]'; }
degraded() { # degraded FILE ID...: each probe ID says it runs its twins, in a note and in probes[]
	local f=$1 id
	shift
	for id in "$@"; do
		check "$f" "any(n.startswith('degraded: probe $id ') and 'bpf_loop' in n for n in r['notes']) and any(p['id'] == '$id' and 'bpf_loop' in p.get('degraded', '') for p in r['probes'])" \
			"$f: probe $id does not say it runs its programs for kernels without bpf_loop: $(json "$f" 'r["notes"]')"
	done
}

# ---- (a) latency: lock contention, and its control ---------------------------------------------
start "$WL/lock_contention" 4
collect "$TMP/lock.json" latency --pid "$PID" --duration 2
check "$TMP/lock.json" "r['verdicts'][0]['id'] == 'lock-contention' and 'handle_request()' in r['verdicts'][0]['title'] and 'held by compact_state()' in r['verdicts'][0]['title']" \
	"lock: verdicts $(verdicts "$TMP/lock.json")"
check "$TMP/lock.json" "any(s['user'][:3] == ['__GI___lll_lock_wait', 'pthread_mutex_lock', 'handle_request'] and 'dwarf' in s.get('user_from', []) for s in res['offcpu']['stacks'][:3])" \
	"lock: no waiter stack unwound through pthread_mutex_lock: $(json "$TMP/lock.json" '[s["user"][:4] for s in r["results"]["offcpu"]["stacks"][:3]]')"
degraded "$TMP/lock.json" offcpu wakers
assert_released "latency on lock contention, older kernels' programs"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

start "$WL/lock_contention" 1
collect "$TMP/nolock.json" latency --pid "$PID" --duration 2
check "$TMP/nolock.json" "not [x for x in r['verdicts'] if x['severity'] in ('warning', 'critical') and x['id'] != 'cpu-starved']" \
	"uncontended: verdicts $(verdicts "$TMP/nolock.json")"
assert_released "latency on an uncontended lock, older kernels' programs"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (b) high-cpu ------------------------------------------------------------------------------
start "$WL/cpu_burner"
collect "$TMP/cpu.json" high-cpu --pid "$PID" --duration 2
check "$TMP/cpu.json" "r['verdicts'][0]['id'] == 'cpu-bound-user' and 'compute_checksum()' in r['verdicts'][0]['title']" \
	"cpu: verdicts $(verdicts "$TMP/cpu.json")"
degraded "$TMP/cpu.json" profile
assert_released "high-cpu, older kernels' programs"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (c) memory-growth: a leak amid churn ------------------------------------------------------
start "$WL/mem_leaker" leak 1024
collect "$TMP/leak.json" memory-growth --pid "$PID" --duration 4
check "$TMP/leak.json" "r['verdicts'][0]['id'] == 'leak' and 'remember_request()' in r['verdicts'][0]['title'] and all('handle_request' not in x['title'] for x in r['verdicts'] if x['id'] == 'leak')" \
	"leak: verdicts $(verdicts "$TMP/leak.json")"
check "$TMP/leak.json" "any(s['user'][:3] == ['_int_malloc', 'malloc', 'remember_request'] for s in res['faults']['stacks'])" \
	"leak: no page-fault stack reaches remember_request through malloc"
check "$TMP/leak.json" "all(p.get('uprobe_links', 'per-site').startswith('per-site') for p in r['probes'])" \
	"leak: a multi-uprobe link where the older kernels have none: $(json "$TMP/leak.json" '[(p["id"], p.get("uprobe_links")) for p in r["probes"]]')"
degraded "$TMP/leak.json" allocs faults maps
assert_released "memory-growth on a leak, older kernels' programs"

# ---- (d) doctor ------------------------------------------------------------------------------
"$DIAG" doctor > "$TMP/doctor.out" 2>&1; rc=$?
[ "$rc" = 0 ] || fail "doctor: exit $rc: $(tail -3 "$TMP/doctor.out")"
grep -Eq "^warn +kind off_cpu +.*its object loads \(.*\), degraded: its programs for kernels without bpf_loop" "$TMP/doctor.out" ||
	fail "doctor: off_cpu is not said degraded: $(grep ' kind off_cpu ' "$TMP/doctor.out")"
grep -Eq "^warn +recipe high-cpu +runs degraded: probe profile \(cpu_profile\) loads its programs for kernels without bpf_loop" "$TMP/doctor.out" ||
	fail "doctor: high-cpu is not said degraded: $(grep ' recipe high-cpu ' "$TMP/doctor.out")"
grep -q "cannot run:" "$TMP/doctor.out" && fail "doctor: a recipe cannot run: $(grep 'cannot run:' "$TMP/doctor.out")"
assert_released "doctor, older kernels' programs"
exit 0
