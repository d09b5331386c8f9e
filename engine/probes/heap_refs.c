/* heap_refs.c — a running process's memory scanned for pointers into a set of its heap blocks
 * (see heap_refs.h).
 *
 * Choices:
 * - The blocks are indexed once, in layers (the caller's array stays as it is): each block, in
 *   address order, goes to the first layer whose blocks all end at or before its start, so that
 *   a layer's blocks never overlap and a binary search finds the one holding an address. A heap
 *   fills the first layer; a stale entry of the caller's list under a newer one goes to the
 *   next; as many layers are used as blocks lie over one address (the fewest possible), at most
 *   HEAP_REFS_MAX_DEPTH: a block that would need another is not placed (not decided, see
 *   heap_refs.h), and the ranges such blocks cover are kept merged, to tell the words inside
 *   them. A word thus costs one binary search per layer whatever the blocks are: the index
 *   before this one walked back over every block starting below the address whose end reached
 *   past it, and a target's allocator reporting 8,192 blocks inside one made each pointer into
 *   them cost 8,192 steps (a 4 MiB chunk: 7 s). A word is rejected first by one comparison (below
 *   the lowest block or past the highest end), then by a bitmap hashed from the pages (4 KiB;
 *   coarser when the blocks cover many) the blocks cover; only what passes both is looked up.
 *   Most words (zeros, small integers, text, code addresses) stop at the first test, pointers
 *   elsewhere in the heap at the second. Measured on 256 MiB holding 2 M pointers into 100,000
 *   blocks: a hash table of pages in front of the binary search, or the block arrays
 *   interleaved, were no faster (the cache misses move, they do not go); the layers cost nothing
 *   there (one layer: 0.7-0.9 s before and after).
 * - Where a pointing word lies is asked only of the words that point into a block: its holders
 *   are found from a cursor per layer that moves forward with the words (the entry last found,
 *   then its next two, then a binary search), its mapping's kind (heap or not) was decided once
 *   per mapping. An edge repeating the last one is not stored again (an array of pointers into
 *   one block).
 * - The memory is listed before it is read: the runs of present pages of each mapping
 *   (tfile_read_page_runs), read in chunks of HEAP_REFS_CHUNK_BYTES. A page swapped out or paged
 *   out between the listing and the read is brought back by the read: the window is short, and
 *   the alternative (not reading at all) sees nothing.
 * - A failed read of the target for want of time (the deadline, a stop, a stall: code
 *   TFILE_FAIL_WAIT) ends the scan, as every later read would fail the same way; one that failed
 *   on its own (a mapping unmapped since the listing) is counted and the scan goes on.
 */
#include "probes/heap_refs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target/procfs.h"

#define RUNS_PER_CALL 1024
#define FILTER_MAX_GRANULES ((uint64_t)1 << 22) /* pages set in the bitmap, at most */

/* The blocks in layers: each layer's blocks do not overlap and are sorted by address (the first
 * layer holds all of a heap's, the next ones the stale entries over them), then the blocks the
 * index could not place (over HEAP_REFS_MAX_DEPTH deep: not decided). */
struct ref_index {
	size_t n;              /* blocks indexed: the layers', then the undecided */
	uint64_t *start, *end; /* end: start + size (size 0: + 1) */
	uint32_t *orig;        /* the caller's index */
	uint8_t *from;         /* HEAP_FROM_* found */
	unsigned layers;
	size_t lay[HEAP_REFS_MAX_DEPTH + 1];  /* layer l: entries lay[l] .. lay[l + 1] - 1 (the
					       * last one: ud_first) */
	uint64_t lay_lo[HEAP_REFS_MAX_DEPTH]; /* a layer's first start and last end */
	uint64_t lay_hi[HEAP_REFS_MAX_DEPTH];
	size_t ud_first;             /* the undecided: entries ud_first .. n - 1 */
	uint64_t *ud_start, *ud_end; /* the ranges they cover, merged, in address order */
	size_t n_ud;
	uint64_t lo, span; /* a candidate v: v - lo < span */
	uint64_t *filter;  /* a bit per hashed granule covered by a placed block */
	unsigned shift, bits;
	/* the words being scanned: HEAP_FROM_HEAP or _ROOT for a word in no block, and per layer
	 * (and the undecided ranges) the entry that last held a word (SIZE_MAX: none yet) */
	uint8_t outside;
	size_t cursor[HEAP_REFS_MAX_DEPTH + 1];
	struct heap_ref_edges *edges;
	uint64_t steps; /* index entries examined (heap_scan_stats.index_steps) */
};

