# Budgets, enforced on a process making ~1M+ syscalls/s: the measured pre-flight refuses (exit 3)
# or, when the recipe says `degrade: sample`, samples 1 in N and says so; --dry-run reports the
# refusal with exit 3 (as text: the plan's probes, rates and budgets, and the refusal; JSON only
# with --json); a probe whose hits' slow path alone is over max_cpu_pct is dropped by the
# pre-flight, or stopped by the live governor when the storm comes later, and the run goes on;
# with no other probe, the pre-flight refuses, or the governor stops the run with partial results.
. "$(dirname "$0")/lib.sh"
derive() { # derive NAME SED-EXPRESSION: a copy of the shipped recipe, changed
	mkdir -p "$TMP/$1/recipes"
	ln -sfn "$ROOT/lua" "$TMP/$1/lua"
	sed -e "$2" "$ROOT/recipes/high-cpu.yaml" > "$TMP/$1/recipes/high-cpu.yaml"
}
start "$WL/syscall_storm"

# (the event budget alone: max_cpu_pct out of the way, or the slow path's cost, measured, may drop
# the syscall probe first — (a) below)
derive refuse 's/^  max_events_per_s: .*/  max_events_per_s: 100000/; s/^  max_cpu_pct: .*/  max_cpu_pct: 90/; /^  degrade: sample$/d'
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

derive sample 's/^  max_events_per_s: .*/  max_events_per_s: 100000/; s/^  max_cpu_pct: .*/  max_cpu_pct: 90/'
"$DIAG" high-cpu --recipes "$TMP/sample/recipes" --pid "$PID" --duration 2 --json > "$TMP/sample.json"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "degraded run: exit $rc"
[ "$(json "$TMP/sample.json" 'r["results"]["syscalls"]["sampled_1_in"] >= 2')" = True ] || fail "not sampled"
json "$TMP/sample.json" '" ".join(r["notes"])' | grep -q 'counted 1 in [0-9]* at random (degrade: sample)' || fail "no degrade note"
[ "$(json "$TMP/sample.json" 'r["results"]["syscalls"]["syscalls"][0]["name"]')" = write ] || fail "sampled counts lost the culprit"
assert_released "a degraded run"

# What a syscall counter costs is mostly not its program: while it is attached every syscall of
# the machine takes the slow path (measured per syscall at the start of the run: cost.h), sampled
# or not. On the storm (a million syscalls a second) that alone is over a 2% max_cpu_pct that the
# other probes keep (the profile and run-queue programs and diagnose's collecting thread used
# under 1% of the CPUs on a loaded machine):
# (a) storming from the start: the pre-flight counts it and drops the probe before the collection;
#     the run goes on with the others, and high-cpu's verdict still names write().
derive governor 's/^  max_cpu_pct: .*/  max_cpu_pct: 2/'
"$DIAG" high-cpu --recipes "$TMP/governor/recipes" --pid "$PID" --duration 3 --json > "$TMP/drop.json"; rc=$?
# The slow path's figure is measured by each run (engine/kernel/hitcost.c); a few runs in a
# hundred here read a fifth of the usual (~25 ns against ~130), which puts the storm's million
# syscalls a second under 2% of the CPUs (under ~35 ns). Such a run must behave as its own figure
# says (not dropped for its slow path); the case is then not exercised: said, not failed.
read_low() { # FILE: true (and said) when the run's syscall figure is under 35 ns
	[ "$(json "$1" 'r["overhead"]["server"].get("per_hit_ns", {}).get("syscall", 1e9) < 35')" = True ] || return 1
	echo "    note: $(basename "$1"): the syscall slow path read $(json "$1" 'r["overhead"]["server"]["per_hit_ns"]["syscall"]') ns: case not exercised"
}
CHECK_LET='notes = " ".join(r["notes"]); stopped = {p["id"]: p.get("stopped_at_s") for p in r["probes"]}'
if read_low "$TMP/drop.json"; then
	check "$TMP/drop.json" "not r['overhead']['preflight']['probes']['syscalls'].get('dropped')" "pre-flight dropped a probe its figure calls cheap"
