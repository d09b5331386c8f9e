// SPDX-License-Identifier: GPL-2.0
/* block_io.bpf.c — block requests per disk: queue and service time, depth, sizes, mix, and who
 * submitted them.
 *
 * Owns: on the block tracepoints, a record per request in flight (by its struct request address):
 * block_io_start (accounting starts, in the submitter's context: its tgid and comm), else
 * block_rq_insert or block_rq_issue when the request was made elsewhere (flush machinery, a
 * kernel without block_io_start: submitter unknown); block_rq_issue, only where the kernel
 * stamps no issue time (handed to the driver); block_rq_complete (in interrupt context: the
 * record, not the current task, says whose it was) adds, to its CPU's own sums per disk, log2
 * histograms of queue time (start -> issue) and service time (issue -> complete), sizes, the
 * read/write/flush/discard mix and bytes, and to the submitter whose index the request carries,
 * its totals; with queue_depth, each disk's requests in flight (depth at entry, busy time); on
 * writeback_dirty_folio, the folios each
 * process dirties per device (buffered writes reach the disk from writeback threads). Filters: device (the whole disk or a
 * partition) on the request; pid/tid/comm/cgroup on the submitter at block_io_start, so a
 * filtered run counts only the requests it can attribute. Two attach variants of the same logic:
 * tp_btf and raw_tp.
 * Must not: use the current task at insert, issue or completion (whoever was interrupted), keep
 * per-request history beyond the in-flight record, or lose a request silently (full maps and
 * unowned requests are counted in `stats`).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "probes/block_io.h"

const volatile __u32 filter_dev = 0; /* whole disk or partition dev_t; 0: every device */
/* The block_io_start program is loaded: the pre-flight counts requests there, not at issue. */
const volatile bool count_at_start = false;
/* queue_depth: each disk's requests in flight counted, for the depth they find at entry and the
 * busy time (two atomic operations on the disk's record at entry and two at completion; the
 * kernel's io_ticks give busy time without them). */
const volatile bool track_depth = false;

/* Issue times: the kernel's own (rq->io_start_time_ns, stamped at issue on a queue that keeps
 * request statistics — writeback throttling keeps them on by default) when it has one, else the
 * block_rq_issue program's. That program is attached only when needed (block_io.c): on a kernel
 * without block_io_start (it is where requests are first seen then), or once a completion came
 * without either time (`issue_unknown`, read by block_io.c's tick). */
__u32 issue_unknown = 0;

/* Requests in flight, by their struct request address: a direct-mapped table of slots (the
 * address hashed to one slot, claimed by a compare-and-swap of its `rq`), and a hash map for the
 * addresses whose slot is taken. A slot costs an inlined array lookup where a hash map costs an
 * element's allocation, hashing and a bucket lock at every start and completion (that was most of
 * this probe's cost per I/O); the kernel keeps its requests in preallocated arrays, so that the
 * addresses in flight at once are few and spread. Requests merged away never complete:
 * block_rq_merge releases them. */
const volatile __u64 slot_mask = 16383; /* slots' size - 1 (a power of two), set before load */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16384);         /* set from the recipe before load */
	__type(key, __u32);
	__type(value, struct blk_slot);
} slots SEC(".maps");

struct {
	/* Not an LRU map: an LRU hash evicts entries before it is full (its free nodes sit on
	 * per-CPU lists), and a request evicted in flight never decrements its disk's count. */
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);          /* set from the recipe before load */
	__type(key, __u64);
	__type(value, struct blk_req);
} reqs SEC(".maps");

/* Entries in `reqs`: while there are none (the common case), a request not in its slot is not
 * looked up there. */
__u64 overflow_n = 0;

/* Per disk: an array, so that a request's issue and completion reach its disk's record by the slot
 * it carries (an inlined array lookup, not a hash lookup each), and a per-CPU cache of the last
 * request queue seen saves reading the disk's numbers and the hash lookup of dev_index for the
 * next request (most I/O goes to one disk at a time). */
const volatile __u32 max_devices = 64; /* devs' and dev_index's size, set from the recipe */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64); /* set from the recipe before load */
	__type(key, __u32);
	__type(value, struct blk_disk);
} disks SEC(".maps");

