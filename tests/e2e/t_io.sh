# diagnose io-saturation on the real kernel, one workload per cause, with --pid and host-wide:
# (a) an fsync-per-write journal on the VM's disk → `sync-bound` first, naming fsync, the file
#     and its device (with --pid: also the call path through journal_run); block_io charges its
#     writes to it and says it dirtied page cache there;
# (b) its healthy control, a logger writing a line every 200 ms → with --pid exactly `ok`, exit
#     0; host-wide nothing names the logger (other tenants' I/O may make device verdicts);
# (c) 4 KiB O_DIRECT random reads from 16 threads on a loop device (direct I/O onto a file on
#     the disk) → `device-saturated` naming the loop device and the reader;
#     block_io's device and pid filters hold (only that disk; only the reader's requests);
# (d) a reader held to 1 MiB/s by blkio.throttle.read_bps_device of a cgroup created below this
#     test's own blkio cgroup → with --pid `cgroup-throttled` naming the limit and the device;
#     host-wide `held-above-device` naming the reader and the device.
# Loop devices, backing files and the cgroup are removed on exit; nothing stays attached.
. "$(dirname "$0")/lib.sh"

LOOPS=""
CG=""
cleanup_io() {
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	PIDS=""
	[ -n "$CG" ] && [ -d "$CG" ] && rmdir "$CG"
	for l in $LOOPS; do losetup -d "$l" 2>/dev/null; done
	rm -f /dev/shm/diag-io-thr.$$ "$DATA"/diag-io-sat.$$ "$DATA"/diag-io-journal.$$ "$DATA"/diag-io-log.$$
	rm -rf "$TMP"
}
trap cleanup_io EXIT
command -v losetup >/dev/null || skip "needs losetup (util-linux)"

# A directory on a real block device (the VM's disk), not tmpfs.
DATA=/var/tmp
dev_of() { # the block device name a path lives on, as /sys/dev/block names it
	local mm
	mm=$(stat -c '%Hd:%Ld' "$1" 2>/dev/null) || return 1
	basename "$(readlink "/sys/dev/block/$mm")"
}
DISK=$(dev_of "$DATA") || skip_unsupported "$DATA is not on a block device"
[ -n "$DISK" ] || skip_unsupported "$DATA is not on a block device"

verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]'; }
run_io() { # NAME ARGS...: runs io-saturation into $TMP/NAME.json, sets rc
	"$DIAG" io-saturation --duration 3 --json "${@:2}" > "$TMP/$1.json" 2> "$TMP/$1.err"; rc=$?
	[ -s "$TMP/$1.json" ] || fail "$1: no report (exit $rc): $(cat "$TMP/$1.err")"
	# IO_KEEP_REPORTS=DIR keeps the reports, NAME.json: tests/fixtures/trimmed/io-saturation/ is trimmed
	# from them (tests/fixtures/record.sh --trim io-saturation/NAME --from DIR/NAME.json --what ...)
	[ -z "${IO_KEEP_REPORTS:-}" ] || cp "$TMP/$1.json" "$IO_KEEP_REPORTS/$1.json"
	echo "$(date +%T) $1: exit $rc" >&2
}

# ---- (a) fsync-per-write journal -------------------------------------------------------------
J="$DATA/diag-io-journal.$$"
start "$WL/io_load" journal "$J"
run_io journal --pid "$PID"
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "journal: exit $rc, want 4 or 5: $(verdicts "$TMP/journal.json")"
CHECK_LET="v = r['verdicts'][0]; J = '$J'; D = '$DISK'; P = $PID"
check "$TMP/journal.json" "v['id'] == 'sync-bound' and 'fsync' in v['title'] and J in v['title'] and '(' + D + ')' in v['title'] and str(P) in v['title']" \
	"journal: first verdict does not name fsync, $J and $DISK: $(verdicts "$TMP/journal.json")"
check "$TMP/journal.json" "any('journal_run' in e for e in v['evidence'] if e.startswith('Call path'))" \
	"journal: no call path through journal_run: $(json "$TMP/journal.json" 'r["verdicts"][0]["evidence"]')"
check "$TMP/journal.json" "any(e.startswith('rule: ') for e in v['evidence'])" "journal: the verdict does not say which rule fired"
check "$TMP/journal.json" "any(c['syscall'] == 'fsync' and c['file'] == J and c['device'] == D and c['count'] > 20 for c in res['files']['calls'])" \
	"journal: file_io has no fsync row on $J ($DISK)"