else
	check "$TMP/drop.json" "r['stop_reason'] == 'duration' and 'syscalls: not run: in the pre-flight its hits cost the server' in notes and r['overhead']['preflight']['probes']['syscalls']['dropped'] and stopped['syscalls'] and stopped['profile'] is None" \
		"pre-flight drop: $(json "$TMP/drop.json" '[r["stop_reason"], r["notes"], r["overhead"]["preflight"]["probes"]["syscalls"]]')"
fi
# (its CPU verdict from the profile alone: without the syscall table, busy or cpu-bound-kernel)
check "$TMP/drop.json" "any(v['id'] in ('cpu-bound-kernel', 'busy') and 'write()' in v['title'] for v in r['verdicts'])" \
	"pre-flight drop: verdicts $(json "$TMP/drop.json" '[(v["id"], v["title"]) for v in r["verdicts"]]')"
assert_released "a run whose syscall probe the pre-flight dropped"

# (b) storming only after the pre-flight (the workload stopped until then): the live governor
#     sees the slow path, does not try sampling (it cannot lower it), stops that probe, says so,
#     and the run goes on to its duration; the verdicts still name write() and the stop.
kill -STOP "$PID"
( sleep 0.6; kill -CONT "$PID" ) &
"$DIAG" high-cpu --recipes "$TMP/governor/recipes" --pid "$PID" --duration 4 --json > "$TMP/gov.json"; rc=$?
kill -CONT "$PID" 2>/dev/null
check "$TMP/gov.json" "r['stop_reason'] == 'duration' and r['duration_s'] > 3" "governor: the run did not go on: $(json "$TMP/gov.json" 'r["stop_reason"], r["duration_s"]')"
if read_low "$TMP/gov.json"; then # the run behaves as its own figure says: its verdict still names write()
	check "$TMP/gov.json" "any(v['id'] in ('cpu-bound-kernel', 'busy') and 'write()' in v['title'] for v in r['verdicts'])" \
		"governor (a low figure): verdicts $(json "$TMP/gov.json" '[(v["id"], v["title"]) for v in r["verdicts"]]')"
else
	check "$TMP/gov.json" "'syscalls: stopped' in notes and 'syscalls: sampled' not in notes and 'sampling could not bring it under' in notes and 'its hits\' traps and slow paths' in notes" \
		"governor: notes do not say it stopped the syscall probe for its slow path: $(json "$TMP/gov.json" 'r["notes"], r["overhead"]["server"]')"
	check "$TMP/gov.json" "stopped['syscalls'] and stopped['syscalls'] < 3 and stopped['profile'] is None and r['overhead']['server']['slowed_syscalls_per_s'] > 0" \
		"governor: stopped probes $(json "$TMP/gov.json" '[(p["id"], p.get("stopped_at_s")) for p in r["probes"]]')"
	# (any of the verdicts: on a machine that is busy besides, cpu-starved may come first)
	check "$TMP/gov.json" "any(v['id'] in ('cpu-bound-kernel', 'busy') and 'write()' in v['title'] for v in r['verdicts']) and any(v['id'] == 'incomplete-data' and 'syscalls stopped at' in v['title'] for v in r['verdicts'])" \
		"governor: verdicts $(json "$TMP/gov.json" '[(v["id"], v["title"]) for v in r["verdicts"]]')"
fi
assert_released "a run whose syscall probe the governor stopped"

# With no probe free of such a cost left: (c) storming from the start, refused by the pre-flight
# (exit 3, the message naming the slowed syscalls); (d) storming after it, over the budget stops
# the run, with partial results. (0.5%: the storm's slow path is ~6% of the CPUs; the machine's
# own syscalls while the storm is stopped, diagnose's among them, can reach 0.1%.)
mkdir -p "$TMP/alone/recipes"
ln -sfn "$ROOT/lua" "$TMP/alone/lua"
python3 - "$ROOT/recipes/high-cpu.yaml" "$TMP/alone/recipes/high-cpu.yaml" <<'PY'
import re, sys
y = open(sys.argv[1]).read().replace("  max_cpu_pct: 15", "  max_cpu_pct: 0.5")
y = re.sub(r"\n  - id: (profile|runq|context)\n.*?(?=\n  - id: |\n[a-z])", "", y, flags=re.S)
open(sys.argv[2], "w").write(y)
PY
grep -q 'id: profile' "$TMP/alone/recipes/high-cpu.yaml" && fail "the derived recipe still has its profile"
out=$("$DIAG" high-cpu --recipes "$TMP/alone/recipes" --pid "$PID" --duration 3 2>&1 >/dev/null); rc=$?
[ "$rc" = 3 ] || fail "the slow path alone over the budget: exit $rc, want 3 ($out)"
echo "$out" | grep -q "over budget: the probes' hits would cost the server .* (probe syscalls: .*syscalls slowed at [0-9]* ns), max_cpu_pct allows 0.5%" ||
	fail "the slow path alone over the budget: refusal message: $out"
