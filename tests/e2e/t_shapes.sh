# Result shapes: one recipe with every probe kind of the catalog, on a workload of known behaviour
# (tests/workloads/func_workload.c: sleeps, spins in a recursion, makes syscalls), optional fields
# turned on where an option does it (timing, sampling, every proc_context section). The engine
# checks each probe's results against its kind's declaration (engine/plan/shape.h) and notes any
# mismatch in the report: there must be none, and every probe must have results but pg_activity,
# which needs a PostgreSQL server to read (not applicable here), and has a run of its own on a
# temporary cluster at the end.
. "$(dirname "$0")/lib.sh"

WORKLOAD="$WL/func_workload"
[ -x "$WORKLOAD" ] || fail "$WORKLOAD missing: run make"

# Every kind of engine/probes/ must be in the recipe below: a new kind fails here until added.
[ -n "$(catalog_kinds)" ] || fail "no probe kinds in $BUILD/catalog_list.h"
for k in $(catalog_kinds); do
	grep -q "kind: $k\$" "$0" || fail "probe kind $k is not in $0's recipe"
done

# the USDT kinds on files the workload does not map: attached, limited to it, never fired
USDT_APP="$ROOT/$BUILD/fixtures/usdt_app"
PG_BIN=/usr/lib/postgresql/15/bin/postgres
[ -x "$USDT_APP" ] || fail "$USDT_APP missing: run make check-build"
[ -x "$PG_BIN" ] || skip "postgresql-15 is not installed (make deps): pg_statements needs its binary"
# 6 ms of CPU an iteration, more than the profile's sampling period (199 Hz): its stacks are there
# to check (sleeping alone, the process may run only between two samples: none at all in a CI run)
start "$WORKLOAD" 5 6
R=$(test_recipe shapes-all <<EOF
  - id: profile
    kind: cpu_profile
    filters: {pid: target}
    options: {frequency_hz: 199}
  - id: runq
    kind: runq_latency
    filters: {pid: target}
  - id: sys
    kind: syscall_stats
    filters: {pid: target}
    options: {timing: true}
  - id: sw
    kind: tracepoint_count
    filters: {pid: target}
    options: {tracepoint: "sched:sched_switch", sample_every: 2}
  - id: slow
    kind: func_latency
    filters: {pid: target}
    options: {function: "$WORKLOAD:slow_op"}
  - id: off
    kind: off_cpu
    filters: {pid: target}
    options: {user_unwind: dwarf}
  - id: threads
    kind: thread_states
    filters: {pid: target}
  - id: dns
    kind: name_lookups
    filters: {pid: target}
  - id: wake
    kind: wakeups
    filters: {pid: target}
    options: {user_unwind: dwarf, sample_every: 2}
  - id: ctx
    kind: proc_context
    filters: {pid: target}
    options: {sections: "cpu,memory,io,net"}
  - id: pf
    kind: page_faults
    filters: {pid: target}
    options: {sample_every: 2, max_stacks: 1024, max_stack_counts: 1024}
  - id: maps
    kind: mappings
    filters: {pid: target}
    options: {max_sites: 256, max_stacks: 256, max_regions: 1024}
  - id: alloc
    kind: allocations
    filters: {pid: target}
    options: {sample_every: 2, max_outstanding: 16384, max_stacks: 1024}
  - id: blk
    kind: block_io
    options: {sample_every: 2}
  - id: fio
    kind: file_io
  - id: tcp
    kind: tcp_events
    filters: {pid: target}
  - id: peers
    kind: peer_wait
    filters: {pid: target}
  - id: drops
    kind: skb_drops
    filters: {pid: target}
  - id: usdt
    kind: usdt
    filters: {pid: target}
    options: {binary: "$USDT_APP", probe: "app:request__start", done: request__done, key: arg0}
  - id: pg
    kind: pg_statements
    filters: {pid: target}
    options: {binary: "$PG_BIN"}
  - id: pgact
    kind: pg_activity
    filters: {pid: target}
  - id: kmem
    kind: kernel_memory
  - id: kallocs
    kind: kernel_allocs
    options: {sample_every: 2}
EOF
)
sed -i 's/^  max_sample_hz: 0$/  max_sample_hz: 999/; s/^  max_map_bytes: .*/  max_map_bytes: 134217728/' "$R"
t0=$(date +%s.%N)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/all.json" 2> "$TMP/all.err"
rc=$?
wall=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$(date +%s.%N)")
[ "$rc" = 0 ] || fail "exit code $rc, want 0: $(cat "$TMP/all.err")"
J="$TMP/all.json"
assert_shapes "$J"
IDS=$(sed -n 's/^  - id: //p' "$R" | grep -vx pgact | sort | tr '\n' ' ')
[ "$(json "$J" '" ".join(sorted(r["results"])) + " "')" = "$IDS" ] || fail "a probe without results: $(json "$J" 'r.get("notes")')"
# The optional parts that the options turn on are there, so their declarations were checked too.
check "$J" 'len(res["profile"]["stacks"]) > 0 and len(res["slow"]["buckets"]) > 0 and len(res["off"]["stacks"]) > 0' "no stacks or no buckets"
check "$J" 'res["sys"]["timed"] and "total_ns" in res["sys"] and all("errors" in s for s in res["sys"]["syscalls"])' "syscall timing fields absent"
check "$J" 'all(res[p]["sampled_1_in"] == 2 for p in ("sw", "wake", "pf", "alloc", "blk", "kallocs"))' "sampled_1_in absent"
check "$J" '"slab" in res["kmem"] and len(res["kallocs"]["sites"]) > 0' "kernel_memory without slab, or kernel_allocs without a call site"
check "$J" 'res["off"]["user_unwind"] == "dwarf" and res["off"]["unwind"]["unwound"] > 0 and res["wake"]["wakeups"] > 0' "off_cpu/wakeups: nothing unwound or no wakeup"
check "$J" 'all(s in res["ctx"] for s in ("cpu_pct", "memory", "io", "net"))' "proc_context: a section absent"
check "$J" 'res["threads"]["how"] == "iterator" and res["threads"]["snapshots"]["end"]["threads"] >= 1' "thread_states: no snapshot by the iterator"
check "$J" '"ownership" in res["tcp"] and "ownership" in res["drops"]' "tcp_events/skb_drops: no ownership with a target"
# where the wall time went: every phase, the window holding the run's duration and its pre-flight
# (no upper bound: a time, which a loaded machine stretches), the sum within the wall
check "$J" "list(r['overhead']['phases_s']) == ['start', 'load', 'attach', 'window', 'detach', 'results', 'verdicts'] and all(v > 0 for v in r['overhead']['phases_s'].values()) and r['overhead']['phases_s']['window'] - r['duration_s'] >= r['overhead']['preflight']['window_ms'] / 1000 - 0.002 and sum(r['overhead']['phases_s'].values()) <= $wall" \
	"overhead.phases_s: $(json "$J" 'r["overhead"].get("phases_s")'), duration $(json "$J" 'r["duration_s"]') s, wall $wall s"
