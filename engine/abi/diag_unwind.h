/* diag_unwind.h — what a stack probe shares to have its user stacks unwound in user space
 * (engine/symbolize/unwind.c, engine/probes/stack_sampler.c): the record it streams through its ring buffer with
 * each sample (user registers, stack ids, a weight, and the top of the user stack copied from sp)
 * and, in BPF, the sender that fills it in a per-CPU scratch entry, copies the stack page by page
 * and outputs it, waking the engine only when wake_bytes are waiting. A sample whose weight is
 * not known when its stack is (off-CPU time: the stack at switch-out, the time at switch-in)
 * carries a cookie, and its weight follows later in the same ring buffer as a struct
 * diag_weight_rec with that cookie.
 * Must not: define maps (each probe has its own ring buffer and scratch array) or unwind (no CFI
 * in BPF).
 */
#ifndef DIAG_BPF_UNWIND_H
#define DIAG_BPF_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "abi/diag_python.h"

/* At most this much stack per sample; copied in pieces that never cross a page, so that the copy
 * ends at the top of the stack mapping (or a page not present) with what was readable before. */
#define DIAG_MAX_STACK_BYTES 16384
#define DIAG_PAGE 4096
#define DIAG_SAMPLE_CUT 1 /* flags: the copy stopped before the bytes asked */
#define DIAG_SAMPLE_PY 2  /* flags: a struct diag_py_rec of this thread came just before */

/* The first word of every ring buffer record: which struct it is. */
#define DIAG_REC_SAMPLE 1 /* struct diag_user_sample */
#define DIAG_REC_WEIGHT 2 /* struct diag_weight_rec */
/* 3: struct diag_py_rec (DIAG_REC_PY, diag_python.h) */

struct diag_user_sample {
	__u32 rec;             /* DIAG_REC_SAMPLE */
	__u32 tag;             /* the probe's own split of the stack (off-CPU: the task state) */
	__u64 cookie;          /* 0: weight below is final; else the weight follows in a
				* diag_weight_rec of the same thread with this cookie */
	__u32 tgid, tid;
	__s32 user_stack_id;   /* the frame-pointer walk (bpf_get_stackid), < 0: none */
	__s32 kernel_stack_id; /* < 0: none (-EFAULT: the task was in user mode) */
	char comm[16];
	__u64 weight;          /* in the probe's stack_unit (samples: 1; off-CPU: ns) */
	__u64 ip, sp, bp;      /* user registers (the task's, also when it was in the kernel) */
	__u32 stack_len;       /* bytes of stack[] copied from user address sp */
	__u32 flags;
	__s64 aux;             /* the probe's own (allocations: what a realloc grew the block by) */
	/* DIAG_PAGE of slack: the verifier sees each piece land below the end */
	__u8 stack[DIAG_MAX_STACK_BYTES + DIAG_PAGE];
};

/* The weight of a sample thread tid sent earlier with cookie (the first one not yet weighed). */
struct diag_weight_rec {
	__u32 rec;             /* DIAG_REC_WEIGHT */
	__u32 tid;
	__u64 cookie;
	__u64 weight;
};

#ifdef __BPF__
/* What a probe that streams samples declares: the ring buffer `samples` (its size set from the
 * recipe before load) and the one-entry per-CPU `scratch` a sample is built in (too big for the
 * BPF stack), with the knobs the engine sets: copy_bytes of user stack per sample (0: no
 * copy; no streaming unless py_walk) and wake_bytes waiting before the engine is woken; and the
 * Python maps (diag_python.h: py_walk set, the samples of Python processes carry their Python
 * frames). DIAG_PY_MAPS_ARGS passes those maps to the senders below. */
#define DIAG_PY_MAPS_ARGS (py_walk ? (void *)&py_procs : (void *)0), &py_tstates, &py_scratch
/* The same in a program that has a twin for kernels without bpf_loop (Linux 5.17; diag_bpf.h's
 * DIAG_COMPAT_SUFFIX): compat true (a constant in the twin's inlined body), no Python walk at all
 * (its bpf_loop callbacks would not load there, even unreached). */
