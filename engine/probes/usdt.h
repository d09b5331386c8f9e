/* usdt.h — layout shared by engine/probes/usdt.bpf.c and engine/probes/usdt.c. */
#ifndef DIAG_USDT_KIND_H
#define DIAG_USDT_KIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define USDT_MAX_SPECS 256     /* sites of the probe and of its done probe, together */
#define USDT_KEY_STR 64        /* a string key (str:argN) is cut to this, NUL included */
#define USDT_HIST_SLOTS 64     /* log2(ns): 64 cover every u64, so no slot is a catch-all */

/* spec.probe of a site: the probe named, or its done probe */
#define USDT_SITE_START 0
#define USDT_SITE_DONE 1

/* stats slots besides the shared ones (see diag_bpf.h) */
#define USDT_STAT_TIMED 3     /* start-done pairs timed */
#define USDT_STAT_UNMATCHED 4 /* done without a start on that thread (started before attach) */
#define USDT_STAT_RESTARTED 5 /* a start while the thread's last one was open (its done lost) */

/* What one line of the results aggregates: the key argument's value (str: the string it points
 * to), or nothing (one line for every hit). */
struct usdt_key {
	__s64 num;
	char str[USDT_KEY_STR];
};

struct usdt_stat {
	__u64 count;    /* hits (untimed) or timed pairs */
	__u64 total_ns; /* timed: summed */
	__u64 max_ns;
	__u64 slots[USDT_HIST_SLOTS];
};

/* A thread's open start, waiting for its done. */
struct usdt_open {
	__u64 start_ns;
	struct usdt_key key;
};

#endif
