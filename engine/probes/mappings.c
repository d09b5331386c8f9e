/* mappings.c — catalog entry for engine/probes/mappings.bpf.c: the target's address-space changes
 * (mmap, munmap, brk, mremap, madvise) by the user call path that made them, and what of it is
 * still mapped at the end of the window: the paths behind anonymous memory growth (an
 * allocator's own mmap or brk, a program's, an interpreter's arenas) and the files mapped.
 *
 * Owns: sizing the BPF maps and ring buffer; handing the streamed samples to
 * engine/probes/stack_sampler.c (DWARF unwinding by default: glibc's mmap and brk wrappers
 * have no frame pointer and hide their caller) and, through its hooks, replaying each call in
 * ring buffer order on a table of regions (per process, sorted by address: start, end, class,
 * the call path that mapped it): a new mapping replaces what it overlaps (MAP_FIXED, or a removal
 * whose record was lost), a removal credits the bytes back to the path that mapped them (or
 * counts them as unrecorded), mremap moves the regions it keeps with their paths and gives its
 * growth to the mremap's own path; and turning regions and per-path figures into results (the
 * weight of a path: the anonymous bytes it mapped in the window that are still mapped at its
 * end).
 * Must not: unwind or symbolize itself (stack_sampler.c, stacks.c), read the target's maps or
 * memory, judge what the growth means (the recipe's Lua does: mapped is not resident), or lose a
 * call silently: records the ring buffer refused, regions the table could not hold, paths not
 * kept and malformed records are all in the results.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h" /* before the skeleton: it names struct diag_ctl */
#include "mappings.skel.h"
#include "probes/mappings.h"
#include "abi/diag_unwind.h"
#include "symbolize/python.h"
#include "probes/stack_sampler.h"
#include "symbolize/stacks.h"

#define MREMAP_DONTUNMAP_ 4

/* One mapped range of one process, as the window recorded it. */
struct region {
	uint64_t start, end;
	uint32_t tgid;
	uint32_t cls; /* enum maps_class */
	long row;     /* the stack sampler's row of the path that mapped it; -1: not kept */
};

/* What one call path did in the window: the stacks' extra fields, in this order. */
enum { X_CALLS, X_ANON, X_SHARED, X_FILE, X_RESERVED, X_BRK, X_MREMAP, X_UNMAPPED, X_FILE_LEFT,
       X_MADVISE, X_NR };
static const char *const extra_names[X_NR] = {
	"calls", "anon_bytes", "shared_bytes", "file_bytes", "reserved_bytes", "brk_growth_bytes",
	"mremap_growth_bytes", "unmapped_bytes", "file_still_mapped_bytes", "madvise_freed_bytes",
};
struct site {
	uint64_t x[X_NR];
	uint64_t still; /* anonymous bytes still mapped (the weight), counted at collect */
};

struct maps_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct mappings_bpf *skel;
	struct stack_sampler *sampler;
	struct region *reg;   /* sorted by (tgid, start); never overlapping within a process */
	size_t n_reg, cap_reg, max_reg;
	struct site *sites;   /* by sampler row */
	size_t n_sites;
	struct site unkept;   /* paths the sampler did not keep (row -1) */
	uint64_t unmapped_recorded, unmapped_unrecorded, replaced, exited;
	uint64_t untracked, untracked_bytes, bad;
};

PROBE_BPF_SKELETON(mappings)