/* Each CPU's own sums per disk (block_io.h): plain additions, no cache line shared. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 64); /* set from the recipe before load */
	__type(key, __u32);
	__type(value, struct blk_dev);
} devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64); /* set from the recipe before load */
	__type(key, __u32);   /* dev */
	__type(value, __u32); /* its slot in devs */
} dev_index SEC(".maps");

struct dev_slot {
	__u64 queue; /* the request queue it was resolved from (rq->q), 0: none */
	__u32 dev, slot;
};

/* [0] per CPU: the last disk this CPU resolved. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dev_slot);
} last_dev SEC(".maps");

/* Indexes handed out so far in `disks`/`devs` (dev_slot) and in `owners` (owner_of). */
__u64 disks_used = 0;

/* Submitters per disk (block_io.h: struct blk_owner): the array, indexes handed out in order
 * (owners_used), and the hash that finds a key's index. */
const volatile __u32 max_owners = 4096; /* both maps' size, set from the recipe */
__u64 owners_used = 0;                   /* indexes handed out (block_io.c reads so many) */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, __u32);
	__type(value, struct blk_owner);
} owners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, struct blk_owner_key);
	__type(value, __u32);
} owner_index SEC(".maps");

/* [0] per CPU: the last submitter this CPU resolved (most I/O comes from a few threads). */
struct owner_cache {
	struct blk_owner_key key;
	__u32 idx, valid;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct owner_cache);
} last_owner SEC(".maps");

/* Folios dirtied in the page cache, per (process, device of the file): buffered writes reach the
 * disk later from writeback threads, whose requests are charged to them; this says who made the
 * data. Sized with owners. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, struct blk_owner_key);
	__type(value, __u64); /* bytes */
} dirtiers SEC(".maps");

/* A request's address as a number. A tp_btf argument is a trusted pointer, on which the verifier
 * allows no arithmetic (the slot's hash): a copy read back is a plain number. A raw_tp argument is
 * one already (the raw_tp programs, the first variant, skip this helper call). */
static __always_inline __u64 addr_of(const struct request *rq)
{
	__u64 v = 0;
	bpf_probe_read_kernel(&v, sizeof(v), &rq);
	return v;
}

static __always_inline struct blk_slot *slot_of(__u64 key)
{
	__u32 i = (__u32)((key * 0x9e3779b97f4a7c15ull) >> 32) & (__u32)slot_mask;
	return bpf_map_lookup_elem(&slots, &i);
}

/* The record of a request in flight, NULL when it has none. */
static __always_inline struct blk_req *req_find(__u64 key)
{
	struct blk_slot *s = slot_of(key);
	if (s && s->rq == key)
		return &s->r;
	return overflow_n ? bpf_map_lookup_elem(&reqs, &key) : NULL;
}

/* A record for request `key`, first seen now: its slot, claimed, else an entry of `reqs`. *was:
 * the address was recorded already (the record is then as it was: the caller accounts for the
 * request that had it). NULL when both are full. The caller fills the record. */
static __always_inline struct blk_req *req_claim(__u64 key, bool *was)
{
	struct blk_slot *s = slot_of(key);
	*was = false;
	if (s) {
		if (s->rq == key) {
			*was = true;
			return &s->r;
		}
		if (!s->rq && __sync_val_compare_and_swap(&s->rq, 0, key) == 0) {
			/* the address's last request went to `reqs` (its slot was taken then) and
			 * never completed: its record moves here, for the caller */
			struct blk_req *old = overflow_n ? bpf_map_lookup_elem(&reqs, &key) : NULL;
			if (old) {
				s->r = *old;
				*was = true;
				if (bpf_map_delete_elem(&reqs, &key) == 0)
					__sync_fetch_and_add(&overflow_n, (__u64)-1);
			}
			return &s->r;
		}
	}
	static const struct blk_req zero;
	if (bpf_map_update_elem(&reqs, &key, &zero, BPF_NOEXIST) == 0) {
		__sync_fetch_and_add(&overflow_n, 1);
		return bpf_map_lookup_elem(&reqs, &key);
	}
	struct blk_req *old = bpf_map_lookup_elem(&reqs, &key);
	*was = old != NULL;
	return old;
}

