# diagnose triage on the real kernel: each workload of a known symptom must make the first
# verdict name that symptom's recipe, with the exact command and a machine-readable `next`:
# (a) a CPU burner (cpu_burner) → high-cpu (cpu-bound; on this shared machine the burner may also
#     wait for a CPU: either way the recipe named is high-cpu);
# (b) lock contention (lock_contention 4) → latency;
# (c) a leak (mem_leaker leak, 1 MiB/s) → memory-growth; an fsync-per-write journal on the disk
#     (io_load journal, and Debian's dd with oflag=dsync) → io-saturation, even on a disk fast
#     enough that each sync is under off_cpu's min_block_us; its control, the same lines without
#     fsync (io_load logger) → no disk wait named; a paced TCP stream losing 3% of its segments over a
#     veth pair between two namespaces of the test's own (nftables) → network-errors;
# (d) an idle thread pool (idle_pool) → idle (info), no follow-up, exit 0; (d2) a paced
#     python3 loop (Debian's interpreter) → its sleeps info, no warning, exit 0;
# (e) --follow on the lock contention: the chain runs triage then latency, whose verdict is
#     lock-contention; the chain in JSON names both stages with their stop reasons;
# (f) production: every recipe of the declared chain approved but latency → refused (exit 3)
#     before anything runs, naming latency and the verdict that leads to it; the dry run marks
#     it; once approved, the chain runs;
# (g) bounds: a triage whose max_chain_depth is 0 (a copy) names the follow-up but does not run it;
# and the dry run of --follow lists the chain it could take;
# (h) a two-stage chain whose second stage times (func_latency) the function the first found
# hottest, through next: with ${verdict.function}; lint refusing a loop and an unknown parameter.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"

D=3 # seconds of triage: enough for an RSS slope and the breakdown
CHECK_LET='v = r["verdicts"]; first = v[0]'

# triage NAME: runs triage --json on $PID into $TMP/NAME.json; sets rc
triage() {
	"$DIAG" triage --pid "$PID" --duration "$D" --json > "$TMP/$1.json" 2> "$TMP/$1.err"; rc=$?
}
last_action() { python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["action"])' "$DIAGNOSE_AUDIT_FILE"; }
verdicts() { json "$TMP/$1.json" '[(x["id"], x["severity"], x.get("next", {}).get("recipe")) for x in r["verdicts"]]'; }

# (a) CPU-bound
start "$WL/cpu_burner" 60
triage cpu
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "cpu: exit $rc, want 4 or 5: $(cat "$TMP/cpu.err")"
check "$TMP/cpu.json" "first['next']['recipe'] == 'high-cpu' and first['id'] in ('cpu-bound', 'cpu-starved')" \
	"cpu: verdicts $(verdicts cpu)"
check "$TMP/cpu.json" "first['next_steps'][0] == 'Run next: diagnose high-cpu --pid %d' % r['target']['pid']" \
	"cpu: no exact command first: $(json "$TMP/cpu.json" 'r["verdicts"][0]["next_steps"]')"
check "$TMP/cpu.json" "'compute_checksum()' in ' '.join(first['evidence']) or first['id'] == 'cpu-starved'" \
	"cpu: the hottest function is not named: $(json "$TMP/cpu.json" 'r["verdicts"][0]["evidence"]')"
assert_released "triage on a CPU burner"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# (b) lock contention
start "$WL/lock_contention" 4
triage lock
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "lock: exit $rc: $(cat "$TMP/lock.err")"
check "$TMP/lock.json" "first['id'] == 'waiting' and first['next'] == {'recipe': 'latency', 'params': {}} and 'locks' in ' '.join(first['evidence'])" \
	"lock: verdicts $(verdicts lock)"
assert_released "triage on lock contention"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# (c) a leak
start "$WL/mem_leaker" leak 1024
sleep 0.5 # past its start-up
triage leak
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "leak: exit $rc: $(cat "$TMP/leak.err")"
check "$TMP/leak.json" "first['id'] == 'memory-growing' and first['next']['recipe'] == 'memory-growth'" \
	"leak: verdicts $(verdicts leak)"
