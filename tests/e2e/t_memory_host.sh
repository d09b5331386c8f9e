# diagnose memory-growth without --pid (host-wide) on the real kernel:
# (a) a slab cache that grows: slab_grower creates 15,000 empty files a second on a tmpfs this
#     test mounts below its own temporary directory, and keeps them — each holds a shmem inode
#     (~750 bytes, shmem_inode_cache) and a dentry → `kernel-slab-growth` naming
#     shmem_inode_cache first, its objects growing within 2x of 15,000 a second, allocated in
#     shmem_alloc_inode() (kernel_allocs: the call site holding at least half of them); the host run
#     plans neither the allocations nor the page-fault probe (`when: target`), and kernel_memory
#     and proc_context read host-wide;
# (b) its control, the same rate of files created and unlinked at once (the same 1,024 names) →
#     no slab verdict for those caches; exit 0 with `ok` unless another tenant of the machine grew
#     something in the window (then that is named, never shmem_inode_cache or dentry);
# (c) a working set larger than its memory cgroup's limit: a reader in a v1/v2 memory cgroup
#     limited to 16 MiB, created below this test's own, reads a 32 MiB file twice a second (each
#     pass evicts what the next needs: ~16k refaults/s, ~64 MiB/s read) → `working-set` naming
#     that cgroup and its limit, its refaults >= 1,000/s; its control, an 8 MiB file that fits
#     under the same limit → that cgroup is not named and refaults under 100/s.
# The tmpfs, the files and the cgroup are removed after. Nothing of ours stays attached.
. "$(dirname "$0")/lib.sh"

MNT="$TMP/slabs"
CG=""
cleanup() {
	for p in $PIDS; do kill -9 $p 2>/dev/null; wait $p 2>/dev/null; done
	[ -n "$CG" ] && [ -d "$CG" ] && rmdir "$CG" 2>/dev/null
	mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"
	rm -rf "$TMP"
}
trap cleanup EXIT
verdicts() { json "$1" '[(x["id"], x["severity"], x["title"]) for x in r["verdicts"]]'; }
stop() { { kill -9 "$1"; wait "$1"; } 2>/dev/null; }
run_mem() { # NAME: memory-growth host-wide for 3-4 s into $TMP/NAME.json, sets rc
	"$DIAG" memory-growth --duration "$2" --json > "$TMP/$1.json" 2> "$TMP/$1.err"; rc=$?
	[ -s "$TMP/$1.json" ] || fail "$1: no report (exit $rc): $(cat "$TMP/$1.err")"
	# MEM_KEEP_REPORTS=DIR keeps the reports: tests/fixtures/trimmed/memory-growth/host-*.json are
	# trimmed from them (tests/fixtures/record.sh --trim memory-growth/host-NAME --from DIR/NAME.json
	# --replace OWN=/ci --replace diag-refault-test-PID=diag-refault-test, OWN: this test's cgroup)
	[ -z "${MEM_KEEP_REPORTS:-}" ] || cp "$TMP/$1.json" "$MEM_KEEP_REPORTS/$1.json"
	echo "$(date +%T) $1: exit $rc" >&2
}

mkdir -p "$MNT/grow" "$MNT/churn"
mount -t tmpfs -o size=16m,nr_inodes=400000,mode=0700 diagnose-e2e-slabs "$MNT" ||
	skip_unsupported "cannot mount a tmpfs"
mkdir -p "$MNT/grow" "$MNT/churn"

# ---- (a) a slab cache that grows ------------------------------------------------------------
RATE=15000
start "$WL/slab_grower" "$MNT/grow" $RATE 300000 grow
run_mem grow 4
stop "$PID"
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "grow: exit $rc: $(cat "$TMP/grow.err") $(verdicts "$TMP/grow.json")"
CHECK_LET='v = [x for x in r["verdicts"] if x["id"] == "kernel-slab-growth"]; k = res["kmem"]
shm = [c for c in k["slab"]["grown"] if c["name"] == "shmem_inode_cache"]'
check "$TMP/grow.json" "r['target'] is None and 'allocs' not in res and 'faults' not in res and res['context'].get('host') is True" \
	"grow: not a host-wide run of kmem, context and ooms"
check "$TMP/grow.json" "len(v) >= 1 and 'shmem_inode_cache' in v[0]['title'] and v[0]['severity'] == 'warning'" \
	"grow: verdicts $(verdicts "$TMP/grow.json")"
check "$TMP/grow.json" "len(shm) == 1 and $RATE / 2 < shm[0]['objects_delta'] / k['wall_s'] < $RATE * 2 and shm[0]['reclaimable'] is False" \
	"grow: shmem_inode_cache did not grow by about $RATE objects a second"
check "$TMP/grow.json" "k['slab']['malformed_lines'] == 0 and any('dentry' == c['name'] for c in k['slab']['grown'])" \
	"grow: dentries did not grow, or slabinfo lines were skipped"
