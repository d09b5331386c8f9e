// SPDX-License-Identifier: GPL-2.0
/* runq_latency.bpf.c — how long the target's threads wait on a run queue before they run.
 *
 * Owns: the wakeup/preemption timestamp per thread and a log2 histogram (microseconds) of the
 * wait, from the sched_wakeup, sched_wakeup_new and sched_switch tracepoints. Two attach
 * variants of the same logic: tp_btf (typed, cheapest) and raw_tp (for kernels whose BTF
 * tracing is missing); the engine loads one set and leaves the other unloaded.
 * Under 1-in-N sampling (the pre-flight's degrade: sample), a wait is timed or not from its start.
 * Must not: aggregate per thread or keep per-event records (the histogram is the result).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"

#define TASK_RUNNING 0


struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* set from the recipe before load */
	__type(key, __u32);
	__type(value, __u64);
} wait_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DIAG_HIST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} hist_us SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} totals SEC(".maps"); /* [0] sum of waits in ns, [1] longest wait in ns */

/* A target thread becomes runnable: in count-only mode, the event this probe will time. */
static __always_inline int mark_runnable(struct task_struct *t, bool count_only)
{
	__u32 tid = BPF_CORE_READ(t, pid);
	__u64 now;

	if (!diag_admit(count_only, tid && diag_task_wanted(t)))
		return 0;
	if (!diag_sampled_in()) /* 1 in N waits timed: the engine scales the counts */
		return 0;
	now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&wait_start, &tid, &now, BPF_ANY))
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
	return 0;
}

static __always_inline int on_switch(struct task_struct *prev, struct task_struct *next)
{
	__u32 tid;
	__u64 *start, delta, *bucket;
	__u32 slot;
	bool count_only = diag_count_only();

	/* A thread preempted while runnable goes straight back onto a run queue. */
	if (diag_task_state(prev) == TASK_RUNNING)
		mark_runnable(prev, count_only);
	if (count_only)
		return 0;

	tid = BPF_CORE_READ(next, pid);
	start = bpf_map_lookup_elem(&wait_start, &tid);
	if (!start)
		return 0;
	delta = bpf_ktime_get_ns() - *start;
	bpf_map_delete_elem(&wait_start, &tid);
	if ((__s64)delta < 0)
		return 0;

	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	slot = diag_log2(delta / 1000);
	if (slot >= DIAG_HIST_SLOTS)
		slot = DIAG_HIST_SLOTS - 1;
	bucket = bpf_map_lookup_elem(&hist_us, &slot);
	if (bucket)
		__sync_fetch_and_add(bucket, 1);
	diag_add_total(&totals, delta);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(tp_btf_wakeup, struct task_struct *p) { return mark_runnable(p, diag_count_only()); }

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(tp_btf_wakeup_new, struct task_struct *p) { return mark_runnable(p, diag_count_only()); }

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(prev, next);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(raw_tp_wakeup, struct task_struct *p) { return mark_runnable(p, diag_count_only()); }

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_tp_wakeup_new, struct task_struct *p) { return mark_runnable(p, diag_count_only()); }

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_tp_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(prev, next);
}

char LICENSE[] SEC("license") = "GPL";
