/* stack_sampler.c — fixing and counting streamed user stacks (see stack_sampler.h).
 * Must not: print, symbolize, or trust a record's sizes (they are bounded by what was received).
 */
#include "probes/stack_sampler.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/diag_unwind.h" /* first: it brings <linux/types.h> for diag_bpf.h */
#include "abi/diag_bpf.h"
#include "common/hash.h"
#include "common/posindex.h"
#include "symbolize/python.h"
#include "symbolize/unwind.h"
#include "common/util.h"

#include <bpf/bpf.h>

/* The Python frames a thread sent before its sample. */
#define PY_SLOTS 64
struct py_slot {
	uint32_t tid, n, flags;
	struct diag_py_frame f[DIAG_PY_MAX_FRAMES];
};

/* One distinct fixed stack: its addresses (leaf first) and where each came from. */
struct srow {
	uint32_t tgid;
	char comm[17];
	uint32_t tag;
	int32_t kernel_stack_id;
	size_t n;
	uint64_t *ips;
	uint8_t *from;
	uint64_t hash, weight, count;
};

/* A sample whose weight is still to come: the thread's row, by the sample's cookie. */
struct pending {
	uint32_t tid;
	uint64_t cookie; /* 0: settled (the slot stays the thread's) */
	size_t row;      /* index in rows */
};

struct stack_sampler {
	int stacks_fd;
	bool dwarf, leaf_fixup;
	const char *const *tags;
	size_t n_tags;
	struct ring_buffer *ring;
	struct pending *pend;       /* open addressing by tid; tid 0 = empty */
	size_t pend_size, n_pend, max_pend;
	struct unwinder *unw;
	struct srow *rows;
	size_t n_rows, cap_rows, max_rows;
	struct posindex index; /* rows by their hash */
	uint64_t received, bad, refused, copied_bytes, cut;
	uint64_t fixed_leaves, leaf_frame_ok, leaf_unknown;
	uint64_t dwarf_complete, dwarf_truncated, dwarf_failed, dwarf_spliced;
	uint64_t unweighed; /* samples whose weight never came (replaced by the thread's next) */
	/* Python frames (diag_python.h): the processes looked at, the probe's py_procs map, the
	 * latest record of each thread (by tid modulo PY_SLOTS) waiting for its sample */
	struct python_procs *py;
	int py_map_fd;
	struct py_slot *py_slots;
	uint64_t py_samples, py_frames, py_cut, py_no_tstate, py_bad_read, py_lost, py_unplaced;
	uint64_t drain_until; /* a bounded drain stops reading records at this mono_ns(); 0: none */
	/* stack_sampler_set_own_records: the probe's records, and its samples once counted */
	stack_sampler_record_fn *own_record;
	stack_sampler_sample_fn *own_sample;
	void *own_ctx;
};

/* How long one drain of the run loop may read the ring: a producer faster than the unwinding (an
 * emulated machine, 6.1-rt under QEMU: threads switching thousands of times a second, each
 * record unwound) would otherwise keep ring_buffer__consume going past the run's deadline, and
 * the watchdog abandons the run. What is left is read at the loop's next turn. */
#define DRAIN_SLICE_NS 200000000ull

struct stack_sampler *stack_sampler_new(int stacks_fd, bool dwarf, bool leaf_fixup, size_t max_rows,
					const char *const *tags, size_t n_tags, size_t max_pending,
					struct tfile_reader *files)
{
	struct stack_sampler *s = xcalloc(1, sizeof(*s));
	s->stacks_fd = stacks_fd;
	s->tags = tags;
	s->n_tags = tags ? n_tags : 0;
	s->max_pend = max_pending;
	s->dwarf = dwarf;
	s->leaf_fixup = !dwarf && leaf_fixup;
	s->max_rows = max_rows;
	s->unw = unwinder_new(files);
	return s;
}

