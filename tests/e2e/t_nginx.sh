# t_nginx.sh — diagnose latency and triage on a real nginx (Debian 12's nginx 1.22) reverse
# proxy, started as a user would from /usr/sbin/nginx: a master and one worker (as www-data) on a
# private config in this test's directory (logs, pid file and every temp path there), listening
# on 127.0.0.1, `proxy_pass` to tests/workloads/slow_upstream.py; tests/workloads/http_load.py
# keeps 8 keep-alive client connections asking, each at most one request per 50 ms:
# (a) the upstream answers 50 ms late → the worker's latency verdicts include `slow-upstream`, a
#     warning or worse, naming 127.0.0.1:UPSTREAM in its title; never `idle`; triage's `waiting`
#     names the same peer and latency as the follow-up;
# (b) its healthy control: the same nginx and the same request rate, the upstream answering at
#     once → no warning.
# The load's own summary is checked first (answers through the proxy, none failed, p50 near the
# upstream's delay), and the worker is the process holding the clients' connections, so that a
# broken harness is not read as a wrong verdict. Nothing stays attached; nginx, the upstream and
# the load are stopped on every exit.
. "$(dirname "$0")/lib.sh"

NGINX=/usr/sbin/nginx
[ -x "$NGINX" ] || skip "nginx is not installed (make deps)"
id www-data >/dev/null 2>&1 || skip "no www-data user (Debian's base-passwd has one)"
command -v pgrep >/dev/null && command -v ss >/dev/null || skip "pgrep (procps) or ss (iproute2) missing"

NG="$TMP/nginx"
mkdir -p "$NG/logs" "$NG/temp"
for t in client_body proxy fastcgi uwsgi scgi; do mkdir -p "$NG/temp/$t"; done
chown -R www-data: "$NG/temp"
chmod 711 "$TMP" "$NG" # the worker (www-data) enters its temp directories, lists nothing
MASTER="" WORKER="" UPSTREAM="" LOAD=""
nginx_stop() {
	[ -n "$MASTER" ] || return 0
	kill -TERM "$MASTER" 2>/dev/null
	for _ in $(seq 30); do kill -0 "$MASTER" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$MASTER" $WORKER 2>/dev/null
	wait "$MASTER" 2>/dev/null
	MASTER=""
}
trap 'nginx_stop; for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

# upstream DELAY_MS [PORT]: (re)starts the upstream, on PORT or a free port; sets $UPPORT
upstream() {
	if [ -n "$UPSTREAM" ]; then kill -9 "$UPSTREAM" 2>/dev/null; wait "$UPSTREAM" 2>/dev/null; fi
	python3 "$ROOT/tests/workloads/slow_upstream.py" --port "${2:-0}" --delay-ms "$1" > "$TMP/upstream.out" 2>&1 &
	UPSTREAM=$!
	PIDS="$PIDS $UPSTREAM"
	# up to 20 s: a loaded CI machine has taken more than 5 s to start Python here
	for _ in $(seq 200); do [ -s "$TMP/upstream.out" ] && break; kill -0 "$UPSTREAM" 2>/dev/null || break; sleep 0.1; done
	UPPORT=$(head -1 "$TMP/upstream.out")
	case $UPPORT in '' | *[!0-9]*) fail "the upstream did not start: $(cat "$TMP/upstream.out")" ;; esac
}
upstream 50

# a free port for nginx (bound, then closed: nothing else here takes it in between)
NGPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$NG/nginx.conf" <<EOF
user www-data;
worker_processes 1;
pid $NG/nginx.pid;
error_log $NG/logs/error.log;
events { worker_connections 256; }
http {
	access_log $NG/logs/access.log;
	client_body_temp_path $NG/temp/client_body;
	proxy_temp_path $NG/temp/proxy;
	fastcgi_temp_path $NG/temp/fastcgi;
	uwsgi_temp_path $NG/temp/uwsgi;
	scgi_temp_path $NG/temp/scgi;
	server {
		listen 127.0.0.1:$NGPORT;
		location / { proxy_pass http://127.0.0.1:$UPPORT; }
	}
}
EOF
"$NGINX" -t -q -p "$NG" -e "$NG/logs/error.log" -c "$NG/nginx.conf" 2> "$NG/t.err" ||
	fail "nginx -t: $(cat "$NG/t.err")"
"$NGINX" -p "$NG" -e "$NG/logs/error.log" -c "$NG/nginx.conf" -g 'daemon off;' > "$NG/stdout" 2>&1 &
MASTER=$!
for _ in $(seq 50); do
	for p in $(pgrep -P "$MASTER" -x nginx); do
		[ "$(tr '\0' '\n' < "/proc/$p/cmdline" 2>/dev/null | head -1)" = "nginx: worker process" ] && WORKER=$p
	done
	[ -n "$WORKER" ] && break
	sleep 0.1
done
[ -n "$WORKER" ] || fail "no nginx worker: $(cat "$NG/stdout" "$NG/logs/error.log" 2>/dev/null | tail -5)"
[ "$(stat -c %U "/proc/$WORKER")" = www-data ] || fail "the worker $WORKER does not run as www-data"

# load: starts the clients, 8 keep-alive connections, one request per 50 ms each at most (the
# request rate of case (a) in both cases); sets $LOAD
load() {
	python3 "$ROOT/tests/workloads/http_load.py" "127.0.0.1:$NGPORT" --conns 8 --pace-ms 50 2> "$TMP/load.err" &
	LOAD=$!
	PIDS="$PIDS $LOAD"
	sleep 1
	kill -0 "$LOAD" 2>/dev/null || fail "http_load did not start: $(cat "$TMP/load.err")"
}
# load_done MIN_P50_MS MAX_P50_MS WHAT: stops the clients; their answers came through the proxy,
# none failed, their median within the bounds; sets $LOAD_SUMMARY
load_done() {
	kill -TERM "$LOAD" 2>/dev/null
	wait "$LOAD" 2>/dev/null
	LOAD_SUMMARY=$(grep '^http_load:' "$TMP/load.err")
	[ -n "$LOAD_SUMMARY" ] || fail "$3: http_load printed no summary: $(tail -3 "$TMP/load.err")"
	set -- "$@" $LOAD_SUMMARY # … http_load: requests N errors E p50_ms X p99_ms Y
	[ "$6" -ge 100 ] && [ "$8" = 0 ] &&
		awk -v p="${10}" -v lo="$1" -v hi="$2" 'BEGIN { exit !(p >= lo && p <= hi) }' ||
		fail "$3: the load through nginx is not what the test needs (p50 within $1..$2 ms, no errors): $LOAD_SUMMARY; $(tail -3 "$NG/logs/error.log")"
}
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]' 2>/dev/null; }