struct sort_ent {
	uint64_t start, end;
	uint32_t orig;
};

static int ent_cmp(const void *a, const void *b)
{
	const struct sort_ent *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->orig < y->orig ? -1 : x->orig > y->orig;
}

static inline uint64_t granule_hash(uint64_t g, unsigned bits)
{
	return (g * 0x9e3779b97f4a7c15ull) >> (64 - bits);
}

static void filter_set(struct ref_index *ix, uint64_t g)
{
	uint64_t h = granule_hash(g, ix->bits);
	ix->filter[h >> 6] |= 1ull << (h & 63);
}

#define UNPLACED HEAP_REFS_MAX_DEPTH /* layer[i] of a block not placed */

/* The granules (of 1 << shift bytes) the placed blocks cover (e: sorted by start), overlaps of
 * neighbours counted once. */
static uint64_t granules_at(const struct sort_ent *e, const uint8_t *layer, size_t k, unsigned shift)
{
	uint64_t total = 0, last_end = 0; /* the first granule not counted yet */
	for (size_t i = 0; i < k; i++) {
		if (layer[i] == UNPLACED)
			continue;
		uint64_t first = e[i].start >> shift, last = (e[i].end - 1) >> shift;
		if (first < last_end)
			first = last_end;
		if (first <= last) {
			total += last - first + 1;
			last_end = last + 1;
		}
		if (total > FILTER_MAX_GRANULES)
			break;
	}
	return total;
}

static void index_build(struct ref_index *ix, const struct heap_ref_block *blocks, size_t n)
{
	memset(ix, 0, sizeof(*ix));
	struct sort_ent *e = xmalloc((n ? n : 1) * sizeof(*e));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t size = blocks[i].size ? blocks[i].size : 1;
		if (blocks[i].addr > UINT64_MAX - size)
			continue; /* wraps around: no pointer falls in it */
		e[k++] = (struct sort_ent){ blocks[i].addr, blocks[i].addr + size, (uint32_t)i };
	}
	qsort(e, k, sizeof(*e), ent_cmp);

	/* each block in the first layer free at its start (the fewest layers: all those in use hold
	 * a block over that address); none free and HEAP_REFS_MAX_DEPTH in use: not placed */
	uint8_t *layer = xmalloc(k ? k : 1);
	uint64_t busy_until[HEAP_REFS_MAX_DEPTH];
	size_t count[HEAP_REFS_MAX_DEPTH + 1] = { 0 };
	unsigned used = 0;
	for (size_t i = 0; i < k; i++) {
		unsigned l = 0;
		while (l < used && busy_until[l] > e[i].start)
			l++;
		if (l == used && used < HEAP_REFS_MAX_DEPTH)
			used++;
		if (l < used)
			busy_until[l] = e[i].end;
		layer[i] = (uint8_t)(l < used ? l : UNPLACED);
		count[layer[i]]++;
	}
	ix->layers = used;
	size_t at[HEAP_REFS_MAX_DEPTH + 1], off = 0;
	for (unsigned l = 0; l < used; l++) {
		ix->lay[l] = at[l] = off;
		off += count[l];
	}
	ix->lay[used] = ix->ud_first = at[UNPLACED] = off;
	ix->n = k;
	ix->start = xmalloc((k ? k : 1) * sizeof(*ix->start));
	ix->end = xmalloc((k ? k : 1) * sizeof(*ix->end));
	ix->orig = xmalloc((k ? k : 1) * sizeof(*ix->orig));
	ix->from = xcalloc(k ? k : 1, sizeof(*ix->from));
	ix->ud_start = xmalloc((count[UNPLACED] ? count[UNPLACED] : 1) * sizeof(*ix->ud_start));
	ix->ud_end = xmalloc((count[UNPLACED] ? count[UNPLACED] : 1) * sizeof(*ix->ud_end));
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < k; i++) { /* in address order: each layer stays sorted */
		size_t j = at[layer[i]]++;
		ix->start[j] = e[i].start;
		ix->end[j] = e[i].end;
		ix->orig[j] = e[i].orig;
		if (layer[i] == UNPLACED) {
			ix->from[j] = HEAP_FROM_HEAP; /* not decided: not known, never lost */
			if (ix->n_ud && e[i].start <= ix->ud_end[ix->n_ud - 1]) {
				if (e[i].end > ix->ud_end[ix->n_ud - 1])
					ix->ud_end[ix->n_ud - 1] = e[i].end;
			} else {
				ix->ud_start[ix->n_ud] = e[i].start;
				ix->ud_end[ix->n_ud++] = e[i].end;
			}
			continue;
		}
		lo = e[i].start < lo ? e[i].start : lo;
		hi = e[i].end > hi ? e[i].end : hi;
	}
	for (unsigned l = 0; l < used; l++) { /* no layer is empty: each got its first block */
		ix->lay_lo[l] = ix->start[ix->lay[l]];
		ix->lay_hi[l] = ix->end[ix->lay[l + 1] - 1];
	}
	ix->lo = used ? lo : 1;
	ix->span = used ? hi - lo : 0;

	/* pages first; coarser granules while they are too many for a bitmap that stays in cache */
	unsigned shift = 12;
	uint64_t g;
	while ((g = granules_at(e, layer, k, shift)) > FILTER_MAX_GRANULES && shift < 40)
		shift += 2;
	unsigned bits = 16;
	while (bits < 24 && ((uint64_t)1 << bits) < g * 8)
		bits++;
	ix->shift = shift;
	ix->bits = bits;
	ix->filter = xcalloc(((size_t)1 << bits) / 64, sizeof(*ix->filter));
	uint64_t last_end = 0;
	for (size_t i = 0; i < k; i++) {
		if (layer[i] == UNPLACED)
			continue;
		uint64_t first = e[i].start >> shift, last = (e[i].end - 1) >> shift;
		if (first < last_end)
			first = last_end;
		for (uint64_t x = first; x <= last && x >= first; x++)
			filter_set(ix, x);
		if (first <= last)
			last_end = last + 1;
	}
	free(layer);
	free(e);
}