void stack_sampler_free(struct stack_sampler *s)
{
	if (!s)
		return;
	ring_buffer__free(s->ring); /* NULL is fine */
	unwinder_free(s->unw);
	python_procs_free(s->py);
	free(s->py_slots);
	for (size_t i = 0; i < s->n_rows; i++) {
		free(s->rows[i].ips);
		free(s->rows[i].from);
	}
	free(s->rows);
	posindex_free(&s->index);
	free(s->pend);
	free(s);
}

void stack_sampler_period(struct stack_sampler *s)
{
	unwinder_new_period(s->unw);
}

const char *stack_sampler_check_unwind(const char *value)
{
	return !strcmp(value, "fp") || !strcmp(value, "dwarf") ? NULL : "must be fp or dwarf";
}

bool stack_sampler_wants_dwarf(const char *user_unwind)
{
	return user_unwind && !strcmp(user_unwind, "dwarf");
}

/* The ring's callback: one record, then -EAGAIN (the record is kept: libbpf stops after it) once
 * a bounded drain's time is up. */
static int ring_record(void *ctx, void *data, size_t size)
{
	struct stack_sampler *s = ctx;
	stack_sampler_add(ctx, data, size);
	return s->drain_until && mono_ns() >= s->drain_until ? -EAGAIN : 0;
}

int stack_sampler_open_ring(struct stack_sampler *s, int ring_fd)
{
	s->ring = ring_buffer__new(ring_fd, ring_record, s, NULL);
	return s->ring ? 0 : -1;
}

void stack_sampler_consume(struct stack_sampler *s)
{
	if (s && s->ring) {
		s->drain_until = 0;
		ring_buffer__consume(s->ring);
	}
}

void stack_sampler_drain(struct stack_sampler *s)
{
	if (s && s->ring) {
		s->drain_until = mono_ns() + DRAIN_SLICE_NS;
		ring_buffer__consume(s->ring);
		s->drain_until = 0;
	}
}

int stack_sampler_wake_fd(const struct stack_sampler *s)
{
	return s && s->ring ? ring_buffer__epoll_fd(s->ring) : -1;
}

void stack_sampler_tick(struct stack_sampler *s)
{
	if (!s)
		return;
	stack_sampler_drain(s); /* what did not reach the probe's wake threshold */
	stack_sampler_period(s);
}

uint32_t stack_sampler_ring_size(uint64_t want)
{
	uint32_t ring = 4096;
	while (ring < want && ring < (1u << 30))
		ring *= 2;
	return ring;
}

uint64_t stack_sampler_refused(const struct stack_sampler *s)
{
	return s->refused + s->bad;
}

/* Keyed (hash.h): the comm and the addresses are the target's to choose. */
static uint64_t row_hash(uint32_t tgid, const char *comm, uint32_t tag, int32_t kid, const uint64_t *ips,
			 const uint8_t *from, size_t n)
{
	struct hash_state h;
	hash_init(&h);
	hash_u64(&h, (uint64_t)tgid << 32 | tag);
	hash_u64(&h, (uint32_t)kid);
	hash_str(&h, comm);
	hash_update(&h, ips, n * sizeof(*ips));
	hash_update(&h, from, n);
	return hash_final(&h);
}

static bool row_eq(const struct srow *r, uint64_t h, uint32_t tgid, const char *comm, uint32_t tag, int32_t kid,
		   const uint64_t *ips, const uint8_t *from, size_t n)
{
	return r->hash == h && r->n == n && r->tgid == tgid && r->tag == tag && r->kernel_stack_id == kid &&
	       !strcmp(r->comm, comm) &&
	       !memcmp(r->ips, ips, n * sizeof(*ips)) && !memcmp(r->from, from, n);
}

/* Counts one fixed stack (count: 1, or 0 for a sample whose weight is to come) and returns its
 * row; a new one past max_rows is refused (counted) and gives -1. */
