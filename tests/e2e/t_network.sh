# diagnose network-errors on the real kernel, on a private network the test builds: two network
# namespaces joined by a veth pair (IPv4 10.231.0.0/24 and IPv6 fd00:231::/64), segmentation
# offloads off so that a packet on the wire is one segment, and nftables `numgen random` rules
# for loss (no netem on this kernel). Workloads: tests/workloads/net_peer.c.
# (a) 3% of the segments of a stream dropped at the receiver: with --pid of the sender,
#     `retransmits` names the peer 10.231.0.2:5001 with a share of segments between 1% and 10%;
#     host-wide, also `packet-drops` NETFILTER_DROP on port 5001; the drops are the receiver's
#     socket's (they happen in softirq context): in the receiver's --pid run, not the sender's;
#     with a budget of 50 events/s and degrade: refuse, the pre-flight refuses the run (exit 3).
# (b) its healthy control, the same stream without the rule: --pid gives `ok` only, exit 0, and
#     the ok verdict says segments flowed.
# (c) connects to a closed port over IPv6 (--pid of the client): `connection-refused` naming
#     [fd00:231::2]:5003; over IPv4 host-wide: refused naming 10.231.0.2:5002, resets sent from
#     it, and NO_SOCKET drops.
# (e) a server that aborts each connection it accepts (SO_LINGER 0), over IPv6: with --pid of
#     the client, `connection-reset` names [fd00:231::2]:5005 and nothing else; host-wide, also
#     `resets-sent` from that server port (the flow as the reset's record has it: the aborted
#     socket has given its port back by then).
# (d) a listener with a backlog of 1 that never accepts, flooded with connects: with --pid of the
#     listener, `listen-overflow` names port 5004 (ListenOverflows of its namespace, connections
#     waiting in its accept queue); host-wide, `connect-timeout` names 10.231.0.2:5004 (the SYNs).
# Every run leaves nothing attached; the namespaces, veths and nft tables go with the test.
# KEEP_REPORTS=DIR keeps the JSON reports: tests/fixtures/trimmed/network-errors/ were trimmed from
# them (tests/fixtures/record.sh --trim network-errors/NAME --from DIR/REPORT.json).
. "$(dirname "$0")/lib.sh"

command -v ip >/dev/null || skip "no ip (iproute2): scripts/install-deps.sh"
command -v nft >/dev/null || skip "no nft (nftables): scripts/install-deps.sh"
command -v ethtool >/dev/null || skip "no ethtool: scripts/install-deps.sh"

NA=dgn$$a NB=dgn$$b VA=dgv$$a VB=dgv$$b
cleanup() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	PIDS=""
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null # the veth pair and the nft tables go with the namespaces
	[ -n "${KEEP_REPORTS:-}" ] && cp -r "$TMP/." "$KEEP_REPORTS/"
	rm -rf "$TMP"
}
trap cleanup EXIT

ip netns add "$NA" && ip netns add "$NB" || fail "cannot create network namespaces"
ip link add "$VA" type veth peer name "$VB" || fail "cannot create a veth pair"
ip link set "$VA" netns "$NA" && ip link set "$VB" netns "$NB" || fail "cannot move the veths"
ip -n "$NA" addr add 10.231.0.1/24 dev "$VA" && ip -n "$NB" addr add 10.231.0.2/24 dev "$VB" &&
	ip -n "$NA" addr add fd00:231::1/64 dev "$VA" nodad &&
	ip -n "$NB" addr add fd00:231::2/64 dev "$VB" nodad || fail "cannot address the veths"
for l in "$NA $VA" "$NB $VB"; do set -- $l; ip -n "$1" link set "$2" up; ip -n "$1" link set lo up; done
# One segment per packet on the wire and at the receiver's firewall: a drop loses one segment.
ip netns exec "$NA" ethtool -K "$VA" tso off gso off >/dev/null 2>&1
ip netns exec "$NB" ethtool -K "$VB" gro off >/dev/null 2>&1
inA() { ip netns exec "$NA" "$@"; }
inB() { ip netns exec "$NB" "$@"; }
stop() { for p in "$@"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; }