check "$TMP/journal.json" "any(o['tgid'] == P and o['writes'] > 20 for o in res['blk']['owners'])" \
	"journal: block_io does not attribute writes to the journal"
check "$TMP/journal.json" "any(d['name'] == D and d['flushes'] > 20 and d['service']['count'] > 0 for d in res['blk']['devices'])" \
	"journal: no flushes timed on $DISK"
check "$TMP/journal.json" "any(o['tgid'] == P and o['bytes'] >= 4096 and o['device'].startswith(D) for o in res['blk']['dirtiers'])" \
	"journal: block_io does not say the journal dirtied page cache on $DISK"
assert_released "io-saturation --pid on a journal"

run_io journal-host
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "journal host-wide: exit $rc: $(verdicts "$TMP/journal-host.json")"
check "$TMP/journal-host.json" "any(x['id'] == 'sync-bound' and 'fsync' in x['title'] and J in x['title'] and str(P) in x['title'] for x in r['verdicts'])" \
	"journal host-wide: no sync-bound verdict naming pid $PID, fsync and $J: $(verdicts "$TMP/journal-host.json")"
check "$TMP/journal-host.json" "res['context'].get('host') is True and 'pid' not in res['context']" \
	"journal host-wide: the sampler did not run host-wide"
assert_released "io-saturation host-wide on a journal"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
PIDS=""
rm -f "$J"

# ---- (b) light logging: the healthy control --------------------------------------------------
L="$DATA/diag-io-log.$$"
start "$WL/io_load" logger "$L"
run_io logger --pid "$PID"
[ "$rc" = 0 ] || fail "logger: exit $rc, want 0: $(verdicts "$TMP/logger.json")"
# ok; or, when the disk itself is slow for others' writeback on a shared machine, that finding
# (info) instead: nothing about the logger
check "$TMP/logger.json" "all(x['severity'] in ('ok', 'info') and x['id'] not in ('sync-bound', 'held-above-device') for x in r['verdicts'])" \
	"logger: verdicts $(verdicts "$TMP/logger.json")"
check "$TMP/logger.json" "any(c['syscall'] == 'write' and c['file'] == '$L' for c in res['files']['calls'])" \
	"logger: its writes were not seen"
run_io logger-host
check "$TMP/logger-host.json" "not any(x['id'] in ('sync-bound', 'held-above-device') or 'pid $PID)' in x['title'] for x in r['verdicts'])" \
	"logger host-wide: a verdict names the logger: $(verdicts "$TMP/logger-host.json")"
assert_released "io-saturation on a logger"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
PIDS=""
rm -f "$L"

# ---- (c) random O_DIRECT reads saturating a loop device --------------------------------------
IMG="$DATA/diag-io-sat.$$"
dd if=/dev/zero of="$IMG" bs=1M count=128 oflag=direct status=none || fail "cannot write $IMG"
LOOP=$(losetup --find --show --direct-io=on "$IMG") || skip_unsupported "cannot set up a loop device"
LOOPS="$LOOPS $LOOP"
LN=$(basename "$LOOP")
start "$WL/io_load" randread "$LOOP" 16
run_io randread --pid "$PID"
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "randread: exit $rc, want 4 or 5: $(verdicts "$TMP/randread.json")"
CHECK_LET="v = r['verdicts'][0]; N = '$LN'; P = $PID"
check "$TMP/randread.json" "v['id'] == 'device-saturated' and v['title'].startswith(N + ' is saturated') and 'pid %d' % P in v['title']" \
	"randread: first verdict is not $LN saturated by pid $PID: $(verdicts "$TMP/randread.json")"
check "$TMP/randread.json" "any(d['name'] == N and d['avg_in_queue_and_service'] >= 4 and d['reads'] > 1000 for d in res['blk']['devices'])" \
	"randread: $LN shows no depth"
run_io randread-host
CHECK_LET="N = '$LN'; P = $PID"
check "$TMP/randread-host.json" "any(x['id'] == 'device-saturated' and x['title'].startswith(N + ' is saturated') and 'pid %d' % P in x['title'] for x in r['verdicts'])" \
	"randread host-wide: no saturated verdict for $LN: $(verdicts "$TMP/randread-host.json")"