static void index_free(struct ref_index *ix)
{
	free(ix->start);
	free(ix->end);
	free(ix->orig);
	free(ix->from);
	free(ix->ud_start);
	free(ix->ud_end);
	free(ix->filter);
}

/* The last of the sorted starts s[a .. b - 1] at or before v (a, when none is: the caller checks),
 * by binary search. */
static size_t last_at_or_before(struct ref_index *ix, const uint64_t *s, size_t a, size_t b, uint64_t v)
{
	size_t lo = a, n = b - a;
	while (n > 1) {
		size_t half = n / 2;
		lo = s[lo + half] <= v ? lo + half : lo;
		n -= half;
		ix->steps++;
	}
	return lo;
}

/* The entry among s[a .. b - 1] (sorted, not overlapping, ends in e) that holds x, or SIZE_MAX;
 * hint (when not NULL): the one found last, tried first with its next two (the words come in
 * address order), and set to what is found. */
static size_t find_in(struct ref_index *ix, const uint64_t *s, const uint64_t *e, size_t a,
		      size_t b, uint64_t x, size_t *hint)
{
	size_t j;
	ix->steps++;
	if (a == b || x < s[a])
		return SIZE_MAX;
	if (hint && *hint != SIZE_MAX && *hint >= a && *hint < b && s[*hint] <= x) {
		j = *hint;
		for (int k = 0; k < 2 && j + 1 < b && s[j + 1] <= x; k++, ix->steps++)
			j++;
		if (j + 1 < b && s[j + 1] <= x)
			j = last_at_or_before(ix, s, j, b, x);
	} else {
		j = last_at_or_before(ix, s, a, b, x);
	}
	if (hint)
		*hint = j;
	return e[j] > x ? j : SIZE_MAX;
}

/* The block of layer l holding x (its blocks do not overlap), or SIZE_MAX. */
static inline size_t layer_find(struct ref_index *ix, unsigned l, uint64_t x, size_t *hint)
{
	if (x < ix->lay_lo[l] || x >= ix->lay_hi[l])
		return SIZE_MAX;
	return find_in(ix, ix->start, ix->end, ix->lay[l], ix->lay[l + 1], x, hint);
}

