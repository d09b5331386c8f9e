# The latency recipe's budgets under a context-switch storm (switch_storm: two threads ping-pong
# through pipes, ~100k+ switches, wakeups and syscalls a second): the pre-flight measures every
# probe in count-only mode and, the recipe saying `degrade: sample`, samples each probe that can
# (off_cpu, wakeups, runq_latency, syscall_stats) 1 in N so that the total fits, and says so; the
# run ends within the governor's CPU budget or is stopped by it with its partial results. Without
# `degrade: sample` the run is refused (exit 3) with the measured rate. Nothing stays attached.
. "$(dirname "$0")/lib.sh"
derive() { # derive NAME SED-EXPRESSION: a copy of the shipped latency recipe, changed
	mkdir -p "$TMP/$1/recipes"
	ln -sfn "$ROOT/lua" "$TMP/$1/lua"
	sed -e "$2" "$ROOT/recipes/latency.yaml" > "$TMP/$1/recipes/latency.yaml"
}
start "$WL/switch_storm"

"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/storm.json" 2> "$TMP/storm.err"; rc=$?
[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "storm: exit $rc: $(cat "$TMP/storm.err")"
check "$TMP/storm.json" "all(res[p].get('sampled_1_in', 1) >= 2 for p in ('offcpu', 'wakers', 'runq', 'syscalls'))" \
	"storm: not every probe sampled: $(json "$TMP/storm.json" '{k: v.get("sampled_1_in") for k, v in r["results"].items()}')"
json "$TMP/storm.json" '" ".join(r["notes"])' | grep -q 'offcpu: .* counted 1 in [0-9]* at random (degrade: sample)' ||
	fail "storm: no degrade note for offcpu: $(json "$TMP/storm.json" 'r["notes"]')"
check "$TMP/storm.json" "r['overhead']['preflight']['events_per_s'] <= r['overhead']['preflight']['max_events_per_s'] * 1.01" \
	"storm: the planned rate is over the budget"
check "$TMP/storm.json" "r['stop_reason'] in ('duration', 'over-budget') and res['offcpu']['total_ns'] > 0" \
	"storm: stop $(json "$TMP/storm.json" 'r["stop_reason"]') or no off-CPU time"
assert_released "latency under a context-switch storm"

derive refuse '/^  degrade: sample$/d'
out=$("$DIAG" latency --recipes "$TMP/refuse/recipes" --pid "$PID" --duration 2 2>&1 >/dev/null); rc=$?
[ "$rc" = 3 ] || fail "storm without degrade: exit $rc, want 3 ($out)"
echo "$out" | grep -q 'over budget: measured .* events in a 100 ms pre-flight' || fail "refusal message: $out"
assert_released "a refused latency run"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
exit 0