static long row_add(struct stack_sampler *s, uint32_t tgid, const char *comm, uint32_t tag, int32_t kid,
		    const uint64_t *ips, const uint8_t *from, size_t n, uint64_t weight,
		    uint64_t count)
{
	uint64_t h = row_hash(tgid, comm, tag, kid, ips, from, n);
	for (size_t cur = 0, i; (i = posindex_next(&s->index, h, &cur)) != POSINDEX_END;) {
		struct srow *r = &s->rows[i];
		if (row_eq(r, h, tgid, comm, tag, kid, ips, from, n)) {
			r->weight += weight;
			r->count += count;
			return (long)i;
		}
	}
	if (s->n_rows >= s->max_rows) {
		s->refused++;
		return -1;
	}
	if (s->n_rows == s->cap_rows)
		s->rows = xrealloc(s->rows, (s->cap_rows = s->cap_rows ? s->cap_rows * 2 : 64) *
					    sizeof(*s->rows));
	struct srow *r = &s->rows[s->n_rows++];
	memset(r, 0, sizeof(*r));
	r->tgid = tgid;
	snprintf(r->comm, sizeof(r->comm), "%s", comm);
	r->tag = tag;
	r->kernel_stack_id = kid;
	r->n = n;
	r->ips = xmalloc((n ? n : 1) * sizeof(*ips));
	r->from = xmalloc(n ? n : 1);
	memcpy(r->ips, ips, n * sizeof(*ips));
	memcpy(r->from, from, n);
	r->hash = h;
	r->weight = weight;
	r->count = count;
	posindex_add(&s->index, h, s->n_rows - 1);
	return (long)(s->n_rows - 1);
}

/* ---- samples whose weight comes later --------------------------------------------------------- */

static size_t pend_find(const struct stack_sampler *s, uint32_t tid)
{
	size_t mask = s->pend_size - 1, i = (tid * 0x9e3779b1u) & mask;
	while (s->pend[i].tid && s->pend[i].tid != tid)
		i = (i + 1) & mask;
	return i; /* tid's slot, or the empty one where it would go */
}

/* Thread tid's slot: NULL when it has none and insert is false, or the table is at max_pend. */
static struct pending *pend_slot(struct stack_sampler *s, uint32_t tid, bool insert)
{
	if (!s->pend_size) {
		if (!insert)
			return NULL;
		s->pend_size = 64;
		s->pend = xcalloc(s->pend_size, sizeof(*s->pend));
	}
	size_t i = pend_find(s, tid);
	if (s->pend[i].tid)
		return &s->pend[i];
	if (!insert || s->n_pend >= s->max_pend)
		return NULL;
	if ((s->n_pend + 1) * 2 > s->pend_size) { /* at most half full: grow */
		struct pending *old = s->pend;
		size_t old_size = s->pend_size;
		s->pend_size *= 2;
		s->pend = xcalloc(s->pend_size, sizeof(*s->pend));
		for (size_t j = 0; j < old_size; j++)
			if (old[j].tid)
				s->pend[pend_find(s, old[j].tid)] = old[j];
		free(old);
		i = pend_find(s, tid);
	}
	s->n_pend++;
	s->pend[i].tid = tid;
	return &s->pend[i];
}

/* A deferred sample of thread tid counted in row (or refused: row < 0). */
static void pend_put(struct stack_sampler *s, uint32_t tid, uint64_t cookie, long row)
{
	struct pending *p = pend_slot(s, tid, true);
	if (!p) {
		s->refused++; /* more threads waiting for a weight than max_pending */
		return;
	}
	if (p->cookie)
		s->unweighed++; /* its previous sample never got a weight (too short, ring full) */
	p->cookie = row >= 0 ? cookie : 0;
	p->row = row >= 0 ? (size_t)row : 0;
}

int stack_sampler_settle(struct stack_sampler *s, uint32_t tid, uint64_t cookie, uint64_t weight)
{
	struct pending *p = tid ? pend_slot(s, tid, false) : NULL;
	if (!p || !p->cookie || p->cookie != cookie)
		return -1;
	s->rows[p->row].weight += weight;
	s->rows[p->row].count++;
	p->cookie = 0;
	return 0;
}

/* The frame-pointer walk over the sample's own copy, for a sampler without a stack map (a
 * snapshot of another task's stack: the kernel walks only the current task's): the leaf, then
 * each frame's return address while its saved frame pointer lies further up in the copy. */
