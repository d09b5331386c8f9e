// SPDX-License-Identifier: GPL-2.0
/* pg_statements.bpf.c — PostgreSQL's statements and what they waited for, from the USDT probes
 * its binary carries (configure --enable-dtrace: Debian's, Red Hat's): each statement's time from
 * query__start to query__done, split into heavyweight lock waits (lock__wait__start/done, with
 * the lock's tag and mode), LWLock waits (by tranche), and reads from the kernel
 * (smgr__md__read__start/done: shared-buffer misses); its buffer hits and misses, sorts and those
 * that spilled to disk; and, for the server, lock waits by lock, LWLock waits by tranche, and
 * checkpoints (count, time, buffers written). A statement an error ends fires no query__done:
 * transaction__abort marks it, and the next query__start on its backend (or user space, reading
 * the backends at the end) closes it as failed, timed to the abort.
 *
 * One program on every site: the uprobe's cookie names the site's fetch plan (diag_usdt.h), whose
 * `probe` says which of PostgreSQL's probes fired. A backend runs one statement at a time: its
 * state is kept per thread (a backend is a process of one thread). A finished statement is one
 * record on the ring (its text cut to PG_QUERY_MAX bytes); user space normalizes and aggregates.
 * Must not: read more of a string than its bound, or time a wait or statement whose start it did
 * not see (counted as unmatched).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_usdt.h"
#include "probes/pg_statements.h"

DIAG_USDT_SPECS_MAP(PG_MAX_SPECS);

/* a quarter of the statements' ring, set before load */
const volatile __u64 ring_wakeup_bytes = 1 << 18;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* max_backends, set before load */
	__type(key, __u32);        /* thread id: a backend process */
	__type(value, struct pg_backend);
} backends SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* max_locks */
	__type(key, struct pg_lock_key);
	__type(value, struct pg_wait_stat);
} lock_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, char[PG_TRANCHE_MAX]);
	__type(value, struct pg_wait_stat);
} lwlock_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PG_NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* ring_kib, set before load */
} statements SEC(".maps");

/* A zeroed backend, off the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pg_backend);
} scratch SEC(".maps");

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void wait_add(void *map, const void *key, __u64 ns)
{
	struct pg_wait_stat zero = {};
	struct pg_wait_stat *w = diag_lookup_or_init(map, key, &zero);
	if (!w)
		return;
	__sync_fetch_and_add(&w->count, 1);
	__sync_fetch_and_add(&w->total_ns, ns);
	if (ns > w->max_ns)
		w->max_ns = ns; /* racy max: good enough for "longest" */
}

static __always_inline __s64 arg(struct pt_regs *ctx, const struct diag_usdt_spec *spec, __u32 i)
{
	__s64 v = 0;
	if (diag_usdt_arg(ctx, spec, i, &v))
		return 0;
	return v;
}

/* The backend's state; created (zeroed) when create. */
static __always_inline struct pg_backend *backend_of(__u32 tid, bool create)
{
	struct pg_backend *b = bpf_map_lookup_elem(&backends, &tid);
	if (b || !create)
		return b;
	__u32 z = 0;
	struct pg_backend *zero = bpf_map_lookup_elem(&scratch, &z);
	if (!zero)
		return NULL;
	__builtin_memset(zero, 0, sizeof(*zero) - PG_QUERY_MAX);
	zero->query[0] = '\0';
	return diag_lookup_or_init(&backends, &tid, zero);
}

/* A backend with nothing open is forgotten: backends come and go (a connection per request), and
 * the table must not fill with the dead. */
static __always_inline void maybe_forget(struct pg_backend *b, __u32 tid)
{
	if (!b->query_start_ns && !b->lock_start_ns && !b->lwlock_start_ns && !b->read_start_ns &&
	    !b->ckpt_start_ns && !b->aborted_ns)
		bpf_map_delete_elem(&backends, &tid);
}

static __always_inline void lock_done(struct pg_backend *b, __u64 now, bool failed)
{
	__u64 ns = now - b->lock_start_ns;
	b->lock_start_ns = 0;
	struct pg_lock_key key = b->lock_now;
	wait_add(&lock_waits, &key, ns);
	if (failed)
		count(PG_C_LOCK_FAILED, 1);
	if (b->query_start_ns) {
		b->fig.lock_ns += ns;
		b->fig.lock_waits++;
		b->fig.lock_waits_failed += failed;
		if (ns > b->fig.worst_lock_ns) {
			b->fig.worst_lock_ns = ns;
			b->fig.worst_lock = key;
		}
	}
}

