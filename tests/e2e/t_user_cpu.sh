# A process burning CPU in a known user function, reached through a known path: the top verdict
# is "CPU-bound in user code", names compute_checksum with >= 50% of samples, and the folded
# stacks hold the call path.
. "$(dirname "$0")/lib.sh"
start "$WL/cpu_burner"
"$DIAG" high-cpu --pid "$PID" --duration 3 --json --folded "$TMP/folded" > "$TMP/r.json"
rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "exit code $rc, want 4 or 5 (warning/critical)"
[ "$(json "$TMP/r.json" 'r["verdicts"][0]["id"]')" = cpu-bound-user ] || fail "top verdict: $(json "$TMP/r.json" 'r["verdicts"][0]')"
json "$TMP/r.json" 'r["verdicts"][0]["title"]' | grep -q compute_checksum || fail "title does not name compute_checksum"
share=$(json "$TMP/r.json" 'round(100 * sum(s["count"] for s in r["results"]["profile"]["stacks"] if s["user"] and s["user"][0] == "compute_checksum") / r["results"]["profile"]["samples"])')
[ "$share" -ge 50 ] || fail "compute_checksum has $share% of samples, want >= 50%"
grep -q 'main;serve_requests;handle_request;compute_checksum' "$TMP/folded" || fail "folded stacks lack the call path: $(head -3 "$TMP/folded")"
[ "$(json "$TMP/r.json" 'r["stop_reason"]')" = duration ] || fail "stop_reason"
[ "$(json "$TMP/r.json" 'r["target"]["comm"]')" = cpu_burner ] || fail "target comm"
# The JSON carries the Lua report sections the text report shows (DESIGN: "sections").
json "$TMP/r.json" '[s["title"] for s in r["sections"] if s["kind"] == "table"]' | grep -q . || fail "no table sections in the JSON report"
"$DIAG" high-cpu --pid "$PID" --duration 1 > "$TMP/r.txt" 2>/dev/null
json "$TMP/r.json" '"\n".join(s["title"] for s in r["sections"])' | while read -r title; do
	grep -qF -- "$title" "$TMP/r.txt" || fail "section '$title' of the JSON is not in the text report"
done || exit 1
assert_released "a full run"

# Typed recipe parameters: checked against their range, and they reach the probe.
out=$("$DIAG" high-cpu --pid "$PID" --duration 1 --param hz=5000 2>&1 >/dev/null); rc=$?
[ "$rc" = 2 ] || fail "--param hz=5000: exit $rc, want 2"
echo "$out" | grep -q 'hz=5000: above the allowed maximum (allowed: 1..999)' || fail "--param message: $out"
"$DIAG" high-cpu --pid "$PID" --duration 1 --param hz=199 --json > "$TMP/hz.json"
[ "$(json "$TMP/hz.json" 'r["results"]["profile"]["frequency_hz"]')" = 199 ] || fail "--param hz=199 did not reach the probe"
assert_released "runs with parameters"
