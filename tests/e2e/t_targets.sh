# Targets by name and cgroup, on the real kernel (issue 14):
# (a) --comm: two processes named svc_e2e (copies of the CPU burner) and a third started during
#     the run are covered, an identical burner under another name is not; the stacks are
#     symbolized per process (compute_checksum); the report lists every process covered;
#     triage --comm --follow goes on into high-cpu on the same set.
# (b) --cgroup on the v2 hierarchy: a directory made below this test's own v2 cgroup holds one
#     burner; its twin outside is not covered; below it, directories laid out as docker and
#     systemd make them are found by --container SHORT-ID and --unit NAME, and the parent
#     covers its descendants. (c) --cgroup on a v1 hierarchy (memory), below
#     this test's own v1 cgroup, and again with diagnose inside it (its helpers not covered). (d) latency --comm over two lock-contended processes names the
#     lock; io-saturation --comm over two fsync-per-write journals names them, and over two
#     quiet loggers of the same name does not; network-errors
#     --comm counts the two clients' refused connects, not a bystander's. (e) every process of the set exits: the run stops as target-exited with its data.
# (f) --unit through systemd-run where systemd runs (skipped here otherwise).
# (g) errors: a name no process has, a recipe that takes --pid only, two targets: exit 2.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"

V2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
OWN=$(sed -n 's/^0:://p' /proc/self/cgroup)
CG=""
MEMCG=""
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -n "$CG" ] && { rmdir "$CG"/*/ 2>/dev/null; rmdir "$CG" 2>/dev/null; }
	[ -n "$MEMCG" ] && rmdir "$MEMCG" 2>/dev/null
	[ -n "${UNIT:-}" ] && systemctl stop "$UNIT" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# Copies of the burner under names of their own: a comm is the executable's name.
cp "$WL/cpu_burner" "$TMP/svc_e2e"
cp "$WL/cpu_burner" "$TMP/svc_other"
cp "$WL/cpu_burner" "$TMP/cg_e2e"

# ---- (a) --comm ------------------------------------------------------------------------------
start "$TMP/svc_e2e" 600; A1=$PID
start "$TMP/svc_e2e" 600; A2=$PID
start "$TMP/svc_other" 600; OTHER=$PID
( sleep 1.5; exec "$TMP/svc_e2e" 600 ) >/dev/null 2>&1 &
A3=$!
PIDS="$PIDS $A3"
collect "$TMP/comm.json" high-cpu --comm svc_e2e --duration 4
CHECK_LET='t = r["target"]; pids = sorted(p["pid"] for p in t["processes"])'
check "$TMP/comm.json" "t['selection'] == 'comm' and t['name'] == 'svc_e2e'" "--comm: the report does not name the selection"
check "$TMP/comm.json" "pids == sorted([$A1, $A2, $A3])" "--comm: processes covered are not the three named svc_e2e (the third started during the run)"
check "$TMP/comm.json" "{s['comm'] for s in res['profile']['stacks']} == {'svc_e2e'}" "--comm: stacks of another process"
check "$TMP/comm.json" "res['context']['processes'] == 3 and 'pid' not in res['context']" "--comm: proc_context does not add up the set"
check "$TMP/comm.json" "any('compute_checksum' in (s['user'] or ['?'])[0] for s in res['profile']['stacks'])" \
	"--comm: the burners' stacks are not symbolized per process"
check "$TMP/comm.json" "any('compute_checksum' in json.dumps(v) for v in r['verdicts'])" "--comm: no verdict names compute_checksum"
check "$TMP/comm.json" "any('--comm svc_e2e' in s for v in r['verdicts'] for s in v.get('next_steps', []))" \
	"--comm: next steps do not name the target as it was given"
"$DIAG" high-cpu --comm svc_e2e --duration 1 > "$TMP/comm.txt" 2>&1
grep -q "comm svc_e2e: 3 processes" "$TMP/comm.txt" || fail "--comm: text header: $(head -1 "$TMP/comm.txt")"
# triage over the set, following into high-cpu on the same set
"$DIAG" triage --comm svc_e2e --duration 3 --follow --json > "$TMP/tri.json" 2> "$TMP/tri.err"
rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "triage --comm --follow: exit $rc: $(cat "$TMP/tri.err")"
[ "$(json "$TMP/tri.json" "[s['recipe'] for s in r['chain']['stages']] == ['triage', 'high-cpu'] and all(s['report']['target']['selection'] == 'comm' and len(s['report']['target']['processes']) == 3 for s in r['chain']['stages'])")" = True ] ||
	fail "triage --comm --follow: stages $(json "$TMP/tri.json" "[(s['recipe'], s.get('report', {}).get('target')) for s in r['chain']['stages']]")"
kill -9 "$A1" "$A2" "$A3" 2>/dev/null
assert_released "high-cpu --comm"

# ---- (b) --cgroup, v2 ---------------------------------------------------------------------------
if [ -n "$V2" ] && [ -n "$OWN" ] && mkdir "$V2${OWN%/}/diag-e2e-$$" 2>/dev/null; then
	CG="$V2${OWN%/}/diag-e2e-$$"
	start "$TMP/cg_e2e" 600; IN=$PID
	echo "$IN" > "$CG/cgroup.procs" || fail "cannot move $IN into $CG"
	start "$TMP/cg_e2e" 600; OUT=$PID
	collect "$TMP/cg.json" high-cpu --cgroup "${OWN%/}/diag-e2e-$$" --duration 2
	CHECK_LET='t = r["target"]'
	check "$TMP/cg.json" "[p['pid'] for p in t['processes']] == [$IN] and t['cgroup'] == '$CG' and t['cgroup_version'] == 2" \
		"--cgroup v2: not exactly the process in $CG"
	check "$TMP/cg.json" "res['profile']['samples'] > 0" "--cgroup v2: no samples"
	# the layouts a container runtime and systemd make, below it: --container by a short id
	# (docker-ID.scope) and --unit by name (NAME.service), found by searching the hierarchy
	CID=$(echo "diag-e2e-$$" | sha256sum | cut -c1-64)
	CTR="$CG/docker-$CID.scope"
	UNITDIR="$CG/diag-e2e-$$.service"
	mkdir "$CTR" "$UNITDIR" || fail "cannot make $CTR and $UNITDIR"
	echo "$OUT" > "$CTR/cgroup.procs" || fail "cannot move $OUT into $CTR"
	start "$TMP/cg_e2e" 600; UP=$PID
	echo "$UP" > "$UNITDIR/cgroup.procs" || fail "cannot move $UP into $UNITDIR"
	collect "$TMP/ctr.json" high-cpu --container "${CID:0:12}" --duration 1
	check "$TMP/ctr.json" "t['selection'] == 'container' and [p['pid'] for p in t['processes']] == [$OUT] and t['cgroup'] == '$CTR'" \
		"--container: not exactly the process in $CTR"
	collect "$TMP/unit.json" high-cpu --unit "diag-e2e-$$" --duration 1
	check "$TMP/unit.json" "t['selection'] == 'unit' and [p['pid'] for p in t['processes']] == [$UP] and t['cgroup'] == '$UNITDIR'" \
		"--unit: not exactly the process in $UNITDIR"
	# the parent directory covers its descendants
	collect "$TMP/cgall.json" high-cpu --cgroup "$CG" --duration 1
	check "$TMP/cgall.json" "sorted(p['pid'] for p in t['processes']) == sorted([$IN, $OUT, $UP])" \
		"--cgroup: the processes of its descendants are not covered"
	kill -9 "$IN" "$OUT" "$UP" 2>/dev/null; wait "$IN" "$OUT" "$UP" 2>/dev/null
	rmdir "$CTR" "$UNITDIR"
else
	echo "note: (b) skipped: no cgroup v2 directory to make below this test's own"
fi

# ---- (c) --cgroup, v1 (memory) --------------------------------------------------------------------
OWNMEM=$(awk -F: '$2 == "memory" { print $3; exit }' /proc/self/cgroup)
if [ -d /sys/fs/cgroup/memory ] && [ -n "$OWNMEM" ] && mkdir "/sys/fs/cgroup/memory${OWNMEM%/}/diag-e2e-$$" 2>/dev/null; then
	MEMCG="/sys/fs/cgroup/memory${OWNMEM%/}/diag-e2e-$$"
	start "$TMP/cg_e2e" 600; IN=$PID
	echo "$IN" > "$MEMCG/cgroup.procs" || fail "cannot move $IN into $MEMCG"
	collect "$TMP/v1.json" high-cpu --cgroup "$MEMCG" --duration 2
	CHECK_LET='t = r["target"]'
	check "$TMP/v1.json" "[p['pid'] for p in t['processes']] == [$IN] and t['cgroup_version'] == 1" "--cgroup v1: not exactly the process in $MEMCG"
	check "$TMP/v1.json" "res['profile']['samples'] > 0" "--cgroup v1: no samples"
	# diagnose run inside the cgroup it looks at: neither it nor its helpers (the file reader's
	# zygote from the start, the verdict child from the window's start, seen by the rescans
	# during the window) are its subject
	( echo "$BASHPID" > "$MEMCG/cgroup.procs" && exec "$DIAG" high-cpu --cgroup "$MEMCG" --duration 3 --json ) \
		> "$TMP/v1self.json" 2> "$TMP/v1self.err"
	rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "--cgroup v1 from inside it: exit $rc: $(cat "$TMP/v1self.err")"
	check "$TMP/v1self.json" "[p['pid'] for p in t['processes']] == [$IN]" \
		"--cgroup v1 from inside it: diagnose or a helper of its own taken for its subject"
	kill -9 "$IN" 2>/dev/null; wait "$IN" 2>/dev/null
else
	echo "note: (c) skipped: no v1 memory hierarchy to make a directory in"
fi
assert_released "high-cpu --cgroup"

# ---- (d) latency over a set ------------------------------------------------------------------------
cp "$WL/lock_contention" "$TMP/lock_e2e"
start "$TMP/lock_e2e" 4; L1=$PID
start "$TMP/lock_e2e" 4; L2=$PID
collect "$TMP/lat.json" latency --comm lock_e2e --duration 3
CHECK_LET='t = r["target"]; ids = [v["id"] for v in r["verdicts"]]'
check "$TMP/lat.json" "sorted(p['pid'] for p in t['processes']) == sorted([$L1, $L2])" "latency --comm: not the two lock_e2e processes"
check "$TMP/lat.json" "'lock-contention' in ids and any('compact_state' in json.dumps(v) for v in r['verdicts'] if v['id'] == 'lock-contention')" \
	"latency --comm: the lock and its holder are not named"
kill -9 "$L1" "$L2" 2>/dev/null; wait "$L1" "$L2" 2>/dev/null
assert_released "latency --comm"

# ---- (d2) io-saturation over a set: two fsync-per-write journals of one name --------------------
cp "$WL/io_load" "$TMP/jrnl_e2e"
start "$TMP/jrnl_e2e" journal "$TMP/j1" 30; J1=$PID
start "$TMP/jrnl_e2e" journal "$TMP/j2" 30; J2=$PID
collect "$TMP/io.json" io-saturation --comm jrnl_e2e --duration 3
CHECK_LET='sync = [v for v in r["verdicts"] if v["id"] == "sync-bound"]'
check "$TMP/io.json" "sync and 'jrnl_e2e' in sync[0]['title'] and 'journal_run' in json.dumps(sync[0])" \
	"io-saturation --comm: the fsync-bound journals (journal_run) are not named"
check "$TMP/io.json" "res['files']['calls'] and {c['tgid'] for c in res['files']['calls']} <= {$J1, $J2}" \
	"io-saturation --comm: storage calls of another process, or none"
kill -9 "$J1" "$J2" 2>/dev/null; wait "$J1" "$J2" 2>/dev/null
# its healthy control: the same two processes of one name writing a log line every 200 ms, no
# fsync: no sync-bound verdict, no warning about them
start "$TMP/jrnl_e2e" logger "$TMP/l1" 30; J1=$PID
start "$TMP/jrnl_e2e" logger "$TMP/l2" 30; J2=$PID
collect "$TMP/io_ok.json" io-saturation --comm jrnl_e2e --duration 3
check "$TMP/io_ok.json" "not any(v['id'] == 'sync-bound' or ('jrnl_e2e' in v['title'] and v['severity'] in ('warning', 'critical')) for v in r['verdicts'])" \
	"io-saturation --comm control (loggers): $(json "$TMP/io_ok.json" '[(v["id"], v["severity"], v["title"]) for v in r["verdicts"]]')"
kill -9 "$J1" "$J2" 2>/dev/null; wait "$J1" "$J2" 2>/dev/null
assert_released "io-saturation --comm"

# ---- (d3) network-errors over a set: two clients of one name connecting to closed ports --------
# (loopback; a third client under another name refused too, which must not be counted: sockets
# are the set's by who opened them, and a closed socket's reused address is not inherited)
P1=$((20000 + $$ % 20000)); P2=$((P1 + 1)); P3=$((P1 + 2))
cp "$WL/net_peer" "$TMP/refuser_e2e"
cp "$WL/net_peer" "$TMP/bystander_e2e"
start "$TMP/refuser_e2e" closed 127.0.0.1 "$P1" 20; N1=$PID
start "$TMP/refuser_e2e" closed 127.0.0.1 "$P2" 20; N2=$PID
start "$TMP/bystander_e2e" closed 127.0.0.1 "$P3" 20; N3=$PID
collect "$TMP/net.json" network-errors --comm refuser_e2e --duration 3
CHECK_LET='ports = {f["remote_port"] for f in res["tcp"]["flows"]}; ids = [v["id"] for v in r["verdicts"]]'
check "$TMP/net.json" "ports == {$P1, $P2}" "network-errors --comm: flows of the set are not exactly its two clients'"
check "$TMP/net.json" "ids.count('connection-refused') == 2" "network-errors --comm: the two refused ports are not named"
kill -9 "$N1" "$N2" "$N3" 2>/dev/null; wait "$N1" "$N2" "$N3" 2>/dev/null
assert_released "network-errors --comm"

# ---- (e) every process of the set exits ------------------------------------------------------------
# (lives of 5 s: loading and the pre-flight of an ASan build on a busy machine take seconds)
start "$TMP/svc_e2e" 5; E1=$PID
start "$TMP/svc_e2e" 5; E2=$PID
collect "$TMP/exit.json" high-cpu --comm svc_e2e --duration 15
CHECK_LET='t = r["target"]'
check "$TMP/exit.json" "r['stop_reason'] == 'target-exited' and r['duration_s'] < 10" "set exits: the run did not stop when the last process exited"
check "$TMP/exit.json" "all(not p['alive'] for p in t['processes']) and res['profile']['samples'] > 0" \
	"set exits: processes still alive, or the data collected before they exited was lost"
wait "$E1" "$E2" 2>/dev/null
assert_released "every process of the set exited"

# ---- (f) --unit ----------------------------------------------------------------------------------
if [ -d /run/systemd/system ] && command -v systemd-run >/dev/null; then
	UNIT="diag-e2e-$$"
	systemd-run --unit "$UNIT" "$TMP/svc_e2e" 30 >/dev/null 2>&1 || fail "systemd-run failed"
	sleep 0.5
	collect "$TMP/unit.json" high-cpu --unit "$UNIT" --duration 2
	check "$TMP/unit.json" "r['target']['selection'] == 'unit' and len(r['target']['processes']) == 1" "--unit: not the unit's process"
else
	echo "note: (f) skipped: this machine runs no systemd (no systemd-run units to select)"
fi

# ---- (g) errors --------------------------------------------------------------------------------
"$DIAG" high-cpu --comm no_such_e2e_$$ --duration 1 > /dev/null 2> "$TMP/e1"; rc=$?
[ "$rc" = 2 ] && grep -q -- "--comm no_such_e2e_$$: no process has that name" "$TMP/e1" || fail "unknown comm: exit $rc: $(cat "$TMP/e1")"
start "$TMP/svc_e2e" 600; S=$PID
"$DIAG" memory-growth --comm svc_e2e --duration 1 > /dev/null 2> "$TMP/e2"; rc=$?
[ "$rc" = 2 ] && grep -q "not --comm" "$TMP/e2" || fail "memory-growth --comm: exit $rc: $(cat "$TMP/e2")"
"$DIAG" high-cpu --comm svc_e2e --pid "$S" --duration 1 > /dev/null 2> "$TMP/e3"; rc=$?
[ "$rc" = 2 ] && grep -q "give one target" "$TMP/e3" || fail "--pid with --comm: exit $rc: $(cat "$TMP/e3")"
"$DIAG" high-cpu --unit no-such-unit-$$ --duration 1 > /dev/null 2> "$TMP/e4"; rc=$?
[ "$rc" = 2 ] && grep -q "no such unit" "$TMP/e4" || fail "unknown unit: exit $rc: $(cat "$TMP/e4")"
"$DIAG" high-cpu --container 0123456789abcdef --duration 1 > /dev/null 2> "$TMP/e5"; rc=$?
[ "$rc" = 2 ] && grep -q "no such container id" "$TMP/e5" || fail "unknown container: exit $rc: $(cat "$TMP/e5")"
assert_released "target errors"
echo "ok"
