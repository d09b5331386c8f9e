# A sleeping process: nothing is invented. The verdict says it was not busy; no warning or
# critical verdict, exit 0.
. "$(dirname "$0")/lib.sh"
start sleep 600
"$DIAG" high-cpu --pid "$PID" --duration 2 --json > "$TMP/r.json"
rc=$?
[ "$rc" = 0 ] || fail "exit code $rc, want 0: $(json "$TMP/r.json" 'r["verdicts"]')"
[ "$(json "$TMP/r.json" 'r["verdicts"][0]["id"]')" = not-busy ] || fail "top verdict: $(json "$TMP/r.json" 'r["verdicts"][0]')"
[ "$(json "$TMP/r.json" '[v["id"] for v in r["verdicts"] if v["id"].startswith("cpu-bound")]')" = "[]" ] || fail "a culprit was invented"
assert_released "an idle run"