#define DIAG_PY_MAPS_ARGS_IF(walk)                                                                \
	((walk) && py_walk ? (void *)&py_procs : (void *)0), &py_tstates, &py_scratch
#define DIAG_UNWIND_MAPS                                                                          \
	DIAG_PYTHON_MAPS;                                                                         \
	const volatile __u32 copy_bytes = 0;                                                      \
	const volatile __u64 wake_bytes = 1024;                                                   \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                                               \
		__uint(max_entries, 4096);                                                        \
	} samples SEC(".maps");                                                                   \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                          \
		__uint(max_entries, 1);                                                           \
		__type(key, __u32);                                                               \
		__type(value, struct diag_user_sample);                                           \
	} scratch SEC(".maps")

/* The kernel stack's size, where task_pt_regs finds the user registers of a task below its top
 * (x86-64 and arm64 alike, without KASAN's doubling: Debian's kernels). */
#define DIAG_THREAD_SIZE 16384

/* The current task's user registers (saved at its entry into the kernel, also when it was in user
 * mode: then they are the interrupted ones). bpf_task_pt_regs where the kernel has it (5.15);
 * before, task_pt_regs computed as the kernel does, from the task's stack page: the same
 * programs load from 5.10 on. */
static __always_inline struct pt_regs *diag_user_regs(void)
{
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs))
		return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 stack = (__u64)BPF_CORE_READ(task, stack);
	return (struct pt_regs *)(stack + DIAG_THREAD_SIZE - bpf_core_type_size(struct pt_regs));
}

/* Fills one sample of the current task in the one-entry per-CPU array scratch of struct
 * diag_user_sample: its user registers and copy_bytes of its user stack (at most
 * DIAG_MAX_STACK_BYTES), with its weight, tag and cookie (engine/abi/diag_unwind.h's header). Returns
 * it, or NULL when scratch is missing. A probe may fix the copy (e.g. return addresses a
 * uretprobe replaced) before diag_output_user_sample. */
static __always_inline struct diag_user_sample *
diag_fill_user_sample(void *scratch, __u32 copy_bytes, __u32 tgid, const char *comm,
		      __s32 user_stack_id, __s32 kernel_stack_id, __u64 weight, __u32 tag,
		      __u64 cookie)
{
	__u32 zero = 0;
	struct diag_user_sample *s = bpf_map_lookup_elem(scratch, &zero);
	if (!s)
		return NULL;
	struct pt_regs *regs = diag_user_regs();
	s->rec = DIAG_REC_SAMPLE;
	s->tag = tag;
	s->cookie = cookie;
	s->tgid = tgid;
	s->tid = (__u32)bpf_get_current_pid_tgid();
	s->user_stack_id = user_stack_id;
	s->kernel_stack_id = kernel_stack_id;
	__builtin_memcpy(s->comm, comm, sizeof(s->comm));
	s->weight = weight;
	s->ip = BPF_CORE_READ(regs, ip);
	s->sp = BPF_CORE_READ(regs, sp);
	s->bp = BPF_CORE_READ(regs, bp);
	s->flags = 0;
	s->aux = 0;

	/* 64-bit throughout: the verifier keeps unsigned bounds through the comparisons */
	__u64 len = 0, want = copy_bytes;
	for (int i = 0; i < DIAG_MAX_STACK_BYTES / DIAG_PAGE + 1; i++) {
		if (len >= want || len >= DIAG_MAX_STACK_BYTES)
			break;
		__u64 at = s->sp + len;
		__u64 n = DIAG_PAGE - (at & (DIAG_PAGE - 1));
		__u64 left = want - len;
		if (n > left)
			n = left;
		if (bpf_probe_read_user(&s->stack[len & (DIAG_MAX_STACK_BYTES - 1)], n,
					(const void *)at)) {
			s->flags |= DIAG_SAMPLE_CUT;
			break;
		}
		len += n;
	}
	s->stack_len = (__u32)len;
	return s;
}

