// SPDX-License-Identifier: GPL-2.0
/* func_latency.bpf.c — how long one user-space function takes, per call: a uprobe on its entry,
 * a uretprobe on its return, and a log2 histogram (nanoseconds) of the difference.
 *
 * Owns: a small per-thread stack of (entry time, entry stack pointer), so that recursive calls
 * each get their own start time; matching a return to its entry by stack pointer; the histogram
 * and the sum/max of the latencies.
 * Must not: mis-time a call. A call that cannot be timed is counted, never guessed:
 * - nesting deeper than FUNC_MAX_DEPTH: the deeper entries are not recorded (DIAG_STAT_LOST);
 * - the thread table full: the entry is not recorded (DIAG_STAT_MAP_FULL);
 * - an entry whose return never came (longjmp/exceptions out of the function, or the kernel's
 *   own limit of pending uretprobes per thread): dropped as soon as a shallower entry or return
 *   of the same thread shows it is gone (FUNC_STAT_ABANDONED);
 * - a return with no recorded entry (the call began before the probe was attached, or its entry
 *   was one of the above): ignored (FUNC_STAT_UNMATCHED).
 *
 * Why stack pointers: a return can only belong to the entry made at the same stack depth. On
 * x86 the entry sees the stack pointer pointing at the return address, and the return sees it
 * 8 bytes higher (the `ret` popped it); on arm64 and the others the return address is in a
 * register and both see the same value.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "probes/func_latency.h"

#if defined(__TARGET_ARCH_x86)
#define RET_SP_ADJ 8
#else
#define RET_SP_ADJ 0
#endif

#define DEPTH_MASK (FUNC_MAX_DEPTH - 1)


struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, __u32);        /* thread id */
	__type(value, struct func_stack);
} entries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FUNC_HIST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} hist_ns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} totals SEC(".maps"); /* [0] sum of latencies in ns, [1] longest in ns */

static __always_inline bool wanted(__u64 id)
{
	(void)id;
	return diag_current_wanted(); /* the attach is by pid too */
}

/* Drops entries deeper than `sp` (lower addresses; and at `sp` when inclusive): their frames
 * are gone. */
static __always_inline void drop_abandoned(struct func_stack *st, __u64 sp, bool inclusive)
{
	for (int i = 0; i < FUNC_MAX_DEPTH; i++) {
		__u32 d = st->depth;
		if (d == 0 || d > FUNC_MAX_DEPTH)
			break;
		__u64 top = st->sp[(d - 1) & DEPTH_MASK];
		if (inclusive ? top > sp : top >= sp)
			break;
		st->depth = d - 1;
		diag_stat_inc(&stats, FUNC_STAT_ABANDONED);
	}
}

SEC("uprobe")
int BPF_KPROBE(func_lat_entry)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u64 sp = PT_REGS_SP(ctx);
	struct func_stack *st;
	bool count_only = diag_count_only();

	if (!diag_admit(count_only, wanted(id))) /* a call: the event this probe counts */
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	st = bpf_map_lookup_elem(&entries, &tid);
	if (!st) {
		struct func_stack empty = {};
		bpf_map_update_elem(&entries, &tid, &empty, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&entries, &tid);
		if (!st) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return 0;
		}
	}
	/* A new call at the same or a shallower stack position: older entries there are gone. */
	drop_abandoned(st, sp, true);
	__u32 d = st->depth;
	if (d >= FUNC_MAX_DEPTH) {
		diag_stat_inc(&stats, DIAG_STAT_LOST);
		return 0;
	}
	st->sp[d & DEPTH_MASK] = sp;
	st->ts[d & DEPTH_MASK] = bpf_ktime_get_ns();
	st->depth = d + 1;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(func_lat_return)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u64 entry_sp = PT_REGS_SP(ctx) - RET_SP_ADJ;
	struct func_stack *st;

	if (diag_count_only() || !wanted(id))
		return 0;
	st = bpf_map_lookup_elem(&entries, &tid);
	if (!st) {
		diag_stat_inc(&stats, FUNC_STAT_UNMATCHED);
		return 0;
	}
	/* Entries deeper than the returning call never returned. */
	drop_abandoned(st, entry_sp, false);
	__u32 d = st->depth;
	if (d == 0 || d > FUNC_MAX_DEPTH || st->sp[(d - 1) & DEPTH_MASK] != entry_sp) {
		diag_stat_inc(&stats, FUNC_STAT_UNMATCHED);
		if (d == 0)
			bpf_map_delete_elem(&entries, &tid);
		return 0;
	}
	__u64 delta = now - st->ts[(d - 1) & DEPTH_MASK];
	st->depth = d - 1;
	if (d == 1) /* outermost call done: the thread's slot goes back to the table */
		bpf_map_delete_elem(&entries, &tid);
	if ((__s64)delta < 0)
		return 0;

	diag_stat_inc(&stats, FUNC_STAT_RETURNS);
	__u32 slot = diag_log2(delta) & (FUNC_HIST_SLOTS - 1);
	__u64 *bucket = bpf_map_lookup_elem(&hist_ns, &slot);
	if (bucket)
		__sync_fetch_and_add(bucket, 1);
	diag_add_total(&totals, delta);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