check "$TMP/leak.json" "res['context']['memory']['rss_delta_bytes'] >= 1 << 20" "leak: RSS did not grow by 1 MiB"
assert_released "triage on a leak"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# (c2) an fsync-per-write journal on the VM's disk (/var/tmp: a block device, not tmpfs)
JOURNAL=/var/tmp/diag-triage-journal.$$
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -f "$JOURNAL"; rm -rf "$TMP"' EXIT
start "$WL/io_load" journal "$JOURNAL"
triage journal
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "journal: exit $rc: $(verdicts journal) $(cat "$TMP/journal.err")"
check "$TMP/journal.json" "first['id'] == 'io-wait' and first['next']['recipe'] == 'io-saturation'" \
	"journal: verdicts $(verdicts journal)"
assert_released "triage on an fsync journal"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
rm -f "$JOURNAL"
# ... the same from a real program: Debian's dd writing with O_DSYNC (each 4 KiB block synced)
start dd if=/dev/zero of="$JOURNAL" bs=4k count=400000 oflag=dsync status=none
triage dsync
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "dd oflag=dsync: exit $rc: $(verdicts dsync) $(cat "$TMP/dsync.err")"
check "$TMP/dsync.json" "first['id'] == 'io-wait' and first['next']['recipe'] == 'io-saturation'" \
	"dd oflag=dsync: verdicts $(verdicts dsync)"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
rm -f "$JOURNAL"
# ... and its control: the same journal's lines written without fsync → no disk wait named
start "$WL/io_load" logger "$JOURNAL"
triage logger
control_quiet "$TMP/logger.json" "$rc" || fail "logger (no fsync): exit $rc: $(verdicts logger)"
check "$TMP/logger.json" "not any(x['id'] == 'io-wait' and x['severity'] in ('warning', 'critical') for x in v)" \
	"logger (no fsync): a disk wait named: $(verdicts logger)"
assert_released "triage on a logger without fsync"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
rm -f "$JOURNAL"