# pg_activity has nothing to read in a process that is no PostgreSQL server: not applicable, the run
# goes on without it (its results' shape is checked on a real cluster below)
check "$J" '"pgact" not in res and "not a PostgreSQL server" in [p for p in r["probes"] if p["id"] == "pgact"][0]["not_applicable"]' "pg_activity on a process that is no PostgreSQL server: $(json "$J" '[p for p in r["probes"] if p["id"] == "pgact"]')"
assert_released "a run with every probe kind"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# pg_activity needs a PostgreSQL server to read: its own run on a temporary cluster (Debian's
# postgresql-15), a row lock held and waited for, so that its optional fields (the in-flight
# backends' lock, blocked_by, elapsed times, raw text) are there to be checked too.
pg_cluster 16MB
sql -c "CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0);" || fail "pg_activity: cannot create the table"
{ echo "BEGIN; UPDATE t SET v = v + 1 WHERE id = 1; SELECT pg_sleep(60);"; } | session &
PIDS="$PIDS $!"
[ -n "$(backend_where "query LIKE '%pg_sleep(60)%'")" ] || fail "pg_activity: the holder did not start"
{ echo "UPDATE t SET v = v - 1 WHERE id = 1;"; } | session &
PIDS="$PIDS $!"
[ -n "$(backend_where "wait_event_type = 'Lock'")" ] || fail "pg_activity: no lock waiter"
R=$(test_recipe shapes-pg <<EOF
  - id: pgact
    kind: pg_activity
    filters: {pid: target}
    options: {raw_text: true, hz: 50}
EOF
)
"$DIAG" "$R" --pid "$(head -1 "$PGDIR/data/postmaster.pid")" --duration 1 --json > "$TMP/pg.json" 2> "$TMP/pg.err" ||
	fail "pg_activity's run: $(cat "$TMP/pg.err")"
assert_shapes "$TMP/pg.json"
check "$TMP/pg.json" 'any("lock" in f and f["blocked_by"] and "query_raw" in f for f in res["pgact"]["in_flight"]) and res["pgact"]["statements"] and res["pgact"]["activity"] and res["pgact"]["in_flight_at_start"]' \
	"pg_activity: optional fields absent: $(json "$TMP/pg.json" 'r["results"]["pgact"]')"
assert_released "pg_activity on a PostgreSQL server"
exit 0