static const struct option_spec maps_options[] = {
	{ .name = "max_regions", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 65536,
	  .min = 256, .max = 1u << 22, .bytes_per_entry = 2 * sizeof(struct region),
	  .help = "mapped regions tracked at once (in the engine); more are counted in "
		  "untracked_regions and their unmapping is then unrecorded" },
	{ .name = "max_sites", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = DIAG_STACK_DEPTH * 9 + sizeof(struct site) + 64,
	  .help = "distinct call paths kept (in the engine); the bytes of paths beyond it are "
		  "counted, not kept (unattributed_bytes)" },
	{ .name = "max_stacks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = sizeof(__u32) + DIAG_STACK_DEPTH * sizeof(__u64),
	  .help = "distinct frame-pointer stacks kept (the fallback and continuation of unwinding)" },
	{ .name = "max_threads", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20, .bytes_per_entry = 4 + sizeof(struct maps_pending) + 64,
	  .help = "threads inside mmap, brk or mremap at once" },
	STACK_SAMPLER_UNWIND_OPTION("each call", "dwarf"),
	{ .name = "leaf_fixup", .type = OPT_BOOL, .dflt = 1, .max = 1,
	  .help = "fp: recover the caller of a frameless leaf (the syscall wrapper) by CFI" },
	STACK_SAMPLER_STACK_BYTES_OPTION("each call", 8192),
	STACK_SAMPLER_PYTHON_OPTION,
	{ .name = "ring_buffer_kib", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 1024,
	  .min = 4, .max = 262144, .bytes_per_entry = 1024,
	  .help = "KiB of ring buffer for the calls (a power of 2; drained when a quarter full; "
		  "full: the call is in the totals only, counted in lost_records)" },
};

static const char *const maps_variants[] = { "tracepoint", NULL };

STACK_SAMPLER_PROBE_OPS(maps, struct maps_priv)

/* ---- the table of regions ---------------------------------------------------------------- */

static struct site *site_of(struct maps_priv *mp, long row)
{
	if (row < 0)
		return &mp->unkept;
	if ((size_t)row >= mp->n_sites) {
		size_t n = mp->n_sites ? mp->n_sites : 64;
		while (n <= (size_t)row)
			n *= 2;
		mp->sites = xrealloc(mp->sites, n * sizeof(*mp->sites));
		memset(mp->sites + mp->n_sites, 0, (n - mp->n_sites) * sizeof(*mp->sites));
		mp->n_sites = n;
	}
	return &mp->sites[row];
}