static size_t fp_walk_copy(const struct diag_user_sample *rec, size_t len, uint64_t *ips)
{
	size_t n = 0;
	uint64_t bp = rec->bp, lo = rec->sp, hi = rec->sp + len;
	if (rec->ip)
		ips[n++] = rec->ip;
	while (n < DIAG_STACK_DEPTH && bp >= lo && bp + 16 <= hi && !(bp & 7)) {
		uint64_t next, ret;
		memcpy(&next, rec->stack + (bp - lo), 8);
		memcpy(&ret, rec->stack + (bp - lo) + 8, 8);
		if (!ret)
			break;
		ips[n++] = ret;
		if (next <= bp)
			break;
		bp = next;
	}
	return n;
}

/* Frameless frames in a row a leaf fixup recovers (glibc's lock paths nest two or three). */
#define LEAF_CHAIN_MAX 4

/* The frame-pointer stack of the sample, the callers of its frameless leaf (and of frameless
 * callers in a row) inserted when CFI says the walk skipped them. Returns the number of frames. */
static size_t fp_stack(struct stack_sampler *s, const struct diag_user_sample *rec,
		       const struct user_sample *us, uint64_t *ips, uint8_t *from)
{
	size_t n = s->stacks_fd >= 0 ? stacks_read_ids(s->stacks_fd, rec->user_stack_id, ips)
				     : fp_walk_copy(rec, us->len, ips);
	memset(from, FRAME_FP, n);
	if (!s->leaf_fixup || !n)
		return n;
	uint64_t callers[LEAF_CHAIN_MAX];
	int rc = unwind_leaf_callers(s->unw, (int)rec->tgid, us, callers, LEAF_CHAIN_MAX);
	size_t add = rc > 0 ? (size_t)rc : 0;
	for (size_t k = 0; k < add; k++)
		if (n >= 2 && ips[1] == callers[k]) { /* the walk has it, and what follows */
			add = k;
			break;
		}
	if (add) {
		size_t keep = n + add <= DIAG_STACK_DEPTH ? n : DIAG_STACK_DEPTH - add;
		memmove(&ips[1 + add], &ips[1], (keep - 1) * sizeof(*ips));
		memmove(&from[1 + add], &from[1], keep - 1);
		for (size_t k = 0; k < add; k++) {
			ips[1 + k] = callers[k];
			from[1 + k] = FRAME_CFI;
		}
		s->fixed_leaves++;
		return keep + add;
	}
	if (rc >= 0)
		s->leaf_frame_ok++;
	else
		s->leaf_unknown++;
	return n;
}

/* A DWARF unwind that stopped early (the copy ended) continued by the frame-pointer walk: from
 * the deepest unwound frame that the walk also has, the walk's frames beyond it. Frames a
 * frameless function hid from the walk are in the unwound part; the walk knows the rest.
 * Returns the new number of frames. */
static size_t splice_fp(struct stack_sampler *s, const struct diag_user_sample *rec, uint64_t *ips,
			uint8_t *from, size_t n)
{
	uint64_t fp[DIAG_STACK_DEPTH];
	size_t m = s->stacks_fd >= 0 ? stacks_read_ids(s->stacks_fd, rec->user_stack_id, fp) : 0;
	for (size_t i = n; i-- > 1;)
		for (size_t j = 1; j < m; j++) {
			if (fp[j] != ips[i])
				continue;
			size_t k = i + 1;
			for (size_t f = j + 1; f < m && k < DIAG_STACK_DEPTH; f++, k++) {
				ips[k] = fp[f];
				from[k] = FRAME_FP;
			}
			s->dwarf_spliced += k > i + 1;
			return k;
		}
	return n;
}

/* ---- Python frames ------------------------------------------------------------------------- */

void stack_sampler_set_python(struct stack_sampler *s, struct python_procs *py, int py_map_fd)
{
	s->py = py;
	s->py_map_fd = py_map_fd;
	if (py && !s->py_slots)
		s->py_slots = xcalloc(PY_SLOTS, sizeof(*s->py_slots));
}

