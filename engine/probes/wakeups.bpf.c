// SPDX-License-Identifier: GPL-2.0
/* wakeups.bpf.c — who wakes the target's blocked threads, from which call path: the "who woke
 * me" half of offwaketime. A thread waiting for a mutex is woken by the thread that releases it,
 * from its own function: the holder's path names what keeps the lock.
 *
 * Owns: on sched_switch, the time a target thread blocks (leaves the CPU not runnable); on
 * sched_waking (in the waker's own context, unlike sched_wakeup, which may run on the wakee's
 * CPU), the waker's user + kernel stack, comm and kind (the woken thread's own process, another
 * process, the kernel),
 * weighted by the part of the woken thread's wait during which the waker was not itself blocked
 * (since the later of the two: the wakee blocking, the waker's own last wakeup), added to
 * `counts`. So in a lock convoy — the holder releases after a long hold and wakes waiter 1, which
 * takes the lock briefly and wakes waiter 2, … — waiter 2's wait goes to the holder too: waiter 1
 * was blocked on it until just before. The rest of the wait is summed in `chained_ns`.
 * Or, when the engine
 * unwinds user stacks itself (copy_bytes > 0), sent through the `samples` ring buffer with the
 * waker's registers and stack top (engine/abi/diag_unwind.h). Two attach variants: tp_btf and raw_tp.
 * Must not: keep per-event records beyond the ring buffer, or lose a wakeup silently: blocks
 * under min_block_us, full maps and refused records are counted in `stats`.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_unwind.h"
#include "probes/wakeups.h"

#define EFAULT 14

const volatile __u64 min_block_ns = 1000;
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
DIAG_UNWIND_MAPS; /* copy_bytes of the waker's stack, 0: stack ids only */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* set from the recipe before load */
	__type(key, __u32);         /* thread id */
	__type(value, __u64);       /* bpf_ktime_get_ns() when it blocked */
} blocked SEC(".maps");

/* The parts of waits passed on to the waker's own waker (see the top), in ns. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} chained_ns SEC(".maps");

/* When each thread was last woken: how long a waker has been awake (LRU: threads come and go). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* set from the recipe before load */
	__type(key, __u32);
	__type(value, __u64);
} woken SEC(".maps");

DIAG_STACK_MAP(stacks);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct wake_key);
	__type(value, struct wake_val);
	__uint(max_entries, 16384); /* set from the recipe before load */
} counts SEC(".maps");


static __always_inline void add_count(struct wake_key *key, __u64 ns)
{
	struct wake_val *v = bpf_map_lookup_elem(&counts, key);
	if (!v) {
		struct wake_val zero = {};
		if (bpf_map_update_elem(&counts, key, &zero, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&counts, key)) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return;
		}
		v = bpf_map_lookup_elem(&counts, key);
		if (!v)
			return;
	}
	__sync_fetch_and_add(&v->total_ns, ns);
	__sync_fetch_and_add(&v->count, 1);
}

static __always_inline int on_switch(struct task_struct *prev)
{
	bool count_only = diag_count_only();
	__u32 tid = BPF_CORE_READ(prev, pid);
	/* only a thread that blocks can be woken: preempted ones stay runnable */
	if (count_only || !tid || diag_task_state(prev) == 0 || !diag_task_wanted(prev))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&blocked, &tid, &now, BPF_ANY))
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
	return 0;
}

/* compat: the twins' body, without the Python walk (diag_bpf.h's DIAG_COMPAT_SUFFIX) */
static __always_inline int on_waking(void *ctx, struct task_struct *p, const bool compat)
{
	bool count_only = diag_count_only();
	__u32 tid = BPF_CORE_READ(p, pid);
	if (!diag_admit(count_only, tid && diag_task_wanted(p))) /* a target thread is woken */
		return 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 *blocked_at = bpf_map_lookup_elem(&blocked, &tid);
	if (!blocked_at) {
		bpf_map_update_elem(&woken, &tid, &now, BPF_ANY);
		return 0; /* blocked before the probe attached, or already woken */
	}
	__u64 since = *blocked_at;
	bpf_map_delete_elem(&blocked, &tid);
	bpf_map_update_elem(&woken, &tid, &now, BPF_ANY);
	if ((__s64)(now - since) < 0)
		return 0;
	/* the waker's own wait, if it was woken after the wakee blocked, is its waker's doing */
	__u32 waker_tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *waker_woken = waker_tid ? bpf_map_lookup_elem(&woken, &waker_tid) : 0;
	if (waker_woken && *waker_woken > since && *waker_woken <= now) {
		__u32 zero = 0;
		__u64 *c = bpf_map_lookup_elem(&chained_ns, &zero);
		if (c)
			*c += *waker_woken - since;
		since = *waker_woken;
	}
	__u64 ns = now - since;
	if (ns < min_block_ns) {
		diag_stat_inc(&stats, WAKE_STAT_TOO_SHORT);
		return 0;
	}
	if (!diag_sampled_in())
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);

	struct task_struct *waker = (struct task_struct *)bpf_get_current_task();
	struct wake_key key = { .waker_tgid = bpf_get_current_pid_tgid() >> 32 };
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (!BPF_CORE_READ(waker, mm))
		key.by = WAKE_BY_KERNEL; /* a kernel thread, or the idle task under an interrupt */
	else if (key.waker_tgid == BPF_CORE_READ(p, tgid))
		key.by = WAKE_BY_SAME;
	else
		key.by = WAKE_BY_OTHER;
	/* the governor may drop the stacks (their walk, copy and ring) mid-run */
	bool dropped = diag_stacks_dropped();
	bool kstack = kernel_stacks && !dropped, ustack = user_stacks && key.by != WAKE_BY_KERNEL && !dropped;
	key.kernel_stack_id = kstack ? bpf_get_stackid(ctx, &stacks, 0) : -1;
	key.user_stack_id = ustack ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : -1;
	if ((kstack && key.kernel_stack_id < 0 && key.kernel_stack_id != -EFAULT) ||
	    (ustack && key.user_stack_id < 0 && key.user_stack_id != -EFAULT))
		diag_stat_inc(&stats, DIAG_STAT_LOST);

	if ((copy_bytes || py_walk) && key.by != WAKE_BY_KERNEL && !dropped &&
	    key.user_stack_id != -EFAULT) {
		if (diag_send_user_sample(&samples, &scratch, copy_bytes, wake_bytes,
					  key.waker_tgid, key.comm, key.user_stack_id,
					  key.kernel_stack_id, ns, key.by, 0,
					  DIAG_PY_MAPS_ARGS_IF(!compat)) == 0) {
			diag_stat_inc(&stats, WAKE_STAT_SENT);
			return 0;
		}
		diag_stat_inc(&stats, WAKE_STAT_RING_FULL);
	}
	add_count(&key, ns);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(tp_btf_wake_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(prev);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(tp_btf_wake_waking, struct task_struct *p)
{
	return on_waking(ctx, p, false);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(tp_btf_wake_waking_compat, struct task_struct *p)
{
	return on_waking(ctx, p, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_tp_wake_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(prev);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(raw_tp_wake_waking, struct task_struct *p)
{
	return on_waking(ctx, p, false);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(raw_tp_wake_waking_compat, struct task_struct *p)
{
	return on_waking(ctx, p, true);
}

char LICENSE[] SEC("license") = "GPL";