static void add_edge(struct ref_index *ix, size_t h, size_t j)
{
	struct heap_ref_edges *e = ix->edges;
	struct heap_ref_edge edge = { ix->orig[h], ix->orig[j] };
	if (e->n && e->v[e->n - 1].from == edge.from && e->v[e->n - 1].to == edge.to)
		return; /* the same block again (an array of pointers into one block) */
	if (e->n == e->cap) {
		if (e->cap >= HEAP_REFS_MAX_EDGES) {
			e->dropped++;
			ix->from[j] |= HEAP_FROM_HEAP; /* from somewhere in the heap, not kept */
			return;
		}
		e->cap = e->cap ? e->cap * 2 : 1024;
		e->v = xrealloc(e->v, e->cap * sizeof(*e->v));
	}
	e->v[e->n++] = edge;
	ix->from[j] |= HEAP_FROM_BLOCK;
}

/* What holds the word being looked up: a placed block of each layer at most, and whether an
 * undecided one may (found once a word, when it points somewhere). */
struct holders {
	bool known, undecided;
	unsigned n;
	size_t k[HEAP_REFS_MAX_DEPTH];
};

/* The word at address at points into block j (placed): an edge from every placed block holding
 * the word (a stale entry inside a live block holds its words too: the target is reached if
 * either is); from unlisted heap memory when an undecided block may hold it (whether that one
 * is reached is not known); else from where the word lies. */
static void mark(struct ref_index *ix, size_t j, uint64_t at, struct holders *h)
{
	if (!h->known) {
		h->known = true;
		for (unsigned l = 0; l < ix->layers; l++) {
			size_t k = layer_find(ix, l, at, &ix->cursor[l]);
			if (k != SIZE_MAX)
				h->k[h->n++] = k;
		}
		h->undecided = ix->n_ud && find_in(ix, ix->ud_start, ix->ud_end, 0, ix->n_ud, at,
						   &ix->cursor[HEAP_REFS_MAX_DEPTH]) != SIZE_MAX;
	}
	for (unsigned i = 0; i < h->n; i++)
		add_edge(ix, h->k[i], j);
	if (h->undecided)
		ix->from[j] |= HEAP_FROM_HEAP;
	else if (!h->n)
		ix->from[j] |= ix->outside;
}

/* v, read from the word at address at: marks the placed blocks it points into (one a layer at
 * most), but one holding the word itself. */
static void lookup(struct ref_index *ix, uint64_t v, uint64_t at)
{
	struct holders h = { .known = false };
	for (unsigned l = 0; l < ix->layers; l++) {
		size_t j = layer_find(ix, l, v, NULL);
		if (j != SIZE_MAX && !(at >= ix->start[j] && at < ix->end[j]))
			mark(ix, j, at, &h);
	}
}

/* Whether a listed block (placed or not) starts in [start, end). */
static bool block_starts_in(struct ref_index *ix, uint64_t start, uint64_t end)
{
	for (unsigned l = 0; l <= ix->layers; l++) {
		size_t a = ix->lay[l], b = l < ix->layers ? ix->lay[l + 1] : ix->n;
		if (a == b)
			continue;
		size_t j = last_at_or_before(ix, ix->start, a, b, end - 1);
		if (ix->start[j] >= start && ix->start[j] < end)
			return true;
	}
	return false;
}

/* Every aligned word of the nwords at address base (in a mapping of the heap: heap); the words
 * looked up counted in *looked_up. Every HEAP_REFS_CHECK_WORDS words the reader's deadline and
 * stop descriptor are looked at: returns the words scanned (fewer than nwords: stopped, why in
 * err). */
static size_t scan_words(struct ref_index *ix, const uint64_t *w, size_t nwords, uint64_t base,
			 bool heap, uint64_t *looked_up, struct tfile_reader *r, struct diag_err *err)
{
	ix->outside = heap ? HEAP_FROM_HEAP : HEAP_FROM_ROOT;
	for (size_t l = 0; l < ARRAY_LEN(ix->cursor); l++)
		ix->cursor[l] = SIZE_MAX;
	const uint64_t lo = ix->lo, span = ix->span;
	const unsigned shift = ix->shift, bits = ix->bits;
	const uint64_t *filter = ix->filter;
	for (size_t i = 0; i < nwords; i++) {
		if (i && i % HEAP_REFS_CHECK_WORDS == 0 && tfile_reader_check(r, err))
			return i;
		uint64_t v = w[i];
		if (v - lo >= span)
			continue;
		uint64_t h = granule_hash(v >> shift, bits);
		if (!(filter[h >> 6] >> (h & 63) & 1))
			continue;
		++*looked_up;
		lookup(ix, v, base + i * sizeof(uint64_t));
	}
	return nwords;
}