/* The request's record, copied into *r and released; false when it has none. */
static __always_inline bool req_take(__u64 key, struct blk_req *r)
{
	struct blk_slot *s = slot_of(key);
	if (s && s->rq == key) {
		*r = s->r;
		__sync_lock_test_and_set(&s->rq, 0); /* after the copy: a full barrier */
		return true;
	}
	if (!overflow_n)
		return false;
	struct blk_req *rp = bpf_map_lookup_elem(&reqs, &key);
	if (!rp)
		return false;
	*r = *rp;
	if (bpf_map_delete_elem(&reqs, &key) == 0)
		__sync_fetch_and_add(&overflow_n, (__u64)-1);
	return true;
}

static __always_inline bool owner_filtered(void)
{
	return diag_tgid || diag_tgid_set || diag_tid || diag_cgroup_id || diag_has_comm;
}

static __always_inline __u32 rq_disk_dev(struct request *rq)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	if (!disk)
		return 0;
	return (__u32)BPF_CORE_READ(disk, major) << 20 | (__u32)BPF_CORE_READ(disk, first_minor);
}

/* The index the hash index_map gives key, else the next of *used (below max) given to it: how the
 * disks' and the submitters' arrays hand out their elements. Two CPUs racing for a new key may
 * waste an index (its element stays zero: block_io.c skips it). ~0u when the array is full. */
static __always_inline __u32 index_of(void *index_map, const void *key, __u64 *used, __u32 max)
{
	__u32 *known = bpf_map_lookup_elem(index_map, key);
	if (known)
		return *known;
	__u64 n = __sync_fetch_and_add(used, 1);
	__u32 idx = (__u32)n;
	if (n < max && bpf_map_update_elem(index_map, key, &idx, BPF_NOEXIST) == 0)
		return idx;
	known = n < max ? bpf_map_lookup_elem(index_map, key) : NULL; /* another CPU's, just now */
	if (known)
		return *known;
	diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
	return ~0u;
}

/* The slot of a disk in `disks` and `devs`; ~0u when they are full. */
static __always_inline __u32 dev_slot(__u32 dev)
{
	__u32 slot = index_of(&dev_index, &dev, &disks_used, max_devices);
	struct blk_disk *d = slot == ~0u ? NULL : bpf_map_lookup_elem(&disks, &slot);
	if (d)
		d->dev = dev;
	return slot;
}

/* A request's disk and its slot in devs: one read (its queue) when this CPU's last request went
 * through the same queue, else the disk's numbers and dev_slot. */
static __always_inline __u32 rq_disk(struct request *rq, __u32 *slot)
{
	__u32 zero = 0;
	__u64 q = (__u64)BPF_CORE_READ(rq, q);
	struct dev_slot *last = bpf_map_lookup_elem(&last_dev, &zero);
	if (last && q && last->queue == q) {
		*slot = last->slot;
		return last->dev;
	}
	__u32 dev = rq_disk_dev(rq);
	*slot = dev_slot(dev);
	if (last && *slot != ~0u) {
		last->queue = q;
		last->dev = dev;
		last->slot = *slot;
	}
	return dev;
}

/* This CPU's sums for the disk at slot. */
static __always_inline struct blk_dev *dev_at(__u32 slot)
{
	return slot == ~0u ? NULL : bpf_map_lookup_elem(&devs, &slot);
}

/* What the CPUs share of it. */
static __always_inline struct blk_disk *disk_at(__u32 slot)
{
	return slot == ~0u ? NULL : bpf_map_lookup_elem(&disks, &slot);
}

/* The device filter: the request's disk, or the partition it was submitted to. */
static __always_inline bool dev_wanted(struct request *rq, __u32 dev)
{
	if (!filter_dev || dev == filter_dev)
		return true;
	struct block_device *part = BPF_CORE_READ(rq, part);
	return part && BPF_CORE_READ(part, bd_dev) == filter_dev;
}

