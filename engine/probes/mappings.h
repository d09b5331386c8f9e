/* mappings.h — layout shared by engine/probes/mappings.bpf.c and engine/probes/mappings.c. */
#ifndef DIAG_MAPPINGS_H
#define DIAG_MAPPINGS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* What a call did, as the engine replays it on its table of regions. */
enum maps_op {
	MAPS_OP_MMAP = 1,  /* a new mapping [addr, addr + len) of class cls (MAP_FIXED: replaces) */
	MAPS_OP_UNMAP,     /* [addr, addr + len) removed: munmap, or the heap's break lowered */
	MAPS_OP_BRK,       /* the break raised from addr to addr + len: heap growth */
	MAPS_OP_MREMAP,    /* [addr, addr + len) moved to addr2 and resized to len2 */
	MAPS_OP_MADVISE,   /* [addr, addr + len) given back (MADV_DONTNEED, MADV_FREE): still mapped */
};

/* What kind of memory a mapping is (the weight counts ANON and SHARED still mapped). */
enum maps_class {
	MAPS_CLS_ANON = 0, /* anonymous private (mmap) or heap (brk) */
	MAPS_CLS_SHARED,   /* anonymous MAP_SHARED (shmem) */
	MAPS_CLS_FILE,     /* backed by a file (MAP_PRIVATE or MAP_SHARED; memfd and /dev/shm too) */
	MAPS_CLS_RESERVED, /* PROT_NONE: address space only, whatever its kind */
	MAPS_CLS_NR,
};

/* The probe's part of a stack sample (struct diag_user_sample of diag_unwind.h): the last bytes
 * of the ring buffer record, after the copied stack (the stack sampler reads stack_len bytes of
 * copy and leaves the rest to the probe). */
struct maps_event {
	__u32 op;    /* enum maps_op */
	__u32 cls;   /* MAPS_OP_MMAP: enum maps_class */
	__u64 addr;
	__u64 len;   /* page-rounded */
	__u64 addr2; /* MAPS_OP_MREMAP: the new address */
	__u64 len2;  /* MAPS_OP_MREMAP: the new length (page-rounded) */
	__u64 flags; /* mmap: its flags; mremap: its flags; madvise: the advice */
};

/* A record without a stack (first word MAPS_REC_UNMAP, none of diag_unwind.h's DIAG_REC_*):
 * address space removed whose call path does not matter (it is credited to whoever mapped it). */
#define MAPS_REC_UNMAP 16
struct maps_unmap_rec {
	__u32 rec; /* MAPS_REC_UNMAP */
	__u32 tgid;
	__u64 addr;
	__u64 len; /* page-rounded */
};

/* A call between its entry and its exit, by thread. */
struct maps_pending {
	__u32 op;    /* enum maps_op: MMAP, BRK or MREMAP */
	__u32 cls;   /* mmap: enum maps_class */
	__u64 a, b, c, d; /* mmap: len, flags; brk: the old break, the break asked for;
			   * mremap: old address, old length, new length, flags */
};

/* Counters of the per-CPU `counters` array (summed by the engine). */
enum maps_counter {
	MAPS_C_MMAP_CALLS = 0,
	MAPS_C_MUNMAP_CALLS,
	MAPS_C_BRK_CALLS,      /* brk calls that asked for a new break (brk(0) queries not counted) */
	MAPS_C_MREMAP_CALLS,
	MAPS_C_MADVISE_CALLS,  /* madvise with MADV_DONTNEED or MADV_FREE */
	MAPS_C_FAILED,         /* calls that failed: a negative return; brk: the break unchanged */
	MAPS_C_ANON_BYTES,     /* by mmap, per enum maps_class: ANON, SHARED, FILE, RESERVED */
	MAPS_C_SHARED_BYTES,
	MAPS_C_FILE_BYTES,
	MAPS_C_RESERVED_BYTES,
	MAPS_C_MUNMAP_BYTES,   /* lengths given to munmap (page-rounded; holes included) */
	MAPS_C_BRK_GROWTH,
	MAPS_C_BRK_SHRINK,
	MAPS_C_MREMAP_GROWTH,
	MAPS_C_MREMAP_SHRINK,
	MAPS_C_MADVISE_BYTES,
	MAPS_C_NO_ENTRY,       /* exits without their entry (the entry before the probe's full mode) */
	MAPS_C_SENT,           /* stack samples sent through the ring buffer */
	MAPS_C_RING_FULL,      /* stack samples the ring buffer refused (the totals above count them) */
	MAPS_C_UNMAP_LOST,     /* removal records the ring buffer refused */
	MAPS_C_NR,
};

#endif
