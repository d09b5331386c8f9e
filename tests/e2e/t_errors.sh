# Errors a user meets: each is one clear line with the documented exit code, and nothing stays
# attached.
. "$(dirname "$0")/lib.sh"
expect() { # expect CODE PATTERN CMD...
	want=$1 pat=$2; shift 2
	out=$("$@" 2>&1 >/dev/null); rc=$?
	[ "$rc" = "$want" ] || fail "$*: exit $rc, want $want ($out)"
	echo "$out" | grep -q -- "$pat" || fail "$*: message '$out' lacks '$pat'"
	[ "$(echo "$out" | wc -l)" -le 2 ] || fail "$*: more than a short message: $out"
}
expect 2 'no process with pid 999999999' "$DIAG" high-cpu --pid 999999999
expect 2 'needs a target process' "$DIAG" high-cpu
expect 2 'available: .*high-cpu' "$DIAG" no-such-symptom --pid 1
expect 2 'not a pid' "$DIAG" high-cpu --pid abc
expect 2 'not a positive number' "$DIAG" high-cpu --pid 1 --duration -3
expect 3 'max_duration_s' "$DIAG" high-cpu --pid 1 --duration 1000
expect 3 'production mode runs approved recipes by name only' "$DIAG" "$ROOT/recipes/high-cpu.yaml" --pid 1 --production
# merge caps what all its inputs hold together, not only each file: three reports of 3 million
# values each (9 MB apiece, each within one report's limits) are refused at the 8 million values
# merge reads in all, in one line naming the limit, before their trees take a gigabyte.
python3 - "$TMP" <<'PY'
import sys
for i in range(3):
    with open(f"{sys.argv[1]}/m{i}.json", "w") as f:
        f.write('{"tool":"diagnose","recipe":{"name":"x"},"host":{"name":"h%d"},"verdicts":[],'
                '"results":{"p":{"v":[%s0]}}}' % (i, "0," * 2999999))
PY
expect 2 "merge: the reports together hold more than 8000000 values (merge's limit for all its inputs, not each file); reached in $TMP/m2.json" \
	"$DIAG" merge "$TMP/m0.json" "$TMP/m1.json" "$TMP/m2.json"
"$DIAG" merge "$TMP/m0.json" "$TMP/m1.json" > /dev/null || fail "merge of two such reports (6 million values): exit $?"
nobody_tree
expect 3 'CAP_BPF' as_nobody "$NOBODY_DIAG" high-cpu --pid 1
# Hardware cycles where the recipe prefers them: used on a machine with a PMU, else a clear
# fallback note and a working run on the cpu-clock software event.
mkdir -p "$TMP/hw/recipes"
ln -s "$ROOT/lua" "$TMP/hw/lua"
sed 's/^    kind: cpu_profile$/&\n    attach: [hw_cycles, cpu_clock]/' "$ROOT/recipes/high-cpu.yaml" > "$TMP/hw/recipes/high-cpu.yaml"
grep -q 'attach: \[hw_cycles' "$TMP/hw/recipes/high-cpu.yaml" || fail "could not derive the hw recipe"
start "$WL/cpu_burner"
"$DIAG" high-cpu --recipes "$TMP/hw/recipes" --pid "$PID" --duration 1 --json > "$TMP/hw.json"
rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "hw fallback run: exit $rc"
event=$(json "$TMP/hw.json" 'r["results"]["profile"]["event"]')
if [ "$event" = cpu_clock ]; then
	json "$TMP/hw.json" '" ".join(r["notes"])' | grep -q 'hardware cycles counter unavailable' || fail "no fallback note"
else
	[ "$event" = hw_cycles ] || fail "event $event"
fi
check "$TMP/hw.json" "not any('load_error' in p for p in r['probes'])" "the fallback run is degraded"

# A probe that does not load here (the hardware counter alone, on a machine without a PMU) is
# skipped and the run degraded, said in the notes, the probe's load_error and the verdicts'
# evidence; the other probes answer. A recipe with nothing else left refuses (exit 3). A machine
# with a PMU loads it: said, not exercised.
if [ "$event" = cpu_clock ]; then
	mkdir -p "$TMP/hwonly/recipes" "$TMP/hwalone/recipes"
	ln -s "$ROOT/lua" "$TMP/hwonly/lua"
	ln -s "$ROOT/lua" "$TMP/hwalone/lua"
	sed 's/^    kind: cpu_profile$/&\n    attach: [hw_cycles]/' "$ROOT/recipes/high-cpu.yaml" > "$TMP/hwonly/recipes/high-cpu.yaml"
	"$DIAG" high-cpu --recipes "$TMP/hwonly/recipes" --pid "$PID" --duration 1 --json > "$TMP/hwonly.json"; rc=$?
	[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "degraded run: exit $rc"
	ALLOW_LOAD_ERRORS=1 CHECK_LET='prof = [p for p in r["probes"] if p["id"] == "profile"][0]; ev = " ".join(" ".join(v["evidence"]) for v in r["verdicts"])' \
		check "$TMP/hwonly.json" "'does not exist here' in prof.get('load_error', '') and 'profile' not in res and res['runq'] and 'syscalls' in res and any(n.startswith('degraded: probe profile (cpu_profile) did not load here') for n in r['notes']) and 'did not load here' in ev and any(v['id'] == 'busy' for v in r['verdicts'])" \
		"degraded run: $(json "$TMP/hwonly.json" '[r["notes"], r["probes"], [(v["id"], v["evidence"]) for v in r["verdicts"]]]')"
	python3 - "$TMP/hwonly/recipes/high-cpu.yaml" "$TMP/hwalone/recipes/high-cpu.yaml" <<'PY'
import re, sys
y = open(sys.argv[1]).read()
y = re.sub(r"\n  - id: (runq|syscalls)\n.*?(?=\n  - id: |\n[a-z])", "", y, flags=re.S)
open(sys.argv[2], "w").write(y)
PY
	grep -q 'id: runq' "$TMP/hwalone/recipes/high-cpu.yaml" && fail "the derived recipe still has its runq probe"
	out=$("$DIAG" high-cpu --recipes "$TMP/hwalone/recipes" --pid "$PID" --duration 1 2>&1 >/dev/null); rc=$?
	[ "$rc" = 3 ] || fail "nothing loads: exit $rc ($out)"
	echo "$out" | grep -q 'nothing of recipe high-cpu loads here: probe profile (cpu_profile): cannot open a perf sampling event' ||
		fail "nothing loads: message $out"
else
	echo "    note: this machine has a hardware PMU: the degraded run is not exercised"
fi
assert_released "error paths"
