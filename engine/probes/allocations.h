/* allocations.h — layout shared by engine/probes/allocations.bpf.c and engine/probes/allocations.c. */
#ifndef DIAG_ALLOCATIONS_H
#define DIAG_ALLOCATIONS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* dwarf mode: a block of size s < sample_bytes is recorded with probability
 * max(s, sample_bytes / ALLOC_MIN_EVERY) / sample_bytes (alloc_odds in allocations.c). */
#define ALLOC_MIN_EVERY 64

/* What a pending call (entry seen, return not yet) was. */
enum alloc_fn {
	ALLOC_FN_MALLOC = 0,   /* malloc, valloc, pvalloc: size is the first argument */
	ALLOC_FN_CALLOC,       /* nmemb * size */
	ALLOC_FN_REALLOC,      /* frees arg (old block) when it succeeds, allocates size */
	ALLOC_FN_MEMALIGN,     /* memalign, aligned_alloc: (alignment, size) */
	ALLOC_FN_POSIX_MEMALIGN, /* (void **memptr, alignment, size): the block is *memptr, 0 = ok */
};

/* Counters of the per-CPU `calls` array (summed by the engine). */
enum alloc_counter {
	ALLOC_C_ALLOC_CALLS = 0, /* allocating calls seen (sampled or not) */
	ALLOC_C_FREE_CALLS,      /* free calls seen, free(NULL) included */
	ALLOC_C_FREES_MATCHED,   /* frees (and reallocs) of a block recorded in the window */
	ALLOC_C_FREES_UNKNOWN,   /* frees of a block not recorded: allocated before the window,
				  * not sampled, or not tracked (map full) */
	ALLOC_C_FAILED,          /* allocating calls that returned NULL / an error */
	ALLOC_C_NO_ENTRY,        /* returns without their entry (not sampled, or nested calls) */
	ALLOC_C_SITES_FULL,      /* recorded blocks whose stack found the sites map full */
	ALLOC_C_SENT,            /* dwarf: recorded blocks whose stack went to user space */
	ALLOC_C_RING_FULL,       /* dwarf: recorded blocks whose stack the ring buffer refused */
	ALLOC_C_NR,
};

struct alloc_pending {
	__u64 size;
	__u64 arg;     /* realloc: the old block; posix_memalign: memptr */
	__u64 old_size; /* realloc: the old block's usable size from glibc's chunk header, read at
			 * entry (0: unknown), for an old block this probe did not record */
	__u32 fn;      /* enum alloc_fn */
	__u32 sampled; /* record the block (1-in-N sampling decided at entry) */
};

/* Where blocks were allocated: the native user stack, and the Python frames above it. */
struct alloc_site_key {
	__s32 stack_id; /* user stack at the return (bpf_get_stackid), < 0: none */
	__u32 pad;
	__u64 py_id;    /* the Python frames' hash (a key of py_stacks), 0: none */
};

/* One outstanding block, by address. */
struct alloc_block {
	__u64 size;
	__u64 ts;       /* bpf_ktime_get_ns() at the return of the allocating call */
	struct alloc_site_key site; /* fp mode: its site; dwarf mode: unused */
	__u64 cookie;   /* dwarf mode: the cookie of the stack sample sent for it (0: none) */
};

/* Per user stack: what it allocated in the window and what of it is still outstanding. */
struct alloc_site {
	__s64 bytes;        /* outstanding */
	__s64 count;        /* outstanding */
	__u64 allocs, alloc_bytes;
	__u64 frees, free_bytes;
	__s64 realloc_growth; /* sum of (new size - old size) of its reallocs: a buffer it grows */
	char comm[16];      /* thread name of its first allocation */
};

#endif
