/* thread_states.h — the record engine/probes/thread_states.bpf.c writes per thread into its task
 * iterator's seq file, and engine/probes/thread_states.c reads (a snapshot: the target's threads,
 * one record after the other), and the read modes.
 * Must not: hold anything but the layout both sides share.
 */
#ifndef DIAG_THREAD_STATES_H
#define DIAG_THREAD_STATES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TS_REC_MAGIC 0x54535432u /* "TST2": a record starts here */
#define TS_KSTACK_DEPTH 48       /* kernel frames per thread (a blocked task's are a few dozen) */
#define TS_STACK_MAX 16384       /* user stack bytes per thread at most (the option's max) */
#define TS_PAGE 4096
#define TS_FUTEX_WORDS \
	6 /* 32-bit words read at a futex's address: a glibc mutex's \
			  * __lock, __count, __owner, __nusers, __kind, __spins */

/* What a read takes (the program's `mode`). */
#define TS_MODE_COUNTS 0 /* every thread: state, switches, CPU time, registers, system call */
#define TS_MODE_STATES 1 /* the same, and a futex's words for a thread in one */
#define TS_MODE_DETAILS \
	2 /* only the threads in `want`: the same, their kernel stack and the top
			   * of their user stack */

/* flags */
#define TS_F_ON_CPU 1u /* running on a CPU as it was read */
#define TS_F_REGS 2u   /* the user registers and syscall were read */
#define TS_F_FUTEX 4u  /* futex[] was read at args[0] */
#define TS_F_STACK_CUT \
	8u                  /* the stack copy ended before the bytes asked (top of the stack, a \
			     * page not present) */
#define TS_F_SCHED_INFO 16u /* last_arrival is the kernel's (CONFIG_SCHED_INFO) */
#define TS_F_DETAILS 32u    /* a TS_MODE_DETAILS record: kernel stack and stack copy taken */

/* A record: this header, then kstack_len kernel addresses (u64), then stack_len bytes of user
 * stack copied from sp; size is the whole. */
struct ts_rec {
	__u32 magic; /* TS_REC_MAGIC */
	__u32 size;  /* bytes of this record, kernel stack and stack copy included */
	__u32 tgid, tid;
	char comm[16];
	__u32 state; /* task->__state (the scheduler's bits) */
	__u32 exit_state;
	__u32 flags;         /* TS_F_* */
	__u32 kstack_len;    /* kernel frames after the header */
	__u64 nvcsw, nivcsw; /* voluntary and involuntary context switches so far */
	__u64 sum_exec_ns;   /* CPU time so far */
	__u64 slice_ns;      /* CPU time of its last stretch on a CPU (sum_exec - prev_sum_exec) */
	__u64 last_arrival;  /* run-queue clock when it last got a CPU (sched_info) */
	__u64 now_clock; /* now in that clock: the reading task's last_arrival plus its CPU time since */
	__s64 syscall; /* orig_ax: the system call it is in; -1 none */
	__u64 args[6];
	__u64 ip, sp, bp; /* user registers (at its last entry into the kernel) */
	__u32 futex[TS_FUTEX_WORDS];
	__u32 stack_len; /* bytes of user stack after the kernel frames */
	__u32 pad;
};

/* The program's per-CPU scratch: a record with room for its variable parts. */
struct ts_buf {
	struct ts_rec h;
	__u64 kstack[TS_KSTACK_DEPTH];
	/* TS_PAGE of slack: the verifier sees each piece land below the end */
	__u8 stack[TS_STACK_MAX + TS_PAGE];
};

#endif