int stack_sampler_python_add(struct stack_sampler *s, int tgid)
{
	struct diag_py_proc proc;
	if (!s->py || tgid <= 0 || python_procs_probe(s->py, tgid, &proc) != 1)
		return 0;
	__u32 key = (__u32)tgid;
	return bpf_map_update_elem(s->py_map_fd, &key, &proc, BPF_ANY) ? -1 : 1;
}

struct python_procs *stack_sampler_python_plan(bool option, int pid, uint32_t copy_bytes,
					       struct tfile_reader *files, bool *py_walk)
{
	*py_walk = false;
	if (!option)
		return NULL;
	struct python_procs *py = python_procs_new(files);
	*py_walk = copy_bytes > 0 || (pid > 0 && python_procs_probe(py, pid, NULL) == 1);
	if (!*py_walk) {
		python_procs_free(py);
		return NULL;
	}
	return py;
}

void stack_sampler_python_start(struct stack_sampler *s, struct python_procs *py, int py_map_fd,
				int pid)
{
	if (!s || !py) {
		python_procs_free(py);
		return;
	}
	stack_sampler_set_python(s, py, py_map_fd);
	if (pid > 0)
		stack_sampler_python_add(s, pid);
}

/* A thread's Python frames, kept for its sample that follows. */
static void py_record(struct stack_sampler *s, const void *data, size_t size)
{
	const struct diag_py_rec *r = data;
	size_t head = offsetof(struct diag_py_rec, f);
	if (!s->py_slots || size < head) {
		s->bad++;
		return;
	}
	uint32_t n = r->n;
	if (n > DIAG_PY_MAX_FRAMES)
		n = DIAG_PY_MAX_FRAMES;
	if (n > (size - head) / sizeof(r->f[0]))
		n = (uint32_t)((size - head) / sizeof(r->f[0]));
	struct py_slot *slot = &s->py_slots[r->tid % PY_SLOTS];
	slot->tid = r->tid;
	slot->n = n;
	slot->flags = r->flags;
	memcpy(slot->f, r->f, n * sizeof(r->f[0]));
}

/* The sample's native stack with its thread's Python frames (python_splice). Returns the new
 * number of frames. */
static size_t py_splice(struct stack_sampler *s, const struct diag_user_sample *rec, uint64_t *ips,
			uint8_t *from, size_t n)
{
	if (!(rec->flags & DIAG_SAMPLE_PY)) {
		if (stack_sampler_python_add(s, (int)rec->tgid) == 1)
			s->py_lost++; /* its frames come with its next samples */
		return n;
	}
	struct py_slot *slot = &s->py_slots[rec->tid % PY_SLOTS];
	if (slot->tid != rec->tid) {
		s->py_lost++; /* replaced by another thread's before its sample came */
		return n;
	}
	slot->tid = 0;
	s->py_cut += (slot->flags & DIAG_PY_CUT) != 0;
	s->py_no_tstate += (slot->flags & DIAG_PY_NO_TSTATE) != 0;
	s->py_bad_read += (slot->flags & DIAG_PY_BAD_READ) != 0;
	if (!slot->n)
		return n;
	s->py_samples++;
	s->py_frames += slot->n;
	bool unplaced;
	n = python_splice(s->py, (int)rec->tgid, slot->f, slot->n, ips, from, n, DIAG_STACK_DEPTH,
			  &unplaced);
	s->py_unplaced += unplaced;
	return n;
}

