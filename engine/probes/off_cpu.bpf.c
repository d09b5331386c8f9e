// SPDX-License-Identifier: GPL-2.0
/* off_cpu.bpf.c — where the target's threads spend their time off the CPU, and why.
 *
 * Owns: on sched_switch, for a target thread leaving the CPU, its switch-out time, its state
 * (runnable = preempted, sleeping, uninterruptible) and its user + kernel stack (taken there: the
 * switch runs in the leaving thread's context); for a thread coming back, the time it was away,
 * added to (process, thread name, stacks, state) with a count. Threads still away when the run
 * ends are in `away`: the engine adds their time up to the end. Two attach variants of the same
 * logic: tp_btf and raw_tp; the engine loads one set. When the engine unwinds user stacks itself
 * (copy_bytes > 0: glibc and other code without frame pointers hides the callers that matter,
 * e.g. the function that took a contended lock), the switch-out also sends the user registers
 * and the top of the user stack through the `samples` ring buffer with a cookie, and the
 * switch-in sends the time away as that cookie's weight (engine/abi/diag_unwind.h); an interval whose
 * records the ring buffer refused is counted in `counts` by its stack ids instead.
 * Must not: keep per-event records, or lose time silently: a full map, a failed stack walk and
 * blocks shorter than min_block_us are counted in `stats`.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_unwind.h"
#include "probes/off_cpu.h"

#define EFAULT 14

const volatile __u64 min_block_ns = 1000;
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
DIAG_UNWIND_MAPS; /* copy_bytes at each switch-out, 0: stack ids only */


struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* set from the recipe before load */
	__type(key, __u32);         /* thread id */
	__type(value, struct off_cpu_away);
} away SEC(".maps");

DIAG_STACK_MAP(stacks);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct off_cpu_key);
	__type(value, struct off_cpu_val);
	__uint(max_entries, 16384); /* set from the recipe before load */
} counts SEC(".maps");

static __always_inline __u32 off_state(long s)
{
	if (s == 0)
		return OFF_RUNNABLE;
	if (s & 1) /* TASK_INTERRUPTIBLE */
		return OFF_SLEEPING;
	if (s & 2) /* TASK_UNINTERRUPTIBLE (also TASK_KILLABLE, TASK_IDLE) */
		return OFF_UNINTERRUPTIBLE;
	return OFF_OTHER;
}

/* Time off the CPU in intervals under min_block_ns, by state (not recorded one by one: a thread
 * doing 20k fsyncs a second on a fast disk spends most of its time in them). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, OFF_NR_STATES);
	__type(key, __u32);
	__type(value, __u64);
} short_ns SEC(".maps");

static __always_inline void add_away(struct task_struct *next, __u64 now)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct off_cpu_away *out = bpf_map_lookup_elem(&away, &tid);
	if (!out)
		return;
	__u64 delta = now - out->ts;
	struct off_cpu_key key = {
		.tgid = out->tgid,
		.user_stack_id = out->user_stack_id,
		.kernel_stack_id = out->kernel_stack_id,
		.state = out->state,
	};
	__u64 cookie = out->cookie;
	__builtin_memcpy(key.comm, out->comm, sizeof(key.comm));
	bpf_map_delete_elem(&away, &tid);
	if ((__s64)delta < 0)
		return;
	if (delta < min_block_ns) {
		diag_stat_inc(&stats, OFF_STAT_TOO_SHORT);
		__u32 st = key.state < OFF_NR_STATES ? key.state : OFF_OTHER;
		__u64 *sum = bpf_map_lookup_elem(&short_ns, &st);
		if (sum)
			*sum += delta; /* per CPU: no other writer */
		return;
	}
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	if (cookie) {
		if (diag_send_weight(&samples, wake_bytes, tid, cookie, delta) == 0)
			return;
		diag_stat_inc(&stats, OFF_STAT_RING_FULL);
	}
	struct off_cpu_val *v = bpf_map_lookup_elem(&counts, &key);
	if (!v) {
		struct off_cpu_val zero = {};
		if (bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST) && !bpf_map_lookup_elem(&counts, &key)) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return;
		}
		v = bpf_map_lookup_elem(&counts, &key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->total_ns, delta);
	__sync_fetch_and_add(&v->count, 1);
}

/* compat: the twins' body, without the Python walk (diag_bpf.h's DIAG_COMPAT_SUFFIX) */
static __always_inline int on_switch(void *ctx, struct task_struct *prev, struct task_struct *next,
				     const bool compat)
{
	bool count_only = diag_count_only();
	__u64 now;

	if (BPF_CORE_READ(prev, pid) && diag_task_wanted(prev)) {
		if (count_only) {
			diag_passed(); /* a target thread leaves the CPU: one off-CPU interval */
		} else if (diag_sampled_in()) { /* sampling 1 in N intervals: decided here */
			/* prev is current here: its stacks are the ones the kernel walks */
			struct off_cpu_away out = { .state = off_state(diag_task_state(prev)),
						    .tgid = BPF_CORE_READ(prev, tgid) };
			__u32 tid = BPF_CORE_READ(prev, pid);
			BPF_CORE_READ_STR_INTO(&out.comm, prev, comm);
			/* the governor may drop the stacks (their walk, copy and ring) mid-run */
			bool dropped = diag_stacks_dropped();
			bool kstack = kernel_stacks && !dropped, ustack = user_stacks && !dropped;
			out.kernel_stack_id = kstack ? bpf_get_stackid(ctx, &stacks, 0) : -1;
			out.user_stack_id = ustack ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : -1;
			if ((kstack && out.kernel_stack_id < 0 && out.kernel_stack_id != -EFAULT) ||
			    (ustack && out.user_stack_id < 0 && out.user_stack_id != -EFAULT))
				diag_stat_inc(&stats, DIAG_STAT_LOST);
			out.ts = bpf_ktime_get_ns();
			if ((copy_bytes || py_walk) && ustack && out.user_stack_id != -EFAULT) {
				if (diag_send_user_sample(&samples, &scratch, copy_bytes, wake_bytes,
							  out.tgid, out.comm, out.user_stack_id,
							  out.kernel_stack_id, 0, out.state,
							  out.ts, DIAG_PY_MAPS_ARGS_IF(!compat)) == 0) {
					out.cookie = out.ts;
					diag_stat_inc(&stats, OFF_STAT_SENT);
				} else {
					diag_stat_inc(&stats, OFF_STAT_RING_FULL);
				}
			}
			if (bpf_map_update_elem(&away, &tid, &out, BPF_ANY))
				diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
		}
	}
	if (count_only)
		return 0;
	/* Every switch on the machine comes here: the filter (rodata, a field read) before the
	 * clock and the hash lookup, which only a target thread can need. */
	if (!diag_task_wanted(next))
		return 0;
	now = bpf_ktime_get_ns();
	add_away(next, now);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_off_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, prev, next, false);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_off_switch_compat, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, prev, next, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_tp_off_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, prev, next, false);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_tp_off_switch_compat, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, prev, next, true);
}

char LICENSE[] SEC("license") = "GPL";
