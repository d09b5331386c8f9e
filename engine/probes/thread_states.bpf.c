// SPDX-License-Identifier: GPL-2.0
/* thread_states.bpf.c — a snapshot of every thread of the target, read on demand: a sleepable task
 * iterator whose seq file the engine reads at the window's start and at its end
 * (engine/probes/thread_states.c).
 *
 * Owns: per target thread, one struct ts_rec (thread_states.h): its scheduler state, context
 * switch counts and CPU time (what tells a thread that never ran in the window), when it last got
 * a CPU in the run-queue clock with the reading task's own arrival and CPU time beside it (how
 * long it has been blocked), the system call it is in and its arguments, its user registers; in
 * the end snapshot's read (TS_MODE_STATES) also, in a futex call, the words at the futex's address
 * (a glibc mutex's lock word and owner); and for the threads the engine then picks (`want`,
 * TS_MODE_DETAILS) their kernel stack and the top of their user stack (bpf_copy_from_user_task,
 * page by page: the copy stops at the end of the stack mapping). At most max_threads records a
 * read; the others are counted in `cut`.
 * Must not: write anything but records into the seq file, or read a thread's memory other than
 * its stack top and its futex word. It copies user memory, which may fault pages in: the engine
 * reads the iterator from a helper process a stalled file system can hold (tfile.h), never from
 * the run itself.
 */
// clang-format off
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "probes/thread_states.h"
// clang-format on

#define PF_KTHREAD 0x00200000
#define NR_FUTEX 202      /* x86-64 */
#define NR_FUTEX_WAIT 454 /* futex_wait(2), 6.7+ */

const volatile __u32 stack_bytes = 0;    /* user stack per thread in TS_MODE_DETAILS */
const volatile __u32 max_threads = 4096; /* records per read */

/* Set by the engine before each read (the .bss is mapped): what the read takes, and its counts. */
__u32 mode = TS_MODE_COUNTS;
__u32 written = 0;
__u32 cut = 0;

/* TS_MODE_DETAILS: the threads to read in full (set by the engine before the read). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 512); /* set from the recipe before load */
	__type(key, __u32);       /* thread id */
	__type(value, __u8);
} want SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ts_buf);
} scratch SEC(".maps");

/* Before 5.14 the field was `state` (diag_bpf.h's flavour). */
static __always_inline __u32 ts_state(struct task_struct *t)
{
	return (__u32)diag_task_state(t);
}

static __always_inline void copy_stack(struct ts_buf *b, struct task_struct *t)
{
	/* 64-bit throughout: the verifier keeps unsigned bounds through the comparisons */
	__u64 len = 0, want_bytes = stack_bytes;
	for (int i = 0; i < TS_STACK_MAX / TS_PAGE + 1; i++) {
		if (len >= want_bytes || len >= TS_STACK_MAX)
			break;
		__u64 at = b->h.sp + len;
		__u64 n = TS_PAGE - (at & (TS_PAGE - 1));
		__u64 left = want_bytes - len;
		if (n > left)
			n = left;
		if (bpf_copy_from_user_task(&b->stack[len & (TS_STACK_MAX - 1)], n, (const void *)at, t, 0)) {
			b->h.flags |= TS_F_STACK_CUT;
			break;
		}
		len += n;
	}
	b->h.stack_len = (__u32)len;
}

SEC("iter.s/task")
int iterator_threads(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *t = ctx->task;
	__u32 zero = 0;

	if (!t || (BPF_CORE_READ(t, flags) & PF_KTHREAD) || !diag_task_wanted(t))
		return 0;
	__u32 tid = BPF_CORE_READ(t, pid);
	bool details = mode == TS_MODE_DETAILS;
	if (details && !bpf_map_lookup_elem(&want, &tid))
		return 0;
	if (written >= max_threads) {
		__sync_fetch_and_add(&cut, 1);
		return 0;
	}
	struct ts_buf *b = bpf_map_lookup_elem(&scratch, &zero);
	if (!b)
		return 0;
	struct ts_rec *r = &b->h;
	r->magic = TS_REC_MAGIC;
	r->tgid = BPF_CORE_READ(t, tgid);
	r->tid = tid;
	BPF_CORE_READ_STR_INTO(&r->comm, t, comm);
	r->state = ts_state(t);
	r->exit_state = BPF_CORE_READ(t, exit_state);
	r->flags = BPF_CORE_READ(t, on_cpu) ? TS_F_ON_CPU : 0;
	r->nvcsw = BPF_CORE_READ(t, nvcsw);
	r->nivcsw = BPF_CORE_READ(t, nivcsw);
	r->sum_exec_ns = BPF_CORE_READ(t, se.sum_exec_runtime);
	r->slice_ns = r->sum_exec_ns - BPF_CORE_READ(t, se.prev_sum_exec_runtime);
	r->last_arrival = 0;
	/* now, in the same clock: the reading task got its CPU at last_arrival and has run since */
	r->now_clock = 0;
	if (bpf_core_field_exists(t->sched_info)) {
		struct task_struct *me = bpf_get_current_task_btf();
		r->last_arrival = BPF_CORE_READ(t, sched_info.last_arrival);
		r->now_clock = BPF_CORE_READ(me, sched_info.last_arrival) +
			       (BPF_CORE_READ(me, se.sum_exec_runtime) -
				BPF_CORE_READ(me, se.prev_sum_exec_runtime));
		r->flags |= TS_F_SCHED_INFO;
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
	/* a thread on a CPU moves on while it is read: neither its stack nor its futex is its */
	bool still = !(r->flags & TS_F_ON_CPU) && (r->flags & TS_F_REGS);
	if (mode != TS_MODE_COUNTS && still && (r->syscall == NR_FUTEX || r->syscall == NR_FUTEX_WAIT) &&
	    r->args[0] &&
	    bpf_copy_from_user_task(r->futex, sizeof(r->futex), (const void *)r->args[0], t, 0) == 0)
		r->flags |= TS_F_FUTEX;
	__u64 kbytes = 0;
	if (details) {
		r->flags |= TS_F_DETAILS;
		long n = bpf_get_task_stack(t, b->kstack, sizeof(b->kstack), 0);
		kbytes = n > 0 ? (__u64)n : 0;
		if (kbytes > sizeof(b->kstack))
			kbytes = sizeof(b->kstack);
		r->kstack_len = (__u32)(kbytes / 8);
		kbytes = r->kstack_len * 8;
		if (still && stack_bytes && r->sp)
			copy_stack(b, t);
	}
	__u64 stack = r->stack_len;
	if (stack > TS_STACK_MAX)
		stack = TS_STACK_MAX;
	r->size = (__u32)(sizeof(*r) + kbytes + stack);
	/* the header and kernel frames lie together in the scratch; the stack copy after them */
	__u64 head = sizeof(*r) + kbytes;
	if (head > sizeof(*r) + sizeof(b->kstack))
		head = sizeof(*r) + sizeof(b->kstack);
	if (bpf_seq_write(seq, b, head) == 0 && (!stack || bpf_seq_write(seq, b->stack, stack) == 0))
		__sync_fetch_and_add(&written, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