/* The statement ends at `end` (its done probe, or the error that aborted it). */
static __always_inline void query_done(struct pg_backend *b, __u32 tid, __u64 end, bool failed)
{
	count(PG_C_STATEMENTS, 1);
	if (failed)
		count(PG_C_FAILED, 1);
	struct pg_stmt_record *r = bpf_ringbuf_reserve(&statements, sizeof(*r), 0);
	if (!r) {
		diag_stat_inc(&stats, PG_STAT_RING_FULL);
		b->query_start_ns = 0;
		b->aborted_ns = 0;
		return;
	}
	r->duration_ns = end > b->query_start_ns ? end - b->query_start_ns : 0;
	r->pid = tid;
	r->failed = failed;
	r->fig = b->fig;
	__builtin_memcpy(r->query, b->query, PG_QUERY_MAX);
	r->query[PG_QUERY_MAX - 1] = '\0';
	/* user space is woken once a quarter of the ring waits (and reads it every second anyway):
	 * a wake-up per statement costs more than the statement at 50,000 a second */
	__u64 flags = bpf_ringbuf_query(&statements, BPF_RB_AVAIL_DATA) >= ring_wakeup_bytes
		      ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, flags);
	b->query_start_ns = 0;
	b->aborted_ns = 0;
}

SEC("uprobe")
int pg_fire(struct pt_regs *ctx)
{
	bool count_only = diag_count_only();
	if (!diag_admit(count_only, diag_current_wanted()))
		return 0;
	const struct diag_usdt_spec *spec = diag_usdt_spec(ctx, &usdt_specs);
	if (!spec)
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	__u32 probe = spec->probe;
	struct pg_backend *b;

	switch (probe) {
	case PG_QUERY_START: {
		if (!(b = backend_of(tid, true)))
			return 0;
		if (b->query_start_ns && b->aborted_ns) /* the last one ended in an error */
			query_done(b, tid, b->aborted_ns, true);
		__s64 text = arg(ctx, spec, 0);
		__builtin_memset(b, 0, sizeof(*b) - PG_QUERY_MAX);
		if (!text || bpf_probe_read_user_str(b->query, sizeof(b->query), (void *)text) < 0)
			b->query[0] = '\0';
		b->query_start_ns = now;
		return 0;
	}
	case PG_QUERY_DONE:
		b = backend_of(tid, false);
		if (!b || !b->query_start_ns) {
			diag_stat_inc(&stats, PG_STAT_UNMATCHED);
			return 0;
		}
		query_done(b, tid, now, false); /* a ROLLBACK's abort before it was no error */
		maybe_forget(b, tid);
		return 0;
	case PG_XACT_ABORT:
		/* An error longjmps out of a wait or a statement with no done probe: the wait ends
		 * here, and so does the statement unless its query__done follows (a ROLLBACK aborts
		 * its transaction, then finishes); the next query__start (or user space, at the end)
		 * closes it as failed. */
		b = backend_of(tid, false);
		if (!b)
			return 0;
		if (b->lock_start_ns)
			lock_done(b, now, true);
		b->lwlock_start_ns = 0;
		b->read_start_ns = 0;
		if (b->query_start_ns && !b->aborted_ns)
			b->aborted_ns = now;
		maybe_forget(b, tid);
		return 0;
	case PG_LOCK_START:
		if (!(b = backend_of(tid, true)))
			return 0;
		b->lock_start_ns = now;
		b->lock_now.field1 = (__u32)arg(ctx, spec, 0);
		b->lock_now.field2 = (__u32)arg(ctx, spec, 1);
		b->lock_now.field3 = (__u32)arg(ctx, spec, 2);
		b->lock_now.field4 = (__u16)arg(ctx, spec, 3);
		b->lock_now.type = (__u8)arg(ctx, spec, 4);
		b->lock_now.mode = (__u8)arg(ctx, spec, 5);
		return 0;
	case PG_LOCK_DONE:
		b = backend_of(tid, false);
		if (!b || !b->lock_start_ns) {
			diag_stat_inc(&stats, PG_STAT_UNMATCHED);
			return 0;
		}
		lock_done(b, now, false);
		maybe_forget(b, tid);
		return 0;
	case PG_LWLOCK_START:
		if (!(b = backend_of(tid, true)))
			return 0;
		b->lwlock_start_ns = now;
		return 0;
	case PG_LWLOCK_DONE: {
		b = backend_of(tid, false);
		if (!b || !b->lwlock_start_ns) {
			diag_stat_inc(&stats, PG_STAT_UNMATCHED);
			return 0;
		}
		__u64 ns = now - b->lwlock_start_ns;
		b->lwlock_start_ns = 0;
		char tranche[PG_TRANCHE_MAX] = {};
		__s64 name = arg(ctx, spec, 0);
		if (!name || bpf_probe_read_user_str(tranche, sizeof(tranche), (void *)name) < 0)
			tranche[0] = '\0';
		wait_add(&lwlock_waits, tranche, ns);
		if (b->query_start_ns) {
			b->fig.lwlock_ns += ns;
			b->fig.lwlock_waits++;
		}
		maybe_forget(b, tid);
		return 0;
	}
	case PG_SORT_DONE: {
		count(PG_C_SORTS, 1);
		bool disk = arg(ctx, spec, 0) != 0;
		if (disk) {
			count(PG_C_SORTS_DISK, 1);
			__s64 kb = arg(ctx, spec, 1);
			count(PG_C_SORT_DISK_KB, kb > 0 ? (__u64)kb : 0);
		}
		b = backend_of(tid, false);
		if (b && b->query_start_ns) {
			b->fig.sorts++;
			b->fig.sorts_disk += disk;
		}
		return 0;
	}
	case PG_CKPT_START:
		if (!(b = backend_of(tid, true)))
			return 0;
		b->ckpt_start_ns = now;
		return 0;
	case PG_CKPT_DONE: {
		b = backend_of(tid, false);
		if (!b || !b->ckpt_start_ns) {
			diag_stat_inc(&stats, PG_STAT_UNMATCHED);
			return 0;
		}
		__u64 ns = now - b->ckpt_start_ns;
		b->ckpt_start_ns = 0;
		count(PG_C_CKPTS, 1);
		count(PG_C_CKPT_NS, ns);
		__s64 written = arg(ctx, spec, 0);
		count(PG_C_CKPT_BUFFERS, written > 0 ? (__u64)written : 0);
		__u32 k = PG_C_CKPT_MAX_NS;
		__u64 *max = bpf_map_lookup_elem(&counters, &k);
		if (max && ns > *max)
			*max = ns;
		maybe_forget(b, tid);
		return 0;
	}
	case PG_READ_START:
		if (!(b = backend_of(tid, true)))
			return 0;
		b->read_start_ns = now;
		return 0;
	case PG_READ_DONE: {
		b = backend_of(tid, false);
		if (!b || !b->read_start_ns)
			return 0;
		__u64 ns = now - b->read_start_ns;
		b->read_start_ns = 0;
		count(PG_C_READS, 1);
		count(PG_C_READ_NS, ns);
		if (b->query_start_ns) {
			b->fig.read_ns += ns;
			b->fig.reads++;
		}
		maybe_forget(b, tid);
		return 0;
	}
	case PG_BUF_DONE: {
		/* the one probe sampled over budget (1 access in N, scaled by user space): statements
		 * and waits pair a start with a done, and are never sampled */
		if (!diag_sampled_in())
			return 0;
		/* its last argument: the 8th until PostgreSQL 16, the 7th from 17 (every argument of
		 * the site is fetchable: user space attached it so) */
		bool found = arg(ctx, spec, spec->nargs - 1) != 0;
		count(found ? PG_C_BUF_HITS : PG_C_BUF_MISSES, 1);
		b = backend_of(tid, false);
		if (b && b->query_start_ns) {
			if (found)
				b->fig.hits++;
			else
				b->fig.misses++;
		}
		return 0;
	}
	case PG_DEADLOCK:
		diag_stat_inc(&stats, PG_STAT_DEADLOCKS);
		return 0;
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