/* A mapping's file that a read may have side effects on (a device, a kernel file). */
static bool device_path(const char *path)
{
	if (!strncmp(path, "/dev/", 5))
		return strncmp(path, "/dev/zero", 9) != 0 && strncmp(path, "/dev/shm/", 9) != 0;
	return !strncmp(path, "/sys/", 5) || !strncmp(path, "/proc/", 6);
}

/* The kernel's special mappings: no pointer of the process's own is in them. */
static bool special_mapping(const char *path)
{
	static const char *const names[] = { "[vvar]", "[vvar_vclock]", "[vsyscall]", "[vdso]", "[uprobes]" };
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (!strcmp(path, names[i]))
			return true;
	return false;
}

struct span {
	uint64_t start, end;
	bool heap; /* [heap], or a listed block starts in it */
};

static void show_bytes(char *buf, size_t len, uint64_t b)
{
	if (b >= (uint64_t)1 << 30)
		snprintf(buf, len, "%.1f GiB", (double)b / (1 << 30));
	else if (b >= (uint64_t)1 << 20)
		snprintf(buf, len, "%.1f MiB", (double)b / (1 << 20));
	else
		snprintf(buf, len, "%" PRIu64 " KiB", (b + 1023) / 1024);
}

/* st->why: what was not scanned (when not complete) and how many blocks were not decided, in one
 * line. */
static void say_why(struct heap_scan_stats *st, uint64_t cap, const char *stop, bool maps_cut)
{
	char parts[6][96], b[32], c[32];
	size_t n = 0;
	if (st->swapped_bytes) {
		show_bytes(b, sizeof(b), st->swapped_bytes);
		snprintf(parts[n++], sizeof(parts[0]), "%s swapped out", b);
	}
	if (st->capped_bytes) {
		show_bytes(b, sizeof(b), st->capped_bytes);
		show_bytes(c, sizeof(c), cap);
		snprintf(parts[n++], sizeof(parts[0]), "%s over the %s cap", b, c);
	}
	if (st->unread_bytes) {
		show_bytes(b, sizeof(b), st->unread_bytes);
		snprintf(parts[n++], sizeof(parts[0]), "%s unreadable", b);
	}
	if (st->device_bytes) {
		show_bytes(b, sizeof(b), st->device_bytes);
		snprintf(parts[n++], sizeof(parts[0]), "%s of device mappings", b);
	}
	if (st->unexamined_bytes) {
		show_bytes(b, sizeof(b), st->unexamined_bytes);
		snprintf(parts[n++], sizeof(parts[0]), "%s of mappings not listed", b);
	}
	if (maps_cut)
		snprintf(parts[n++], sizeof(parts[0]), "the mappings past its maps' first %zu MiB",
			 TFILE_MAX_TEXT_BYTES >> 20);
	size_t off = 0;
	if (!st->complete)
		off = (size_t)(stop && stop[0] ? snprintf(st->why, sizeof(st->why),
							  "stopped (%.80s); not scanned: ", stop)
					       : snprintf(st->why, sizeof(st->why), "not scanned: "));
	for (size_t i = 0; i < n && off < sizeof(st->why); i++)
		off += (size_t)snprintf(st->why + off, sizeof(st->why) - off, "%s%s", i ? ", " : "", parts[i]);
	if (st->undecided && off < sizeof(st->why))
		snprintf(st->why + off, sizeof(st->why) - off,
			 "%s%" PRIu64 " blocks not decided (over %d "
			 "listed blocks at one address): not known",
			 off ? "; " : "", st->undecided, HEAP_REFS_MAX_DEPTH);
}

