# t_redis.sh — diagnose latency on the clients of a real Redis (Debian 12's redis-server 7.0),
# started as a user would from the package's binary, as the redis user, with a private config in
# this test's directory (127.0.0.1 on a free port, no persistence, not daemonized):
# (a) a client (tests/workloads/resp_client.py: GET at 200 ops/s over one blocking TCP socket)
#     while a second client (redis-cli -r -1) sends back to back a Lua script that keeps Redis's
#     single thread busy on CPU for 100 ms: the first client waits for its answers → its first
#     verdict is `waiting-on-peer`, a warning or worse, naming the peer 127.0.0.1:PORT (the
#     peer_wait probe's address; its p50/p99 in the title); triage on the client names latency,
#     the peer in its `waiting` title. redis-server itself is diagnosed too: its main thread is
#     busy on CPU, so it must not be called idle (its four background threads park all window);
# (b) its healthy control: the same client at the same rate, nothing slow → exit 0, no warning.
# The client waits for its next op in select(), as a client waiting for work does, in both
# cases (a loop paced by nanosleep is latency's `pacing`: t_pacing.sh).
# Nothing stays attached; Redis and its clients are killed on every exit (lib.sh's trap: $PIDS).
. "$(dirname "$0")/lib.sh"

CLIENT="$ROOT/tests/workloads/resp_client.py"
SLOW_MS=100
redis_server redis

# client NAME: starts resp_client.py at 200 GETs a second, waits until it is answered; sets $CPID
client() {
	python3 "$CLIENT" --port "$PORT" --ops-per-s 200 --pace select > "$TMP/client-$1.out" 2> "$TMP/client-$1.err" &
	CPID=$!
	PIDS="$PIDS $CPID"
	for i in $(seq 1 50); do
		grep -q ready "$TMP/client-$1.out" && return 0
		kill -0 "$CPID" 2>/dev/null || fail "$1: resp_client.py exited: $(cat "$TMP/client-$1.err")"
		sleep 0.1
	done
	fail "$1: resp_client.py got no answer from redis-server: $(cat "$TMP/client-$1.err")"
}
# stop_client: SIGTERM to $CPID, so that it prints its summary (ops, p50, p99) to $TMP/client-NAME.err
stop_client() { kill -TERM "$CPID" 2>/dev/null; wait "$CPID" 2>/dev/null; }
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]' 2>/dev/null; }

# (a) Redis busy: a script spinning on CPU for SLOW_MS, sent again as soon as it is answered
BUSY="local t = redis.call('TIME'); local e = t[1] * 1000000 + t[2] + ARGV[1] * 1000
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= e
return 0"
[ "$(rcli EVAL "$BUSY" 0 1)" = 0 ] || fail "the busy script does not run: $(rcli EVAL "$BUSY" 0 1 2>&1)"
# (not through rcli: a function put in the background is a subshell, $! not redis-cli's pid)
redis-cli -h 127.0.0.1 -p "$PORT" -r -1 EVAL "$BUSY" 0 "$SLOW_MS" > /dev/null 2>&1 &
SLOW=$!
PIDS="$PIDS $SLOW"
client waiting
sleep 1 # past its first ops: each one now waits behind a script

"$DIAG" latency --pid "$CPID" --duration 3 --json > "$TMP/waiting.json" 2> "$TMP/waiting.err"; rc=$?
"$DIAG" latency --pid "$SERVER" --duration 3 --json > "$TMP/server.json" 2> "$TMP/server.err"; src=$?
"$DIAG" triage --pid "$CPID" --duration 3 --json > "$TMP/triage.json" 2> "$TMP/triage.err"; trc=$?
stop_client
seen=$(cat "$TMP/client-waiting.err")
[ "$rc" = 4 ] || [ "$rc" = 5 ] ||
	fail "waiting client: exit $rc, want 4 or 5: $(verdicts "$TMP/waiting.json") $(tail -3 "$TMP/waiting.err") ($seen)"
check "$TMP/waiting.json" "r['verdicts'][0]['id'] == 'waiting-on-peer' and r['verdicts'][0]['severity'] in ('warning', 'critical')" \
	"waiting client: verdicts $(verdicts "$TMP/waiting.json") ($seen)"
check "$TMP/waiting.json" "'127.0.0.1:$PORT' in r['verdicts'][0]['title']" \
	"waiting client: the peer 127.0.0.1:$PORT not named: $(verdicts "$TMP/waiting.json") ($seen)"
assert_released "latency on a Redis client waiting for a busy server"
[ "$trc" = 4 ] || [ "$trc" = 5 ] || fail "triage on the waiting client: exit $trc: $(verdicts "$TMP/triage.json") $(tail -3 "$TMP/triage.err")"
check "$TMP/triage.json" "any(x['id'] == 'waiting' and (x.get('next') or {}).get('recipe') == 'latency' and '127.0.0.1:$PORT' in x['title'] for x in r['verdicts'])" \
	"triage on the waiting client: verdicts $(verdicts "$TMP/triage.json")"
case $src in 0 | 4 | 5) ;; *) fail "redis-server: exit $src: $(tail -3 "$TMP/server.err")" ;; esac
assert_shapes "$TMP/server.json"
check "$TMP/server.json" "'idle' not in [x['id'] for x in r['verdicts']]" "redis-server, busy on CPU, called idle: $(verdicts "$TMP/server.json")"
echo "redis-server busy on the script: exit $src, $(verdicts "$TMP/server.json")" >&2
assert_released "latency on a busy redis-server"
kill "$SLOW" 2>/dev/null
wait "$SLOW" 2>/dev/null
for i in $(seq 1 20); do # the script it last sent runs to its end
	[ "$(rcli PING 2>/dev/null)" = PONG ] && break
	sleep 0.1
done

# (b) control: the same client at the same rate, Redis answering at once
client control
sleep 1
"$DIAG" latency --pid "$CPID" --duration 3 --json > "$TMP/control.json" 2> "$TMP/control.err"; rc=$?
stop_client
seen=$(cat "$TMP/client-control.err")
[ "$rc" = 0 ] || fail "control: exit $rc, want 0: $(verdicts "$TMP/control.json") $(tail -3 "$TMP/control.err") ($seen)"
check "$TMP/control.json" "not any(x['severity'] in ('warning', 'critical') for x in r['verdicts'])" \
	"control: a warning: $(verdicts "$TMP/control.json") ($seen)"
assert_released "latency on a Redis client of an idle server"
exit 0
