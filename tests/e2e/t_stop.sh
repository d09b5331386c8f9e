# Every way a run ends early still reports what it has and releases every link: SIGINT, SIGTERM,
# the target exiting; SIGTERM after the collection lets the run finish with its own exit code
# (and a chain start no further stage); SIGKILL leaves no empty output file in the way of the next run; and a dry
# run attaches nothing.
. "$(dirname "$0")/lib.sh"
start "$WL/cpu_burner"
for sig in INT TERM; do
	"$DIAG" high-cpu --pid "$PID" --duration 30 --json > "$TMP/$sig.json" &
	d=$!
	# signal it once it collects (its links are up; loading takes longer under ASan), with
	# samples in hand
	for i in $(seq 50); do [ "$(our_links)" -gt 0 ] && break; sleep 0.1; done
	sleep 1
	kill -s "$sig" "$d"
	wait "$d"
	rc=$?
	[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "SIG$sig: exit code $rc"
	[ "$(json "$TMP/$sig.json" 'r["stop_reason"]')" = signal ] || fail "SIG$sig: stop_reason"
	[ "$(json "$TMP/$sig.json" 'r["results"]["profile"]["samples"] > 0')" = True ] || fail "SIG$sig: no partial results"
	assert_released "SIG$sig"
done

# SIGKILL (no cleanup can run) mid-collection leaves no empty output file under the names asked
# for, so the same command runs again without --force; then the files are complete.
outs=(--output "$TMP/k.json" --folded "$TMP/k.folded" --flamegraph "$TMP/k.svg" --pprof "$TMP/k.pb.gz")
"$DIAG" high-cpu --pid "$PID" --duration 30 "${outs[@]}" > /dev/null 2>&1 &
d=$!
for i in $(seq 50); do [ "$(our_links)" -gt 0 ] && break; sleep 0.1; done
kill -KILL "$d"
wait "$d" 2>/dev/null
for f in k.json k.folded k.svg k.pb.gz; do
	[ ! -e "$TMP/$f" ] || fail "SIGKILL left $f behind ($(stat -c %s "$TMP/$f") bytes)"
done
assert_released "SIGKILL"
"$DIAG" high-cpu --pid "$PID" --duration 1 "${outs[@]}" > /dev/null 2> "$TMP/again.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || [ "$rc" = 0 ] || fail "the run after SIGKILL: exit $rc: $(cat "$TMP/again.err")"
[ "$(json "$TMP/k.json" 'r["stop_reason"]')" = duration ] || fail "after SIGKILL: --output incomplete"
[ -f "$TMP/k.folded" ] || fail "after SIGKILL: no --folded file"
grep -q '</svg>' "$TMP/k.svg" || fail "after SIGKILL: --flamegraph incomplete"
gzip -t "$TMP/k.pb.gz" || fail "after SIGKILL: --pprof is not whole gzip"

# A stop signal after the collection (here while the verdicts run: a slow Lua snippet) does not
# kill the run with an undocumented 143: it completes with what it had and its own exit code;
# with --follow, no further stage starts.
S="$TMP/slow"
mkdir -p "$S/recipes" "$S/lua"
cp -r "$ROOT/lua/lib" "$S/lua/lib"
for r in slow after; do
	cat > "$S/recipes/$r.yaml" <<EOF
name: $r
symptom: testing a signal during the verdicts
summary: A sampling probe, then a Lua snippet
lua: $r.lua
target: pid
duration_s: 1
budgets:
  max_duration_s: 10
  max_sample_hz: 999
  max_cpu_pct: 50
  max_map_bytes: 67108864
  max_chain_depth: 1
  max_chain_duration_s: 60
probes:
  - id: profile
    kind: cpu_profile
    filters:
      pid: target
EOF
done
printf 'next:\n  - { verdict: slow, recipe: after }\n' >> "$S/recipes/slow.yaml"
# half a second or so inside one backtracking string.find (a loaded machine may make it several:
# the verdict phase may take 10)
cat > "$S/lua/slow.lua" <<'EOF'
local found = ("a"):rep(38):find(("a-"):rep(6) .. "b")
return { verdicts = { diag.verdict("slow", "warning", "took its time",
  { "samples: " .. tostring(results.profile.samples), "found: " .. tostring(found) }, {}) } }
EOF
echo 'return { verdicts = {} }' > "$S/lua/after.lua"
# term_in_lua ARGS...: runs `diagnose slow ARGS` in the background and sends SIGTERM once its
# verdict child runs the snippet (the collection is over); sets rc. The child starts as the window
# opens, loads the libraries and waits for the results asleep: it is in the snippet once it has
# used 50 ms of CPU (5 ticks; slow.lua's find takes ~0.5 s, the loading a few ms).
term_in_lua() {
	"$DIAG" slow --recipes "$S/recipes" --pid "$PID" "$@" > "$TMP/lua-term.out" 2> "$TMP/lua-term.err" &
	d=$!
	local child= ticks=0
	for i in $(seq 1000); do
		[ -n "$child" ] || child=$(pgrep -P "$d" -x diagnose-lua | head -1) # not its file readers
		[ -n "$child" ] && ticks=$(awk '{ print $14 + $15 }' "/proc/$child/stat" 2>/dev/null || echo 0)
		[ "${ticks:-0}" -ge 5 ] && break
		sleep 0.02
	done
	[ "${ticks:-0}" -ge 5 ] || fail "SIGTERM in the Lua phase: no verdict child seen running the snippet"
	kill -TERM "$d"
	wait "$d"
	rc=$?
}
term_in_lua --json
[ "$rc" = 4 ] || fail "SIGTERM in the Lua phase: exit $rc, want 4 (the run's own code): $(cat "$TMP/lua-term.err")"
[ "$(json "$TMP/lua-term.out" 'r["stop_reason"]')" = duration ] || fail "SIGTERM in the Lua phase: stop_reason"
[ "$(json "$TMP/lua-term.out" 'r["verdicts"][0]["id"]')" = slow ] || fail "SIGTERM in the Lua phase: verdicts"
grep -q 'SIGTERM arrived after the collection' "$TMP/lua-term.err" || fail "SIGTERM in the Lua phase: not said: $(cat "$TMP/lua-term.err")"
assert_released "SIGTERM in the Lua phase"
term_in_lua --follow --json
[ "$rc" = 4 ] || fail "SIGTERM in stage 1's Lua phase: exit $rc, want 4: $(cat "$TMP/lua-term.err")"
[ "$(json "$TMP/lua-term.out" 'len(r["chain"]["stages"])')" = 1 ] || fail "SIGTERM in stage 1: stage 2 ran: $(json "$TMP/lua-term.out" '[s["recipe"] + ":" + s["stop_reason"] for s in r["chain"]["stages"]]')"
json "$TMP/lua-term.out" 'r["chain"]["ended"]' | grep -q 'SIGTERM' || fail "SIGTERM in stage 1: chain ended: $(json "$TMP/lua-term.out" 'r["chain"]["ended"]')"
assert_released "SIGTERM in stage 1 of a chain"

"$WL/cpu_burner" 5 >/dev/null &
short=$!
PIDS="$PIDS $short"
sleep 0.2
"$DIAG" high-cpu --pid "$short" --duration 20 --json > "$TMP/exit.json"
rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "target exit: exit code $rc"
[ "$(json "$TMP/exit.json" 'r["stop_reason"]')" = target-exited ] || fail "target exit: stop_reason"
# The partial-data verdict may rank with it; the culprit must still be named, symbolized after the
# process is gone.
json "$TMP/exit.json" '[v["title"] for v in r["verdicts"] if v["id"] == "cpu-bound-user"][0]' | grep -q compute_checksum || fail "target exit: verdicts $(json "$TMP/exit.json" '[v["id"] for v in r["verdicts"]]')"
json "$TMP/exit.json" '[v["id"] for v in r["verdicts"]]' | grep -q incomplete-data || fail "target exit: partial data not flagged"
assert_released "target exit"

"$DIAG" high-cpu --pid "$PID" --dry-run --json > "$TMP/dry.json" || fail "dry run exit code $?"
[ "$(json "$TMP/dry.json" 'r["stop_reason"]')" = dry-run ] || fail "dry run stop_reason"
assert_released "dry run"

# A target that exits while the probes load or during the budget pre-flight: a runtime failure
# (exit 1) with one clear line, nothing attached. How long loading takes depends on the build
# (ASan) and the machine: the target's life is lengthened until it ends in that phase, not before
# the plan (exit 2, no such process) nor after the pre-flight (a run whose target exited).
seen=
for life in 0.1 0.2 0.4 0.7 1.0; do
	"$WL/cpu_burner" "$life" >/dev/null &
	brief=$!
	PIDS="$PIDS $brief"
	out=$("$DIAG" high-cpu --pid "$brief" --duration 5 2>&1 >/dev/null); rc=$?
	assert_released "target gone during pre-flight ($life s)"
	if [ "$rc" = 1 ]; then
		echo "$out" | grep -q "process $brief exited before" || fail "target gone during pre-flight: '$out'"
		seen=1
		break
	fi
	case "$rc:$out" in
	2:*"no process with pid $brief"*) ;; # gone before the plan: longer
	[045]:*) ;;                          # lived past the pre-flight: a run of its own
	*) fail "target gone during pre-flight: exit $rc ($out)" ;;
	esac
done
[ -n "$seen" ] || fail "no target life between 0.1 and 1 s ended during the pre-flight"