/* What completion reads of the request itself. */
struct blk_op {
	__u32 kind, bytes;
	__u8 sync, fua, preflush;
};

static __always_inline void fill_kind(struct request *rq, struct blk_op *r)
{
	__u32 flags = BPF_CORE_READ(rq, cmd_flags);
	__u32 op = flags & 0xff; /* REQ_OP_MASK */
	if (op == bpf_core_enum_value(enum req_op, REQ_OP_READ))
		r->kind = BLK_READ;
	else if (op == bpf_core_enum_value(enum req_op, REQ_OP_WRITE))
		r->kind = BLK_WRITE;
	else if (op == bpf_core_enum_value(enum req_op, REQ_OP_FLUSH))
		r->kind = BLK_FLUSH;
	else if (op == bpf_core_enum_value(enum req_op, REQ_OP_DISCARD) ||
		 op == bpf_core_enum_value(enum req_op, REQ_OP_WRITE_ZEROES) ||
		 op == bpf_core_enum_value(enum req_op, REQ_OP_SECURE_ERASE))
		r->kind = BLK_DISCARD;
	else
		r->kind = BLK_OTHER;
	r->sync = !!(flags & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC)));
	r->fua = !!(flags & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA)));
	r->preflush = !!(flags & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)));
}

/* A subprogram, not inlined: the verifier then explores the log2 branches once per call rather than
 * once per combination of the three calls. */
static __noinline void hist_add(__u64 *hist, __u64 v)
{
	__u32 slot = diag_log2(v);
	if (slot >= BLK_HIST_SLOTS)
		slot = BLK_HIST_SLOTS - 1;
	/* the verifier must see the bound on the register used: keep clang from folding it */
	asm volatile("%[s] &= %[m]" : [s] "+r"(slot) : [m] "i"(BLK_HIST_SLOTS - 1));
	hist[slot] += 1; /* this CPU's */
}

/* Busy time as the kernel's io_ticks counts it, to the ns: at every request's entry and
 * completion, the time since the disk's previous event is busy when a timed request was in
 * flight through it (`before`: the count just before this event). The stamp is exchanged
 * atomically, so that two CPUs never count the same interval. */
static __always_inline void add_busy(struct blk_disk *d, __s64 before, __u64 now)
{
	__u64 prev = __sync_lock_test_and_set(&d->stamp, now);
	if (before > 0 && prev && now > prev)
		__sync_fetch_and_add(&d->busy_ns, now - prev);
}

/* A request enters the disk's count (first seen: at block_io_start, else insert or issue): busy
 * time, and the depth it finds, itself included — queued or in service, as the kernel's
 * in-flight count and iostat's aqu-sz count them. */
static __always_inline void enter_dev(__u32 slot, __u64 now)
{
	if (!track_depth)
		return;
	struct blk_disk *disk = disk_at(slot);
	struct blk_dev *d = dev_at(slot);
	if (!disk || !d)
		return;
	__s64 before = __sync_fetch_and_add(&disk->inflight, 1);
	add_busy(disk, before, now);
	__u64 depth = before >= 0 ? before + 1 : 1;
	/* this CPU's sums, as completion's are: an issue program run from an interrupt on this
	 * CPU while a start program is here could lose one count of the depth histogram */
	hist_add(d->depth_hist, depth);
	d->depth_sum += depth;
	if (depth > d->depth_max)
		d->depth_max = depth;
}

/* ... and leaves it: completed, merged into another, or gone unseen. */
static __always_inline void leave_dev(__u32 slot, __u64 now)
{
	if (!track_depth)
		return;
	struct blk_disk *disk = disk_at(slot);
	if (disk)
		add_busy(disk, __sync_fetch_and_add(&disk->inflight, -1), now);
}

static __always_inline bool owner_key_eq(const struct blk_owner_key *a, const struct blk_owner_key *b)
{
	__u64 x[3], y[3];
	__builtin_memcpy(x, a, sizeof(x));
	__builtin_memcpy(y, b, sizeof(y));
	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2];
}