# (a) the upstream answers 50 ms late: the worker waits on it for every request
load
# the worker is the process holding the clients' connections and its own to the upstream
ss -Htnp state established "( sport = :$NGPORT )" | grep -q "pid=$WORKER," ||
	fail "pid $WORKER holds none of the clients' connections: $(ss -Htnp state established "( sport = :$NGPORT )" | head -3)"
ss -Htnp state established "( dport = :$UPPORT )" | grep -q "pid=$WORKER," ||
	fail "pid $WORKER holds no connection to the upstream: $(ss -Htnp "( dport = :$UPPORT )" | head -3)"
"$DIAG" latency --pid "$WORKER" --duration 3 --json > "$TMP/slow.json" 2> "$TMP/slow.err"; slow_rc=$?
assert_released "latency on an nginx worker waiting for a slow upstream"
"$DIAG" triage --pid "$WORKER" --duration 3 --json > "$TMP/triage.json" 2> "$TMP/triage.err"; triage_rc=$?
assert_released "triage on an nginx worker waiting for a slow upstream"
load_done 45 200 "slow upstream"
echo "slow upstream: $LOAD_SUMMARY" >&2

[ "$slow_rc" = 4 ] || [ "$slow_rc" = 5 ] ||
	fail "slow upstream: exit $slow_rc, want 4 or 5: $(verdicts "$TMP/slow.json") $(tail -3 "$TMP/slow.err")"
check "$TMP/slow.json" "any(x['id'] == 'slow-upstream' and x['severity'] in ('warning', 'critical') and '127.0.0.1:$UPPORT' in x['title'] for x in r['verdicts'])" \
	"slow upstream: no slow-upstream warning naming 127.0.0.1:$UPPORT: $(verdicts "$TMP/slow.json")"
check "$TMP/slow.json" "'idle' not in [x['id'] for x in r['verdicts']]" "slow upstream: called idle: $(verdicts "$TMP/slow.json")"
[ "$triage_rc" = 4 ] || [ "$triage_rc" = 5 ] ||
	fail "triage on the slow upstream: exit $triage_rc, want 4 or 5: $(verdicts "$TMP/triage.json") $(tail -3 "$TMP/triage.err")"
check "$TMP/triage.json" "any(x['id'] == 'waiting' and (x.get('next') or {}).get('recipe') == 'latency' and '127.0.0.1:$UPPORT' in x['title'] for x in r['verdicts'])" \
	"triage on the slow upstream: verdicts $(json "$TMP/triage.json" '[(x["id"], x["title"], x.get("next")) for x in r["verdicts"]]')"

# (b) control: the same nginx, the same clients, the upstream (same port) answering at once
upstream 0 "$UPPORT"
load
"$DIAG" latency --pid "$WORKER" --duration 3 --json > "$TMP/fast.json" 2> "$TMP/fast.err"; rc=$?
assert_released "latency on an nginx worker with a fast upstream"
load_done 0 20 "fast upstream"
echo "fast upstream: $LOAD_SUMMARY" >&2
[ "$rc" = 0 ] || fail "fast upstream: exit $rc, want 0: $(verdicts "$TMP/fast.json") $(tail -3 "$TMP/fast.err")"
check "$TMP/fast.json" "not any(x['severity'] in ('warning', 'critical') for x in r['verdicts'])" \
	"fast upstream: a warning: $(verdicts "$TMP/fast.json")"
exit 0
