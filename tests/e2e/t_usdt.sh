# t_usdt.sh — the usdt probe kind on a program whose probes and their arguments are known
# (tests/unit/fixtures/usdt_app.c, gcc -O2: app:request__start(kind, name) → work →
# app:request__done(kind), kind 3 four times as long, both behind semaphores; in the library it
# links, libusdtapp.so: app:tick(counter), app:config(app_limit), a variable read through %rip):
# (a) request__start timed to request__done, keyed by arg0: the four kinds, kind 3 about four
#     times kind 0; the semaphore raised while attached, lowered after (read in the process's
#     memory), so the program skips its probe code again;
# (b) keyed by str:arg1 (an element of an array, "8@(%rax,%rdx,8)"): the kinds' names;
# (c) app:config keyed by arg0 (a variable of the library through %rip, where the target loaded
#     it: lib:libusdtapp): 4242; app:tick counted (the library named by its path);
# (d) missing_ok on a probe the binary lacks: available false, its reason; without missing_ok, exit 2
#     naming show --usdt; lib:NAME of a library the target does not map: exit 2;
# (e) show --usdt lists the probes, their semaphores and arguments; lint refuses a recipe naming a
#     probe its binary (an absolute path here) lacks, with the file, line and probe.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"

APP="$ROOT/$BUILD/fixtures/usdt_app"
[ -x "$APP" ] || fail "$APP missing: run make check-build"
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

# semaphore NAME: the value of the program's semaphore NAME in process $PID's memory
semaphore() {
	python3 - "$PID" "$APP" "$(nm -P "$APP" | awk -v s="$1" '$1 == s { print $3 }')" <<'EOF'
import sys, os
pid, exe, off = sys.argv[1], os.path.realpath(sys.argv[2]), int(sys.argv[3], 16)
base = None
for line in open(f"/proc/{pid}/maps"):
    f = line.split()
    if len(f) >= 6 and f[5] == exe and int(f[2], 16) == 0:
        base = int(f[0].split("-")[0], 16)
        break
with open(f"/proc/{pid}/mem", "rb") as m:
    m.seek(base + off)
    print(int.from_bytes(m.read(2), "little"))
EOF
}

start "$APP" 5

# ---- (a) timed pairs by kind, and the semaphore ----------------------------------------------
R=$(test_recipe usdt-timed 3 <<EOF
  - id: req
    kind: usdt
    filters: {pid: target}
    options: {binary: target, probe: "app:request__start", done: request__done, key: arg0}
EOF
)
[ "$(semaphore app_request__start_semaphore)" = 0 ] || fail "(a) the semaphore is raised before any probe"
"$DIAG" "$R" --pid "$PID" --json > "$TMP/a.json" 2> "$TMP/a.err" &
RUN=$!
sleep 1.5
RAISED=$(semaphore app_request__start_semaphore)
wait $RUN || fail "(a) exit $?: $(cat "$TMP/a.err")"
[ "$RAISED" = 1 ] || fail "(a) the semaphore was $RAISED while attached, want 1"
[ "$(semaphore app_request__start_semaphore)" = 0 ] || fail "(a) the semaphore stays raised after the run"
CHECK_LET='q = res["req"]; k = {x["key"]: x for x in q["keys"]}; mean = lambda n: k[n]["total_ns"] / k[n]["count"]'
check "$TMP/a.json" "q['available'] and q['sites'] == 1 and q['done_sites'] == 1 and sorted(k) == [0, 1, 2, 3]" \
	"(a) not the four kinds"
check "$TMP/a.json" "all(k[n]['count'] >= 10 for n in k) and q['timed'] >= 40 and q['unread_keys'] == 0" "(a) too few pairs"
# kind 0 works 5 ms, kind 3 20 ms: the ratio of their means is about 4
check "$TMP/a.json" "4.5e6 <= mean(0) <= 9e6 and 3.0 <= mean(3) / mean(0) <= 5.0" "(a) the times are not the program's"
check "$TMP/a.json" "all(x['buckets'] and x['max_ns'] >= mean(x['key']) for x in q['keys'])" "(a) no histograms"
assert_released "usdt timed pairs"
CHECK_LET=""

# ---- (b) a string key, fetched through an indexed operand --------------------------------------
R=$(test_recipe usdt-names 2 <<EOF
  - id: req
    kind: usdt
    filters: {pid: target}
    options: {binary: target, probe: "app:request__start", key: "str:arg1"}
EOF
)
collect "$TMP/b.json" "$R" --pid "$PID"
check "$TMP/b.json" "sorted(x['key_text'] for x in res['req']['keys']) == ['get', 'list', 'put', 'scan'] and res['req']['unit'] == 'hits'" \
	"(b) the names are not read"

