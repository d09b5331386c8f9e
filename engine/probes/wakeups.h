/* wakeups.h — layout shared by engine/probes/wakeups.bpf.c and engine/probes/wakeups.c. */
#ifndef DIAG_WAKEUPS_H
#define DIAG_WAKEUPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Who woke a target thread. */
enum wake_by {
	WAKE_BY_SAME = 0,   /* a thread of the woken one's process (a lock holder, a producer) */
	WAKE_BY_OTHER = 1,  /* a thread of another process (a peer, a client) */
	WAKE_BY_KERNEL = 2, /* a kernel thread, or an interrupt over the idle task (timers, I/O) */
	WAKE_BY_NR = 3,
};

#define WAKE_STAT_TOO_SHORT 3 /* stats slot: blocks under min_block_us, not recorded */
#define WAKE_STAT_SENT 4      /* stats slot: waker stacks sent to user space to unwind */
#define WAKE_STAT_RING_FULL 5 /* stats slot: samples the ring buffer refused (counted by ids) */

struct wake_key {
	__u32 waker_tgid;
	__s32 user_stack_id;   /* the waker's; < 0: none */
	__s32 kernel_stack_id; /* < 0: none */
	__u32 by;              /* enum wake_by */
	char comm[16];         /* the waker's thread name */
};

struct wake_val {
	__u64 total_ns; /* the time the woken threads had been blocked */
	__u64 count;
};

#endif