# (c3) drops over veth: a paced stream (net_peer send, 8 MiB/s) between two namespaces of our
# own, 3% of its segments dropped by nftables at the receiver → network-errors, ahead of the
# sender's pacing sleeps
if command -v ip >/dev/null && command -v nft >/dev/null && command -v ethtool >/dev/null; then
	NA=dgt$$a NB=dgt$$b VA=dgu$$a VB=dgu$$b
	trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -f "$JOURNAL"; ip netns del "$NA" 2>/dev/null; ip netns del "$NB" 2>/dev/null; rm -rf "$TMP"' EXIT
	ip netns add "$NA" && ip netns add "$NB" || fail "cannot create network namespaces"
	ip link add "$VA" type veth peer name "$VB" || fail "cannot create a veth pair"
	ip link set "$VA" netns "$NA" && ip link set "$VB" netns "$NB" || fail "cannot move the veths"
	ip -n "$NA" addr add 10.232.0.1/24 dev "$VA" && ip -n "$NB" addr add 10.232.0.2/24 dev "$VB" ||
		fail "cannot address the veths"
	for l in "$NA $VA" "$NB $VB"; do set -- $l; ip -n "$1" link set "$2" up; ip -n "$1" link set lo up; done
	ip netns exec "$NA" ethtool -K "$VA" tso off gso off >/dev/null 2>&1
	ip netns exec "$NB" ethtool -K "$VB" gro off >/dev/null 2>&1
	printf 'table inet dgtloss {\n chain in {\n  type filter hook input priority 0;\n  tcp dport 5001 numgen random mod 100 < 3 drop\n }\n}\n' |
		ip netns exec "$NB" nft -f - || fail "cannot install the nft loss rule"
	start ip netns exec "$NB" "$WL/net_peer" recv 10.232.0.2 5001; RECV=$PID
	start ip netns exec "$NA" "$WL/net_peer" send 10.232.0.2 5001; SEND=$PID
	sleep 0.5
	PID=$SEND
	triage net
	[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "net: exit $rc: $(cat "$TMP/net.err")"
	check "$TMP/net.json" "first['id'] == 'network-errors' and first['next']['recipe'] == 'network-errors' and 'TCP retransmits' in ' '.join(first['evidence'])" \
		"net: verdicts $(verdicts net)"
	assert_released "triage on a lossy stream"
	for p in "$SEND" "$RECV"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	ip netns del "$NA"; ip netns del "$NB"
else
	echo "t_triage: no ip, nft or ethtool: the network case is skipped" >&2
fi

# (d) idle
start "$WL/idle_pool" 4
triage idle
[ "$rc" = 0 ] || fail "idle: exit $rc, want 0: $(verdicts idle) $(cat "$TMP/idle.err")"
# (the host's own pressure, from others' work on a shared machine, may add info verdicts after it)
check "$TMP/idle.json" "first['id'] == 'idle' and all(x['severity'] in ('ok', 'info') for x in v) and 'next' not in first" \
	"idle: verdicts $(verdicts idle)"
# --follow on it runs nothing more
"$DIAG" triage --pid "$PID" --duration 2 --follow --json > "$TMP/idle-chain.json" 2> "$TMP/idle-chain.err"; rc=$?
[ "$rc" = 0 ] || fail "idle --follow: exit $rc: $(cat "$TMP/idle-chain.err")"
[ "$(json "$TMP/idle-chain.json" 'len(r["chain"]["stages"])')" = 1 ] || fail "idle --follow ran more than triage"
assert_released "triage on an idle pool"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# (d2) a paced loop on Debian's python3 (time.sleep(0.001) forever: ~1,000 sleeps a second, by
# design): the sleeps are said (info, latency as the way to look), no warning, exit 0
start python3 -c 'import time
while True: time.sleep(0.001)'
triage paced
[ "$rc" = 0 ] || fail "paced: exit $rc, want 0: $(verdicts paced) $(cat "$TMP/paced.err")"
check "$TMP/paced.json" "any(x['id'] == 'waiting' and x['severity'] == 'info' and 'sleeps' in x['title'] and x['next']['recipe'] == 'latency' for x in v) and all(x['severity'] in ('ok', 'info') for x in v)" \
	"paced: verdicts $(verdicts paced)"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# (e) --follow: triage → latency, in one invocation; text and JSON
start "$WL/lock_contention" 4
"$DIAG" triage --pid "$PID" --duration "$D" --follow --json --output "$TMP/chain-copy.json" > "$TMP/chain.json" 2> "$TMP/chain.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "--follow: exit $rc: $(cat "$TMP/chain.err")"
json "$TMP/chain.json" 'r["chain"]' > /dev/null || fail "--follow: no chain in the JSON"
got=$(json "$TMP/chain.json" '" ".join("%s:%s:%s" % (s["recipe"], s["stop_reason"], s.get("followed", {}).get("recipe", "-")) for s in r["chain"]["stages"])')
[ "$got" = "triage:duration:latency latency:duration:-" ] ||
	fail "--follow: stages $got; ended: $(json "$TMP/chain.json" 'r["chain"]["ended"]'); triage: $(json "$TMP/chain.json" '[(x["id"], x["severity"]) for x in r["chain"]["stages"][0]["report"]["verdicts"]]')"
[ "$(json "$TMP/chain.json" 'r["chain"]["stages"][1]["report"]["verdicts"][0]["id"]')" = lock-contention ] ||
	fail "--follow: latency's verdicts $(json "$TMP/chain.json" '[x["id"] for x in r["chain"]["stages"][1]["report"]["verdicts"]]')"
[ "$(json "$TMP/chain.json" 'r["chain"]["exit_code"]')" = "$rc" ] || fail "--follow: exit code not the chain's"
[ "$(json "$TMP/chain.json" 'r["chain"]["max_depth"]')" = 1 ] || fail "--follow: max_depth"
cmp -s "$TMP/chain.json" "$TMP/chain-copy.json" || fail "--follow: --output differs from stdout"
# each stage is audited as its own run
[ "$(grep -c '"action":"start"' "$DIAGNOSE_AUDIT_FILE")" -ge 2 ] || fail "--follow: stages not audited"
# text: its --output JSON (the same run) says what the text must show; which symptom a second run
# follows was asserted above (one run's window is not the next one's on a loaded machine)
"$DIAG" triage --pid "$PID" --duration "$D" --follow --output "$TMP/chain-text.json" > "$TMP/chain.txt" 2> "$TMP/chain-text.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "--follow (text): exit $rc: $(cat "$TMP/chain-text.err")"
[ "$(json "$TMP/chain-text.json" 'r["chain"]["exit_code"]')" = "$rc" ] || fail "--follow (text): exit code not the chain's"
second=$(json "$TMP/chain-text.json" 'r["chain"]["stages"][1]["recipe"]') ||
	fail "--follow (text): one stage, ended: $(json "$TMP/chain-text.json" 'r["chain"]["ended"]'); triage: $(json "$TMP/chain-text.json" '[(x["id"], x["severity"]) for x in r["chain"]["stages"][0]["report"]["verdicts"]]')"
grep -q "^=== stage 1 of 2: triage ===" "$TMP/chain.txt" || fail "--follow (text): no stage 1 heading: $(grep '^===' "$TMP/chain.txt")"
grep -q "^=== stage 2 of 2: $second ===" "$TMP/chain.txt" || fail "--follow (text): no stage 2 heading for $second: $(grep '^===' "$TMP/chain.txt")"
grep -q "^  1\. triage  exit [45], stop: duration, worst: .* → follows [a-z-]*: $second" "$TMP/chain.txt" ||
	fail "--follow (text): chain summary: $(tail -5 "$TMP/chain.txt")"
grep -q "^  2\. $second  exit [0-9], stop: " "$TMP/chain.txt" || fail "--follow (text): no stage 2 summary: $(tail -5 "$TMP/chain.txt")"
assert_released "triage --follow"

# the dry run shows the chain it could take (declared in next:)
"$DIAG" triage --pid "$PID" --follow --dry-run > "$TMP/dry.txt" 2> "$TMP/dry.err"; rc=$?
[ "$rc" = 0 ] || fail "--follow --dry-run: exit $rc: $(cat "$TMP/dry.err")"
grep -q "^  stage 2: triage → latency on verdict waiting$" "$TMP/dry.txt" || fail "--follow --dry-run: no chain: $(tail -10 "$TMP/dry.txt")"
"$DIAG" triage --pid "$PID" --follow --dry-run --json > "$TMP/dry.json" 2> "$TMP/dry.err" || fail "--follow --dry-run --json"
[ "$(json "$TMP/dry.json" 'sorted(set(x["recipe"] for x in r["plan"]["chain"]))')" = \
	"['high-cpu', 'io-saturation', 'latency', 'memory-growth', 'network-errors']" ] || fail "--follow --dry-run --json: chain"
assert_released "triage --follow --dry-run"
# host-wide: whatever this shared machine shows, a chain without --pid never runs a follow-up
# that needs one (high-cpu, latency, memory-growth): it ends saying so, or runs io-saturation or
# network-errors host-wide
"$DIAG" triage --duration 2 --follow --json > "$TMP/host.json" 2> "$TMP/host.err"; rc=$?
case $rc in 0|4|5) ;; *) fail "host-wide --follow: exit $rc: $(cat "$TMP/host.err")" ;; esac
got=$(json "$TMP/host.json" '" ".join(s["recipe"] for s in r["chain"]["stages"][1:]) or "-"')
case $got in -|io-saturation|network-errors) ;; *) fail "host-wide --follow ran $got" ;; esac
assert_released "host-wide triage --follow"
# flags that cannot chain
"$DIAG" triage --pid "$PID" --follow --folded "$TMP/x.folded" > /dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || fail "--follow --folded: exit $rc, want 2"

