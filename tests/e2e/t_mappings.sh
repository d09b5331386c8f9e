# The mappings probe kind on a workload of known behaviour (tests/workloads/map_grower.c): every
# 200 ms grow_mmap maps and keeps 1 MiB, grow_brk raises the break by 256 KiB, grow_mremap grows
# a buffer by 64 KiB, map_file maps 64 KiB of a file, churn_mmap maps and unmaps 1 MiB, purge gives
# 1 MiB back with MADV_DONTNEED; once after a SIGUSR1, release_early unmaps 4 MiB mapped before
# the window, fixed_over maps 1 MiB and half of it again PROT_NONE with MAP_FIXED, trim_middle
# unmaps the middle of a region (a split), shrink_mremap shrinks one, shrink_brk lowers the break.
# Each path must be named by the function that called glibc's frameless wrapper (the frame right
# under the leaf), with its bytes at its rate (within 2x) over the window: kept where it keeps,
# ~0 net where it unmaps, file and madvise bytes outside the weight; the old region's unmapping
# counted as unrecorded, the MAP_FIXED half as replaced; fp mode with its leaf fixup names the
# same callers; nothing lost, nothing left attached.
. "$(dirname "$0")/lib.sh"

WORKLOAD="$WL/map_grower"
[ -x "$WORKLOAD" ] || fail "$WORKLOAD missing: run make"

start "$WORKLOAD"
R=$(test_recipe mappings 5 <<EOF
  - id: maps
    kind: mappings
    filters: {pid: target}
  - id: maps_fp
    kind: mappings
    filters: {pid: target}
    options: {user_unwind: fp, max_sites: 256, max_regions: 1024}
EOF
)
"$DIAG" "$R" --pid "$PID" --json > "$TMP/maps.json" 2> "$TMP/maps.err" &
DPID=$!
# the one-shot calls inside the window: once both probes' programs are attached (8 links each)
# and the pre-flight (250 ms, count-only) is over
for _ in $(seq 1 100); do
	[ "$(our_links)" -ge 16 ] && break
	sleep 0.1
done
sleep 1
kill -USR1 "$PID"
wait "$DPID"
rc=$?
[ "$rc" = 0 ] || fail "exit code $rc, want 0: $(cat "$TMP/maps.err")"
J="$TMP/maps.json"
assert_released "a run with two mappings probes"

# p(fn): the stacks whose frame right under the leaf (the syscall wrapper) is fn, summed;
# near(x, rate): x is the rate (bytes/s) over the window within 2x.
CHECK_LET='m = res["maps"]
W = m["window_s"]
MIB = 1 << 20
def p(fn, probe="maps"):
    rows = [s for s in res[probe]["stacks"] if len(s["user"]) > 1 and s["user"][1] == fn]
    out = {k: sum(s[k] for s in rows) for k in ("weight", "count", "calls", "anon_bytes", "shared_bytes",
           "file_bytes", "reserved_bytes", "brk_growth_bytes", "mremap_growth_bytes", "unmapped_bytes",
           "file_still_mapped_bytes", "madvise_freed_bytes")}
    out["rows"] = len(rows)
    return out
def near(x, rate):
    return rate * W / 2 <= x <= rate * W * 2'
check "$J" 'W > 2 and m["user_unwind"] == "dwarf" and m["stack_unit"] == "bytes"' "window or unwinder"
check "$J" 'all(s["comm"] == "map_grower" for s in m["stacks"]) and len(m["stacks"]) >= 6' \
	"stacks of another process, or too few paths"
check "$J" 'all(m[k] == 0 for k in ("lost_records", "lost_stacks", "dropped", "bad_records", "untracked_regions", "pending_full", "failed_calls"))' \
	"calls lost, dropped, failed or untracked"

# grow_mmap keeps what it maps: weight = its anonymous bytes, at 5 MiB/s
check "$J" 'p("grow_mmap")["rows"] >= 1 and near(p("grow_mmap")["weight"], 5 * MIB)' "grow_mmap: not ~5 MiB/s still mapped"
check "$J" 'p("grow_mmap")["weight"] == p("grow_mmap")["anon_bytes"] and p("grow_mmap")["unmapped_bytes"] == 0' "grow_mmap: unmapped something"
check "$J" 'p("grow_mmap")["calls"] == p("grow_mmap")["count"] and near(p("grow_mmap")["calls"] * MIB, 5 * MIB)' "grow_mmap: not 5 calls/s"
# grow_brk (through sbrk, under brk): the heap's growth, 1.25 MiB/s, kept
check "$J" 'any(s["user"][2:3] == ["grow_brk"] for s in m["stacks"])' "grow_brk: not the caller of sbrk"
CHECK_LET="$CHECK_LET
brk = [s for s in m['stacks'] if s['user'][2:3] == ['grow_brk']]"
check "$J" 'near(sum(s["brk_growth_bytes"] for s in brk), 1.25 * MIB) and sum(s["weight"] for s in brk) == sum(s["brk_growth_bytes"] for s in brk) - 128 * 1024' \
	"grow_brk: not ~1.25 MiB/s of heap kept, less what shrink_brk lowered"