# run NAME [ARGS...]: diagnose network-errors for 2 s, JSON in $TMP/NAME.json; sets $rc
run() {
	local name=$1
	shift
	"$DIAG" network-errors "$@" --duration 2 --json > "$TMP/$name.json" 2> "$TMP/$name.err"
	rc=$?
	assert_released "network-errors $name"
}
verdicts() { json "$TMP/$1.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]'; }
CHECK_LET='v = {}
for x in r["verdicts"]: v.setdefault(x["id"], x)
ids = [x["id"] for x in r["verdicts"]]'

# ---- (a) 3% loss on a stream --------------------------------------------------------------
inB nft -f - <<'EOF' || fail "cannot install the nft loss rule"
table inet dgnloss {
	chain in {
		type filter hook input priority 0;
		tcp dport 5001 numgen random mod 100 < 3 drop
	}
}
EOF
start ip netns exec "$NB" "$WL/net_peer" recv 10.231.0.2 5001; RECV=$PID
start ip netns exec "$NA" "$WL/net_peer" send 10.231.0.2 5001; SEND=$PID
sleep 0.5
run loss_pid --pid "$SEND"; rc_loss_pid=$rc
run loss_host; rc_loss_host=$rc
run loss_recv --pid "$RECV"; rc_loss_recv=$rc
# The budget pre-flight measures these softirq events too: 50 events/s is under this stream's
# drops and retransmits, and degrade: refuse refuses (exit 3) before anything is collected.
mkdir -p "$TMP/tight/recipes" && ln -s "$ROOT/lua" "$TMP/tight/lua"
sed 's/^  max_events_per_s: .*/  max_events_per_s: 50/; s/^  degrade: sample/  degrade: refuse/' \
	"$ROOT/recipes/network-errors.yaml" > "$TMP/tight/recipes/network-errors.yaml"
"$DIAG" network-errors --recipes "$TMP/tight/recipes" --duration 2 --json > "$TMP/tight.json" 2> "$TMP/tight.err"
rc_tight=$?
assert_released "network-errors over its event budget"
inB nft delete table inet dgnloss || fail "cannot remove the nft loss rule"
sleep 1 # the stream recovers from the loss
run clean_pid --pid "$SEND"; rc_clean_pid=$rc
stop "$SEND" "$RECV"

[ "$rc_loss_pid" = 4 ] || [ "$rc_loss_pid" = 5 ] || fail "loss --pid: exit $rc_loss_pid: $(cat "$TMP/loss_pid.err") $(verdicts loss_pid)"
check "$TMP/loss_pid.json" "ids[0] == 'retransmits' and '10.231.0.2:5001' in v['retransmits']['title']" \
	"loss --pid: verdicts $(verdicts loss_pid)"
check "$TMP/loss_pid.json" "1 <= res['tcp']['flows'][0]['retrans_pct'] <= 10 and res['tcp']['flows'][0]['remote_port'] == 5001" \
	"loss --pid: retransmitted share of the stream's segments not near 3%"
check "$TMP/loss_pid.json" "res['tcp']['ownership']['seeded_flows'] >= 1" "loss --pid: the sender's connection was not found in /proc"
[ "$rc_loss_host" = 4 ] || [ "$rc_loss_host" = 5 ] || fail "loss host-wide: exit $rc_loss_host: $(cat "$TMP/loss_host.err")"
check "$TMP/loss_host.json" "'retransmits' in v and '10.231.0.2:5001' in v['retransmits']['title']" \
	"loss host-wide: no retransmits verdict naming the peer: $(verdicts loss_host)"
check "$TMP/loss_host.json" "any(x['id'] == 'packet-drops' and 'NETFILTER_DROP' in x['title'] and 'port 5001' in x['title'] for x in r['verdicts'])" \
	"loss host-wide: no NETFILTER_DROP verdict on port 5001: $(verdicts loss_host)"
check "$TMP/loss_host.json" "res['drops']['reasons'][0]['reason'] == 'NETFILTER_DROP' and res['drops']['reasons_known']" \
	"loss host-wide: drop reasons not named from BTF"
check "$TMP/loss_host.json" "any('nft_do_chain' in s['kernel'] for s in res['drops']['stacks'] if s.get('tag') == 'NETFILTER_DROP')" \
	"loss host-wide: no sampled kernel stack through nft_do_chain"
# The receiver's view: the drops are its socket's (found in /proc before the run), in softirq
# context; it retransmits nothing.
[ "$rc_loss_recv" = 4 ] || [ "$rc_loss_recv" = 5 ] || fail "loss --pid receiver: exit $rc_loss_recv: $(cat "$TMP/loss_recv.err")"
check "$TMP/loss_recv.json" "ids[0] == 'packet-drops' and 'NETFILTER_DROP' in v['packet-drops']['title'] and 'port 5001' in v['packet-drops']['title'] and 'retransmits' not in v" \
	"loss --pid receiver: verdicts $(verdicts loss_recv)"
check "$TMP/loss_recv.json" "res['drops']['total'] >= 10 and res['drops']['ownership']['not_owned'] < res['drops']['total']" \
	"loss --pid receiver: its drops were not attributed to it"
[ "$rc_tight" = 3 ] || fail "a 50 events/s budget: exit $rc_tight, want 3 (refused): $(cat "$TMP/tight.err")"
grep -q "over budget" "$TMP/tight.err" || fail "a 50 events/s budget: no over-budget message: $(cat "$TMP/tight.err")"
# (b) the healthy control: the same stream, clean
[ "$rc_clean_pid" = 0 ] || fail "clean --pid: exit $rc_clean_pid, want 0: $(cat "$TMP/clean_pid.err") $(verdicts clean_pid)"
check "$TMP/clean_pid.json" "ids == ['ok'] and 'segments sent' in v['ok']['title']" "clean --pid: verdicts $(verdicts clean_pid)"
check "$TMP/clean_pid.json" "res['context']['net']['counters']['Tcp']['OutSegs'] > 1000" "clean --pid: no traffic flowed"

# ---- (c) connects to a closed port ------------------------------------------------------------
start ip netns exec "$NA" "$WL/net_peer" closed fd00:231::2 5003 20; C6=$PID
run closed6_pid --pid "$C6"
[ "$rc" = 4 ] || fail "closed IPv6 --pid: exit $rc: $(cat "$TMP/closed6_pid.err") $(verdicts closed6_pid)"
check "$TMP/closed6_pid.json" "ids[0] == 'connection-refused' and '[fd00:231::2]:5003' in v['connection-refused']['title']" \
	"closed IPv6 --pid: verdicts $(verdicts closed6_pid)"
check "$TMP/closed6_pid.json" "res['tcp']['totals']['refused'] >= 10 and all(f['family'] == 'ipv6' for f in res['tcp']['flows'])" \
	"closed IPv6 --pid: refused connects not counted, or another process's flows counted"
stop "$C6"
start ip netns exec "$NA" "$WL/net_peer" closed 10.231.0.2 5002 20; C4=$PID
run closed4_host
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "closed IPv4 host-wide: exit $rc: $(cat "$TMP/closed4_host.err")"
check "$TMP/closed4_host.json" "'connection-refused' in v and '10.231.0.2:5002' in v['connection-refused']['title']" \
	"closed IPv4 host-wide: verdicts $(verdicts closed4_host)"
check "$TMP/closed4_host.json" "'resets-sent' in v and '10.231.0.2:5002' in v['resets-sent']['title']" \
	"closed IPv4 host-wide: no resets-sent verdict from the closed port: $(verdicts closed4_host)"
check "$TMP/closed4_host.json" "any(x['reason'] == 'NO_SOCKET' for x in res['drops']['reasons'])" \
	"closed IPv4 host-wide: no NO_SOCKET drops"
stop "$C4"

# ---- (e) a server that aborts its connections (SO_LINGER 0: an RST), over IPv6 --------------
start ip netns exec "$NB" "$WL/net_peer" abort fd00:231::2 5005; AB=$PID
start ip netns exec "$NA" "$WL/net_peer" send fd00:231::2 5005; SD=$PID
run abort_pid --pid "$SD"; rc_abort_pid=$rc
run abort_host; rc_abort_host=$rc
stop "$SD" "$AB"
[ "$rc_abort_pid" = 4 ] || fail "abort --pid: exit $rc_abort_pid: $(cat "$TMP/abort_pid.err") $(verdicts abort_pid)"
check "$TMP/abort_pid.json" "ids == ['connection-reset'] and '[fd00:231::2]:5005' in v['connection-reset']['title']" \
	"abort --pid: verdicts $(verdicts abort_pid)"
check "$TMP/abort_pid.json" "res['tcp']['totals']['reset'] >= 5 and res['tcp']['totals']['rst_recv_syn'] == 0" \
	"abort --pid: ECONNRESET not counted, or counted as refused connects"
[ "$rc_abort_host" = 4 ] || fail "abort host-wide: exit $rc_abort_host: $(cat "$TMP/abort_host.err")"
check "$TMP/abort_host.json" "'connection-reset' in v and 'resets-sent' in v and '[fd00:231::2]:5005' in v['resets-sent']['title'] and not any(':0' in x['title'] for x in r['verdicts'])" \
	"abort host-wide: verdicts $(verdicts abort_host)"

# ---- (d) listen backlog overflow ----------------------------------------------------------------
start ip netns exec "$NB" "$WL/net_peer" backlog 10.231.0.2 5004; LST=$PID
start ip netns exec "$NA" "$WL/net_peer" flood 10.231.0.2 5004 50; FLOOD=$PID
sleep 0.5
run backlog_pid --pid "$LST"
[ "$rc" = 4 ] || fail "backlog --pid: exit $rc: $(cat "$TMP/backlog_pid.err") $(verdicts backlog_pid)"
check "$TMP/backlog_pid.json" "'listen-overflow' in v and 'port 5004' in v['listen-overflow']['title']" \
	"backlog --pid: verdicts $(verdicts backlog_pid)"
check "$TMP/backlog_pid.json" "any(l['local_port'] == 5004 and l['accept_queue'] >= 1 for l in res['tcp']['listeners'])" \
	"backlog --pid: the listener's full accept queue is not in the results"
run backlog_host
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "backlog host-wide: exit $rc: $(cat "$TMP/backlog_host.err")"
check "$TMP/backlog_host.json" "'connect-timeout' in v and '10.231.0.2:5004' in v['connect-timeout']['title']" \
	"backlog host-wide: verdicts $(verdicts backlog_host)"
stop "$FLOOD" "$LST"
exit 0
