# The two generic probe kinds, on a workload of known behaviour (tests/workloads/func_workload.c):
# (a) tracepoint_count counts sched:sched_switch by pid, by comm and unfiltered;
# (b) func_latency times slow_op (every call sleeps 2 ms) and the recursive recurse() (every
#     nested call lasts at least 300 us), and counts nesting beyond its depth limit as lost;
# (c) a misspelled symbol and (d) a missing or malformed tracepoint fail with exit 2 and a clear
#     message. After every run no program of these probes stays loaded or attached.
# The recipes live in a temporary directory (recipes/ + lua/, as the planner looks for
# recipes/../lua/); their Lua returns nothing: the JSON results are what is checked.
. "$(dirname "$0")/lib.sh"

WORKLOAD="$WL/func_workload"
[ -x "$WORKLOAD" ] || fail "$WORKLOAD missing: run make"



# ---- (a) + (b): counts and latencies --------------------------------------------------------
start "$WORKLOAD" 5
R=$(test_recipe generic-ok <<EOF
  - id: sw_pid
    kind: tracepoint_count
    filters: {pid: target}
    options: {tracepoint: "sched:sched_switch"}
  - id: sw_comm
    kind: tracepoint_count
    filters: {comm: func_workload}
    options: {tracepoint: "sched:sched_switch"}
  - id: sw_all
    kind: tracepoint_count
    options: {tracepoint: "sched:sched_switch", max_keys: 4096}
  - id: slow
    kind: func_latency
    filters: {pid: target}
    options: {function: "$WORKLOAD:slow_op"}
  - id: rec
    kind: func_latency
    filters: {pid: target}
    options: {function: "$WORKLOAD:recurse", max_threads: 64}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/ok.json" 2> "$TMP/ok.err"
rc=$?
[ "$rc" = 0 ] || fail "exit code $rc, want 0: $(cat "$TMP/ok.err")"
J="$TMP/ok.json"
P=$PID
check "$J" 'res["sw_pid"]["tracepoint"] == "sched:sched_switch"' "sw_pid: tracepoint name"
check "$J" "len(res['sw_pid']['keys']) > 0 and all(k['pid'] == $P for k in res['sw_pid']['keys'])" \
	"sw_pid: keys of other processes, or none"
check "$J" "any(k['comm'] == 'func_workload' and k['count'] > 0 for k in res['sw_pid']['keys'])" \
	"sw_pid: no count for func_workload"
check "$J" 'all(res[p]["total"] == sum(k["count"] for k in res[p]["keys"]) + res[p]["dropped"] for p in ("sw_pid", "sw_comm", "sw_all"))' \
	"total is not the sum of the counts plus the dropped hits"
check "$J" "all(k['comm'] == 'func_workload' for k in res['sw_comm']['keys']) and any(k['pid'] == $P for k in res['sw_comm']['keys'])" \
	"sw_comm: comm filter"
check "$J" "len(res['sw_all']['keys']) >= 2 and any(k['pid'] == $P for k in res['sw_all']['keys'])" \
	"sw_all: unfiltered count has too few keys"
check "$J" '[k["count"] for k in res["sw_all"]["keys"]] == sorted((k["count"] for k in res["sw_all"]["keys"]), reverse=True)' \
	"sw_all: keys not sorted by count"

# slow_op: ~2.3 ms per loop iteration, every call >= 2 ms.
check "$J" 'res["slow"]["unit"] == "ns" and res["slow"]["calls"] > 100 and res["slow"]["count"] > 100' "slow: too few calls"
check "$J" 'all(res[p]["count"] == sum(b["count"] for b in res[p]["buckets"]) for p in ("slow", "rec"))' "buckets do not add up to count"
check "$J" 'all(b["lo"] >= 1 << 20 for b in res["slow"]["buckets"])' "slow: a call timed under 1 ms (each sleeps 2 ms)"
check "$J" '(lambda bs, n: next(b for b, c in zip(bs, __import__("itertools").accumulate(x["count"] for x in bs)) if 2 * c >= n)["lo"] in (1 << 20, 1 << 21))(res["slow"]["buckets"], res["slow"]["count"])' \
	"slow: median bucket does not contain 2 ms"
check "$J" 'res["slow"]["lost"] == 0 and 0 <= res["slow"]["calls"] - res["slow"]["count"] <= 1' "slow: calls and timed calls differ"
check "$J" 'res["slow"]["total_ns"] >= 2000000 * res["slow"]["count"] and res["slow"]["max_ns"] >= 2000000' "slow: total/max below 2 ms per call"
# recurse(5): 6 nested calls per iteration, each >= 300 us; none lost, none mis-timed.
check "$J" 'res["rec"]["count"] > 100 and res["rec"]["lost"] == 0' "rec: too few timed calls, or lost ones"
check "$J" 'all(b["lo"] >= 1 << 18 for b in res["rec"]["buckets"])' "rec: a nested call timed under 262 us (each lasts >= 300 us)"
check "$J" '0 <= res["rec"]["calls"] - res["rec"]["count"] <= 6' "rec: calls and timed calls differ by more than one nest"
check "$J" '5 <= res["rec"]["calls"] / res["slow"]["calls"] <= 7' "rec: not ~6 nested calls per slow_op call"
check "$J" 'res["rec"]["max_ns"] < 1000000000 and res["rec"]["total_ns"] >= 300000 * res["rec"]["count"]' "rec: garbage latencies"
assert_released "a run with tracepoint_count and func_latency"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# ---- (b) recursion deeper than the per-thread limit (16): the excess is lost, not mis-timed ---
start "$WORKLOAD" 20
R=$(test_recipe generic-deep <<EOF
  - id: rec
    kind: func_latency
    filters: {pid: target}
    options: {function: "$WORKLOAD:recurse"}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/deep.json" 2> "$TMP/deep.err"
rc=$?
[ "$rc" = 0 ] || fail "deep: exit code $rc, want 0: $(cat "$TMP/deep.err")"
J="$TMP/deep.json"
check "$J" 'res["rec"]["lost_by_reason"]["too_deep"] > 0 and res["rec"]["lost"] == res["rec"]["lost_by_reason"]["too_deep"]' "deep: nesting beyond the limit not counted as lost"
check "$J" 'abs(res["rec"]["lost"] / res["rec"]["calls"] - 5 / 21) < 0.05' "deep: not 5 of every 21 nested calls lost"
check "$J" '0 <= res["rec"]["calls"] - res["rec"]["count"] - res["rec"]["lost"] <= 21' "deep: calls != timed + lost"
check "$J" 'res["rec"]["count"] > 0 and all(b["lo"] >= 1 << 18 for b in res["rec"]["buckets"])' "deep: mis-timed calls"
assert_released "a run with deep recursion"

# ---- (c) a misspelled symbol: exit 2 before anything attaches --------------------------------
R=$(test_recipe generic-typo <<EOF
  - id: sw
    kind: tracepoint_count
    filters: {pid: target}
    options: {tracepoint: "sched:sched_switch"}
  - id: slow
    kind: func_latency
    filters: {pid: target}
    options: {function: "$WORKLOAD:slow_opp"}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/typo.json" 2> "$TMP/typo.err"
rc=$?
[ "$rc" = 2 ] || fail "typo: exit code $rc, want 2: $(cat "$TMP/typo.err")"
grep -q 'no function "slow_opp" in the symbol tables of .*func_workload: probably inlined, static and stripped, or misspelled: check with nm -D / readelf -s' "$TMP/typo.err" ||
	fail "typo: unclear message: $(cat "$TMP/typo.err")"
assert_released "a misspelled symbol"

# ---- (d) a tracepoint that does not exist, and one that is not "category:event" --------------
R=$(test_recipe generic-notp <<EOF
  - id: sw
    kind: tracepoint_count
    options: {tracepoint: "sched:foo"}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > /dev/null 2> "$TMP/notp.err"
rc=$?
[ "$rc" = 2 ] || fail "sched:foo: exit code $rc, want 2: $(cat "$TMP/notp.err")"
grep -Eq 'no tracepoint sched:foo \(see /sys/kernel/(debug/)?tracing/events/sched\)' "$TMP/notp.err" ||
	fail "sched:foo: unclear message: $(cat "$TMP/notp.err")"
R=$(test_recipe generic-badtp <<EOF
  - id: sw
    kind: tracepoint_count
    options: {tracepoint: "sched_switch"}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > /dev/null 2> "$TMP/badtp.err"
rc=$?
[ "$rc" = 2 ] || fail "sched_switch: exit code $rc, want 2: $(cat "$TMP/badtp.err")"
grep -q 'expected "category:event"' "$TMP/badtp.err" || fail "sched_switch: unclear message: $(cat "$TMP/badtp.err")"
assert_released "bad tracepoints"
exit 0