int stack_sampler_add(void *ctx, void *data, size_t size)
{
	struct stack_sampler *s = ctx;
	const struct diag_user_sample *rec = data;
	size_t head = offsetof(struct diag_user_sample, stack);
	if (size >= sizeof(uint32_t) && rec->rec == DIAG_REC_WEIGHT) {
		const struct diag_weight_rec *w = data;
		if (size < sizeof(*w))
			s->bad++;
		else if (stack_sampler_settle(s, w->tid, w->cookie, w->weight))
			s->unweighed++; /* the sample was refused, or replaced */
		return 0;
	}
	if (size >= sizeof(uint32_t) && rec->rec == DIAG_REC_PY) {
		py_record(s, data, size);
		return 0;
	}
	if (size >= sizeof(uint32_t) && rec->rec != DIAG_REC_SAMPLE && s->own_record) {
		s->own_record(s->own_ctx, data, size);
		return 0;
	}
	s->received++;
	if (size < head || rec->rec != DIAG_REC_SAMPLE) {
		s->bad++;
		return 0;
	}
	size_t len = rec->stack_len;
	if (len > size - head)
		len = size - head;
	if (len > DIAG_MAX_STACK_BYTES)
		len = DIAG_MAX_STACK_BYTES;
	s->copied_bytes += len;
	s->cut += (rec->flags & DIAG_SAMPLE_CUT) != 0;
	struct user_sample us = { rec->ip, rec->sp, rec->bp, rec->stack, len };
	uint64_t ips[DIAG_STACK_DEPTH];
	uint8_t from[DIAG_STACK_DEPTH];
	size_t n = 0;
	if (s->dwarf) {
		int rc = unwind_dwarf(s->unw, (int)rec->tgid, (int)rec->tid, &us, ips, DIAG_STACK_DEPTH, &n);
		if (rc < 0)
			n = 0;
		s->dwarf_complete += rc == 0;
		s->dwarf_truncated += rc == 1;
		s->dwarf_failed += rc < 0;
		memset(from, FRAME_DWARF, n);
		if (rc == 1)
			n = splice_fp(s, rec, ips, from, n);
	}
	if (!n)
		n = fp_stack(s, rec, &us, ips, from);
	if (s->py)
		n = py_splice(s, rec, ips, from, n);
	char comm[sizeof(rec->comm) + 1];
	snprintf(comm, sizeof(comm), "%.*s", (int)sizeof(rec->comm), rec->comm);
	uint32_t tag = rec->tag < s->n_tags ? rec->tag : 0;
	if (!rec->cookie) {
		long row = row_add(s, rec->tgid, comm, tag, rec->kernel_stack_id, ips, from, n, rec->weight, 1);
		if (s->own_sample)
			s->own_sample(s->own_ctx, data, size, row);
		return 0;
	}
	if (s->own_sample) { /* its weight is the probe's to give (stack_sampler_row_weigh) */
		long row = row_add(s, rec->tgid, comm, tag, rec->kernel_stack_id, ips, from, n, 0, 0);
		s->own_sample(s->own_ctx, data, size, row);
		return 0;
	}
	pend_put(s, rec->tid, rec->cookie,
		 row_add(s, rec->tgid, comm, tag, rec->kernel_stack_id, ips, from, n, 0, 0));
	return 0;
}

void stack_sampler_tag_sums(const struct stack_sampler *s, uint64_t *weight, uint64_t *count)
{
	for (size_t i = 0; i < s->n_rows; i++) {
		weight[s->rows[i].tag] += s->rows[i].weight;
		count[s->rows[i].tag] += s->rows[i].count;
	}
}

void stack_sampler_set_own_records(struct stack_sampler *s, stack_sampler_record_fn *record,
				   stack_sampler_sample_fn *sample, void *ctx)
{
	s->own_record = record;
	s->own_sample = sample;
	s->own_ctx = ctx;
}

size_t stack_sampler_row_frames(const struct stack_sampler *s, size_t row, const uint64_t **ips,
				const uint8_t **from)
{
	if (row >= s->n_rows) {
		*ips = NULL;
		*from = NULL;
		return 0;
	}
	*ips = s->rows[row].ips;
	*from = s->rows[row].from;
	return s->rows[row].n;
}

void stack_sampler_row_weigh(struct stack_sampler *s, size_t row, uint64_t weight, uint64_t count)
{
	if (row < s->n_rows) {
		s->rows[row].weight += weight;
		s->rows[row].count += count;
	}
}

/* The rows with a count into t, weights and counts times scale, added(ctx, row, t) after each
 * one t took; the sums of what was added to *weight, *count and *in_kernel_count (NULL: not
 * wanted). Returns the rows t refused. */