/* The first region of process tgid that ends above addr (or where one would go). */
static size_t first_after(const struct maps_priv *mp, uint32_t tgid, uint64_t addr)
{
	size_t lo = 0, hi = mp->n_reg;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct region *r = &mp->reg[mid];
		if (r->tgid < tgid || (r->tgid == tgid && r->end <= addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void insert_at(struct maps_priv *mp, size_t i, const struct region *r)
{
	if (mp->n_reg == mp->cap_reg) {
		mp->cap_reg = mp->cap_reg ? mp->cap_reg * 2 : 256;
		mp->reg = xrealloc(mp->reg, mp->cap_reg * sizeof(*mp->reg));
	}
	memmove(&mp->reg[i + 1], &mp->reg[i], (mp->n_reg - i) * sizeof(*mp->reg));
	mp->reg[i] = *r;
	mp->n_reg++;
}

static void delete_at(struct maps_priv *mp, size_t i)
{
	memmove(&mp->reg[i], &mp->reg[i + 1], (mp->n_reg - i - 1) * sizeof(*mp->reg));
	mp->n_reg--;
}

/* A piece of a region that left the address space: its bytes back to its path. */
static void credit_unmapped(struct maps_priv *mp, const struct region *piece)
{
	uint64_t len = piece->end - piece->start;
	site_of(mp, piece->row)->x[X_UNMAPPED] += len;
	mp->unmapped_recorded += len;
}

/* Removes [start, end) of process tgid from the table. Each recorded piece in it is credited as
 * unmapped to its path, or, when moved is given (mremap), appended there (the caller frees it).
 * Returns the recorded bytes removed. */
static uint64_t cut(struct maps_priv *mp, uint32_t tgid, uint64_t start, uint64_t end,
		    struct region **moved, size_t *n_moved)
{
	uint64_t removed = 0;
	size_t i = first_after(mp, tgid, start);
	while (i < mp->n_reg && mp->reg[i].tgid == tgid && mp->reg[i].start < end) {
		struct region *r = &mp->reg[i];
		struct region piece = *r;
		piece.start = r->start > start ? r->start : start;
		piece.end = r->end < end ? r->end : end;
		removed += piece.end - piece.start;
		if (moved) {
			*moved = xrealloc(*moved, (*n_moved + 1) * sizeof(**moved));
			(*moved)[(*n_moved)++] = piece;
		} else {
			credit_unmapped(mp, &piece);
		}
		if (r->start < piece.start && r->end > piece.end) { /* a hole in the middle: split */
			struct region tail = *r;
			tail.start = piece.end;
			r->end = piece.start;
			insert_at(mp, i + 1, &tail); /* may pass max_regions by one: nothing is dropped */
			break;
		}
		if (r->start < piece.start) {
			r->end = piece.start;
			i++;
		} else if (r->end > piece.end) {
			r->start = piece.end;
			break;
		} else {
			delete_at(mp, i);
		}
	}
	return removed;
}

/* A new region: what it overlaps is replaced (MAP_FIXED; or a region whose removal was not
 * seen), then it joins the table, merged with a neighbour of the same path and class (a heap
 * grown by brk stays one region). */
static void place(struct maps_priv *mp, uint32_t tgid, uint64_t start, uint64_t end, uint32_t cls,
		  long row)
{
	if (end <= start)
		return;
	mp->replaced += cut(mp, tgid, start, end, NULL, NULL);
	size_t i = first_after(mp, tgid, start);
	if (i > 0) {
		struct region *prev = &mp->reg[i - 1];
		if (prev->tgid == tgid && prev->end == start && prev->row == row && prev->cls == cls) {
			prev->end = end;
			if (i < mp->n_reg && mp->reg[i].tgid == tgid && mp->reg[i].start == end &&
			    mp->reg[i].row == row && mp->reg[i].cls == cls) {
				prev->end = mp->reg[i].end;
				delete_at(mp, i);
			}
			return;
		}
	}
	if (i < mp->n_reg) {
		struct region *next = &mp->reg[i];
		if (next->tgid == tgid && next->start == end && next->row == row && next->cls == cls) {
			next->start = start;
			return;
		}
	}
	if (mp->n_reg >= mp->max_reg) {
		mp->untracked++;
		mp->untracked_bytes += end - start;
		return;
	}
	struct region r = { .start = start, .end = end, .tgid = tgid, .cls = cls, .row = row };
	insert_at(mp, i, &r);
}

/* The class of the recorded region holding addr, or dflt. */
static uint32_t class_at(const struct maps_priv *mp, uint32_t tgid, uint64_t addr, uint32_t dflt)
{
	size_t i = first_after(mp, tgid, addr);
	if (i < mp->n_reg && mp->reg[i].tgid == tgid && mp->reg[i].start <= addr)
		return mp->reg[i].cls;
	return dflt;
}

/* mremap: the regions of the range it keeps move with their paths; what it drops is unmapped;
 * its growth is the mremap caller's, of the class of the region it extends. */
static void remap(struct maps_priv *mp, uint32_t tgid, const struct maps_event *ev, long row)
{
	uint64_t old = ev->addr, olen = ev->len, now = ev->addr2, nlen = ev->len2;
	uint32_t cls = class_at(mp, tgid, olen ? old + olen - 1 : old, MAPS_CLS_ANON);
	if ((ev->flags & MREMAP_DONTUNMAP_) || olen == 0) {
		/* the old range stays (emptied, or a second mapping of shared memory): all new */
		site_of(mp, row)->x[X_MREMAP] += nlen;
		place(mp, tgid, now, now + nlen, cls, row);
		return;
	}
	uint64_t keep = olen < nlen ? olen : nlen;
	struct region *moved = NULL;
	size_t n_moved = 0;
	cut(mp, tgid, old, old + keep, &moved, &n_moved);
	if (olen > nlen)
		mp->unmapped_unrecorded += (olen - nlen) - cut(mp, tgid, old + nlen, old + olen, NULL, NULL);
	mp->replaced += cut(mp, tgid, now, now + nlen, NULL, NULL);
	for (size_t k = 0; k < n_moved; k++)
		place(mp, tgid, moved[k].start - old + now, moved[k].end - old + now, moved[k].cls,
		      moved[k].row);
	free(moved);
	if (nlen > olen) {
		site_of(mp, row)->x[X_MREMAP] += nlen - olen;
		place(mp, tgid, now + olen, now + nlen, cls, row);
	}
}

/* ---- the records, in ring buffer order (stack_sampler_hooks) ------------------------------ */

/* A call with its stack: counted in the row the sampler put it in. */
static void on_sample(void *arg, const void *data, size_t size, long row)
{
	struct maps_priv *mp = arg;
	const struct diag_user_sample *rec = data;
	size_t head = offsetof(struct diag_user_sample, stack);
	struct maps_event ev;
	if (size < head + sizeof(ev) || size - head - sizeof(ev) != rec->stack_len) {
		mp->bad++;
		return;
	}
	memcpy(&ev, (const char *)data + size - sizeof(ev), sizeof(ev));
	if (ev.addr + ev.len < ev.addr || ev.addr2 + ev.len2 < ev.addr2 || ev.cls >= MAPS_CLS_NR ||
	    ev.op < MAPS_OP_MMAP || ev.op > MAPS_OP_MADVISE || ev.op == MAPS_OP_UNMAP) {
		mp->bad++;
		return;
	}
	/* site_of(row) each time: the sites grow (realloc) when a row is new */
	site_of(mp, row)->x[X_CALLS]++;
	switch (ev.op) {
	case MAPS_OP_MMAP:
		site_of(mp, row)->x[X_ANON + ev.cls] += ev.len;
		place(mp, rec->tgid, ev.addr, ev.addr + ev.len, ev.cls, row);
		break;
	case MAPS_OP_BRK:
		site_of(mp, row)->x[X_BRK] += ev.len;
		place(mp, rec->tgid, ev.addr, ev.addr + ev.len, MAPS_CLS_ANON, row);
		break;
	case MAPS_OP_MREMAP:
		remap(mp, rec->tgid, &ev, row);
		break;
	default: /* MAPS_OP_MADVISE */
		site_of(mp, row)->x[X_MADVISE] += ev.len;
	}
}

/* A removal without a stack (munmap, the break lowered). */
static void on_record(void *arg, const void *data, size_t size)
{
	struct maps_priv *mp = arg;
	struct maps_unmap_rec r;
	if (size < sizeof(r)) {
		mp->bad++;
		return;
	}
	memcpy(&r, data, sizeof(r));
	if (r.rec != MAPS_REC_UNMAP || r.addr + r.len < r.addr) {
		mp->bad++;
		return;
	}
	mp->unmapped_unrecorded += r.len - cut(mp, r.tgid, r.addr, r.addr + r.len, NULL, NULL);
}

/* A row the stack table took: its figures. */
static void on_row_added(void *ctx, size_t row, struct stack_table *t)
{
	struct maps_priv *mp = ctx;
	uint64_t zero[X_NR] = { 0 };
	stacks_last_extra(t, row < mp->n_sites ? mp->sites[row].x : zero);
}

/* ---- the kind ---------------------------------------------------------------------------- */

static int maps_load(struct probe *p, struct diag_err *err)
{
	struct maps_priv *mp = p->priv;
	const char *unwind = probe_opt_str(p, "user_unwind");
	bool dwarf = !unwind || !strcmp(unwind, "dwarf");
	bool leaf_fixup = !dwarf && probe_opt(p, "leaf_fixup");
	__u32 copy = dwarf ? (__u32)probe_opt(p, "stack_bytes") : leaf_fixup ? 256 : 0;
	uint32_t ring = stack_sampler_ring_size(probe_opt(p, "ring_buffer_kib") * 1024);
	long page = sysconf(_SC_PAGESIZE);
	bool py_walk;
	struct python_procs *py = stack_sampler_python_plan(probe_opt(p, "python_frames") != 0,
							    p->cfg.filter.pid, copy, p->files, &py_walk);

	if (!(mp->skel = mappings_skel_open(p, err))) {
		python_procs_free(py);
		return -1;
	}
	mp->skel->rodata->page_bytes = page > 0 && !(page & (page - 1)) ? (__u64)page : 4096;
	mp->skel->rodata->copy_bytes = copy;
	mp->skel->rodata->py_walk = py_walk;
	mp->skel->rodata->wake_bytes = ring / 4;
	bpf_map__set_max_entries(mp->skel->maps.stacks, (__u32)probe_opt(p, "max_stacks"));
	bpf_map__set_max_entries(mp->skel->maps.pending, (__u32)probe_opt(p, "max_threads"));
	bpf_map__set_max_entries(mp->skel->maps.samples, ring);
	int rc = mappings_bpf__load(mp->skel);
	if (rc) {
		python_procs_free(py);
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading the syscall tracepoint programs: %s",
				 strerror(-rc));
	}
	p->variant = "tracepoint";
	mp->max_reg = (size_t)probe_opt(p, "max_regions");
	mp->sampler = stack_sampler_new(bpf_map__fd(mp->skel->maps.stacks), dwarf, leaf_fixup,
					(size_t)probe_opt(p, "max_sites"), NULL, 0, 0, p->files);
	stack_sampler_set_own_records(mp->sampler, on_record, on_sample, mp);
	stack_sampler_python_start(mp->sampler, py, bpf_map__fd(mp->skel->maps.py_procs),
				   p->cfg.filter.pid);
	if (stack_sampler_open_ring(mp->sampler, bpf_map__fd(mp->skel->maps.samples)))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "opening the ring buffer: %s", strerror(errno));
	return 0;
}

static void maps_destroy(struct probe *p)
{
	struct maps_priv *mp = p->priv;
	probe_bpf_destroy(p);
	stack_sampler_free(mp->sampler); /* NULL is fine */
	free(mp->reg);
	free(mp->sites);
	memset(mp, 0, sizeof(*mp));
}


static bool process_gone(uint32_t tgid)
{
	return kill((pid_t)tgid, 0) != 0 && errno == ESRCH;
}

/* At the end: regions of processes that exited are gone with them (credited as unmapped); the
 * rest is what each path still has mapped. Returns the anonymous bytes still mapped whose path
 * was not kept. */
static uint64_t settle_regions(struct maps_priv *mp)
{
	uint32_t tgid = 0;
	bool gone = false;
	for (size_t i = 0; i < mp->n_reg;) {
		const struct region *r = &mp->reg[i];
		if (i == 0 || r->tgid != tgid) {
			tgid = r->tgid;
			gone = process_gone(tgid);
		}
		if (gone) {
			mp->exited += r->end - r->start;
			credit_unmapped(mp, r);
			delete_at(mp, i);
			continue;
		}
		struct site *st = site_of(mp, r->row);
		if (r->cls == MAPS_CLS_ANON || r->cls == MAPS_CLS_SHARED)
			st->still += r->end - r->start;
		else if (r->cls == MAPS_CLS_FILE)
			st->x[X_FILE_LEFT] += r->end - r->start;
		i++;
	}
	return mp->unkept.still;
}

static int maps_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct maps_priv *mp = p->priv;
	struct bpf_object *obj = mp->skel->obj;
	int fd = bpf_map__fd(mp->skel->maps.counters);
	(void)err;
	uint64_t c[MAPS_C_NR];
	for (__u32 i = 0; i < MAPS_C_NR; i++)
		c[i] = probe_percpu_sum(fd, i);

	stack_sampler_consume(mp->sampler); /* detached: what is left */
	uint64_t unattributed = settle_regions(mp);
	struct stack_table *table = stacks_new(ctx, (size_t)probe_opt(p, "max_sites"));
	stacks_set_extra(table, extra_names, NULL, X_NR);
	uint64_t weight = 0;
	for (size_t row = 0; row < mp->n_sites; row++) { /* the rows' weights are 0 until now */
		stack_sampler_row_weigh(mp->sampler, row, mp->sites[row].still, 0);
		weight += mp->sites[row].still;
	}
	size_t refused = stack_sampler_flush_each(mp->sampler, table, false, on_row_added, mp);

	uint64_t mapped = c[MAPS_C_ANON_BYTES] + c[MAPS_C_SHARED_BYTES] + c[MAPS_C_FILE_BYTES] +
			  c[MAPS_C_RESERVED_BYTES];
	uint64_t unmapped = mp->unmapped_recorded + mp->unmapped_unrecorded;
	uint64_t grown = mapped + c[MAPS_C_BRK_GROWTH] + c[MAPS_C_MREMAP_GROWTH];

	struct value *res = value_obj();
	value_set_num(res, "window_s", ctx ? ctx->wall_s : 0);
	value_set_int(res, "page_bytes", (int64_t)mp->skel->rodata->page_bytes);
	value_set_int(res, "mmap_calls", (int64_t)c[MAPS_C_MMAP_CALLS]);
	value_set_int(res, "munmap_calls", (int64_t)c[MAPS_C_MUNMAP_CALLS]);
	value_set_int(res, "brk_calls", (int64_t)c[MAPS_C_BRK_CALLS]);
	value_set_int(res, "mremap_calls", (int64_t)c[MAPS_C_MREMAP_CALLS]);
	value_set_int(res, "madvise_calls", (int64_t)c[MAPS_C_MADVISE_CALLS]);
	value_set_int(res, "failed_calls", (int64_t)c[MAPS_C_FAILED]);
	value_set_int(res, "anon_mapped_bytes", (int64_t)c[MAPS_C_ANON_BYTES]);
	value_set_int(res, "shared_mapped_bytes", (int64_t)c[MAPS_C_SHARED_BYTES]);
	value_set_int(res, "file_mapped_bytes", (int64_t)c[MAPS_C_FILE_BYTES]);
	value_set_int(res, "reserved_bytes", (int64_t)c[MAPS_C_RESERVED_BYTES]);
	value_set_int(res, "brk_growth_bytes", (int64_t)c[MAPS_C_BRK_GROWTH]);
	value_set_int(res, "brk_shrink_bytes", (int64_t)c[MAPS_C_BRK_SHRINK]);
	value_set_int(res, "mremap_growth_bytes", (int64_t)c[MAPS_C_MREMAP_GROWTH]);
	value_set_int(res, "mremap_shrink_bytes", (int64_t)c[MAPS_C_MREMAP_SHRINK]);
	value_set_int(res, "munmap_bytes", (int64_t)c[MAPS_C_MUNMAP_BYTES]);
	value_set_int(res, "unmapped_bytes", (int64_t)unmapped);
	value_set_int(res, "unmapped_recorded_bytes", (int64_t)mp->unmapped_recorded);
	value_set_int(res, "unmapped_unrecorded_bytes", (int64_t)mp->unmapped_unrecorded);
	value_set_int(res, "replaced_bytes", (int64_t)mp->replaced);
	value_set_int(res, "exited_bytes", (int64_t)mp->exited);
	value_set_int(res, "madvise_freed_bytes", (int64_t)c[MAPS_C_MADVISE_BYTES]);
	value_set_int(res, "net_bytes", grown >= unmapped ? (int64_t)(grown - unmapped)
							  : -(int64_t)(unmapped - grown));
	value_set_int(res, "still_mapped_bytes", (int64_t)(weight + unattributed));
	value_set_int(res, "unattributed_bytes", (int64_t)unattributed);
	value_set_int(res, "regions", (int64_t)mp->n_reg);
	value_set_int(res, "max_regions", (int64_t)mp->max_reg);
	value_set_int(res, "untracked_regions", (int64_t)mp->untracked);
	value_set_int(res, "untracked_bytes", (int64_t)mp->untracked_bytes);
	value_set_int(res, "lost_records", (int64_t)(c[MAPS_C_RING_FULL] + c[MAPS_C_UNMAP_LOST]));
	value_set_int(res, "lost_stacks", (int64_t)probe_stat_sum(obj, DIAG_STAT_LOST));
	value_set_int(res, "dropped", (int64_t)(stack_sampler_refused(mp->sampler) + refused));
	value_set_int(res, "bad_records", (int64_t)mp->bad);
	value_set_int(res, "unmatched_exits", (int64_t)c[MAPS_C_NO_ENTRY]);
	value_set_int(res, "pending_full", (int64_t)probe_stat_sum(obj, DIAG_STAT_MAP_FULL));
	stack_sampler_report(mp->sampler, res, mp->skel->rodata->copy_bytes, c[MAPS_C_SENT],
			     c[MAPS_C_RING_FULL]);
	stacks_finish(table, res, p->kind->stack_unit);
	*out = res;
	return 0;
}