# ---- (c) a variable through %rip; an unguarded probe -------------------------------------------
R=$(test_recipe usdt-rip 2 <<EOF
  - id: config
    kind: usdt
    filters: {pid: target}
    options: {binary: "lib:libusdtapp", probe: "app:config", key: arg0}
  - id: tick
    kind: usdt
    filters: {pid: target}
    options: {binary: "$ROOT/$BUILD/fixtures/libusdtapp.so", probe: "app:tick"}
EOF
)
collect "$TMP/c.json" "$R" --pid "$PID"
check "$TMP/c.json" "[x['key'] for x in res['config']['keys']] == [4242] and res['config']['hits'] > 10" \
	"(c) app_limit is not read through %rip"
check "$TMP/c.json" "res['tick']['hits'] > 10 and len(res['tick']['keys']) == 1 and 'key' not in res['tick']['keys'][0]" \
	"(c) the unguarded probe is not counted"
assert_released "usdt keys"

# ---- (d) a probe the binary lacks; a library's probe -----------------------------------------
R=$(test_recipe usdt-missing 1 <<EOF
  - id: gc
    kind: usdt
    filters: {pid: target}
    options: {binary: target, probe: "python:gc__start", done: gc__done, missing_ok: true}
EOF
)
collect "$TMP/d.json" "$R" --pid "$PID"
check "$TMP/d.json" "not res['gc']['available'] and 'no USDT probe python:gc__start' in res['gc']['why']" \
	"(d) missing_ok: not said"
sed -i '/missing_ok/s/, missing_ok: true//' "$R"
"$DIAG" "$R" --pid "$PID" --json > "$TMP/d2.json" 2> "$TMP/d2.err"; rc=$?
[ "$rc" = 2 ] || fail "(d) a missing probe: exit $rc, want 2"
grep -q "has no USDT probe python:gc__start (diagnose show --usdt" "$TMP/d2.err" || fail "(d) the error does not say how to list the probes: $(cat "$TMP/d2.err")"
R=$(test_recipe usdt-nolib 1 <<EOF
  - id: throw
    kind: usdt
    filters: {pid: target}
    options: {binary: "lib:libstdc++", probe: "libstdcxx:throw"}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/d3.json" 2> "$TMP/d3.err"; rc=$?
[ "$rc" = 2 ] && grep -q "maps no executable file named libstdc++" "$TMP/d3.err" ||
	fail "(d) lib: of a library not mapped: exit $rc, $(cat "$TMP/d3.err")"
assert_released "usdt on a library, and refused"

# ---- (e) show --usdt --------------------------------------------------------------------------
"$DIAG" show --usdt "$APP" > "$TMP/show.txt" || fail "(e) show --usdt failed"
grep -q "2 USDT probes, 2 sites" "$TMP/show.txt" || fail "(e) $(head -1 "$TMP/show.txt")"
grep -Eq "app:request__start +1 +yes +-4@%r15d" "$TMP/show.txt" || fail "(e) request__start: $(cat "$TMP/show.txt")"
# the target's library, named as a recipe names it
"$DIAG" show --usdt lib:libusdtapp --pid "$PID" > "$TMP/show2.txt" || fail "(e) show --usdt lib:libusdtapp failed"
grep -Eq "app:config +1 +no +-8@app_limit\(%rip\)" "$TMP/show2.txt" || fail "(e) config: $(cat "$TMP/show2.txt")"
"$DIAG" show --usdt "$APP" --json > "$TMP/show.json" || fail "(e) show --usdt --json failed"
check "$TMP/show.json" "len(r['probes']) == 2 and all(s['readable'] and s['semaphore'] for p in r['probes'] for s in p['sites'])" "(e) JSON"
"$DIAG" show --usdt /nonexistent/binary > /dev/null 2> "$TMP/show.err"; rc=$?
[ "$rc" = 2 ] || fail "(e) a missing binary: exit $rc, want 2: $(cat "$TMP/show.err")"
# lint: the binary is on this machine, the probe is not in it
R=$(test_recipe usdt-lint 1 <<EOF
  - id: bad
    kind: usdt
    filters: {pid: target}
    options: {binary: "$APP", probe: "app:request__begin", done: request__done}
EOF
)
"$DIAG" lint "$R" > "$TMP/lint.txt" 2>&1; rc=$?
[ "$rc" = 2 ] || fail "(e) lint of a missing probe: exit $rc, want 2: $(cat "$TMP/lint.txt")"
grep -q "usdt-lint.yaml:[0-9]*: probes.bad.options: .*usdt_app has no USDT probe app:request__begin" "$TMP/lint.txt" ||
	fail "(e) lint does not name the file, line and probe: $(cat "$TMP/lint.txt")"
exit 0