int heap_refs_scan(struct tfile_reader *r, int pid, struct heap_ref_block *blocks, size_t n,
		   uint64_t max_scan_bytes, struct heap_scan_stats *st, struct heap_ref_edges *edges,
		   struct diag_err *err)
{
	uint64_t t0 = mono_ns(), page = (uint64_t)sysconf(_SC_PAGESIZE);
	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < n; i++)
		blocks[i].from = 0;
	if (!n) { /* nothing to look for: nothing is read */
		st->complete = true;
		return 0;
	}
	if (n > UINT32_MAX)
		return diag_fail(err, TFILE_FAIL_FILE, "%zu heap blocks: too many to look for", n);
	size_t maps_len = 0;
	char *maps = tfile_read_proc(r, pid, "maps", TFILE_MAX_TEXT_BYTES, &maps_len, err);
	if (!maps)
		return diag_wrap(err, "heap references of process %d", pid);
	bool maps_cut = maps_len >= TFILE_MAX_TEXT_BYTES;
	struct ref_index ix;
	index_build(&ix, blocks, n);
	ix.edges = edges;

	/* the mappings to scan */
	struct span *todo = NULL;
	size_t n_todo = 0, cap_todo = 0;
	char *cursor = maps;
	for (char *line; (line = procfs_next_line(&cursor));) {
		struct procfs_maps_line m;
		if (procfs_parse_maps_line(line, &m) || !m.write || special_mapping(m.path))
			continue;
		if (m.shared) {
			st->shared_bytes += m.end - m.start;
			continue;
		}
		if (device_path(m.path)) {
			st->device_bytes += m.end - m.start;
			continue;
		}
		if (n_todo == cap_todo)
			todo = xrealloc(todo, (cap_todo = cap_todo ? cap_todo * 2 : 64) * sizeof(*todo));
		bool heap = !strcmp(m.path, "[heap]") || block_starts_in(&ix, m.start, m.end);
		todo[n_todo++] = (struct span){ m.start & ~(page - 1), (m.end + page - 1) & ~(page - 1), heap };
	}
	free(maps);
	struct tfile_page_run *runs = xmalloc(RUNS_PER_CALL * sizeof(*runs));
	uint64_t *buf = xmalloc(HEAP_REFS_CHUNK_BYTES);
	uint64_t entry_pages = 0, tried = 0; /* tried: bytes read or failed to, against the cap */
	struct diag_err first = { 0 }, e;
	bool stopped = false, failed = false;
	size_t mi = 0;
	for (; mi < n_todo && !stopped; mi++) {
		uint64_t addr = todo[mi].start, end = todo[mi].end;
		st->mappings++;
		while (addr < end && !stopped) {
			size_t k;
			uint64_t next;
			if (entry_pages >= HEAP_REFS_MAX_ENTRY_PAGES) {
				st->unexamined_bytes += end - addr;
				break;
			}
			int how = tfile_read_page_runs(r, pid, addr, end, TFILE_PAGES_SCAN, runs, RUNS_PER_CALL,
						       &k, &next, &e);
			if (how < 0) {
				if (!failed)
					first = e;
				failed = true;
				stopped = e.code == TFILE_FAIL_WAIT;
				if (stopped)
					st->stopped_at = addr;
				st->unexamined_bytes += end - addr;
				break;
			}
			if (how == TFILE_PAGES_ENTRIES)
				entry_pages += (next - addr) / page;
			for (size_t i = 0; i < k && !stopped; i++) {
				uint64_t a = runs[i].start, until = runs[i].end;
				if (runs[i].flags & TFILE_PAGE_SWAPPED) {
					st->swapped_bytes += until - a;
					continue;
				}
				if (runs[i].flags & TFILE_PAGE_ZERO) {
					st->zero_bytes += until - a;
					continue;
				}
				if (max_scan_bytes) {
					uint64_t room = max_scan_bytes > tried ? (max_scan_bytes - tried) & ~(page - 1) : 0;
					if (until - a > room) {
						st->capped_bytes += until - a - room;
						until = a + room;
					}
				}
				while (a < until) {
					size_t len = until - a < HEAP_REFS_CHUNK_BYTES ? (size_t)(until - a)
										      : HEAP_REFS_CHUNK_BYTES;
					tried += len;
					if (!tfile_read_mem(r, pid, a, len, buf, &e)) {
						size_t words = len / sizeof(uint64_t);
						size_t done = scan_words(&ix, buf, words, a, todo[mi].heap,
									 &st->looked_up, r, &e);
						st->scanned_bytes += done * sizeof(uint64_t);
						if (done < words) { /* the deadline or a stop, within the chunk */
							if (!failed)
								first = e;
							failed = stopped = true;
							st->stopped_at = a + done * sizeof(uint64_t);
							st->unexamined_bytes += end - st->stopped_at;
							break;
						}
					} else {
						if (!failed)
							first = e;
						failed = true;
						if (e.code == TFILE_FAIL_WAIT) { /* nothing more will be read */
							stopped = true;
							st->stopped_at = a;
							st->unexamined_bytes += end - a;
							break;
						}
						st->unread_bytes += len;
					}
					a += len;
				}
			}
			addr = next;
		}
	}
	for (; mi < n_todo; mi++) /* after a stop */
		st->unexamined_bytes += todo[mi].end - todo[mi].start;
	free(runs);
	free(buf);
	free(todo);

	st->index_steps = ix.steps;
	st->undecided = ix.n - ix.ud_first;
	for (size_t i = 0; i < ix.n; i++)
		blocks[ix.orig[i]].from |= ix.from[i];
	for (size_t i = 0; i < n; i++)
		st->referenced += blocks[i].from != 0;
	index_free(&ix);
	st->complete = !st->swapped_bytes && !st->device_bytes && !st->unread_bytes && !st->capped_bytes &&
		       !st->unexamined_bytes && !stopped && !maps_cut;
	if (!st->complete || st->undecided)
		say_why(st, max_scan_bytes, stopped ? first.msg : NULL, maps_cut);
	st->elapsed_ns = mono_ns() - t0;
	if (!st->scanned_bytes && failed) {
		if (err)
			*err = first;
		return diag_wrap(err, "heap references of process %d", pid);
	}
	return 0;
}