/* The index in `owners` of submitter k: this CPU's last one, else index_of's. BLK_NO_OWNER when
 * the table is full. */
static __always_inline __u32 owner_of(const struct blk_owner_key *k)
{
	__u32 zero = 0;
	struct owner_cache *c = bpf_map_lookup_elem(&last_owner, &zero);
	if (c && c->valid && owner_key_eq(&c->key, k))
		return c->idx;
	__u32 idx = index_of(&owner_index, k, &owners_used, max_owners);
	struct blk_owner *o = idx == ~0u ? NULL : bpf_map_lookup_elem(&owners, &idx);
	if (!o)
		return BLK_NO_OWNER;
	o->key = *k;
	if (c) {
		c->key = *k;
		c->idx = idx;
		c->valid = 1;
	}
	return idx;
}

/* A request starts being accounted, in its submitter's context. */
static __always_inline int on_start(struct request *rq, __u64 key)
{
	bool count_only = diag_count_only();
	__u32 slot, dev = rq_disk(rq, &slot);
	/* one request for a wanted device */
	if (!diag_admit(count_only, dev_wanted(rq, dev) && diag_current_wanted()))
		return 0;
	if (!diag_sampled_in())
		return 0;
	bool was;
	struct blk_req *p = req_claim(key, &was);
	__u64 now = bpf_ktime_get_ns();
	if (!p) {
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
		return 0;
	}
	if (was) {
		/* The request that had this address is gone, and no block_rq_complete said so (it
		 * happens, rarely, around flush sequences): take it out of its disk's count now, or
		 * the count would never come back to zero. */
		leave_dev(p->slot, now);
		diag_stat_inc(&stats, BLK_STAT_VANISHED);
	}
	struct blk_owner_key k = { .tgid = bpf_get_current_pid_tgid() >> 32, .dev = dev };
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	p->start_ns = now;
	p->issue_ns = 0;
	p->dev = dev;
	p->slot = slot;
	p->owner = owner_of(&k);
	enter_dev(slot, now);
	return 0;
}

/* First seen at insert or issue: made outside block_io_start (flush machinery, old kernels). */
static __always_inline struct blk_req *unowned(__u64 key, __u32 dev, __u32 slot, __u64 now)
{
	if (owner_filtered() || !diag_sampled_in())
		return NULL;
	bool was;
	struct blk_req *p = req_claim(key, &was);
	if (!p) {
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
		return NULL;
	}
	if (was)
		return p; /* recorded meanwhile, on another CPU */
	struct blk_owner_key k = { .dev = dev };
	struct blk_req r = { .start_ns = now, .dev = dev, .slot = slot, .owner = owner_of(&k) };
	*p = r;
	enter_dev(slot, now);
	diag_stat_inc(&stats, BLK_STAT_UNOWNED);
	return p;
}

static __always_inline int on_insert(struct request *rq, __u64 key)
{
	if (diag_count_only())
		return 0;
	if (req_find(key))
		return 0; /* seen at block_io_start */
	__u32 slot, dev = rq_disk(rq, &slot);
	if (dev_wanted(rq, dev))
		unowned(key, dev, slot, bpf_ktime_get_ns());
	return 0;
}

