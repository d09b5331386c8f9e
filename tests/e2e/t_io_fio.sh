# Real fio (Debian's package) through triage, as an on-call would meet it:
# (a) 4 KiB writes with fsync=1 at full speed on the VM's disk (thousands of fsyncs a second: the
#     load that once put triage over budget after 0.1 s and named latency from 0.1 s of data) →
#     `triage --follow`: triage measures the whole window (no probe stopped, no incomplete stage),
#     says io-wait and follows up with io-saturation, which calls fio sync-bound in fsync on its
#     file and device;
# (b) the control: the same job buffered (no fsync) at 1 MiB/s → triage raises nothing about the
#     disk and follows nothing up.
# The job's file is removed on exit; nothing stays attached.
. "$(dirname "$0")/lib.sh"
command -v fio > /dev/null || skip "fio (Debian's package) is not installed: make deps"

DATA=/var/tmp
F="$DATA/diag-fio.$$"
cleanup_fio() {
	for p in $PIDS; do kill -9 "$p" 2> /dev/null; wait "$p" 2> /dev/null; done
	PIDS=""
	rm -f "$F"
	rm -rf "$TMP"
}
trap cleanup_fio EXIT
mm=$(stat -c '%Hd:%Ld' "$DATA") && DISK=$(basename "$(readlink "/sys/dev/block/$mm")") && [ -n "$DISK" ] ||
	skip_unsupported "$DATA is not on a block device"

# fio's job process (fio forks one per job; the parent only reports): its pid, once it writes
fio_job() { # NAME FIO-ARGS... → sets PID (the job), FIO (the parent)
	fio --name="$1" --filename="$F" --size=64m --rw=write --bs=4k --ioengine=sync --time_based \
		--runtime=60 "${@:2}" > "$TMP/$1.fio" 2>&1 &
	FIO=$!
	PIDS="$PIDS $FIO"
	PID=""
	for i in $(seq 100); do
		PID=$(pgrep -P "$FIO" -x fio | head -1)
		[ -n "$PID" ] && [ -s "$F" ] && break
		sleep 0.1
	done
	[ -n "$PID" ] || fail "$1: fio's job did not start: $(cat "$TMP/$1.fio")"
	sleep 1
}
stage() { json "$TMP/$1.json" "[s for s in r['chain']['stages'] if s['recipe'] == '$2'][0]['report']"; }
verdicts() { json "$TMP/$1.json" "[(s['recipe'], [(v['id'], v['severity'], v['title']) for v in s['report']['verdicts']]) for s in r['chain']['stages']]"; }

# (a) fsync=1 at full speed
fio_job sync --fsync=1
"$DIAG" triage --pid "$PID" --duration 4 --follow --json > "$TMP/sync.json" 2> "$TMP/sync.err"
rc=$?
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "fio fsync=1: exit $rc, want 4 or 5: $(cat "$TMP/sync.err") $(verdicts sync 2> /dev/null)"
CHECK_LET="st = r['chain']['stages']; tri = st[0]['report']; io = st[-1]['report']; F = '$F'; D = '$DISK'"
check "$TMP/sync.json" "[s['recipe'] for s in st] == ['triage', 'io-saturation']" "fio fsync=1: stages: $(verdicts sync)"
check "$TMP/sync.json" "tri['verdicts'][0]['id'] == 'io-wait' and st[0]['followed']['verdict'] == 'io-wait'" \
	"fio fsync=1: triage did not lead with io-wait: $(verdicts sync)"
check "$TMP/sync.json" "tri['stop_reason'] == 'duration' and not any('stopped' in n for n in tri['notes']) and not any(v['id'] in ('incomplete', 'incomplete-data') for v in tri['verdicts'])" \
	"fio fsync=1: triage did not measure its whole window: $(json "$TMP/sync.json" 'r["chain"]["stages"][0]["report"]["notes"]')"
check "$TMP/sync.json" "io['verdicts'][0]['id'] == 'sync-bound' and 'fsync' in io['verdicts'][0]['title'] and F in io['verdicts'][0]['title'] and '(' + D + ')' in io['verdicts'][0]['title']" \
	"fio fsync=1: io-saturation does not call it sync-bound in fsync on $F ($DISK): $(verdicts sync)"
rate=$(json "$TMP/sync.json" "[c['count'] for c in r['chain']['stages'][-1]['report']['results']['files']['calls'] if c['syscall'] in ('fsync', 'fdatasync') and c['file'] == '$F'][0] / r['chain']['stages'][-1]['report']['duration_s']")
echo "note: fio fsync=1: $rate fsync/s seen by io-saturation" >&2
assert_released "triage --follow on fio fsync=1"
{ kill -9 "$FIO" "$PID"; wait "$FIO"; } 2> /dev/null
rm -f "$F"

# (b) the control: buffered, 1 MiB/s
fio_job buffered --rate=1m
"$DIAG" triage --pid "$PID" --duration 4 --follow --json > "$TMP/buffered.json" 2> "$TMP/buffered.err"
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 4 ] || fail "fio buffered: exit $rc: $(cat "$TMP/buffered.err")"
check "$TMP/buffered.json" "not any(v['id'] in ('io-wait', 'host-io-pressure') and v['severity'] in ('warning', 'critical') for v in r['chain']['stages'][0]['report']['verdicts']) and len(r['chain']['stages']) == 1" \
	"fio buffered: triage called the disk or followed up: $(verdicts buffered)"
check "$TMP/buffered.json" "all(v['severity'] not in ('warning', 'critical') or v['id'] == 'cpu-starved' for v in r['chain']['stages'][0]['report']['verdicts'])" \
	"fio buffered: a warning on the healthy job: $(verdicts buffered)"
assert_released "triage on buffered fio"
exit 0
