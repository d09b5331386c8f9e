# Filters declared per probe kind and resolved by the engine, on the real kernel:
# (a) cgroup: a cgroup v2 directory made below this test's own v2 cgroup holds workload A; B runs
#     outside. tracepoint_count (task context) and runq_latency (filtered on the woken task, not
#     the running one) count only A; `cgroup: target` resolves A's own cgroup from --pid.
# (b) tid: only that thread's events. (c) comm on syscall_stats.
# (d) a filter the kind does not honour, a cgroup that does not exist, and a device that does not
#     exist are exit 2 with FILE:LINE. Nothing stays attached.
. "$(dirname "$0")/lib.sh"

V2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$V2" ] || skip_unsupported "no cgroup v2 hierarchy mounted"
OWN=$(sed -n 's/^0:://p' /proc/self/cgroup)
[ -n "$OWN" ] || skip_unsupported "this shell is in no cgroup v2 directory"
REL="${OWN%/}/diag-e2e-$$"
CG="$V2$REL"
mkdir "$CG" || skip_unsupported "cannot create a cgroup below $V2$OWN"
# The workloads are this shell's children: killed and reaped first, then the cgroup is empty.
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rmdir "$CG"; rm -rf "$TMP"' EXIT

start "$WL/getppid_loop" 100000000000
A=$PID
echo "$A" > "$CG/cgroup.procs" || fail "cannot move $A into $CG"
start "$WL/getppid_loop" 100000000000
B=$PID

# ---- (a) cgroup ------------------------------------------------------------------------------
R=$(test_recipe filters-cgroup 1 <<EOF
  - id: sys
    kind: tracepoint_count
    filters: {cgroup: "$REL"}
    options: {tracepoint: "raw_syscalls:sys_enter"}
  - id: sys_target
    kind: tracepoint_count
    filters: {cgroup: target}
    options: {tracepoint: "raw_syscalls:sys_enter"}
  - id: sys_all
    kind: tracepoint_count
    options: {tracepoint: "raw_syscalls:sys_enter"}
  - id: runq
    kind: runq_latency
    filters: {cgroup: "$CG"}
EOF
)
"$DIAG" "$R" --pid "$A" --json > "$TMP/cg.json" 2> "$TMP/cg.err"; rc=$?
[ "$rc" = 0 ] || fail "cgroup: exit $rc: $(cat "$TMP/cg.err")"
CHECK_LET="A = $A; B = $B"
check "$TMP/cg.json" "[k['pid'] for k in res['sys']['keys']] == [A] and res['sys']['total'] > 1000" \
	"cgroup filter: keys other than the workload in $CG, or too few"
check "$TMP/cg.json" "[k['pid'] for k in res['sys_target']['keys']] == [A]" "cgroup: target did not resolve A's cgroup"
check "$TMP/cg.json" "{A, B} <= {k['pid'] for k in res['sys_all']['keys']}" "unfiltered count misses A or B"
check "$TMP/cg.json" "res['runq']['count'] > 0" "runq_latency with a cgroup filter timed nothing"
# The plan shows what the path resolved to: the directory's inode is the id the kernel reports.
"$DIAG" "$R" --pid "$A" --dry-run --json > "$TMP/cg-dry.json" 2>/dev/null
check "$TMP/cg-dry.json" "r['plan']['probes'][0]['cgroup_id'] == $(stat -c %i "$CG") and r['plan']['probes'][0]['cgroup_path'] == '$CG'" \
	"dry run: cgroup id/path"
assert_released "a run with cgroup filters"

# ---- (b) tid, (c) comm -----------------------------------------------------------------------
R=$(test_recipe filters-tid 1 <<EOF
  - id: sw
    kind: tracepoint_count
    filters: {tid: "$B"}
    options: {tracepoint: "raw_syscalls:sys_enter"}
  - id: sc
    kind: syscall_stats
    filters: {comm: getppid_loop}
EOF
)
"$DIAG" "$R" --pid "$A" --json > "$TMP/tid.json" 2> "$TMP/tid.err"; rc=$?
[ "$rc" = 0 ] || fail "tid/comm: exit $rc: $(cat "$TMP/tid.err")"
check "$TMP/tid.json" "[k['pid'] for k in res['sw']['keys']] == [B]" "tid filter: other threads counted"
check "$TMP/tid.json" "res['sc']['syscalls'][0]['name'] == 'getppid' and res['sc']['total'] > 1000" "comm filter on syscall_stats"
assert_released "a run with tid and comm filters"

# ---- (d) refusals ----------------------------------------------------------------------------
bad() { # bad NAME FILTERS GREP: exit 2 and the message
	local r
	r=$(test_recipe "$1" 1 <<EOF
  - id: sw
    kind: tracepoint_count
    filters: $2
    options: {tracepoint: "sched:sched_switch"}
EOF
)
	"$DIAG" "$r" --pid "$A" --json > /dev/null 2> "$TMP/$1.err"; rc=$?
	[ "$rc" = 2 ] || fail "$1: exit $rc, want 2: $(cat "$TMP/$1.err")"
	grep -q "$3" "$TMP/$1.err" || fail "$1: message: $(cat "$TMP/$1.err")"
}
bad unsupported '{device: vda}' "recipes/unsupported.yaml:[0-9]*: probes.sw (tracepoint_count): filters.device: this probe kind does not support this filter"
bad nocgroup '{cgroup: /no/such/cgroup-x}' "recipes/nocgroup.yaml:[0-9]*: probes.sw (tracepoint_count): filters.cgroup: no cgroup $V2/no/such/cgroup-x"
bad v1cgroup '{cgroup: /sys/fs/cgroup/memory}' "filters.cgroup: .* is not in the cgroup v2 hierarchy"
assert_released "refused filters"
exit 0