# The block probe's filters: a device (only that disk's requests), and the submitter (only the
# requests the target started, though they complete in interrupt context); and its queue_depth
# option (off in the recipe: diskstats say how busy a disk is), which counts the requests in
# flight: the 16 the workload keeps are found at entry, the disk busy, the same requests counted.
R=$(test_recipe blkfilters 2 <<EOF
  - id: dev
    kind: block_io
    filters:
      device: $LN
  - id: own
    kind: block_io
    filters:
      pid: target
  - id: depth
    kind: block_io
    filters:
      device: $LN
    options:
      queue_depth: true
EOF
)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/blkfilters.json" 2> "$TMP/blkfilters.err" || fail "block_io filters: $(cat "$TMP/blkfilters.err")"
CHECK_LET="N = '$LN'; P = $PID"
check "$TMP/blkfilters.json" "[d['name'] for d in res['dev']['devices']] == [N] and res['dev']['device_filter'] == N and res['dev']['ios'] > 100" \
	"block_io device filter: not only $LN"
check "$TMP/blkfilters.json" "res['own']['owners'] and all(o['tgid'] == P for o in res['own']['owners']) and res['own']['unowned'] == 0" \
	"block_io pid filter: requests of others counted"
CHECK_LET="d = res['dev']['devices'][0]; q = res['depth']['devices'][0]"
check "$TMP/blkfilters.json" "'depth' not in d and 'busy_pct' not in d and q['depth']['avg_at_entry'] >= 4 and q['depth']['max'] <= 64 and q['busy_pct'] > 50 and 'in_flight_at_end' in q" \
	"block_io queue_depth: $(json "$TMP/blkfilters.json" '[(x.get("depth", {}).get("avg_at_entry"), x.get("busy_pct")) for x in (res["dev"]["devices"][0], res["depth"]["devices"][0])]')"
check "$TMP/blkfilters.json" "abs(d['ios'] - q['ios']) <= 0.02 * d['ios'] and abs(sum(o['ios'] for o in res['dev']['owners']) - d['ios']) <= 0.02 * d['ios']" \
	"block_io: the CPUs' sums disagree: $(json "$TMP/blkfilters.json" '[res["dev"]["devices"][0]["ios"], res["depth"]["devices"][0]["ios"], [o["ios"] for o in res["dev"]["owners"]]]')"
assert_released "io-saturation on random reads"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
PIDS=""
losetup -d "$LOOP"; LOOPS=""
rm -f "$IMG"

# ---- (d) a reader throttled by its blkio cgroup ----------------------------------------------
[ -f /sys/fs/cgroup/blkio/blkio.throttle.read_bps_device ] || { echo "no cgroup v1 blkio: throttle case skipped" >&2; exit 0; }
OWN=$(awk -F: '$2 == "blkio" { print $3 }' /proc/self/cgroup)
CG="/sys/fs/cgroup/blkio${OWN%/}/diag-io-test.$$"
truncate -s 64M /dev/shm/diag-io-thr.$$
LOOP=$(losetup --find --show /dev/shm/diag-io-thr.$$) || skip_unsupported "cannot set up a loop device"
LOOPS="$LOOP"
LN=$(basename "$LOOP")
mkdir "$CG" || fail "cannot create $CG"
echo "$(cat /sys/block/$LN/dev) 1048576" > "$CG/blkio.throttle.read_bps_device" || fail "cannot set the limit"
start sh -c "echo \$\$ > $CG/cgroup.procs && exec $WL/io_load seqread $LOOP"
grep -q "blkio:.*diag-io-test" "/proc/$PID/cgroup" || fail "the reader is not in $CG"
run_io throttled --pid "$PID"
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "throttled: exit $rc, want 4: $(verdicts "$TMP/throttled.json")"
CHECK_LET="N = '$LN'; v = [x for x in r['verdicts'] if x['id'] == 'cgroup-throttled']"
check "$TMP/throttled.json" "v and ' on ' + N + ',' in v[0]['title'] and 'read_bps_device' in v[0]['title']" \
	"throttled: no cgroup-throttled verdict naming read_bps_device on $LN: $(verdicts "$TMP/throttled.json")"
check "$TMP/throttled.json" "any('1 MiB/s' in e for e in v[0]['evidence'])" "throttled: the limit is not in the evidence"
run_io throttled-host
CHECK_LET="N = '$LN'; P = $PID"
check "$TMP/throttled-host.json" "any(x['id'] == 'held-above-device' and 'pid %d' % P in x['title'] and N in x['title'] for x in r['verdicts'])" \
	"throttled host-wide: no held-above-device verdict naming pid $PID and $LN: $(verdicts "$TMP/throttled-host.json")"
assert_released "io-saturation on a throttled reader"
exit 0