# the code that allocated them: shmem_alloc_inode, holding at least half of the cache's growth
CHECK_LET='v = [x for x in r["verdicts"] if x["id"] == "kernel-slab-growth"]; k = res["kmem"]; ka = res["kallocs"]
shm = [c for c in k["slab"]["grown"] if c["name"] == "shmem_inode_cache"]
site = [s for s in ka["sites"] if s.get("cache") == "shmem_inode_cache"]'
check "$TMP/grow.json" "'allocated in shmem_alloc_inode()' in v[0]['title'] and site and site[0]['site'].startswith('shmem_alloc_inode+') and site[0]['held'] >= shm[0]['objects_delta'] / 2" \
	"grow: the allocating call site is not shmem_alloc_inode: $(verdicts "$TMP/grow.json")"
assert_released "memory-growth host-wide on a growing slab cache"
rm -rf "$MNT/grow"

# ---- (b) its control: the same files created and unlinked ------------------------------------
start "$WL/slab_grower" "$MNT/churn" $RATE 0 churn
run_mem churn 4
stop "$PID"
CHECK_LET='v = r["verdicts"]'
check "$TMP/churn.json" "not any(x['id'] == 'kernel-slab-growth' and ('shmem_inode_cache' in x['title'] or 'dentry' in x['title']) for x in v)" \
	"churn: our caches were called grown: $(verdicts "$TMP/churn.json")"
if [ "$rc" != 0 ]; then
	# another tenant of this machine may grow something in the same window: it may be named, ours never
	check "$TMP/churn.json" "all(x['id'] in ('kernel-slab-growth', 'working-set', 'oom-kill') or x['severity'] in ('ok', 'info') for x in v)" \
		"churn: exit $rc: $(verdicts "$TMP/churn.json")"
	echo "NOTE: churn control: exit $rc from other activity on the machine: $(verdicts "$TMP/churn.json")" >&2
else
	# (an info note may say the kernel's allocations were sampled: the machine's rate is high)
	check "$TMP/churn.json" "[x['id'] for x in v if x['id'] != 'incomplete-data'] == ['ok']" "churn: verdicts $(verdicts "$TMP/churn.json")"
fi
assert_released "memory-growth host-wide on slab churn"
umount "$MNT"

# ---- (c) a working set larger than its cgroup's limit, and its control -------------------------
# Below this test's own memory cgroup (v1 controller directory, else the v2 hierarchy).
own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
if [ -n "$own" ] && [ -d "/sys/fs/cgroup/memory$own" ]; then
	CG="/sys/fs/cgroup/memory${own%/}/diag-refault-test-$$"; LIMIT_FILE=memory.limit_in_bytes; REL="${own%/}/diag-refault-test-$$"
else
	own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
	root=/sys/fs/cgroup; [ -f $root/cgroup.controllers ] || root=/sys/fs/cgroup/unified
	CG="$root${own%/}/diag-refault-test-$$"; LIMIT_FILE=memory.max; REL="${own%/}/diag-refault-test-$$"
fi
mkdir "$CG" 2>/dev/null || skip_unsupported "cannot create a memory cgroup below $own"
echo $((16 << 20)) > "$CG/$LIMIT_FILE" || fail "cannot set $CG/$LIMIT_FILE"
# Files written here, on the disk (not the tmpfs: its pages cannot be evicted without swap), then
# dropped from the page cache so that the reader's cgroup is charged for what it reads.
mkfile() {
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
block = os.urandom(1 << 20)
for _ in range(int(sys.argv[2])): os.write(fd, block)
os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$1" "$2"
}
mkfile "$TMP/big" 32
mkfile "$TMP/small" 8
reader() { # reader FILE: reads it twice a second inside the cgroup (~64 MiB/s for the big one)
	start sh -c "echo \$\$ > '$CG/cgroup.procs' && exec sh -c 'while :; do cat \"$1\" > /dev/null; sleep 0.5; done'"
}
reader "$TMP/big"
sleep 1 # a first pass or two: the cgroup is full and evicting
run_mem refault 3
stop "$PID"
[ "$rc" = 4 ] || [ "$rc" = 5 ] || fail "refault: exit $rc: $(cat "$TMP/refault.err") $(verdicts "$TMP/refault.json")"
CHECK_LET='v = [x for x in r["verdicts"] if x["id"] == "working-set"]; k = res["kmem"]
mine = [c for c in k.get("refault_cgroups", []) if c["path"] == "'"$REL"'"]'
check "$TMP/refault.json" "len(v) == 1 and '$REL' in v[0]['title'] and '16 MiB' in v[0]['title']" \
	"refault: verdicts $(verdicts "$TMP/refault.json")"
check "$TMP/refault.json" "len(mine) == 1 and mine[0]['refaults'] / k['wall_s'] >= 1000 and mine[0]['limit_bytes'] == 16 << 20" \
	"refault: the cgroup's refaults are not >= 1000/s"
assert_released "memory-growth host-wide on a working set over its cgroup's limit"

reader "$TMP/small"
sleep 1
run_mem fits 3
stop "$PID"
CHECK_LET='k = res["kmem"]; mine = [c for c in k.get("refault_cgroups", []) if c["path"] == "'"$REL"'"]'
check "$TMP/fits.json" "not any(x['id'] == 'working-set' and '$REL' in x['title'] for x in r['verdicts']) and (not mine or mine[0]['refaults'] / k['wall_s'] < 100)" \
	"fits: the reader that fits its limit was called thrashing: $(verdicts "$TMP/fits.json")"
assert_released "memory-growth host-wide on a working set under its cgroup's limit"
rmdir "$CG" && CG=""
exit 0