# (g) a chain bounded at depth 0 (and no next: declared): the verdict's follow-up is named, not run
mkdir -p "$TMP/d0/recipes"
cp -r "$ROOT/lua" "$TMP/d0/"
python3 -c 'import re, sys
s = open(sys.argv[1]).read().replace("  max_chain_depth: 1\n", "  max_chain_depth: 0\n")
open(sys.argv[2], "w").write(re.sub(r"\nnext:\n(  - .*\n)+", "\n", s))' "$ROOT/recipes/triage.yaml" "$TMP/d0/recipes/triage.yaml"
"$DIAG" lint "$TMP/d0/recipes/triage.yaml" > /dev/null 2>&1 || fail "depth 0: the copy does not lint: $("$DIAG" lint "$TMP/d0/recipes/triage.yaml" 2>&1)"
"$DIAG" triage --recipes "$TMP/d0/recipes" --pid "$PID" --duration 2 --follow --json > "$TMP/d0.json" 2> "$TMP/d0.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "depth 0: exit $rc: $(cat "$TMP/d0.err")"
got=$(json "$TMP/d0.json" '"%d %s %s" % (len(r["chain"]["stages"]), r["chain"]["stages"][0]["followed"]["ran"], "does not chain" in r["chain"]["ended"])')
[ "$got" = "1 False True" ] || fail "depth 0: $got ($(json "$TMP/d0.json" 'r["chain"]["ended"]'))"