/* A function under a uretprobe (the allocations probe's malloc) has the uprobe trampoline in
 * place of its return address until it returns: a copy of its stack would unwind into the
 * trampoline and lose the caller. The kernel keeps the real address per hijacked frame
 * (task->utask->return_instances: where it was on the stack, what it was); put it back in the copy,
 * as the kernel's own stack walk does for bpf_get_stackid. Returns whether any was. */
#define DIAG_MAX_RETURN_INSTANCES 8
static __always_inline bool diag_restore_uretprobe_returns(struct diag_user_sample *s)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task(); /* _btf: 5.11 */
	bool fixed = false;
	if (!bpf_core_field_exists(task->utask))
		return false;
	struct return_instance *ri = BPF_CORE_READ(task, utask, return_instances);
	for (int i = 0; i < DIAG_MAX_RETURN_INSTANCES && ri; i++) {
		__u64 slot = BPF_CORE_READ(ri, stack), ret = BPF_CORE_READ(ri, orig_ret_vaddr);
		if (slot >= s->sp && slot + 8 <= s->sp + s->stack_len) {
			__u64 off = slot - s->sp;
			if (off < DIAG_MAX_STACK_BYTES)
				__builtin_memcpy(&s->stack[off & (DIAG_MAX_STACK_BYTES - 1)], &ret, 8);
			fixed = true;
		}
		ri = BPF_CORE_READ(ri, next);
	}
	return fixed;
}

/* Outputs a filled sample through ring buffer rb, waking the engine only when wake_bytes are
 * waiting; first, when py_procs is given (DIAG_PY_MAPS_ARGS) and holds the sample's process, the
 * thread's Python frames (diag_python.h), the sample flagged DIAG_SAMPLE_PY when they went out.
 * 0, or -1 when the ring buffer refused the sample (full). */
static __always_inline int diag_output_user_sample(void *rb, struct diag_user_sample *s,
						   __u64 wake_bytes, void *py_procs,
						   void *py_tstates, void *py_scratch)
{
	if (py_procs) {
		struct diag_py_rec *py = diag_py_walk(py_procs, py_tstates, py_scratch, s->tgid,
						      s->tid);
		if (py && diag_py_output(rb, py) == 0)
			s->flags |= DIAG_SAMPLE_PY;
	}
	__u64 size = __builtin_offsetof(struct diag_user_sample, stack) + s->stack_len;
	if (size > sizeof(*s))
		size = sizeof(*s);
	__u64 wake = bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) + size >= wake_bytes
			     ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	return bpf_ringbuf_output(rb, s, size, wake) ? -1 : 0;
}

/* Sends one sample of the current task (diag_fill_user_sample, then diag_output_user_sample,
 * py_*: DIAG_PY_MAPS_ARGS).
 * Returns 0, or -1 when the ring buffer refused it (full) or scratch is missing: the caller
 * counts the sample its own way and says so in its stats. */
static __always_inline int diag_send_user_sample(void *rb, void *scratch, __u32 copy_bytes,
						 __u64 wake_bytes, __u32 tgid, const char *comm,
						 __s32 user_stack_id, __s32 kernel_stack_id,
						 __u64 weight, __u32 tag, __u64 cookie,
						 void *py_procs, void *py_tstates, void *py_scratch)
{
	struct diag_user_sample *s = diag_fill_user_sample(scratch, copy_bytes, tgid, comm,
							   user_stack_id, kernel_stack_id, weight,
							   tag, cookie);
	return s ? diag_output_user_sample(rb, s, wake_bytes, py_procs, py_tstates, py_scratch) : -1;
}

/* Sends the weight of the sample thread tid sent with cookie. Returns 0, or -1 when the ring
 * buffer refused it (the caller counts the interval its own way). */
static __always_inline int diag_send_weight(void *rb, __u64 wake_bytes, __u32 tid, __u64 cookie,
					    __u64 weight)
{
	struct diag_weight_rec w = { .rec = DIAG_REC_WEIGHT, .tid = tid, .cookie = cookie,
				     .weight = weight };
	__u64 wake = bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) + sizeof(w) >= wake_bytes
			     ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	return bpf_ringbuf_output(rb, &w, sizeof(w), wake) ? -1 : 0;
}
#endif

#endif