void heap_refs_reach(const struct heap_ref_block *blocks, size_t n, const struct heap_ref_edges *edges,
		     uint8_t *reach)
{
	/* the edges by their holder (compressed rows): block i's targets are to[first[i] .. first[i + 1]) */
	size_t ne = edges ? edges->n : 0;
	size_t *first = xcalloc(n + 1, sizeof(*first));
	uint32_t *to = xmalloc((ne ? ne : 1) * sizeof(*to));
	for (size_t k = 0; k < ne; k++)
		if (edges->v[k].from < n && edges->v[k].to < n)
			first[edges->v[k].from + 1]++;
	for (size_t i = 0; i < n; i++)
		first[i + 1] += first[i];
	size_t *fill = xmalloc((n ? n : 1) * sizeof(*fill));
	memcpy(fill, first, n * sizeof(*fill));
	for (size_t k = 0; k < ne; k++)
		if (edges->v[k].from < n && edges->v[k].to < n)
			to[fill[edges->v[k].from]++] = edges->v[k].to;
	free(fill);

	/* from the roots first, then from unlisted heap memory: what a root reaches stays ROOT */
	memset(reach, HEAP_REACH_NONE, n);
	uint32_t *todo = xmalloc((n ? n : 1) * sizeof(*todo));
	static const struct {
		uint8_t from, reach;
	} waves[] = { { HEAP_FROM_ROOT, HEAP_REACH_ROOT }, { HEAP_FROM_HEAP, HEAP_REACH_HEAP } };
	for (size_t w = 0; w < ARRAY_LEN(waves); w++) {
		size_t top = 0;
		for (size_t i = 0; i < n; i++)
			if ((blocks[i].from & waves[w].from) && reach[i] == HEAP_REACH_NONE) {
				reach[i] = waves[w].reach;
				todo[top++] = (uint32_t)i;
			}
		while (top) { /* each block is pushed once: when it is first reached */
			uint32_t i = todo[--top];
			for (size_t k = first[i]; k < first[i + 1]; k++)
				if (reach[to[k]] == HEAP_REACH_NONE) {
					reach[to[k]] = waves[w].reach;
					todo[top++] = to[k];
				}
		}
	}
	free(todo);
	free(to);
	free(first);
}

void heap_refs_edges_free(struct heap_ref_edges *edges)
{
	free(edges->v);
	memset(edges, 0, sizeof(*edges));
}
