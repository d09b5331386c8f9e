/* func_latency.h — layout shared by engine/probes/func_latency.bpf.c and engine/probes/func_latency.c. */
#ifndef DIAG_FUNC_LATENCY_H
#define DIAG_FUNC_LATENCY_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Nested (recursive) calls of the function timed per thread; deeper ones are counted as lost. */
#define FUNC_MAX_DEPTH 16 /* a power of two: the BPF side masks indexes with it */
/* log2(ns) slots: 64 covers every u64, so no slot is a catch-all. */
#define FUNC_HIST_SLOTS 64

/* stats slots besides the shared ones (see diag_bpf.h) */
#define FUNC_STAT_RETURNS 3   /* returns timed */
#define FUNC_STAT_ABANDONED 4 /* entries whose return never came (longjmp, kernel uretprobe limit) */
#define FUNC_STAT_UNMATCHED 5 /* returns without a recorded entry (entered before attach, or lost) */

/* Entries in flight on one thread: innermost last. */
struct func_stack {
	__u32 depth;
	__u32 pad;
	__u64 ts[FUNC_MAX_DEPTH]; /* bpf_ktime_get_ns() at entry */
	__u64 sp[FUNC_MAX_DEPTH]; /* user stack pointer at entry: matches a return to its entry */
};

#endif
