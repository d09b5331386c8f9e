# diagnose replay: a live run's JSON report (latency on lock_contention, high-cpu on cpu_burner)
# replayed without root (as nobody, no BPF) gives exactly the live verdicts and exit code, the
# text report says it is a replay; --threshold changes what the Lua decides (lock contention
# over 100% never fires) and refuses a name the recipe does not have; --lua runs another
# snippet; severity colours only on a terminal without NO_COLOR; diff shows the verdict the raised thresholds removed, and nothing between a report and
# itself; merge groups the reports' verdicts by recipe and id; a file that is not a report is
# refused with exit 2 naming it.
. "$(dirname "$0")/lib.sh"
RP=$(mktemp -d /tmp/diagnose-replay.XXXXXX)
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP" "$RP"' EXIT
chmod 755 "$RP"

replay_same() { # replay_same NAME: the replay of $RP/NAME.json gives its verdicts and exit code
	local live_rc=$2
	as_nobody "$NOBODY_DIAG" replay "$RP/$1.json" --recipes "$NOBODY_RECIPES" --json > "$RP/$1.replay.json" 2> "$RP/$1.err"
	local rc=$?
	[ "$rc" = "$live_rc" ] || fail "$1: replay exit $rc, live $live_rc: $(cat "$RP/$1.err")"
	[ "$(python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
print([(v["id"], v["severity"], v["title"]) for v in a["verdicts"]] == [(v["id"], v["severity"], v["title"]) for v in b["verdicts"]])' \
		"$RP/$1.json" "$RP/$1.replay.json")" = True ] ||
		fail "$1: replayed verdicts differ: $(json "$RP/$1.replay.json" '[v["title"] for v in r["verdicts"]]') vs $(json "$RP/$1.json" '[v["title"] for v in r["verdicts"]]')"
}

start "$WL/lock_contention" 4
"$DIAG" latency --pid "$PID" --duration 2 --json > "$RP/lock.json" 2> "$TMP/lock.err"; lock_rc=$?
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
[ "$lock_rc" = 4 ] || [ "$lock_rc" = 5 ] || fail "live latency: exit $lock_rc: $(cat "$TMP/lock.err")"
start "$WL/cpu_burner"
"$DIAG" high-cpu --pid "$PID" --duration 2 --json > "$RP/cpu.json" 2> "$TMP/cpu.err"; cpu_rc=$?
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
chmod 644 "$RP"/*.json
replay_same lock "$lock_rc"
replay_same cpu "$cpu_rc"
as_nobody "$NOBODY_DIAG" replay "$RP/lock.json" --recipes "$NOBODY_RECIPES" | grep -q "^replayed: verdicts of .*latency.lua on the results recorded in $RP/lock.json" ||
	fail "the text report does not say it is a replay"

as_nobody "$NOBODY_DIAG" replay "$RP/lock.json" --recipes "$NOBODY_RECIPES" --threshold cause_pct_warn=101 --threshold cause_pct_crit=101 --json > "$RP/t.json"
check "$RP/t.json" "'lock-contention' not in [v['id'] for v in r['verdicts']] and r['thresholds']['cause_pct_warn'] == 101" "thresholds not applied"
out=$(as_nobody "$NOBODY_DIAG" replay "$RP/lock.json" --recipes "$NOBODY_RECIPES" --threshold cause_pct_wran=1 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q 'has no threshold cause_pct_wran (it has: cause_pct_warn' || fail "misspelt threshold: exit $rc: $out"

cat > "$RP/other.lua" <<'LUA'
local n = 0
for _ in pairs(results.offcpu.stacks) do n = n + 1 end
return { verdicts = { diag.verdict("replayed-lua", "warning", "stacks: " .. n, {}, {}) } }
LUA
chmod 644 "$RP/other.lua"
as_nobody "$NOBODY_DIAG" replay "$RP/lock.json" --recipes "$NOBODY_RECIPES" --lua "$RP/other.lua" --json > "$RP/l.json"; rc=$?
[ "$rc" = 4 ] || fail "--lua: exit $rc"
check "$RP/l.json" "[v['id'] for v in r['verdicts']] == ['replayed-lua'] and r['replayed']['lua'] == '$RP/other.lua'" "--lua not run"

# colour: severity labels on a terminal only, and not with NO_COLOR
if command -v script >/dev/null; then
	tty_out=$(script -qec "'$DIAG' replay '$RP/lock.json' --recipes '$ROOT/recipes'" /dev/null)
	printf '%s' "$tty_out" | grep -q $'\033\[1;3[13]m' || fail "no colour on a terminal"
	tty_out=$(NO_COLOR=1 script -qec "'$DIAG' replay '$RP/lock.json' --recipes '$ROOT/recipes'" /dev/null)
	printf '%s' "$tty_out" | grep -q $'\033' && fail "colour with NO_COLOR"
fi
"$DIAG" replay "$RP/lock.json" --recipes "$ROOT/recipes" | grep -q $'\033' && fail "colour in a pipe"

# diff: the live report against its replay with the thresholds raised: lock-contention is gone
out=$(as_nobody "$NOBODY_DIAG" diff "$RP/lock.json" "$RP/t.json"); rc=$?
[ "$rc" = 0 ] && echo "$out" | grep -q '^  gone    warning\|^  gone    critical' && echo "$out" | grep -q 'lock-contention' ||
	fail "diff: exit $rc: $out"
as_nobody "$NOBODY_DIAG" diff "$RP/lock.json" "$RP/lock.json" --json > "$RP/d.json"
[ "$(json "$RP/d.json" 'all(v["change"] == "same" for v in r["verdicts"]) and r["functions"] == {}')" = True ] ||
	fail "diff of a report with itself: $(cat "$RP/d.json")"

# merge: three reports (two recipes) as one view; each report names this host
as_nobody "$NOBODY_DIAG" merge "$RP/lock.json" "$RP/cpu.json" "$RP/t.json" --json > "$RP/m.json"; rc=$?
[ "$rc" = 0 ] || fail "merge: exit $rc"
[ "$(json "$RP/m.json" 'len(r["hosts"]) == 3 and r["hosts"][0]["host"] == "'"$(uname -n)"'" and [(g["recipe"], g["count"]) for g in r["verdicts"] if g["id"] == "lock-contention"] == [("latency", 1)]')" = True ] ||
	fail "merge: $(cat "$RP/m.json")"
as_nobody "$NOBODY_DIAG" merge "$RP/lock.json" "$RP/cpu.json" | grep -q '^  [A-Z]*  *1/2  latency/lock-contention' || fail "merge text"

echo '{"tool": "diagnose", "results": {}}' > "$RP/bad.json"
out=$("$DIAG" replay "$RP/bad.json" 2>&1); rc=$?
out2=$("$DIAG" merge "$RP/lock.json" "$RP/bad.json" 2>&1); rc2=$?
[ "$rc2" = 2 ] && echo "$out2" | grep -q "$RP/bad.json: not a diagnose JSON report" || fail "merge of a non-report: exit $rc2: $out2"
[ "$rc" = 2 ] && echo "$out" | grep -q "$RP/bad.json: not a diagnose JSON report" || fail "not a report: exit $rc: $out"
out=$("$DIAG" replay "$RP/missing.json" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "$RP/missing.json" || fail "missing report: exit $rc: $out"

# A report is data: its recipe.name is a name, looked up as names are (--recipes); a path there is
# refused, never loaded, even one naming a recipe whose Lua is ready to run.
mkdir -p "$RP/evil/recipes" "$RP/evil/lua/lib"
cp "$ROOT/recipes/latency.yaml" "$RP/evil/recipes/"
cp "$ROOT"/lua/lib/*.lua "$RP/evil/lua/lib/"
echo 'return { verdicts = { diag.verdict("pwned", "critical", "a path from a report ran", {}, {}) } }' > "$RP/evil/lua/latency.lua"
chmod -R a+rX "$RP/evil"
for name in "$RP/evil/recipes/latency.yaml" latency.yaml "../evil/recipes/latency"; do
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); r["recipe"]["name"] = sys.argv[2]; json.dump(r, open(sys.argv[3], "w"))' \
		"$RP/lock.json" "$name" "$RP/named.json"
	chmod 644 "$RP/named.json"
	out=$(cd "$RP" && as_nobody "$DIAG" replay "$RP/named.json" --recipes "$ROOT/recipes" --json 2>&1); rc=$?
	echo "$out" | grep -q pwned && fail "replay ran the recipe file a report named ($name)"
	[ "$rc" = 2 ] && echo "$out" | grep -qF "named.json: recipe.name \"$name\" is not a recipe name" ||
		fail "recipe.name $name in a report: exit $rc: $out"
done
exit 0