static const struct result_field maps_results[] = {
	{ "window_s", RT_NUMBER, "s", false, "how long calls were recorded (the collection after the pre-flight)" },
	{ "page_bytes", RT_INTEGER, "bytes", false, "the page size lengths are rounded up to" },
	{ "mmap_calls", RT_INTEGER, "count", false, "mmap calls of the target (failed ones included)" },
	{ "munmap_calls", RT_INTEGER, "count", false, "munmap calls" },
	{ "brk_calls", RT_INTEGER, "count", false, "brk calls that asked for a new break (brk(0) not counted)" },
	{ "mremap_calls", RT_INTEGER, "count", false, "mremap calls" },
	{ "madvise_calls", RT_INTEGER, "count", false, "madvise calls with MADV_DONTNEED or MADV_FREE" },
	{ "failed_calls", RT_INTEGER, "count", false,
	  "calls that failed (an error return; brk: the break unchanged; munmap: arguments it refuses)" },
	{ "anon_mapped_bytes", RT_INTEGER, "bytes", false, "anonymous private memory mmap'd (accessible)" },
	{ "shared_mapped_bytes", RT_INTEGER, "bytes", false, "anonymous MAP_SHARED memory mmap'd (accessible)" },
	{ "file_mapped_bytes", RT_INTEGER, "bytes", false, "file-backed mappings made (accessible; memfd and /dev/shm files too)" },
	{ "reserved_bytes", RT_INTEGER, "bytes", false, "PROT_NONE mappings made: address space, not memory" },
	{ "brk_growth_bytes", RT_INTEGER, "bytes", false, "what brk raised the heap by (page-rounded breaks)" },
	{ "brk_shrink_bytes", RT_INTEGER, "bytes", false, "what brk lowered the heap by" },
	{ "mremap_growth_bytes", RT_INTEGER, "bytes", false, "what mremap grew mappings by" },
	{ "mremap_shrink_bytes", RT_INTEGER, "bytes", false, "what mremap shrank mappings by" },
	{ "munmap_bytes", RT_INTEGER, "bytes", false, "lengths given to munmap (holes included)" },
	{ "unmapped_bytes", RT_INTEGER, "bytes", false,
	  "address space the window removed: munmap, brk and mremap shrinking, recorded regions a MAP_FIXED mapping replaced" },
	{ "unmapped_recorded_bytes", RT_INTEGER, "bytes", false,
	  "of unmapped_bytes, regions mapped in the window: credited back to their paths" },
	{ "unmapped_unrecorded_bytes", RT_INTEGER, "bytes", false,
	  "of unmapped_bytes, ranges not recorded: mapped before the window, untracked, or holes" },
	{ "replaced_bytes", RT_INTEGER, "bytes", false,
	  "recorded regions a new mapping replaced (MAP_FIXED), in unmapped_recorded_bytes" },
	{ "exited_bytes", RT_INTEGER, "bytes", false,
	  "recorded regions of processes that exited by the end, in unmapped_recorded_bytes" },
	{ "madvise_freed_bytes", RT_INTEGER, "bytes", false,
	  "ranges given back with MADV_DONTNEED or MADV_FREE (still mapped, no longer resident)" },
	{ "net_bytes", RT_INTEGER, "bytes", false,
	  "address space added in the window: mapped (all kinds) + brk and mremap growth - unmapped_bytes" },
	{ "still_mapped_bytes", RT_INTEGER, "bytes", false,
	  "anonymous memory mapped in the window and still mapped at its end: the stacks' weights + unattributed_bytes" },
	{ "unattributed_bytes", RT_INTEGER, "bytes", false,
	  "of still_mapped_bytes, mapped by paths not kept (max_sites reached)" },
	{ "regions", RT_INTEGER, "count", false, "regions recorded and still mapped at the end" },
	{ "max_regions", RT_INTEGER, "count", false, "regions the probe can track at once" },
	{ "untracked_regions", RT_INTEGER, "count", false,
	  "mappings not tracked (max_regions reached): in the totals, not in the stacks" },
	{ "untracked_bytes", RT_INTEGER, "bytes", false, "their bytes" },
	{ "lost_records", RT_INTEGER, "count", false,
	  "calls the ring buffer refused: in the totals, not in the stacks or the regions" },
	{ "lost_stacks", RT_INTEGER, "count", false, "frame-pointer stacks that could not be walked or stored" },
	{ "dropped", RT_INTEGER, "count", false, "calls not counted by stack: the paths table was full" },
	{ "bad_records", RT_INTEGER, "count", false, "malformed ring buffer records (none expected)" },
	{ "unmatched_exits", RT_INTEGER, "count", false,
	  "exits without their entry (a call entered before the full mode): not recorded" },
	{ "pending_full", RT_INTEGER, "count", false,
	  "calls not recorded: more than max_threads threads were inside mmap, brk or mremap at once" },
	STACK_SAMPLER_RESULT_FIELDS,
	STACK_RESULT_FIELDS,
	{ "stacks[].calls", RT_INTEGER, "count", false,
	  "calls of this path recorded: mmap, brk growth, mremap, madvise" },
	{ "stacks[].anon_bytes", RT_INTEGER, "bytes", false, "anonymous private memory it mmap'd" },
	{ "stacks[].shared_bytes", RT_INTEGER, "bytes", false, "anonymous MAP_SHARED memory it mmap'd" },
	{ "stacks[].file_bytes", RT_INTEGER, "bytes", false, "file-backed mappings it made" },
	{ "stacks[].reserved_bytes", RT_INTEGER, "bytes", false, "PROT_NONE mappings it made (not in the weight)" },
	{ "stacks[].brk_growth_bytes", RT_INTEGER, "bytes", false, "what it raised the heap's break by" },
	{ "stacks[].mremap_growth_bytes", RT_INTEGER, "bytes", false, "what its mremap calls grew mappings by" },
	{ "stacks[].unmapped_bytes", RT_INTEGER, "bytes", false,
	  "of what it mapped in the window, unmapped in it (by any path), replaced, or gone with its process" },
	{ "stacks[].file_still_mapped_bytes", RT_INTEGER, "bytes", false,
	  "of its file-backed mappings, still mapped at the end (not in the weight)" },
	{ "stacks[].madvise_freed_bytes", RT_INTEGER, "bytes", false,
	  "what it gave back with MADV_DONTNEED or MADV_FREE" },
};
static const char *const maps_features[] = { "btf", "tracefs", "tracepoint", NULL };

const struct probe_kind probe_kind_mappings = {
	.name = "mappings",
	.summary = "the target's mmap, munmap, brk, mremap and madvise by user call path (syscall "
		   "tracepoints); weight: anonymous bytes mapped in the window and still mapped",
	.options = maps_options,
	.n_options = ARRAY_LEN(maps_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = maps_variants,
	.private_size = sizeof(struct maps_priv),
	.stack_unit = "bytes",
	.results = maps_results,
	.n_results = ARRAY_LEN(maps_results),
	.features = maps_features,
	.load = maps_load,
	.attach = probe_bpf_attach_all,
	.detach = probe_bpf_detach,
	.tick = maps_tick,
	.wake_fd = maps_wake_fd,
	.drain = maps_drain,
	.collect = maps_collect,
	.destroy = maps_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = mappings_bpf__elf_bytes,
};
