/* off_cpu.h — layout shared by engine/probes/off_cpu.bpf.c and engine/probes/off_cpu.c. */
#ifndef DIAG_OFF_CPU_H
#define DIAG_OFF_CPU_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Why a thread left the CPU: its state at sched_switch. */
enum off_cpu_state {
	OFF_RUNNABLE = 0,      /* preempted while runnable: run-queue time, not blocking */
	OFF_SLEEPING = 1,      /* TASK_INTERRUPTIBLE: waits it chose (locks, sleeps, poll, sockets) */
	OFF_UNINTERRUPTIBLE = 2, /* TASK_UNINTERRUPTIBLE: disk I/O, page faults, some locks */
	OFF_OTHER = 3,
	OFF_NR_STATES = 4,
};

#define OFF_STAT_TOO_SHORT 3 /* stats slot: blocks under min_block_us, not recorded */
#define OFF_STAT_SENT 4      /* stats slot: switch-out stacks sent to user space to unwind */
#define OFF_STAT_RING_FULL 5 /* stats slot: records the ring buffer refused (the interval is then
			      * counted with its frame-pointer stack, by stack ids) */

struct off_cpu_key {
	__u32 tgid;
	__s32 user_stack_id;   /* < 0: none */
	__s32 kernel_stack_id; /* < 0: none */
	__u32 state;           /* enum off_cpu_state */
	char comm[16];
};

/* A target thread off the CPU now (map `away`, by thread id). */
struct off_cpu_away {
	__u64 ts;              /* bpf_ktime_get_ns() at switch-out: CLOCK_MONOTONIC */
	__u64 cookie;          /* != 0: the stack went to user space with this cookie (= ts) */
	__s32 user_stack_id, kernel_stack_id;
	__u32 state;
	__u32 tgid;
	char comm[16];
};

struct off_cpu_val {
	__u64 total_ns;
	__u64 count;
};

#endif
