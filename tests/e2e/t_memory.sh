# diagnose memory-growth on the real kernel, each workload with a known cause:
# (a) a leak amid heavy churn (mem_leaker leak: remember_request() loses 1 KiB blocks at 1 MiB/s
#     while handle_request() churns 8,000 malloc/free a second over a bounded working set)
#     → `leak` first (the reference scan finds its blocks pointed to by nothing), naming
#     remember_request() and not handle_request(), its rate within 2x of
#     1 MiB/s; the page faults are unwound through glibc to the caller of malloc;
# (a2) a buffer grown by realloc amid the same churn (append_log: 1 KiB more a call, moved each
#     time, so its block is always young) → `heap-growth` naming append_log() by its realloc
#     growth, not a leak (the buffer is referenced: log_buf);
# (a3) a leak in a shared library (libmemleak.so: cache_insert) called from a PIE → `leak` naming
#     cache_insert(), on a path through the PIE's main, never its churning cache_lookup();
# (a4) the same leak under LD_PRELOAD=libjemalloc.so.2 → jemalloc's own functions probed, the
#     leak named (libjemalloc2; the case is noted and left out when it is not installed);
# (b) its healthy control, the churn alone → exit 0, `ok` (bounded churn), no warning, no leak;
# (c) growth outside the allocator (mem_grower: anonymous mmap touched at 2 MiB/s, no malloc)
#     → `growth-outside-heap`;
# (d) a leak in a memory cgroup with a limit (a v1 memory.limit_in_bytes, or a v2 memory.max,
#     in a cgroup created below this test's own and removed after) → the time to the limit is
#     estimated within 2x of when the OOM killer really ends the process, and a run that lasts
#     until then sees the kill (`oom-kill`, critical, oom:mark_victim triggered by the target);
# (e) an allocation storm over the budget: `degrade: sample` records 1 in N (said in the report,
#     the leak still named); `degrade: refuse` refuses (exit 3).
# (f) a blocks map too small for the leak (user_unwind: fp, every block tracked) → untracked blocks
#     counted, incomplete-data (warning).
# Nothing stays attached after any run.
. "$(dirname "$0")/lib.sh"

CG=""
cleanup() {
	keep_reports
	for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done
	[ -n "$CG" ] && [ -d "$CG" ] && rmdir "$CG" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]'; }

# ---- (a) a leak amid churn ------------------------------------------------------------------
start "$WL/mem_leaker" leak 1024
"$DIAG" memory-growth --pid "$PID" --duration 4 --json > "$TMP/leak.json" 2> "$TMP/leak.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "leak: exit $rc: $(cat "$TMP/leak.err")"
CHECK_LET='v = r["verdicts"][0]; a = res["allocs"]; f = res["faults"]
leak = [s for s in a["stacks"] if "remember_request" in s["user"]]
churn = [s for s in a["stacks"] if "handle_request" in s["user"]]'
check "$TMP/leak.json" "v['id'] == 'leak' and 'remember_request()' in v['title'] and 'handle_request' not in v['title']" \
	"leak: verdicts $(verdicts "$TMP/leak.json")"
check "$TMP/leak.json" "all('handle_request' not in x['title'] for x in r['verdicts'] if x['id'] == 'leak')" \
	"leak: the churn was called a leak: $(verdicts "$TMP/leak.json")"
# 1 KiB blocks at 1024 per second at most, none freed. The workload paces itself on the clock,
# and the probe's traps (~10 us each on these guests, three per pair) slow it: on a loaded machine
# it leaks less while traced and catches up once detached, so the RSS is no yardstick. Churn keeps
# its working set only.
check "$TMP/leak.json" "len(leak) == 1 and leak[0]['frees'] == 0 and leak[0]['count'] == leak[0]['allocs'] and 0.1 < leak[0]['weight'] / a['window_s'] / 1048576 < 1.3" \
	"leak: remember_request's rate is not 0.1..1.3 MiB/s (a sampled estimate of 1 MiB/s at most)"
check "$TMP/leak.json" "len(churn) == 1 and churn[0]['allocs'] > 5 * churn[0]['count'] and churn[0]['old_count'] * 20 < churn[0]['allocs']" \
	"leak: handle_request's churn does not look bounded"
