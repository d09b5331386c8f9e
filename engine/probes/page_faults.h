/* page_faults.h — layout shared by engine/probes/page_faults.bpf.c and engine/probes/page_faults.c. */
#ifndef DIAG_PAGE_FAULTS_H
#define DIAG_PAGE_FAULTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PF_STAT_RING_FULL 3 /* faults the ring buffer refused: counted by stack ids only */
#define PF_STAT_SENT 4      /* faults sent through the ring buffer to be unwound */
#define PF_STAT_WRITES 5    /* faults on a write access (error code bit 1) */
/* not a diag_bpf.h slot: DIAG_STAT_FIRINGS is only counted in count-only mode, so full mode may
 * use it: return addresses a uretprobe had replaced, restored in the copied stack */
#define PF_STAT_URETPROBE_FIXED 6

struct pf_key {
	__u32 tgid;
	__s32 user_stack_id;   /* < 0: none */
	__s32 kernel_stack_id; /* < 0: none */
	char comm[16];
};

#endif
