/* name_lookups.h — layout shared by engine/probes/name_lookups.bpf.c and engine/probes/name_lookups.c. */
#ifndef DIAG_NAME_LOOKUPS_H
#define DIAG_NAME_LOOKUPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define LOOKUP_NAME_LEN 64
#define LOOKUP_HIST_SLOTS 40 /* log2 ns: up to ~9 min */

/* The resolver functions probed; the attach cookie of each uprobe is its index. */
enum lookup_fn {
	LOOKUP_GETADDRINFO = 0,
	LOOKUP_GETHOSTBYNAME = 1,
	LOOKUP_GETHOSTBYNAME2 = 2,
	LOOKUP_GETHOSTBYNAME_R = 3,
	LOOKUP_GETHOSTBYNAME2_R = 4,
	LOOKUP_NR_FNS = 5,
};

#define LOOKUP_STAT_UNMATCHED 3 /* stats slot: returns without a recorded entry */

/* A lookup in progress (map `inflight`, by thread id). */
struct lookup_start {
	__u64 ts;
	__u32 fn;
	__u32 depth; /* resolver calls nested in it (getaddrinfo calls gethostbyname2_r): not timed */
	char name[LOOKUP_NAME_LEN];
};

struct lookup_key {
	char name[LOOKUP_NAME_LEN]; /* the host name asked for (truncated) */
	__u32 fn;
	__u32 pad;
};

struct lookup_val {
	__u64 count, total_ns, max_ns, failed;
};

#endif
