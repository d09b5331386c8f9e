/* block_io.h — layout shared by engine/probes/block_io.bpf.c and engine/probes/block_io.c.
 * Must not: hold anything but the map layouts both sides read.
 */
#ifndef DIAG_BLOCK_IO_H
#define DIAG_BLOCK_IO_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define BLK_HIST_SLOTS 32

/* The kind of a request, from its operation and flags. */
enum blk_kind {
	BLK_READ = 0,
	BLK_WRITE = 1,
	BLK_FLUSH = 2,   /* REQ_OP_FLUSH: a cache flush (fsync's barrier) */
	BLK_DISCARD = 3, /* discard, write zeroes, secure erase */
	BLK_OTHER = 4,
	BLK_NR_KINDS = 5,
};

/* stats slots of this probe (engine/abi/diag_bpf.h: 3..5 are probe-specific) */
#define BLK_STAT_UNOWNED 3  /* requests seen first at insert/issue: submitter unknown */
#define BLK_STAT_UNSPLIT 4  /* completions with no issue time: counted, queue and service not split */
#define BLK_STAT_VANISHED 5 /* issued requests that ended without a completion event */

/* A request in flight, by its struct request address (a slot of `slots`, else map `reqs`). What
 * completion reads from the request itself (operation, flags, size, sector) is not kept here. */
struct blk_req {
	__u64 start_ns;  /* block_io_start (accounting starts, submitter's context), else insert */
	__u64 issue_ns;  /* block_rq_issue, when its program runs: handed to the driver; 0 until then */
	__u32 dev;       /* whole disk, the kernel's dev_t (major << 20 | minor) */
	__u32 slot;      /* the disk's index in `devs`, as dev_slot resolved it */
	__u32 owner;     /* its submitter's index in `owners`; BLK_NO_OWNER when not counted */
	__u32 pad;
};

#define BLK_NO_OWNER 0xffffffffu

/* A slot of the direct-mapped table of requests in flight (map `slots`): one cache line. */
struct blk_slot {
	__u64 rq; /* the request's address; 0: free */
	struct blk_req r;
};

/* Per whole disk, at the slot `dev_index` gives each disk as it is first seen: what all CPUs
 * share (array `disks`: dev 0 is a slot not in use) and what each CPU adds up alone (per-CPU
 * array `devs`, summed by block_io.c: no atomic operation on a line another CPU writes). Times in
 * ns, histograms log2 in us (queue, service), bytes (size) and requests in flight (depth). */
struct blk_disk {
	__u32 dev;                          /* whole disk, dev_t as in blk_req */
	__u32 pad;
	__u64 next_sector;                  /* where the last completed request ended */
	/* with queue_depth only (the kernel's own io_ticks, in /proc/diskstats, say how busy a disk
	 * is at no cost per request): */
	__s64 inflight;                     /* entered (queued or in service), not completed yet */
	__u64 stamp, busy_ns;               /* last entry/completion; time with a traced request in flight */
};

struct blk_dev {
	__u64 queue_hist[BLK_HIST_SLOTS];   /* start -> issue, us */
	__u64 service_hist[BLK_HIST_SLOTS]; /* issue -> complete, us */
	__u64 size_hist[BLK_HIST_SLOTS];    /* bytes per request */
	__u64 depth_hist[BLK_HIST_SLOTS];   /* with queue_depth: in flight on the disk at entry (queued or in service), this one included */
	__u64 ios[BLK_NR_KINDS];            /* completed */
	__u64 bytes[BLK_NR_KINDS];
	__u64 queue_ns, service_ns;         /* summed over completed requests */
	__u64 queue_max_ns, service_max_ns;
	__u64 await_ns;                     /* start -> completion, summed over completed requests */
	__u64 sync, fua, preflush, errors;
	__u64 sequential;                   /* completed, starting where the disk's previous one ended */
	__u64 depth_sum, depth_max;         /* with queue_depth: over entries */
};

/* Per submitter and disk: an element of the array `owners`, whose index a request carries from
 * its start (found by its key in the hash `owner_index`, or this CPU's last one), so that its
 * completion adds to it without a hash lookup. */
struct blk_owner_key {
	__u32 tgid; /* 0: unknown (a request first seen at insert or issue) */
	__u32 dev;
	char comm[16];
};

struct blk_owner {
	struct blk_owner_key key; /* all zero: an index handed out and not used (two CPUs raced) */
	__u64 kinds[BLK_NR_KINDS]; /* requests completed, by enum blk_kind */
	__u64 bytes, queue_ns, service_ns;
};

#endif
