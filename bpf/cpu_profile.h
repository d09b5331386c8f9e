/* cpu_profile.h — layout shared by bpf/cpu_profile.bpf.c and engine/probes/cpu_profile.c. */
#ifndef DIAG_CPU_PROFILE_H
#define DIAG_CPU_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PROFILE_STAT_IN_KERNEL 3 /* stats slot: samples taken while in the kernel */
#define PROFILE_STAT_RING_FULL 4 /* samples the ring buffer refused: counted by stack ids only,
				  * without their leaf caller or DWARF stack */
#define PROFILE_STAT_SENT 5      /* samples sent through the ring buffer to be unwound */

/* User-space unwinding (engine/unwind.c): with each sample, the user registers and the user stack
 * from sp up, at most PROFILE_MAX_STACK_BYTES, copied in page-bounded pieces so that the copy
 * stops at the top of the stack mapping instead of failing whole. */
#define PROFILE_MAX_STACK_BYTES 16384
#define PROFILE_PAGE 4096
#define PROFILE_SAMPLE_CUT 1 /* flags: the copy stopped before the bytes asked (unreadable page) */

struct profile_sample {
	__u32 tgid, tid;
	__s32 user_stack_id;   /* the frame-pointer walk, as in profile_key */
	__s32 kernel_stack_id;
	char comm[16];
	__u64 ip, sp, bp;      /* user registers (the task's, also when sampled in the kernel) */
	__u32 stack_len;       /* bytes of stack[] copied from user address sp */
	__u32 flags;
	/* PROFILE_PAGE of slack: the verifier sees each piece land below the end */
	__u8 stack[PROFILE_MAX_STACK_BYTES + PROFILE_PAGE];
};

struct profile_key {
	__u32 tgid;
	__s32 user_stack_id;   /* < 0: none */
	__s32 kernel_stack_id; /* < 0: none (sample in user mode) */
	char comm[16];
};

#endif
