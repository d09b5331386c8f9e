# diagnose latency on two more causes, each with its control:
# (a) a request path blocked on the disk (disk_reader: random 4 KiB O_DIRECT reads in
#     lookup_record(), on a file under /var/tmp, not tmpfs) → `disk-io` first, naming
#     lookup_record() and pread; its control, the same loop on the same file through the warm
#     page cache → no disk-io;
# (b) CPU starvation: a CPU-bound request loop (cpu_burner) next to three spinners (more runnable
#     threads than CPUs) → `cpu-starved`; its control, the same loop alone → no cpu-starved and no
#     warning.
# Nothing stays attached.
. "$(dirname "$0")/lib.sh"

DATA=$(mktemp -d /var/tmp/diagnose-disk.XXXXXX)
trap 'for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$TMP" "$DATA"' EXIT
"$WL/disk_reader" "$DATA/records.dat" > "$TMP/dr.out" 2>&1 &
PID=$!
PIDS="$PIDS $PID"
for _ in $(seq 100); do grep -q ready "$TMP/dr.out" && break; sleep 0.1; done
grep -q ready "$TMP/dr.out" || fail "disk_reader did not get ready: $(cat "$TMP/dr.out")"
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/disk.json" 2> "$TMP/disk.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "disk: exit $rc: $(cat "$TMP/disk.err")"
check "$TMP/disk.json" "r['verdicts'][0]['id'] == 'disk-io' and 'lookup_record()' in r['verdicts'][0]['title'] and any('pread' in e for e in r['verdicts'][0]['evidence'])" \
	"disk: verdicts $(json "$TMP/disk.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
assert_released "latency on a disk-bound process"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

# Its control: the same loop on the same file through the warm page cache: no disk wait to name.
"$WL/disk_reader" "$DATA/records.dat" cached > "$TMP/drc.out" 2>&1 &
PID=$!
PIDS="$PIDS $PID"
for _ in $(seq 100); do grep -q ready "$TMP/drc.out" && break; sleep 0.1; done
grep -q ready "$TMP/drc.out" || fail "disk_reader cached did not get ready: $(cat "$TMP/drc.out")"
"$DIAG" latency --pid "$PID" --duration 2 --json > "$TMP/cached.json" 2> "$TMP/cached.err"; rc=$?
[ "$rc" = 0 ] || [ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "disk control: exit $rc: $(cat "$TMP/cached.err")"
check "$TMP/cached.json" "not any(v['id'] == 'disk-io' for v in r['verdicts'])" \
	"disk control (page cache): verdicts $(json "$TMP/cached.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null

start "$WL/cpu_burner"
TARGET=$PID
# The control needs the CPUs to itself: on a machine already busy (other jobs: the pressure's
# avg10, which describes the seconds before, is the right reading here) it would be starved too.
busy=$(awk '/^some/ { split($2, a, "="); print (a[2] >= 5) }' /proc/pressure/cpu 2>/dev/null)
if [ "$busy" = 1 ]; then
	echo "note: control skipped, the machine is busy: $(head -1 /proc/pressure/cpu)"
else
	"$DIAG" latency --pid "$TARGET" --duration 2 --json > "$TMP/alone.json" 2> "$TMP/alone.err"; rc=$?
	[ "$rc" = 0 ] || fail "CPU-bound alone: exit $rc, want 0: $(json "$TMP/alone.json" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]')"
	check "$TMP/alone.json" "'cpu-starved' not in [x['id'] for x in r['verdicts']]" "alone: starved"
fi
for _ in 1 2 3; do start "$WL/cpu_burner"; done
sleep 0.5
"$DIAG" latency --pid "$TARGET" --duration 2 --json > "$TMP/starved.json" 2> "$TMP/starved.err"; rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "starved: exit $rc: $(cat "$TMP/starved.err")"
check "$TMP/starved.json" "r['verdicts'][0]['id'] == 'cpu-starved'" \
	"starved: verdicts $(json "$TMP/starved.json" '[(x["id"], x["title"]) for x in r["verdicts"]]')"
assert_released "latency on a starved process"
exit 0