# (f) production: the follow-up must be approved too
trust_root "$TMP/p" # an install: its recipes are the trust root of its binary, $PDIAG
BUILT=$DIAG DIAG=$PDIAG
# every recipe of the chain it could take approved but latency: refused before anything runs
"$DIAG" approve triage high-cpu memory-growth io-saturation network-errors --recipes "$P/recipes" --by e2e > /dev/null ||
	fail "approve"
printf 'mode: production\naudit_file: %s\n' "$DIAGNOSE_AUDIT_FILE" > "$TMP/policy.yaml"
DIAGNOSE_POLICY="$TMP/policy.yaml" "$DIAG" triage --recipes "$P/recipes" --pid "$PID" --duration 2 --follow --json \
	> "$TMP/prod.json" 2> "$TMP/prod.err"; rc=$?
[ "$rc" = 3 ] || fail "production, unapproved follow-up: exit $rc, want 3: $(cat "$TMP/prod.err")"
grep -q "chain stage 2, latency (next of triage's verdict waiting), is not approved" "$TMP/prod.err" ||
	fail "production: the refusal does not name latency: $(cat "$TMP/prod.err")"
got=$(json "$TMP/prod.json" '" ".join("%s:%s" % (s["recipe"], s["stop_reason"]) for s in r["chain"]["stages"])')
[ "$got" = "triage:refused" ] || fail "production: stages $got (refused before triage ran)"
[ "$(last_action)" = refused ] || fail "production: the refusal is not audited"
# the dry run says which stage is not approved
DIAGNOSE_POLICY="$TMP/policy.yaml" "$DIAG" triage --recipes "$P/recipes" --pid "$PID" --follow --dry-run \
	> "$TMP/prod-dry.txt" 2> "$TMP/prod-dry.err"; rc=$?
[ "$rc" = 0 ] || fail "production dry run: exit $rc: $(cat "$TMP/prod-dry.err")"
grep -q "triage → latency on verdict waiting  (NOT approved" "$TMP/prod-dry.txt" || fail "production dry run: $(tail -9 "$TMP/prod-dry.txt")"
# approved, the chain runs
"$DIAG" approve latency --recipes "$P/recipes" --by e2e > /dev/null || fail "approve latency"
DIAGNOSE_POLICY="$TMP/policy.yaml" "$DIAG" triage --recipes "$P/recipes" --pid "$PID" --duration "$D" --follow --json \
	> "$TMP/prod2.json" 2> "$TMP/prod2.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "production, all approved: exit $rc: $(cat "$TMP/prod2.err")"
# the chain ran its follow-up (which symptom a third run follows is (e)'s question, not this one's)
got=$(json "$TMP/prod2.json" '"%d %s" % (len(r["chain"]["stages"]), r["chain"]["stages"][0].get("followed", {}).get("recipe") == r["chain"]["stages"][-1]["recipe"])')
[ "$got" = "2 True" ] ||
	fail "production, all approved: $got: stages $(json "$TMP/prod2.json" '[(s["recipe"], s["stop_reason"]) for s in r["chain"]["stages"]]'), ended: $(json "$TMP/prod2.json" 'r["chain"]["ended"]')"
assert_released "production triage --follow"
DIAG=$BUILT
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# (h) a two-stage chain whose second stage uses a symbol the first found: "hot" names the hottest
# user function of the CPU burner (its verdict's next.params.function), its next: runs
# "func-timing" with function=${verdict.function}: func_latency on that symbol.
S="$TMP/sym"
mkdir -p "$S/recipes" "$S/lua/lib"
cp "$ROOT/lua/lib/diag.lua" "$S/lua/lib/"
cat > "$S/recipes/hot.yaml" <<'EOF'
name: hot
symptom: test
summary: the hottest user function, then how long its calls take
lua: hot.lua
target: pid
duration_s: 2
budgets: { max_duration_s: 10, max_sample_hz: 99, max_cpu_pct: 20, max_map_bytes: 67108864, max_chain_depth: 1, max_chain_duration_s: 30 }
probes:
  - { id: profile, kind: cpu_profile, filters: { pid: target }, options: { frequency_hz: 99 } }
