# A sleeping process: nothing is invented. The verdict says it was not busy; no warning or
# critical verdict, exit 0.
. "$(dirname "$0")/lib.sh"
start sleep 600
"$DIAG" high-cpu --pid "$PID" --duration 2 --json > "$TMP/r.json"
rc=$?
# exit 0, but for the host's own CPU pressure over this very window (other jobs on a shared
# machine): a true finding about the host, which the report's figures must then show
[ "$rc" = 0 ] || [ "$(json "$TMP/r.json" 'all(v["id"] in ("not-busy", "cpu-starved") for v in r["verdicts"]) and r["results"]["context"]["psi"]["some_pct"] >= 20')" = True ] ||
	fail "exit code $rc, want 0: $(json "$TMP/r.json" 'r["verdicts"]')"
[ "$(json "$TMP/r.json" '[v["id"] for v in r["verdicts"]][0] in ("not-busy", "cpu-starved") and "not-busy" in [v["id"] for v in r["verdicts"]]')" = True ] ||
	fail "verdicts: $(json "$TMP/r.json" 'r["verdicts"]')"
[ "$(json "$TMP/r.json" '[v["id"] for v in r["verdicts"] if v["id"].startswith("cpu-bound")]')" = "[]" ] || fail "a culprit was invented"
assert_released "an idle run"

# Right after a CPU storm ends, the machine is idle: a verdict must describe the window, not the
# 10 s before it (PSI avg10 still reads high then). One spinner more than CPUs, 4 s, then stop.
storm=""
for i in $(seq 0 "$(nproc)"); do
	"$WL/cpu_burner" 4 > /dev/null 2>&1 &
	storm="$storm $!"
done
PIDS="$PIDS $storm"
wait $storm 2>/dev/null
avg10=$(sed -n 's/^some avg10=\([0-9.]*\).*/\1/p' /proc/pressure/cpu 2>/dev/null)
"$DIAG" high-cpu --pid "$PID" --duration 1 --json > "$TMP/after.json"
rc=$?
[ "$rc" = 0 ] || fail "after a finished CPU storm (avg10 $avg10): exit $rc, verdicts $(json "$TMP/after.json" '[v["title"] for v in r["verdicts"]]')"
[ "$(json "$TMP/after.json" '[v["id"] for v in r["verdicts"] if v["id"] == "cpu-starved"]')" = "[]" ] || fail "cpu-starved after the storm ended"
assert_released "an idle run after a storm"