# page faults inside malloc reach its caller (DWARF through glibc, uretprobe trampolines restored)
check "$TMP/leak.json" "f['user_unwind'] == 'dwarf' and any(s['user'][:3] == ['_int_malloc', 'malloc', 'remember_request'] for s in f['stacks'])" \
	"leak: no page-fault stack reaches remember_request through malloc"
assert_released "memory-growth on a leak"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (a2) a buffer grown by realloc amid the same churn ----------------------------------------
start "$WL/mem_leaker" realloc 1024
"$DIAG" memory-growth --pid "$PID" --duration 4 --json > "$TMP/realloc.json" 2> "$TMP/realloc.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "realloc: exit $rc: $(verdicts "$TMP/realloc.json")"
CHECK_LET='v = r["verdicts"][0]; grown = [s for s in res["allocs"]["stacks"] if "append_log" in s["user"]]'
check "$TMP/realloc.json" "v['id'] == 'heap-growth' and 'append_log()' in v['title'] and 'realloc' in v['title'] and 'handle_request' not in v['title'] and not any(x['id'] == 'leak' for x in r['verdicts'])" \
	"realloc: verdicts $(verdicts "$TMP/realloc.json")"
# one block held, moved by every realloc; what the reallocs grew it by is 1 KiB a call (the
# first realloc's old size, of a block from before the window, is glibc's usable size: page-rounded
# for an mmapped chunk)
check "$TMP/realloc.json" "len(grown) == 1 and grown[0]['count'] == 1 and abs(grown[0]['realloc_growth_bytes'] - 1024 * grown[0]['allocs']) <= 8192" \
	"realloc: append_log's growth is not 1 KiB per realloc"
assert_released "memory-growth on a realloc-grown buffer"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (a3) a leak in a shared library called from a PIE (tests/unit/memory.mk) -----------------
[ -x "$ROOT/$BUILD/fixtures/memleak_pie" ] || fail "$BUILD/fixtures/memleak_pie missing: make unit (or make e2e) builds it"
start "$ROOT/$BUILD/fixtures/memleak_pie" 1024
"$DIAG" memory-growth --pid "$PID" --duration 4 --json > "$TMP/pie.json" 2> "$TMP/pie.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "pie: exit $rc: $(verdicts "$TMP/pie.json")"
CHECK_LET='v = r["verdicts"][0]; held = [s for s in res["allocs"]["stacks"] if s["user"][:1] == ["cache_insert"]]'
check "$TMP/pie.json" "v['id'] == 'leak' and 'cache_insert()' in v['title'] and not any('cache_lookup' in x['title'] for x in r['verdicts'])" \
	"pie: verdicts $(verdicts "$TMP/pie.json")"
check "$TMP/pie.json" "len(held) == 1 and 'main' in held[0]['user'] and held[0]['frees'] == 0" \
	"pie: the library's leak is not on a path through the PIE's main"
