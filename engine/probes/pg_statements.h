/* pg_statements.h — layout shared by engine/probes/pg_statements.bpf.c and pg_statements.c. */
#ifndef DIAG_PG_STATEMENTS_H
#define DIAG_PG_STATEMENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PG_QUERY_MAX 512   /* bytes of a statement's text copied, NUL included */
#define PG_TRANCHE_MAX 32  /* an LWLock tranche's name, NUL included */
#define PG_MAX_SPECS 64    /* USDT sites attached, all probes together (PostgreSQL 15: 24) */

/* spec.probe of a site: which of PostgreSQL's probes (src/backend/utils/probes.d) it is */
enum pg_probe {
	PG_QUERY_START = 0,  /* query__start(const char *query) */
	PG_QUERY_DONE,       /* query__done(const char *query) */
	PG_LOCK_START,       /* lock__wait__start(field1..4, locktag_type, lockmode) */
	PG_LOCK_DONE,        /* lock__wait__done(the same) */
	PG_LWLOCK_START,     /* lwlock__wait__start(const char *tranche, mode) */
	PG_LWLOCK_DONE,      /* lwlock__wait__done(the same) */
	PG_SORT_DONE,        /* sort__done(bool spilled to tape, long space used in KB) */
	PG_CKPT_START,       /* checkpoint__start(int flags) */
	PG_CKPT_DONE,        /* checkpoint__done(buffers written, total buffers, segments ...) */
	PG_READ_START,       /* smgr__md__read__start(fork, block, spc, db, rel, backend) */
	PG_READ_DONE,        /* smgr__md__read__done(..., bytes read, bytes wanted) */
	PG_BUF_DONE,         /* buffer__read__done(fork, block, spc, db, rel, backend, [extend,] found):
			      * isExtend until PostgreSQL 16 */
	PG_DEADLOCK,         /* deadlock__found() */
	PG_XACT_ABORT,       /* transaction__abort(local xid): an error ended the statement (and
			      * the wait it was in: a lock_timeout, a statement_timeout, a cancel) */
	PG_NPROBES,
};

/* stats slots besides the shared ones (see diag_bpf.h) */
#define PG_STAT_RING_FULL 3  /* statements finished whose record found the ring full */
#define PG_STAT_UNMATCHED 4  /* a done without its start (began before attach) */
#define PG_STAT_DEADLOCKS 5
/* (the rest in counters) */

/* A heavyweight lock, as PostgreSQL's LOCKTAG has it, and the mode waited for. */
struct pg_lock_key {
	__u32 field1, field2, field3; /* relation: db, rel; tuple: db, rel, block; transaction: xid */
	__u16 field4;                 /* tuple: offset */
	__u8 type;                    /* LockTagType */
	__u8 mode;                    /* LOCKMODE 1..8 */
};

struct pg_wait_stat {
	__u64 count, total_ns, max_ns;
};

/* Global counters, one array slot each. */
enum pg_counter {
	PG_C_READS = 0,     /* blocks read from the kernel (smgr md reads: shared buffer misses) */
	PG_C_READ_NS,
	PG_C_BUF_HITS,      /* buffer__read__done found = true */
	PG_C_BUF_MISSES,    /* found = false */
	PG_C_SORTS,
	PG_C_SORTS_DISK,    /* spilled to tape */
	PG_C_SORT_DISK_KB,
	PG_C_CKPTS,         /* checkpoints finished in the window */
	PG_C_CKPT_NS,
	PG_C_CKPT_MAX_NS,
	PG_C_CKPT_BUFFERS,  /* buffers the checkpoints wrote */
	PG_C_STATEMENTS,    /* statements finished (records sent) */
	PG_C_FAILED,        /* of them, ended by an error */
	PG_C_LOCK_FAILED,   /* lock waits an error ended */
	PG_NCOUNTERS,
};

/* What a statement did while it ran: its waits, reads and buffer accesses (summed in its
 * backend's state while it runs, then sent in its record). */
struct pg_stmt_figures {
	__u64 lock_ns, lwlock_ns, read_ns, worst_lock_ns;
	__u32 reads, hits, misses, sorts, sorts_disk, lock_waits, lwlock_waits;
	__u32 lock_waits_failed; /* lock waits an error ended (lock_timeout, deadlock, cancel) */
	struct pg_lock_key worst_lock;
};

/* One backend's statement in progress (and its waits outside one). */
struct pg_backend {
	__u64 query_start_ns;
	__u64 aborted_ns; /* transaction__abort while the statement was open: an error ended it
			   * there, unless its query__done follows (a ROLLBACK aborts a transaction
			   * and finishes) */
	__u64 lock_start_ns, lwlock_start_ns, read_start_ns, ckpt_start_ns;
	struct pg_lock_key lock_now;
	struct pg_stmt_figures fig;
	char query[PG_QUERY_MAX]; /* last: what is zeroed at a statement's start comes before it */
};

/* One statement finished, streamed to user space (which normalizes and aggregates them). */
struct pg_stmt_record {
	__u64 duration_ns;
	__u32 pid;
	__u32 failed; /* ended by an error (transaction__abort), not query__done */
	struct pg_stmt_figures fig;
	char query[PG_QUERY_MAX];
};

#endif