check "$J" 'm["brk_growth_bytes"] == sum(s["brk_growth_bytes"] for s in brk) and m["brk_shrink_bytes"] == 128 * 1024 and sum(s["unmapped_bytes"] for s in brk) == 128 * 1024' \
	"brk totals, or the lowered break not credited back to grow_brk"
# churn_mmap maps 5 MiB/s and unmaps it all: net 0 (at most the call the window's end split)
check "$J" 'near(p("churn_mmap")["anon_bytes"], 5 * MIB) and p("churn_mmap")["weight"] <= MIB' "churn_mmap: net not ~0"
check "$J" 'p("churn_mmap")["anon_bytes"] - p("churn_mmap")["unmapped_bytes"] == p("churn_mmap")["weight"]' "churn_mmap: unmapped not credited back"
# grow_mremap: its growth (64 KiB a call) is its own and moves with the buffer
check "$J" 'near(p("grow_mremap")["mremap_growth_bytes"], 320 * 1024) and p("grow_mremap")["weight"] == p("grow_mremap")["mremap_growth_bytes"]' \
	"grow_mremap: growth not ~320 KiB/s, or not kept"
# map_file: file bytes, kept, outside the weight; purge: madvise bytes, outside the weight
check "$J" 'near(p("map_file")["file_bytes"], 320 * 1024) and p("map_file")["file_still_mapped_bytes"] == p("map_file")["file_bytes"] and p("map_file")["weight"] == 0' \
	"map_file: file mapping not counted, or in the weight"
check "$J" 'near(p("purge")["madvise_freed_bytes"], 5 * MIB) and p("purge")["weight"] == 0' "purge: madvise not counted"
# once: 4 MiB unmapped that no window recorded; 512 KiB of a recorded region replaced PROT_NONE
check "$J" 'm["unmapped_unrecorded_bytes"] >= 4 * MIB and m["munmap_bytes"] >= 4 * MIB + p("churn_mmap")["unmapped_bytes"]' \
	"release_early: the old region's unmapping not counted as unrecorded"
check "$J" 'p("fixed_over")["anon_bytes"] == MIB and p("fixed_over")["reserved_bytes"] == MIB // 2 and p("fixed_over")["unmapped_bytes"] == MIB // 2 and p("fixed_over")["weight"] == MIB // 2' \
	"fixed_over: the MAP_FIXED half not replaced"
check "$J" 'm["replaced_bytes"] == MIB // 2 and m["reserved_bytes"] == MIB // 2' "replaced or reserved totals"
check "$J" 'p("trim_middle")["anon_bytes"] == MIB and p("trim_middle")["unmapped_bytes"] == MIB // 4 and p("trim_middle")["weight"] == 3 * MIB // 4' \
	"trim_middle: the unmapped middle not split out"
check "$J" 'p("shrink_mremap")["anon_bytes"] == MIB and p("shrink_mremap")["unmapped_bytes"] == MIB // 2 and p("shrink_mremap")["weight"] == MIB // 2 and m["mremap_shrink_bytes"] == MIB // 2' \
	"shrink_mremap: what mremap shrank off not unmapped"
# totals agree with the stacks
check "$J" 'm["still_mapped_bytes"] == sum(s["weight"] for s in m["stacks"]) + m["unattributed_bytes"] and m["unattributed_bytes"] == 0' "still_mapped_bytes"
check "$J" 'm["unmapped_bytes"] == m["unmapped_recorded_bytes"] + m["unmapped_unrecorded_bytes"] and m["unmapped_recorded_bytes"] == sum(s["unmapped_bytes"] for s in m["stacks"])' \
	"unmapped totals"
check "$J" 'm["anon_mapped_bytes"] == sum(s["anon_bytes"] for s in m["stacks"]) and m["file_mapped_bytes"] == sum(s["file_bytes"] for s in m["stacks"])' "mapped totals"
check "$J" 'm["net_bytes"] == m["anon_mapped_bytes"] + m["shared_mapped_bytes"] + m["file_mapped_bytes"] + m["reserved_bytes"] + m["brk_growth_bytes"] + m["mremap_growth_bytes"] - m["unmapped_bytes"]' "net_bytes"
# fp mode: the frame-pointer walk with the wrapper's caller recovered by CFI names the same paths
check "$J" 'res["maps_fp"]["user_unwind"] == "fp" and res["maps_fp"]["unwind"]["fixed_leaves"] > 0' "fp: no leaf fixed"
check "$J" 'all(p(f, "maps_fp")["rows"] >= 1 for f in ("grow_mmap", "churn_mmap", "grow_mremap", "map_file", "purge"))' \
	"fp: a caller of the wrapper not named"
check "$J" 'near(p("grow_mmap", "maps_fp")["weight"], 5 * MIB) and p("churn_mmap", "maps_fp")["weight"] <= MIB' "fp: grow_mmap or churn_mmap bytes"
{ kill -9 "$PID"; wait "$PID"; } 2>/dev/null
exit 0
