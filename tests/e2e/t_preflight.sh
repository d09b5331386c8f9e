# The budget pre-flight measures each probe with its own programs, in count-only mode, on its own
# hooks: a uprobe (func_latency) and a tracepoint that fires in interrupt context
# (irq:softirq_entry, counted machine-wide) on a workload of known rate (paced_calls: 5000 calls/s
# of paced_op, each sending one UDP datagram over loopback: one NET_RX softirq). Checked against
# independent counts: the workload's own call count, and /proc/softirqs over the run.
# (a) both rates measured within a factor of 2, also by the dry run; (b) over max_events_per_s, a
# uprobe probe (it cannot sample) is refused with exit 3; (c) a tracepoint_count probe under
# `degrade: sample` counts 1 in N and its scaled total stays within a factor of 2 of the real
# count; nothing stays attached after any of them.
# (d) a uprobe storm (paced_op at 20,000 calls/s, a trap at each entry and return) under a 2%
# max_cpu_pct: its programs' run time alone is under the budget, its traps are not (the cost the
# server pays, measured per trap on this machine): refused, the message naming the traps; (e)
# beside a probe whose hits cost nothing fixed, the pre-flight drops the uprobe probe before the
# collection, saying its traps are what cost, and the run goes on with the other.
. "$(dirname "$0")/lib.sh"
RATE=5000
STATUS="$TMP/paced.status"
start "$WL/paced_calls" "$RATE" "$STATUS"
sleep 0.3
softirqs() { awk 'NR > 1 { for (i = 2; i <= NF; i++) s += $i } END { printf "%d\n", s }' /proc/softirqs; }
now() { date +%s.%N; }
calls_rate() { awk '{ printf "%.0f\n", $1 / $2 }' "$STATUS"; }
UPROBE="  - id: op
    kind: func_latency
    filters: {pid: target}
    options: {function: \"$WL/paced_calls:paced_op\"}"
SOFTIRQ='  - id: softirq
    kind: tracepoint_count
    options: {tracepoint: "irq:softirq_entry"}'

# ---- (a) measured rates vs independent counts ------------------------------------------------
R=$(printf '%s\n%s\n' "$UPROBE" "$SOFTIRQ" | TEST_BUDGETS='  preflight_ms: 500' test_recipe preflight-ok 2)
s0=$(softirqs); t0=$(now)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/ok.json" 2> "$TMP/ok.err"; rc=$?
s1=$(softirqs); t1=$(now)
[ "$rc" = 0 ] || fail "exit code $rc, want 0: $(cat "$TMP/ok.err")"
SOFTIRQ_RATE=$(python3 -c "print(round(($s1 - $s0) / ($t1 - $t0)))")
CALL_RATE=$(calls_rate)
CHECK_LET="pf = r['overhead']['preflight']['probes']; calls = $CALL_RATE; sirq = $SOFTIRQ_RATE"
check "$TMP/ok.json" "r['overhead']['preflight']['window_ms'] == 500" "pre-flight window is not the recipe's"
check "$TMP/ok.json" "pf['op']['rate'] == 'measured' and calls / 2 <= pf['op']['events_per_s'] <= calls * 2" \
	"uprobe rate $(json "$TMP/ok.json" 'r["overhead"]["preflight"]["probes"]["op"]') not within 2x of $CALL_RATE calls/s"
check "$TMP/ok.json" "pf['op']['firings_per_s'] >= 1.5 * pf['op']['events_per_s']" \
	"uprobe firings should count entries and returns"
check "$TMP/ok.json" "pf['softirq']['rate'] == 'measured' and sirq / 2 <= pf['softirq']['events_per_s'] <= sirq * 2" \
	"softirq rate $(json "$TMP/ok.json" 'r["overhead"]["preflight"]["probes"]["softirq"]') not within 2x of $SOFTIRQ_RATE/s"
# After the pre-flight the same programs collect in full mode, for the rest of the duration.
check "$TMP/ok.json" "res['op']['calls'] > 0.5 * calls * r['duration_s'] and res['softirq']['total'] > 0.5 * sirq * r['duration_s']" \
	"full mode after the pre-flight collected too little"
check "$TMP/ok.json" "1.2 <= r['duration_s'] <= 1.9" "duration_s is not the 2 s minus the 500 ms pre-flight"
assert_released "a run with a uprobe and an interrupt-context tracepoint"

# The dry run runs the same pre-flight.
"$DIAG" "$R" --pid "$PID" --dry-run --json > "$TMP/dry.json" 2> "$TMP/dry.err"; rc=$?
[ "$rc" = 0 ] || fail "dry run: exit $rc: $(cat "$TMP/dry.err")"
CHECK_LET="calls = $CALL_RATE" check "$TMP/dry.json" "calls / 2 <= r['plan']['preflight']['probes']['op']['events_per_s'] <= calls * 2" "dry run: uprobe rate"
assert_released "a dry run"

# ---- (b) a uprobe over budget: refused, nothing left attached --------------------------------
BUDGET='  max_events_per_s: 1000
  degrade: sample'
R=$(echo "$UPROBE" | TEST_BUDGETS=$BUDGET test_recipe preflight-refuse 2)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/refuse.json" 2> "$TMP/refuse.err"; rc=$?
[ "$rc" = 3 ] || fail "uprobe over budget: exit $rc, want 3: $(cat "$TMP/refuse.err")"
grep -q 'over budget: measured [0-9.]*k/s events in a 250 ms pre-flight (mostly probe op), max_events_per_s allows 1.0k/s.*the probes over it cannot sample' "$TMP/refuse.err" ||
	fail "refusal message: $(cat "$TMP/refuse.err")"
assert_released "a refused uprobe probe"

# ---- (c) an interrupt-context tracepoint over budget, degrade: sample -------------------------
R=$(echo "$SOFTIRQ" | TEST_BUDGETS=$BUDGET test_recipe preflight-sample 2)
s0=$(softirqs); t0=$(now)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/sample.json" 2> "$TMP/sample.err"; rc=$?
s1=$(softirqs); t1=$(now)
[ "$rc" = 0 ] || fail "degraded run: exit $rc: $(cat "$TMP/sample.err")"
SOFTIRQ_RATE=$(python3 -c "print(round(($s1 - $s0) / ($t1 - $t0)))")
CHECK_LET="sirq = $SOFTIRQ_RATE"
check "$TMP/sample.json" "res['softirq']['sampled_1_in'] >= 3" "not sampled"
check "$TMP/sample.json" "sirq / 2 <= res['softirq']['total'] / r['duration_s'] <= sirq * 2" \
	"scaled total $(json "$TMP/sample.json" 'r["results"]["softirq"]["total"] / r["duration_s"]')/s not within 2x of $SOFTIRQ_RATE/s"
json "$TMP/sample.json" '" ".join(r["notes"])' | grep -q 'counted 1 in [0-9]* at random (degrade: sample)' || fail "no degrade note"
assert_released "a degraded run"

# ---- (d) a uprobe storm that BPF run time alone calls cheap: refused -------------------------
STORM_STATUS="$TMP/storm.status"
"$WL/paced_calls" 20000 "$STORM_STATUS" > /dev/null 2>&1 &
STORM=$!
PIDS="$PIDS $STORM"
sleep 0.3
cheap() { sed -i 's/^  max_cpu_pct: .*/  max_cpu_pct: 2/' "$1"; echo "$1"; }
R=$(cheap "$(echo "$UPROBE" | TEST_BUDGETS='  degrade: sample' test_recipe storm-refuse 2)")
"$DIAG" "$R" --pid "$STORM" --dry-run --json > "$TMP/storm-dry.json" 2> "$TMP/storm-dry.err"; rc=$?
[ "$rc" = 3 ] || fail "uprobe storm, dry run: exit $rc, want 3: $(cat "$TMP/storm-dry.err")"
check "$TMP/storm-dry.json" "(lambda pf: pf['estimated_bpf_cpu_pct_min'] < 2 < pf['fixed_cpu_pct'] and pf['per_trap_ns'] > 0 and pf['probes']['op']['trap_hits_per_s'] > 10000)(r['plan']['preflight'])" \
	"uprobe storm: the pre-flight does not show cheap BPF and costly traps: $(json "$TMP/storm-dry.json" 'r["plan"]["preflight"]')"
"$DIAG" "$R" --pid "$STORM" --json > "$TMP/storm-refuse.json" 2> "$TMP/storm-refuse.err"; rc=$?
[ "$rc" = 3 ] || fail "uprobe storm: exit $rc, want 3: $(cat "$TMP/storm-refuse.err")"
grep -q "over budget: the probes' hits would cost the server .* (probe op: [0-9.]*k/s uprobe traps at [0-9.]* us each.*max_cpu_pct allows 2%; sampling does not lower it" "$TMP/storm-refuse.err" ||
	fail "uprobe storm: refusal message: $(cat "$TMP/storm-refuse.err")"
assert_released "a uprobe storm refused"

# ---- (e) the same beside a probe with no fixed cost: the uprobe probe is dropped, the run goes on
R=$(cheap "$(printf '%s\n%s\n' "$UPROBE" "$SOFTIRQ" | TEST_BUDGETS='  degrade: sample' test_recipe storm-stop 3)")
"$DIAG" "$R" --pid "$STORM" --json > "$TMP/storm-stop.json" 2> "$TMP/storm-stop.err"; rc=$?
[ "$rc" = 0 ] || fail "uprobe storm beside another probe: exit $rc: $(cat "$TMP/storm-stop.err")"
CHECK_LET='notes = " ".join(r["notes"]); stopped = {p["id"]: p.get("stopped_at_s") for p in r["probes"]}'
check "$TMP/storm-stop.json" "r['stop_reason'] == 'duration' and stopped['op'] and not stopped['softirq'] and r['overhead']['preflight']['probes']['op']['dropped'] and 'op: not run: in the pre-flight its hits cost the server' in notes and res['softirq']['total'] > 0" \
	"uprobe storm: op was not dropped for its traps while the run went on: $(json "$TMP/storm-stop.json" '[r["notes"], [(p["id"], p.get("stopped_at_s")) for p in r["probes"]]]')"
assert_released "a uprobe storm dropped by the pre-flight"
exit 0
