# Budgets, enforced on a process making ~1M+ syscalls/s: the measured pre-flight refuses (exit 3)
# or, when the recipe says `degrade: sample`, samples 1 in N and says so; --dry-run reports the
# refusal with exit 3 (as text: the plan's probes, rates and budgets, and the refusal; JSON only
# with --json); the live governor stops a run over max_cpu_pct with partial results.
. "$(dirname "$0")/lib.sh"
derive() { # derive NAME SED-EXPRESSION: a copy of the shipped recipe, changed
	mkdir -p "$TMP/$1/recipes"
	ln -sfn "$ROOT/lua" "$TMP/$1/lua"
	sed -e "$2" "$ROOT/recipes/high-cpu.yaml" > "$TMP/$1/recipes/high-cpu.yaml"
}
start "$WL/syscall_storm"

derive refuse 's/^  max_events_per_s: .*/  max_events_per_s: 100000/; /^  degrade: sample$/d'
out=$("$DIAG" high-cpu --recipes "$TMP/refuse/recipes" --pid "$PID" --duration 2 2>&1 >/dev/null); rc=$?
[ "$rc" = 3 ] || fail "over the event budget: exit $rc, want 3 ($out)"
echo "$out" | grep -q 'over budget: measured .* events in a 100 ms pre-flight (mostly probe syscalls)' || fail "refusal message: $out"
assert_released "a refused run"

"$DIAG" high-cpu --recipes "$TMP/refuse/recipes" --pid "$PID" --dry-run --json > "$TMP/dry.json" 2>/dev/null; rc=$?
[ "$rc" = 3 ] || fail "dry run over budget: exit $rc, want 3"
[ "$(json "$TMP/dry.json" 'r["stop_reason"]')" = dry-run ] || fail "dry run stop_reason"
json "$TMP/dry.json" 'r["plan"]["refused"]' | grep -q 'over budget' || fail "dry run does not say why"
[ "$(json "$TMP/dry.json" 'r["plan"]["preflight"]["probes"]["syscalls"]["events_per_s"] > 100000')" = True ] || fail "dry run lacks the measured rate"
[ "$(json "$TMP/dry.json" 'r["plan"]["preflight"]["estimated_bpf_cpu_pct_min"] > 0')" = True ] || fail "dry run lacks the overhead estimate"
out=$("$DIAG" high-cpu --recipes "$TMP/refuse/recipes" --pid "$PID" --dry-run 2>/dev/null); rc=$?
[ "$rc" = 3 ] || fail "text dry run over budget: exit $rc, want 3"
echo "$out" | grep -q '^  syscalls  *syscall_stats  *raw_tp  *pid=target ([0-9]*) .*[0-9.]*[kM]$' || fail "text dry run: no syscalls row with its measured rate: $out"
echo "$out" | grep -q '^A real run would be REFUSED: over budget' || fail "text dry run does not say it would be refused: $out"
echo "$out" | grep -q '^Budgets: maps .* of 64.0 MiB' || fail "text dry run: no budgets line: $out"
echo "$out" | grep -q '^{' && fail "text dry run prints JSON: $out"
assert_released "a dry run"

derive sample 's/^  max_events_per_s: .*/  max_events_per_s: 100000/'
"$DIAG" high-cpu --recipes "$TMP/sample/recipes" --pid "$PID" --duration 2 --json > "$TMP/sample.json"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "degraded run: exit $rc"
[ "$(json "$TMP/sample.json" 'r["results"]["syscalls"]["sampled_1_in"] >= 2')" = True ] || fail "not sampled"
json "$TMP/sample.json" '" ".join(r["notes"])' | grep -q 'counted 1 in [0-9]* at random (degrade: sample)' || fail "no degrade note"
[ "$(json "$TMP/sample.json" 'r["results"]["syscalls"]["syscalls"][0]["name"]')" = write ] || fail "sampled counts lost the culprit"
assert_released "a degraded run"

derive governor 's/^  max_cpu_pct: .*/  max_cpu_pct: 0.1/'
"$DIAG" high-cpu --recipes "$TMP/governor/recipes" --pid "$PID" --duration 10 --json > "$TMP/gov.json"; rc=$?
[ "$(json "$TMP/gov.json" 'r["stop_reason"]')" = over-budget ] || fail "governor: stop_reason $(json "$TMP/gov.json" 'r["stop_reason"]')"
[ "$(json "$TMP/gov.json" 'r["duration_s"] < 5')" = True ] || fail "governor did not stop early"
[ "$(json "$TMP/gov.json" 'r["overhead"]["bpf_cpu_pct"] > 0.1')" = True ] || fail "governor: overhead not reported"
json "$TMP/gov.json" '[v["id"] for v in r["verdicts"]]' | grep -q incomplete-data || fail "governor: partial data not flagged"
assert_released "a run stopped by the governor"