static __always_inline int on_issue(struct request *rq, __u64 key)
{
	__u32 slot, dev;
	if (diag_count_only()) {
		if (count_at_start)
			return 0;
		dev = rq_disk(rq, &slot);
		if (dev_wanted(rq, dev))
			diag_passed(); /* one request handed to a wanted device */
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	/* a request seen at its start was checked against the device filter then */
	struct blk_req *r = req_find(key);
	if (!r) {
		dev = rq_disk(rq, &slot);
		if (!dev_wanted(rq, dev) || !(r = unowned(key, dev, slot, now)))
			return 0;
	}
	if (!r->issue_ns)
		r->issue_ns = now; /* requeued and issued again: the first issue is kept */
	return 0;
}

/* The original request of a flush sequence completes without being issued itself (the flush
 * machinery's own requests were). RQF_FLUSH_SEQ: an enum since 6.9 (bit 1 in 6.18), (1 << 4)
 * before. */
static __always_inline bool in_flush_sequence(struct request *rq)
{
	__u32 flags = BPF_CORE_READ(rq, rq_flags), bit = 1u << 4;
	if (bpf_core_enum_value_exists(enum rqf_flags, __RQF_FLUSH_SEQ))
		bit = 1u << bpf_core_enum_value(enum rqf_flags, __RQF_FLUSH_SEQ);
	return flags & bit;
}

static __always_inline int on_complete(struct request *rq, __u64 key, int error)
{
	if (diag_count_only())
		return 0; /* counted where requests enter */
	struct blk_req r;
	if (!req_take(key, &r))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	leave_dev(r.slot, now);
	__u64 issued = r.issue_ns;
	if (!issued)
		issued = BPF_CORE_READ(rq, io_start_time_ns);
	if (!issued) {
		/* never reached the driver: a flush sequence's original request, not one of the
		 * device's */
		if (in_flush_sequence(rq))
			return 0;
		/* issued on a queue without request statistics (the tick then attaches the issue
		 * program), or before that program was attached: counted, not split */
		issue_unknown = 1;
		diag_stat_inc(&stats, BLK_STAT_UNSPLIT);
	}
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	struct blk_dev *d = dev_at(r.slot);
	struct blk_disk *disk = disk_at(r.slot);
	if (!d || !disk)
		return 0;
	struct blk_op op;
	fill_kind(rq, &op);
	op.bytes = BPF_CORE_READ(rq, __data_len);
	__u32 kind = op.kind < BLK_NR_KINDS ? op.kind : BLK_OTHER;
	asm volatile("%[k] &= 7" : [k] "+r"(kind));
	if (kind >= BLK_NR_KINDS)
		return 0;
	/* the kernel's issue stamp may be a plug's cached clock, a little before the start */
	__u64 total = now > r.start_ns ? now - r.start_ns : 0;
	__u64 service = 0, queue = 0;
	if (issued) {
		service = now > issued ? now - issued : 0;
		queue = issued > r.start_ns ? issued - r.start_ns : 0;
		hist_add(d->service_hist, service / 1000);
		hist_add(d->queue_hist, queue / 1000);
		d->service_ns += service;
		d->queue_ns += queue;
		if (service > d->service_max_ns)
			d->service_max_ns = service;
		if (queue > d->queue_max_ns)
			d->queue_max_ns = queue;
	}
	d->await_ns += total;
	hist_add(d->size_hist, op.bytes);
	d->ios[kind] += 1;
	d->bytes[kind] += op.bytes;
	d->sync += op.sync;
	d->fua += op.fua;
	d->preflush += op.preflush;
	d->errors += error != 0;
	/* sequential: starting where the disk's previous completed request ended (on any CPU) */
	__u64 sector = BPF_CORE_READ(rq, __sector);
	if (op.bytes && sector == disk->next_sector)
		d->sequential += 1;
	disk->next_sector = sector + (op.bytes >> 9);

	__u32 oi = r.owner;
	struct blk_owner *o = oi == BLK_NO_OWNER ? NULL : bpf_map_lookup_elem(&owners, &oi);
	if (!o)
		return 0;
	__sync_fetch_and_add(&o->kinds[kind], 1);
	__sync_fetch_and_add(&o->bytes, op.bytes);
	__sync_fetch_and_add(&o->queue_ns, queue);
	__sync_fetch_and_add(&o->service_ns, service);
	return 0;
}

/* A request merged into another never completes: it leaves its disk's count, forgotten. */
static __always_inline int on_merge(__u64 key)
{
	if (diag_count_only())
		return 0;
	struct blk_req r;
	if (req_take(key, &r))
		leave_dev(r.slot, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/block_rq_merge")
int BPF_PROG(tp_btf_rq_merge, struct request *rq) { return on_merge(addr_of(rq)); }
SEC("raw_tp/block_rq_merge")
int BPF_PROG(raw_tp_rq_merge, struct request *rq) { return on_merge((__u64)rq); }

/* struct folio before 6.16 (6.1 ... 6.15): `flags` a plain unsigned long. Our vmlinux.h (6.18) has
 * it as memdesc_flags_t, a one-member struct, and CO-RE does not match a struct field to an integer
 * one (6.1: "failed to resolve CO-RE relocation ... struct folio.flags"), so each layout is its own
 * flavour and bpf_core_field_exists() (which checks the field's kind too) says which this kernel
 * has; the other branch's relocation is left unresolved in dead code. (bpf_core_type_matches()
 * would say it directly, but clang 14 cannot emit it.) */
struct folio___ulong_flags {
	unsigned long flags;
} __attribute__((preserve_access_index));

/* Bytes of a folio: a page, or 2^order pages for a large folio (PG_head set, the order in the low
 * byte of _flags_1). `flags` is an unsigned long, or 6.18's one-member memdesc_flags_t: either
 * way one word at the field's offset. */
static __always_inline __u64 folio_bytes(struct folio *folio)
{
	unsigned long flags = 0, flags1 = 0;
	struct folio___ulong_flags *old = (void *)folio;
	if (bpf_core_field_exists(old->flags))
		bpf_probe_read_kernel(&flags, sizeof(flags), __builtin_preserve_access_index(&old->flags));
	else
		bpf_probe_read_kernel(&flags, sizeof(flags), __builtin_preserve_access_index(&folio->flags));
	if (!(flags & (1ul << bpf_core_enum_value(enum pageflags, PG_head))))
		return 4096;
	bpf_probe_read_kernel(&flags1, sizeof(flags1), __builtin_preserve_access_index(&folio->_flags_1));
	return 4096ull << (flags1 & 0x1f);
}

/* A folio of a file becomes dirty, in the context of the task that wrote it. */
static __always_inline int on_dirty(struct folio *folio, struct address_space *mapping)
{
	bool count_only = diag_count_only();
	if (!mapping)
		return 0;
	__u32 dev = BPF_CORE_READ(mapping, host, i_sb, s_dev);
	if (!diag_admit(count_only, dev && (!filter_dev || dev == filter_dev) && diag_current_wanted()))
		return 0;
	if (!diag_sampled_in())
		return 0;
	struct blk_owner_key k = { .tgid = bpf_get_current_pid_tgid() >> 32, .dev = dev };
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	__u64 bytes = folio_bytes(folio), *v = bpf_map_lookup_elem(&dirtiers, &k);
	if (!v) {
		__u64 zero = 0;
		bpf_map_update_elem(&dirtiers, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&dirtiers, &k);
		if (!v) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return 0;
		}
	}
	__sync_fetch_and_add(v, bytes);
	return 0;
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(tp_btf_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	return on_dirty(folio, mapping);
}
SEC("raw_tp/writeback_dirty_folio")
int BPF_PROG(raw_tp_dirty_folio, struct folio *folio, struct address_space *mapping)
{
	return on_dirty(folio, mapping);
}

SEC("tp_btf/block_io_start")
int BPF_PROG(tp_btf_io_start, struct request *rq) { return on_start(rq, addr_of(rq)); }
SEC("tp_btf/block_rq_insert")
int BPF_PROG(tp_btf_rq_insert, struct request *rq) { return on_insert(rq, addr_of(rq)); }
SEC("tp_btf/block_rq_issue")
int BPF_PROG(tp_btf_rq_issue, struct request *rq) { return on_issue(rq, addr_of(rq)); }
SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_btf_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, addr_of(rq), error);
}

SEC("raw_tp/block_io_start")
int BPF_PROG(raw_tp_io_start, struct request *rq) { return on_start(rq, (__u64)rq); }
SEC("raw_tp/block_rq_insert")
int BPF_PROG(raw_tp_rq_insert, struct request *rq) { return on_insert(rq, (__u64)rq); }
SEC("raw_tp/block_rq_issue")
int BPF_PROG(raw_tp_rq_issue, struct request *rq) { return on_issue(rq, (__u64)rq); }
SEC("raw_tp/block_rq_complete")
int BPF_PROG(raw_tp_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	return on_complete(rq, (__u64)rq, error);
}

char LICENSE[] SEC("license") = "GPL";
