# diagnose latency on a slow resolver: resolver_client resolves its backend's name with
# getaddrinfo in connect_backend() on every request, in its own mount namespace whose
# /etc/resolv.conf names a local DNS stub (tests/workloads/dns_stub.py on 127.0.0.2:53) that
# answers 200 ms late → `slow-name-resolution` first, naming the host and getaddrinfo (and so with
# the programs for kernels without BPF cookies: an entry program per function); its
# control, the same client with the stub answering at once → no slow-name-resolution and no
# warning (but CPU starvation, which a machine busy with other jobs makes true). Nothing stays
# attached.
. "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null || skip "unshare (util-linux) missing"
printf 'nameserver 127.0.0.2\noptions timeout:5 attempts:1\n' > "$TMP/resolv.conf"

client() { # client DELAY_MS: starts the stub and the client; sets $PID (the client)
	python3 "$ROOT/tests/workloads/dns_stub.py" 127.0.0.2 "$1" > "$TMP/stub.out" 2>&1 &
	PIDS="$PIDS $!"
	for _ in $(seq 50); do grep -q ready "$TMP/stub.out" && break; sleep 0.1; done
	grep -q ready "$TMP/stub.out" || fail "DNS stub did not start: $(cat "$TMP/stub.out")"
	unshare -m sh -c "mount --bind '$TMP/resolv.conf' /etc/resolv.conf && exec '$WL/resolver_client' backend.diagnose.test" &
	PID=$!
	PIDS="$PIDS $PID"
	sleep 1
	kill -0 "$PID" 2>/dev/null || fail "resolver_client did not start"
}
stop_all() { for p in $PIDS; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; PIDS=; }

client 200
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/slow.json" 2> "$TMP/slow.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "slow resolver: exit $rc: $(cat "$TMP/slow.err")"
check "$TMP/slow.json" "r['verdicts'][0]['id'] == 'slow-name-resolution' and 'backend.diagnose.test' in r['verdicts'][0]['title'] and any('getaddrinfo(\"backend.diagnose.test\")' in e for e in r['verdicts'][0]['evidence'])" \
	"slow resolver: verdicts $(json "$TMP/slow.json" '[(x["id"], x["title"], x["evidence"]) for x in r["verdicts"]]')"
check "$TMP/slow.json" "res['lookups']['max_ns'] >= 150e6 and res['lookups']['lookups'][0]['function'] == 'getaddrinfo'" "lookup times"
assert_released "latency on a slow resolver"
# The same with the programs for kernels without BPF cookies (before 5.15: an entry program per
# resolver function, tests/e2e/t_compat.sh): the same verdict and function.
DIAGNOSE_TEST_COMPAT_PROGRAMS=1 "$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/slow-compat.json" 2> "$TMP/slow-compat.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "slow resolver, per-function entries: exit $rc: $(cat "$TMP/slow-compat.err")"
check "$TMP/slow-compat.json" "r['verdicts'][0]['id'] == 'slow-name-resolution' and 'backend.diagnose.test' in r['verdicts'][0]['title'] and res['lookups']['lookups'][0]['function'] == 'getaddrinfo'" \
	"slow resolver, per-function entries: verdicts $(json "$TMP/slow-compat.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
assert_released "latency on a slow resolver, per-function entries"
stop_all

client 0
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/fast.json" 2> "$TMP/fast.err"; rc=$?
# exit 0, but for CPU starvation when the machine is busy with other jobs (a true finding then)
[ "$rc" = 0 ] || [ "$(json "$TMP/fast.json" 'all(x["id"] in ("ok", "idle", "cpu-starved") for x in r["verdicts"])')" = True ] ||
	fail "fast resolver: exit $rc, want 0: $(json "$TMP/fast.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]')"
check "$TMP/fast.json" "'slow-name-resolution' not in [x['id'] for x in r['verdicts']] and res['lookups']['count'] > 10" \
	"fast resolver: $(json "$TMP/fast.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
assert_released "latency on a fast resolver"
exit 0