next:
  - { verdict: hot-function, recipe: func-timing, params: [ "function=${verdict.function}" ] }
EOF
cat > "$S/lua/hot.lua" <<'EOF'
local by, exe = {}, diag.get(run, "target", "exe")
for _, s in ipairs(results.profile.stacks or {}) do
  local f = s.user and s.user[1]
  if diag.symbolized(f) then diag.add(by, f, s.weight) end
end
local top = diag.ranked(by, 1)[1]
if not top or not exe then return { verdicts = { diag.verdict("none", "info", "no hot function", {}, {}) } } end
local v = diag.verdict("hot-function", "warning", "hottest: " .. top.name, {}, {})
v.next = { recipe = "func-timing", params = { ["function"] = exe .. ":" .. top.name } }
return { verdicts = { v } }
EOF
cat > "$S/recipes/func-timing.yaml" <<'EOF'
name: func-timing
symptom: test
summary: how long one function's calls take
lua: func-timing.lua
target: pid
duration_s: 2
params:
  - { name: function, type: symbol }
budgets: { max_duration_s: 10, max_sample_hz: 0, max_cpu_pct: 20, max_map_bytes: 67108864 }
probes:
  - { id: calls, kind: func_latency, filters: { pid: target }, options: { function: "${function}" } }
EOF
cat > "$S/lua/func-timing.lua" <<'EOF'
local n = results.calls.count or 0
return { verdicts = { diag.verdict("timed", n > 0 and "warning" or "info", string.format("%d calls timed", n), {}, {}) } }
EOF
# (lint plans a recipe without parameters: func-timing alone needs its required one)
"$DIAG" lint "$S/recipes/hot.yaml" > "$TMP/sym-lint.txt" 2>&1 || fail "symbol chain: lint: $(cat "$TMP/sym-lint.txt")"
start "$WL/cpu_burner" 60
"$DIAG" hot --recipes "$S/recipes" --pid "$PID" --follow --json > "$TMP/sym.json" 2> "$TMP/sym.err"; rc=$?
[ "$rc" = 4 ] || fail "symbol chain: exit $rc: $(cat "$TMP/sym.err")"
got=$(json "$TMP/sym.json" '" ".join(s["recipe"] for s in r["chain"]["stages"])')
[ "$got" = "hot func-timing" ] || fail "symbol chain: stages $got: $(json "$TMP/sym.json" 'r["chain"]["ended"]')"
[ "$(json "$TMP/sym.json" 'r["chain"]["stages"][0]["followed"]["params"]')" = "['function=$WL/cpu_burner:compute_checksum']" ] ||
	fail "symbol chain: params $(json "$TMP/sym.json" 'r["chain"]["stages"][0]["followed"]["params"]')"
check_stage2='r["chain"]["stages"][1]["report"]["results"]["calls"]'
[ "$(json "$TMP/sym.json" "$check_stage2[\"function\"]")" = "$WL/cpu_burner:compute_checksum" ] || fail "symbol chain: stage 2 timed another function"
[ "$(json "$TMP/sym.json" "$check_stage2[\"count\"] > 0")" = True ] || fail "symbol chain: no call timed"
# a lint of a chain that would loop, and of a follow-up given a parameter it does not have
sed -e 's/recipe: func-timing, params: \[ "function=${verdict.function}" \]/recipe: loop/' \
	-e 's/^name: hot$/name: loop/' "$S/recipes/hot.yaml" > "$S/recipes/loop.yaml"
out=$("$DIAG" lint "$S/recipes/loop.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "loop runs again within max_chain_depth 1 (a cycle: loop → loop)" || fail "lint of a loop: $rc $out"
rm "$S/recipes/loop.yaml"
sed -e 's/function=${verdict.function}/colour=${verdict.function}/' -e 's/^name: hot$/name: badparam/' "$S/recipes/hot.yaml" > "$S/recipes/badparam.yaml"
out=$("$DIAG" lint "$S/recipes/badparam.yaml" 2>&1); rc=$?
[ "$rc" = 2 ] && echo "$out" | grep -q "next\[0\].params\[0\]: func-timing has no parameter colour" || fail "lint of a bad parameter: $rc $out"
assert_released "a chain through a symbol"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
exit 0
