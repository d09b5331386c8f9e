/* cpu_profile.h — layout shared by engine/probes/cpu_profile.bpf.c and engine/probes/cpu_profile.c. */
#ifndef DIAG_CPU_PROFILE_H
#define DIAG_CPU_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PROFILE_STAT_IN_KERNEL 3 /* stats slot: samples taken while in the kernel */
#define PROFILE_STAT_RING_FULL 4 /* samples the ring buffer refused: counted by stack ids only,
				  * without their leaf caller or DWARF stack */
#define PROFILE_STAT_SENT 5      /* samples sent through the ring buffer to be unwound */

struct profile_key {
	__u32 tgid;
	__s32 user_stack_id;   /* < 0: none */
	__s32 kernel_stack_id; /* < 0: none (sample in user mode) */
	char comm[16];
};

#endif