static size_t flush_rows(struct stack_sampler *s, struct stack_table *t, bool kernel_stacks, double scale,
			 stack_sampler_row_added *added, void *ctx, uint64_t *weight, uint64_t *count,
			 uint64_t *in_kernel_count)
{
	size_t refused = 0;
	if (s->py)
		stacks_set_namer(t, python_stack_namer, s->py);
	for (size_t i = 0; i < s->n_rows; i++) {
		const struct srow *r = &s->rows[i];
		if (!r->count)
			continue; /* only samples whose weight never came */
		bool kernel = kernel_stacks && r->kernel_stack_id != -EFAULT;
		if (weight) {
			*weight += r->weight * scale;
			*count += r->count * scale;
			*in_kernel_count += kernel ? r->count * scale : 0;
		}
		if (stacks_add_user_ips(t, s->stacks_fd, (int)r->tgid, r->comm, r->ips, r->from, r->n,
					r->kernel_stack_id, kernel, r->weight * scale, r->count * scale,
					s->n_tags ? s->tags[r->tag] : NULL))
			refused++;
		else if (added)
			added(ctx, i, t);
	}
	return refused;
}

size_t stack_sampler_flush_each(struct stack_sampler *s, struct stack_table *t, bool kernel_stacks,
				stack_sampler_row_added *added, void *ctx)
{
	return flush_rows(s, t, kernel_stacks, 1, added, ctx, NULL, NULL, NULL);
}

size_t stack_sampler_flush(struct stack_sampler *s, struct stack_table *t, bool kernel_stacks,
			   double scale, uint64_t *weight, uint64_t *count, uint64_t *in_kernel_count)
{
	*weight = *count = *in_kernel_count = 0;
	return flush_rows(s, t, kernel_stacks, scale, NULL, NULL, weight, count, in_kernel_count);
}

void stack_sampler_report(const struct stack_sampler *s, struct value *res, uint64_t copy_bytes,
			  uint64_t sent, uint64_t ring_full)
{
	value_set_str(res, "user_unwind", s && s->dwarf ? "dwarf" : "fp");
	struct value *u = value_obj_set(res, "unwind", value_obj());
	const struct stack_sampler zero = { 0 };
	if (!s)
		s = &zero;
	value_set_bool(u, "leaf_fixup", s->leaf_fixup);
	value_set_int(u, "copy_bytes", (int64_t)copy_bytes);
	value_set_int(u, "sent", (int64_t)sent);
	value_set_int(u, "ring_full", (int64_t)ring_full);
	value_set_int(u, "unwound", (int64_t)(s->received - s->bad));
	value_set_int(u, "copied_bytes_avg", (int64_t)(s->received ? s->copied_bytes / s->received : 0));
	value_set_int(u, "copies_cut", (int64_t)s->cut);
	value_set_int(u, "fixed_leaves", (int64_t)s->fixed_leaves);
	value_set_int(u, "leaf_frame_ok", (int64_t)s->leaf_frame_ok);
	value_set_int(u, "leaf_unknown", (int64_t)s->leaf_unknown);
	value_set_int(u, "dwarf_complete", (int64_t)s->dwarf_complete);
	value_set_int(u, "dwarf_truncated", (int64_t)s->dwarf_truncated);
	value_set_int(u, "dwarf_failed", (int64_t)s->dwarf_failed);
	value_set_int(u, "dwarf_spliced", (int64_t)s->dwarf_spliced);
	value_set_int(u, "unweighed", (int64_t)s->unweighed);
	const char *runtime = python_procs_runtime(s->py);
	if (runtime)
		value_set_str(u, "python_runtime", runtime);
	value_set_int(u, "python_samples", (int64_t)s->py_samples);
	value_set_int(u, "python_frames_avg", (int64_t)(s->py_samples ? s->py_frames / s->py_samples : 0));
	value_set_int(u, "python_cut", (int64_t)s->py_cut);
	value_set_int(u, "python_no_thread_state", (int64_t)s->py_no_tstate);
	value_set_int(u, "python_bad_reads", (int64_t)s->py_bad_read);
	value_set_int(u, "python_lost", (int64_t)s->py_lost);
	value_set_int(u, "python_unplaced", (int64_t)s->py_unplaced);
}
