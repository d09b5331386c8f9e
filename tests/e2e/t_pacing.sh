# t_pacing.sh — a sleep between a client's own requests is pacing, a sleep inside a request is
# latency: latency places each sleep of the target's threads (nanosleep, clock_nanosleep) by what
# the sleeping thread's own last transfer left open (peer_wait's sleeps).
# (a) a Python client pacing its GETs to a healthy Redis (Debian 12's redis-server 7.0) at 10 a
#     second, in clock_nanosleep between them → latency exit 0, `pacing` (info), never `sleeping`;
# (b) Debian's redis-cli pacing its PINGs (-i 0.1: usleep between them) → the same;
# (c) an HTTP server that sleeps 40 ms inside each request (tests/workloads/slow_upstream.py,
#     ThreadingHTTPServer: the handler thread reads the request, sleeps, answers), under paced
#     load → `sleeping` at warning, "inside requests", naming its own service 127.0.0.1:PORT;
# (d) (c)'s control: the same server and load, no sleep → no warning, exit 0;
# (e) the load generator of (c) itself (http_load.py, its threads pacing on a condition variable
#     between requests to the slow server): the slow server named, as the peer it waits on.
# Nothing stays attached; every process is killed on exit (lib.sh's trap: $PIDS).
. "$(dirname "$0")/lib.sh"

CLIENT="$ROOT/tests/workloads/resp_client.py"
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]' 2>/dev/null; }
# latency_of NAME PID: diagnose latency on PID for 3 s into $TMP/NAME.json; sets $rc
latency_of() {
	"$DIAG" latency --pid "$2" --duration 3 --json > "$TMP/$1.json" 2> "$TMP/$1.err"; rc=$?
	assert_released "latency on $1"
}
# paced NAME: the report says pacing (info), not sleeping, and exits 0
paced() {
	control_quiet "$TMP/$1.json" "$rc" || fail "$1: exit $rc, want 0: $(verdicts "$TMP/$1.json") $(tail -3 "$TMP/$1.err") notes $(json "$TMP/$1.json" 'r.get("notes")'), sleeps $(json "$TMP/$1.json" '((r.get("results") or {}).get("peers") or {}).get("sleeps")')"
	check "$TMP/$1.json" "any(x['id'] == 'pacing' and x['severity'] == 'info' for x in r['verdicts']) and 'sleeping' not in [x['id'] for x in r['verdicts']] and res['peers']['sleeps']['between'] > 10" \
		"$1: a paced client not called pacing: $(verdicts "$TMP/$1.json") notes $(json "$TMP/$1.json" 'r.get("notes")'), sleeps $(json "$TMP/$1.json" '((r.get("results") or {}).get("peers") or {}).get("sleeps")')"
}

redis_server redis

# (a) resp_client.py, 10 GETs a second, waiting for each next one in clock_nanosleep
python3 "$CLIENT" --port "$PORT" --ops-per-s 10 --pace sleep > "$TMP/py.out" 2> "$TMP/py.err" &
PY=$!
PIDS="$PIDS $PY"
for i in $(seq 1 50); do grep -q ready "$TMP/py.out" && break; sleep 0.1; done
grep -q ready "$TMP/py.out" || fail "(a) resp_client.py got no answer: $(cat "$TMP/py.err")"
latency_of py-paced "$PY"
paced py-paced

# (b) redis-cli -i 0.1: a PING every 100 ms, forever
redis-cli -h 127.0.0.1 -p "$PORT" -r -1 -i 0.1 PING > /dev/null 2>&1 &
CLI=$!
PIDS="$PIDS $CLI"
sleep 0.5
kill -0 "$CLI" 2>/dev/null || fail "(b) redis-cli exited"
latency_of cli-paced "$CLI"
paced cli-paced
kill "$PY" "$CLI" 2>/dev/null

# upstream NAME DELAY_MS: slow_upstream.py answering each GET after DELAY_MS, under http_load.py's
# 4 connections, each starting a request every 100 ms; sets $UP, $UPPORT, $LOAD
upstream() {
	python3 "$ROOT/tests/workloads/slow_upstream.py" --delay-ms "$2" > "$TMP/$1.port" 2> "$TMP/$1.err" &
	UP=$!
	PIDS="$PIDS $UP"
	for i in $(seq 1 50); do [ -s "$TMP/$1.port" ] && break; sleep 0.1; done
	UPPORT=$(head -1 "$TMP/$1.port")
	[ -n "$UPPORT" ] || fail "$1: slow_upstream.py did not start: $(cat "$TMP/$1.err")"
	python3 "$ROOT/tests/workloads/http_load.py" "127.0.0.1:$UPPORT" --conns 4 --pace-ms 100 2> "$TMP/$1.load" &
	LOAD=$!
	PIDS="$PIDS $LOAD"
	sleep 1
}

# (c) the server sleeps 40 ms inside each request
upstream sleepy 40
latency_of server-sleeps "$UP"
src=$rc
latency_of load-paced "$LOAD"
kill "$LOAD" "$UP" 2>/dev/null
[ "$src" = 4 ] || [ "$src" = 5 ] || fail "(c) a server sleeping inside its requests: exit $src, want 4 or 5: $(verdicts "$TMP/server-sleeps.json") $(tail -3 "$TMP/server-sleeps.err")"
check "$TMP/server-sleeps.json" "any(x['id'] == 'sleeping' and x['severity'] == 'warning' and 'inside requests' in x['title'] and '127.0.0.1:$UPPORT' in x['title'] for x in r['verdicts'])" \
	"(c) a server sleeping inside its requests not named: $(verdicts "$TMP/server-sleeps.json") $(json "$TMP/server-sleeps.json" 'r["results"].get("peers", {}).get("sleeps")')"
# (e) its load generator: its waits on the slow server's answers
check "$TMP/load-paced.json" "'sleeping' not in [x['id'] for x in r['verdicts']] and any(x['id'] in ('waiting-on-peer', 'slow-upstream') and x['severity'] in ('warning', 'critical') and '127.0.0.1:$UPPORT' in x['title'] for x in r['verdicts'])" \
	"(e) the load generator: $(verdicts "$TMP/load-paced.json") $(json "$TMP/load-paced.json" 'r["results"].get("peers", {}).get("sleeps")')"

# (d) control: the same server and load, answering at once
upstream prompt 0
latency_of server-prompt "$UP"
kill "$LOAD" "$UP" 2>/dev/null
control_quiet "$TMP/server-prompt.json" "$rc" || fail "(d) control: exit $rc, want 0: $(verdicts "$TMP/server-prompt.json") $(tail -3 "$TMP/server-prompt.err")"
check "$TMP/server-prompt.json" "not any(x['severity'] in ('warning', 'critical') and x['id'] != 'cpu-starved' for x in r['verdicts'])" \
	"(d) control: a warning: $(verdicts "$TMP/server-prompt.json")"
exit 0
