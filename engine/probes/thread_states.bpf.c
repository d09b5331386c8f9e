// SPDX-License-Identifier: GPL-2.0
/* thread_states.bpf.c — a snapshot of every thread of the target, read on demand: a sleepable task
 * iterator whose seq file the engine reads at the window's start and at its end
 * (engine/probes/thread_states.c).
 *
 * Owns: per target thread, one struct ts_rec (thread_states.h): its scheduler state, context
 * switch counts and CPU time (what tells a thread that never ran in the window), when it last got
 * a CPU in the run-queue clock with the reading CPU's run-queue clock beside it (how long it has
 * been blocked), the system call it is in and its arguments, its user registers; in an end
 * snapshot (`full`) also its kernel stack, the top of its user stack (bpf_copy_from_user_task, page
 * by page: the copy stops at the end of the stack mapping) and, in a futex call, the words at the
 * futex's address (a glibc mutex's lock word and owner). At most max_threads records a read; the
 * others are counted in `cut`.
 * Must not: write anything but records into the seq file, or read a thread's memory other than
 * its stack top and its futex word. It copies user memory, which may fault pages in: the engine
 * reads the iterator from a helper process a stalled file system can hold (tfile.h), never from
 * the run itself.
 */
// clang-format off
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "diag_bpf.h"
#include "thread_states.h"
// clang-format on

#define PF_KTHREAD 0x00200000
#define NR_FUTEX 202      /* x86-64 */
#define NR_FUTEX_WAIT 454 /* futex_wait(2), 6.7+ */

const volatile __u32 stack_bytes = 0;    /* user stack per thread in an end snapshot */
const volatile __u32 max_threads = 4096; /* records per read */

/* Set by the engine before each read (the .bss is mapped): what the read takes, and its counts. */
__u32 full = 0;
__u32 written = 0;
__u32 cut = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ts_rec);
} scratch SEC(".maps");

/* Before 5.14 the field was `state` (diag_bpf.h's flavour). */
static __always_inline __u32 ts_state(struct task_struct *t)
{
	return (__u32)diag_task_state(t);
}

static __always_inline void copy_stack(struct ts_rec *r, struct task_struct *t)
{
	/* 64-bit throughout: the verifier keeps unsigned bounds through the comparisons */
	__u64 len = 0, want = stack_bytes;
	for (int i = 0; i < TS_STACK_MAX / TS_PAGE + 1; i++) {
		if (len >= want || len >= TS_STACK_MAX)
			break;
		__u64 at = r->sp + len;
		__u64 n = TS_PAGE - (at & (TS_PAGE - 1));
		__u64 left = want - len;
		if (n > left)
			n = left;
		if (bpf_copy_from_user_task(&r->stack[len & (TS_STACK_MAX - 1)], n,
					    (const void *)at, t, 0)) {
			r->flags |= TS_F_STACK_CUT;
			break;
		}
		len += n;
	}
	r->stack_len = (__u32)len;
}

SEC("iter.s/task")
int iterator_threads(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	__u32 zero = 0;

	if (!t || (BPF_CORE_READ(t, flags) & PF_KTHREAD) || !diag_task_wanted(t))
		return 0;
	if (written >= max_threads) {
		__sync_fetch_and_add(&cut, 1);
		return 0;
	}
	struct ts_rec *r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return 0;
	r->magic = TS_REC_MAGIC;
	r->tgid = BPF_CORE_READ(t, tgid);
	r->tid = BPF_CORE_READ(t, pid);
	BPF_CORE_READ_STR_INTO(&r->comm, t, comm);
	r->state = ts_state(t);
	r->exit_state = BPF_CORE_READ(t, exit_state);
	r->flags = BPF_CORE_READ(t, on_cpu) ? TS_F_ON_CPU : 0;
	r->nvcsw = BPF_CORE_READ(t, nvcsw);
	r->nivcsw = BPF_CORE_READ(t, nivcsw);
	r->sum_exec_ns = BPF_CORE_READ(t, se.sum_exec_runtime);
	r->slice_ns = r->sum_exec_ns - BPF_CORE_READ(t, se.prev_sum_exec_runtime);
	r->last_arrival = 0;
	if (bpf_core_field_exists(t->sched_info)) {
		r->last_arrival = BPF_CORE_READ(t, sched_info.last_arrival);
		r->flags |= TS_F_SCHED_INFO;
	}
	/* now, in the same clock: the reading task got its CPU at last_arrival and has run since */
	r->now_clock = 0;
	if (bpf_core_field_exists(t->sched_info)) {
		struct task_struct *me = bpf_get_current_task_btf();
		r->now_clock = BPF_CORE_READ(me, sched_info.last_arrival) +
			       (BPF_CORE_READ(me, se.sum_exec_runtime) -
				BPF_CORE_READ(me, se.prev_sum_exec_runtime));
	}
	r->syscall = -1;
	r->ip = r->sp = r->bp = 0;
	r->stack_len = 0;
	r->kstack_len = 0;
	r->pad = 0;
	for (int i = 0; i < 6; i++)
		r->args[i] = 0;
	for (int i = 0; i < TS_FUTEX_WORDS; i++)
		r->futex[i] = 0;
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (regs) {
		r->syscall = (__s64)BPF_CORE_READ(regs, orig_ax);
		r->args[0] = BPF_CORE_READ(regs, di);
		r->args[1] = BPF_CORE_READ(regs, si);
		r->args[2] = BPF_CORE_READ(regs, dx);
		r->args[3] = BPF_CORE_READ(regs, r10);
		r->args[4] = BPF_CORE_READ(regs, r8);
		r->args[5] = BPF_CORE_READ(regs, r9);
		r->ip = BPF_CORE_READ(regs, ip);
		r->sp = BPF_CORE_READ(regs, sp);
		r->bp = BPF_CORE_READ(regs, bp);
		r->flags |= TS_F_REGS;
	}
#endif
	if (full) {
		r->flags |= TS_F_FULL;
		long n = bpf_get_task_stack(t, r->kstack, sizeof(r->kstack), 0);
		r->kstack_len = n > 0 ? (__u32)n / 8 : 0;
		/* a thread on a CPU moves on while it is read: neither its stack nor its futex is its */
		bool still = !(r->flags & TS_F_ON_CPU) && (r->flags & TS_F_REGS);
		if (still && stack_bytes && r->sp)
			copy_stack(r, t);
		if (still && (r->syscall == NR_FUTEX || r->syscall == NR_FUTEX_WAIT) && r->args[0] &&
		    bpf_copy_from_user_task(r->futex, sizeof(r->futex), (const void *)r->args[0], t, 0) == 0)
			r->flags |= TS_F_FUTEX;
	}
	__u64 size = __builtin_offsetof(struct ts_rec, stack) + r->stack_len;
	if (size > sizeof(*r))
		size = sizeof(*r);
	r->size = (__u32)size;
	if (bpf_seq_write(seq, r, size) == 0)
		__sync_fetch_and_add(&written, 1);
	else
		__sync_fetch_and_add(&cut, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
