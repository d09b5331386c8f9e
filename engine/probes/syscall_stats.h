/* syscall_stats.h — layout shared by engine/probes/syscall_stats.bpf.c and engine/probes/syscall_stats.c. */
#ifndef DIAG_SYSCALL_STATS_H
#define DIAG_SYSCALL_STATS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define SYSCALL_SLOTS 1024 /* syscall numbers at or above the last slot land in it */

struct syscall_total {
	__u64 count;
	__u64 total_ns;
	__u64 errors;
};

#endif