assert_released "a run refused for its slow path"
kill -STOP "$PID"
( sleep 0.6; kill -CONT "$PID" ) &
"$DIAG" high-cpu --recipes "$TMP/alone/recipes" --pid "$PID" --duration 10 --json > "$TMP/gov1.json"; rc=$?
kill -CONT "$PID" 2>/dev/null
[ "$(json "$TMP/gov1.json" 'r["stop_reason"]')" = over-budget ] || fail "governor, one probe: stop_reason $(json "$TMP/gov1.json" 'r["stop_reason"]')"
[ "$(json "$TMP/gov1.json" 'r["duration_s"] < 5')" = True ] || fail "governor did not stop early"
[ "$(json "$TMP/gov1.json" 'r["overhead"]["server"]["fixed_cpu_pct"] > 0')" = True ] || fail "governor: the run's cost not reported"
json "$TMP/gov1.json" '[v["id"] for v in r["verdicts"]]' | grep -q incomplete-data || fail "governor: partial data not flagged"
assert_released "a run stopped by the governor"

# A probe that takes stacks, sampled as far as sampling helps, drops its stacks before it stops:
# latency's off-CPU probe alone on a context-switch storm (~100k switches/s), whose entry on
# every switch costs more than 0.5% of the CPUs sampled or not. The notes say it was sampled,
# then its stacks dropped; the report marks when; the partial-data verdict names it.
{ kill -9 "$PID"; wait "$PID"; } 2> /dev/null
start "$WL/switch_storm"
mkdir -p "$TMP/stacks/recipes"
ln -sfn "$ROOT/lua" "$TMP/stacks/lua"
python3 - "$ROOT/recipes/latency.yaml" "$TMP/stacks/recipes/latency.yaml" <<'PY'
import re, sys
y = re.sub(r"\n  max_cpu_pct: .*", "\n  max_cpu_pct: 0.5", open(sys.argv[1]).read())
y = re.sub(r"\n  - id: (wakers|lookups|runq|syscalls|peers|pygc|threads)\n.*?(?=\n  - id: )", "", y, flags=re.S)
open(sys.argv[2], "w").write(y)
PY
[ "$(grep -c '^  - id: ' "$TMP/stacks/recipes/latency.yaml")" = 2 ] || fail "the derived latency recipe: $(grep '^  - id: ' "$TMP/stacks/recipes/latency.yaml")"
"$DIAG" latency --recipes "$TMP/stacks/recipes" --pid "$PID" --duration 4 --json > "$TMP/stacks.json"; rc=$?
CHECK_LET='notes = r["notes"]; off = [p for p in r["probes"] if p["id"] == "offcpu"][0]
i_sampled = [i for i, n in enumerate(notes) if n.startswith("offcpu: sampled 1 in") and "from " in n]
i_dropped = [i for i, n in enumerate(notes) if n.startswith("offcpu: stacks dropped from")]'
check "$TMP/stacks.json" "i_sampled and i_dropped and i_sampled[0] < i_dropped[0] and off.get('stacks_dropped_at_s', 0) > 0" \
	"stacks: the off-CPU probe was not sampled, then its stacks dropped: $(json "$TMP/stacks.json" 'r["notes"]')"
check "$TMP/stacks.json" "any(v['id'] == 'incomplete-data' and 'offcpu stacks dropped at' in v['title'] for v in r['verdicts'])" \
	"stacks: the partial-data verdict does not name the dropped stacks: $(json "$TMP/stacks.json" '[(v["id"], v["title"]) for v in r["verdicts"]]')"
assert_released "a run whose off-CPU stacks the governor dropped"