assert_released "memory-growth on a shared library's leak"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (a4) the same leak with jemalloc preloaded: its own malloc/free are probed ----------------
JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$JE" ]; then
	start env LD_PRELOAD="$JE" "$WL/mem_leaker" leak 1024
	"$DIAG" memory-growth --pid "$PID" --duration 4 --json > "$TMP/je.json" 2> "$TMP/je.err"; rc=$?
	[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "jemalloc: exit $rc: $(verdicts "$TMP/je.json")"
	CHECK_LET='v = r["verdicts"][0]'
	check "$TMP/je.json" "res['allocs']['allocator'].endswith('libjemalloc.so.2') and v['id'] == 'leak' and 'remember_request()' in v['title']" \
		"jemalloc: allocator $(json "$TMP/je.json" 'r["results"]["allocs"]["allocator"]'), verdicts $(verdicts "$TMP/je.json")"
	assert_released "memory-growth with jemalloc"
	{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
else
	echo "note: $JE missing (libjemalloc2): the jemalloc case was not run" >&2
fi

# ---- (b) bounded churn: the healthy control -------------------------------------------------
start "$WL/mem_leaker" churn
"$DIAG" memory-growth --pid "$PID" --duration 4 --json > "$TMP/churn.json" 2> "$TMP/churn.err"; rc=$?
[ "$rc" = 0 ] || fail "churn: exit $rc, want 0: $(verdicts "$TMP/churn.json")"
check "$TMP/churn.json" "r['verdicts'][0]['id'] == 'ok' and 'Bounded churn' in r['verdicts'][0]['title'] and all(x['severity'] in ('ok', 'info') for x in r['verdicts'])" \
	"churn: verdicts $(verdicts "$TMP/churn.json")"
check "$TMP/churn.json" "res['allocs']['allocs'] > 10000" "churn: too few allocations recorded"
assert_released "memory-growth on churn"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (c) growth outside the allocator -------------------------------------------------------
start "$WL/mem_grower" 2048 "$TMP/grow.dat"
"$DIAG" memory-growth --pid "$PID" --duration 4 --json > "$TMP/grow.json" 2> "$TMP/grow.err"; rc=$?
[ "$rc" = 4 ] || fail "growth outside the heap: exit $rc: $(verdicts "$TMP/grow.json")"
check "$TMP/grow.json" "r['verdicts'][0]['id'] == 'growth-outside-heap' and 'anonymous memory outside malloc' in r['verdicts'][0]['title'] and not any(x['id'] == 'leak' for x in r['verdicts'])" \
	"growth outside the heap: verdicts $(verdicts "$TMP/grow.json")"
assert_released "memory-growth on mmap growth"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (d) time to the memory cgroup's limit --------------------------------------------------
# Below this test's own memory cgroup (v1 controller directory, else the v2 hierarchy).
own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
if [ -n "$own" ] && [ -d "/sys/fs/cgroup/memory$own" ]; then
	CG="/sys/fs/cgroup/memory${own%/}/diag-mem-test-$$"; LIMIT_FILE=memory.limit_in_bytes
else
	own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
	root=/sys/fs/cgroup; [ -f $root/cgroup.controllers ] || root=/sys/fs/cgroup/unified
	CG="$root${own%/}/diag-mem-test-$$"; LIMIT_FILE=memory.max
fi
mkdir "$CG" 2>/dev/null || skip_unsupported "cannot create a memory cgroup below $own"
[ -f "$CG/$LIMIT_FILE" ] || skip_unsupported "no $LIMIT_FILE in $CG (memory controller not enabled there)"
# 96 MiB at 4 MiB/s: ~20 s, time for the second run below to load and attach on a busy machine
echo $((96 * 1024 * 1024)) > "$CG/$LIMIT_FILE" || fail "cannot set $CG/$LIMIT_FILE"
start sh -c "echo \$\$ > '$CG/cgroup.procs' && exec '$WL/mem_leaker' leak 4096"
"$DIAG" memory-growth --pid "$PID" --duration 4 --json > "$TMP/cg.json" 2> "$TMP/cg.err"; rc=$?
t0=$(date +%s.%N)
[ "$rc" = 5 ] || fail "cgroup: exit $rc, want 5 (critical): $(verdicts "$TMP/cg.json")"
# the estimate, from the end of the window
est=$(json "$TMP/cg.json" '(lambda c: (c["max_bytes"] - c["current_bytes"]) / c["current_slope_bytes_per_s"])(r["results"]["context"]["memory"]["cgroup"])')
check "$TMP/cg.json" "r['verdicts'][0]['id'] == 'leak' and r['verdicts'][0]['severity'] == 'critical' and 'remember_request()' in r['verdicts'][0]['title'] and any('reaches its limit' in e for e in r['verdicts'][0]['evidence'])" \
	"cgroup: verdicts $(verdicts "$TMP/cg.json")"
# A second run meanwhile, long enough to see the kill: the target ends it.
"$DIAG" memory-growth --pid "$PID" --duration 60 --json > "$TMP/oom.json" 2> "$TMP/oom.err" &
DPID=$!
for i in $(seq 1 600); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
t1=$(date +%s.%N)
kill -0 "$PID" 2>/dev/null && fail "cgroup: the leaker outlived 60 s past its estimated ${est} s"
wait "$PID"; st=$?
[ "$st" = 137 ] || fail "cgroup: the leaker ended with status $st, not killed (OOM)"
python3 -c 'import sys; est, actual = float(sys.argv[1]), float(sys.argv[2]) - float(sys.argv[3])
print("time to limit: estimated %.1f s, OOM-killed after %.1f s" % (est, actual))
sys.exit(0 if 0.5 <= est / actual <= 2 else 1)' "$est" "$t1" "$t0" || fail "cgroup: estimate not within 2x"
wait "$DPID"; rc=$?
[ "$rc" = 5 ] || fail "oom: exit $rc, want 5: $(cat "$TMP/oom.err")"
check "$TMP/oom.json" "r['stop_reason'] == 'target-exited' and any(x['id'] == 'oom-kill' and x['severity'] == 'critical' for x in r['verdicts']) and res['ooms']['total'] >= 1" \
	"oom: the kill was not seen: $(verdicts "$TMP/oom.json")"
rmdir "$CG" && CG=""
assert_released "memory-growth in a limited cgroup"

# ---- (e) an allocation storm over the budget ------------------------------------------------
mkdir -p "$TMP/recipes" "$TMP/lua/lib"
cp "$ROOT/lua/memory-growth.lua" "$TMP/lua/" && cp "$ROOT/lua/lib/"*.lua "$TMP/lua/lib/"
# (the CPU budget raised out of the way: the churn's traced mallocs and frees cost ~5% of the CPUs
# in traps alone on this VM, which sampling does not lower: this case is about the event budget)
sed -e 's/^  max_events_per_s: .*/  max_events_per_s: 2000/' -e 's/^  max_cpu_pct: .*/  max_cpu_pct: 50/' \
	"$ROOT/recipes/memory-growth.yaml" > "$TMP/recipes/storm-sample.yaml"
sed -e 's/^name: memory-growth/name: storm-refuse/' -e 's/^  max_events_per_s: .*/  max_events_per_s: 2000/' \
	-e 's/^  degrade: sample/  degrade: refuse/' "$ROOT/recipes/memory-growth.yaml" > "$TMP/recipes/storm-refuse.yaml"
sed -i 's/^name: memory-growth/name: storm-sample/' "$TMP/recipes/storm-sample.yaml"
start "$WL/mem_leaker" leak 1024
# 8 s: sampled 1 in ~26 by the budget on top of the sampling by size, a 4 s window found 2-7 of the
# leak's blocks lost (in CI, 2); a leak rests on at least leak_min_lost_seen (2) found
"$DIAG" "$TMP/recipes/storm-sample.yaml" --pid "$PID" --duration 8 --json > "$TMP/storm.json" 2> "$TMP/storm.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "storm, sampled: exit $rc: $(cat "$TMP/storm.err")"
check "$TMP/storm.json" "res['allocs'].get('sampled_1_in', 1) >= 2 and r['overhead']['preflight']['probes']['allocs']['rate'] == 'measured'" \
	"storm, sampled: the allocations were not sampled"
check "$TMP/storm.json" "r['verdicts'][0]['id'] == 'leak' and 'remember_request()' in r['verdicts'][0]['title'] and any(x['id'] == 'incomplete-data' and 'allocations 1 in' in x['title'] for x in r['verdicts'])" \
	"storm, sampled: verdicts $(verdicts "$TMP/storm.json")"
assert_released "memory-growth sampled over its budget"
"$DIAG" "$TMP/recipes/storm-refuse.yaml" --pid "$PID" --duration 4 --json > "$TMP/refuse.json" 2> "$TMP/refuse.err"; rc=$?
[ "$rc" = 3 ] || fail "storm, refuse: exit $rc, want 3: $(cat "$TMP/refuse.err")"
grep -q "over budget" "$TMP/refuse.err" || fail "storm, refuse: no budget message: $(cat "$TMP/refuse.err")"
assert_released "memory-growth refused over its budget"

# ---- (f) the blocks map full: counted and said, never silent ---------------------------------
sed -e 's/^name: memory-growth/name: small-map/' -e 's/^      max_outstanding: .*/      max_outstanding: 1024\n      user_unwind: fp/' \
	"$ROOT/recipes/memory-growth.yaml" > "$TMP/recipes/small-map.yaml"
"$DIAG" "$TMP/recipes/small-map.yaml" --pid "$PID" --duration 4 --json > "$TMP/small.json" 2> "$TMP/small.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "small map: exit $rc: $(cat "$TMP/small.err")"
check "$TMP/small.json" "res['allocs']['untracked'] > 0 and res['allocs']['outstanding_count'] <= 1024 and any(x['id'] == 'incomplete-data' and x['severity'] == 'warning' and 'untracked' in x['title'] for x in r['verdicts'])" \
	"small map: untracked blocks not reported: $(verdicts "$TMP/small.json")"
assert_released "memory-growth with its blocks map full"
exit 0
