/* test_heap_refs.c — the scan for pointers into a process's heap blocks (engine/probes/heap_refs.c)
 * and the page runs it reads the process by (engine/target/tfile.c), on a live process.
 *
 * The target is this very binary run again (`--heap-child`): a fresh process whose heap holds
 * only what it allocates, so that no stale value of an earlier test points into its blocks. It
 * allocates blocks of sizes from 16 bytes to 1 MiB (those over 128 KiB mapped apart) and keeps a
 * pointer to each in a global (to its start, into its middle, one past its end: not into it) or
 * drops it, plus the cases that say what points where and what reaches what: a block only its
 * own words point into (unreferenced, lost), one pointed to only by a block nothing points to
 * (from a block, lost: valgrind's "indirectly lost"), two dropped blocks pointing to each other
 * (from blocks, lost: a cycle), one whose address is stored only at an unaligned offset
 * (unreferenced: only aligned words are pointers), one held by a live local of its main (from a
 * root), one held only by a block it does not list (from the heap: not known), one held only by
 * a listed block a global holds (from a block, reached from a root). Its block sizes are multiples of 16, so that glibc's
 * pointer to the chunk after a block (the top chunk, a free one) never falls inside the block.
 * The dropped pointers are gone from its memory: the function that held them has returned, the
 * stack below is zeroed, the list it sends its blocks in is zeroed once sent. It also maps 16
 * pages and touches two (one written, one read: the zero page), to show that the pages never
 * touched are not listed and stay untouched by the scan. The scan is checked block by block (the
 * caller's list also holding a block twice, and a block around a kept one: overlaps are found
 * alike), capped (not complete, and says so), on a process that is gone and by a reader past its
 * deadline (-1, nothing marked); the page runs by PAGEMAP_SCAN and by pagemap's entries agree.
 * The child is killed and reaped on every path (each test's teardown).
 *
 * Blocks a target's own malloc could report (a child of its own, `--nested-child`, whose pointers
 * the test writes into it: it never holds a copy that could point elsewhere): 8,192 inside one,
 * and 8 over one range with a ninth over their end. The scan's work is counted (index
 * steps per word looked up: bounded, where the walk back over the blocks inside the outer one
 * cost 6,839 a word), its results exact where at most 8 blocks lie over an address, and the
 * ninth block and what a word inside it points to are not known, never lost.
 *
 * The deadline and the stop descriptor within a chunk (`--words-child`: 32 MiB of pointers):
 * scans given one that arrives somewhere within the time a whole scan takes stop inside a chunk
 * of the words, not only before a read (a few tries; no time is asserted).
 *
 * HEAP_REFS_BENCH=MiB (e.g. 256) also measures a scan of that much heap in 100,000 blocks and
 * prints the time (no assertion on it).
 *
 * Why one file (~1,000 lines): one module, and one target process built for it (--heap-child) that
 * every case reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probes/heap_refs.h"
#include "target/procfs.h"
#include "target/tfile.h"
#include "common/util.h"

/* ---- the child ------------------------------------------------------------------------------ */

enum kind {
	K_START,     /* a global holds its address: from a root */
	K_INTERIOR,  /* a global holds its address + size / 2: from a root */
	K_DROPPED,   /* nothing points to it: lost */
	K_PAST_END,  /* a global holds its address + size, one past its end: lost */
	K_SELF,      /* only its own words point into it: lost */
	K_HOLDER,    /* dropped, holds the only pointer to the next one: lost */
	K_HELD,      /* pointed into only by the lost holder: from a block, lost (indirectly) */
	K_CYCLE,     /* two dropped blocks pointing to each other: from a block, lost */
	K_UNALIGNED, /* its address only at an unaligned offset of a global: lost */
	K_STACK,     /* a live local of the child's main holds it: from a root */
	K_HEAP_ONLY, /* held only by a malloc'd block not listed (a global holds that): from the
		      * heap, not known */
	K_PARENT,    /* a global holds it, it holds the only pointer to the next one: from a root */
	K_VIA,       /* pointed into only by the parent: from a block, reached from a root */
};
static const char *const kind_names[] = { "start", "interior", "dropped", "past-end", "self", "holder",
					  "held", "cycle", "unaligned", "stack", "heap-only", "parent", "via" };
/* what each kind is pointed to from, and reached from */
static const uint8_t kind_from[] = { HEAP_FROM_ROOT, HEAP_FROM_ROOT, 0, 0, 0, 0, HEAP_FROM_BLOCK,
				     HEAP_FROM_BLOCK, 0, HEAP_FROM_ROOT, HEAP_FROM_HEAP, HEAP_FROM_ROOT,
				     HEAP_FROM_BLOCK };
static const uint8_t kind_reach[] = { HEAP_REACH_ROOT, HEAP_REACH_ROOT, HEAP_REACH_NONE, HEAP_REACH_NONE,
				      HEAP_REACH_NONE, HEAP_REACH_NONE, HEAP_REACH_NONE, HEAP_REACH_NONE,
				      HEAP_REACH_NONE, HEAP_REACH_ROOT, HEAP_REACH_HEAP, HEAP_REACH_ROOT,
				      HEAP_REACH_ROOT };

struct child_rec {
	uint64_t addr, size;
	uint32_t kind, pad;
};

#define N_CYCLE 64
#define N_RECS (N_CYCLE + 10)
#define REGION_PAGES 16

static struct child_rec recs[N_RECS];
static uint64_t region_addr; /* sent with the records */
static void *volatile kept[N_CYCLE];
static void *volatile unlisted_holder, *volatile parent_holder;
static _Alignas(8) unsigned char unaligned_store[32];
static unsigned char *volatile region;

static __attribute__((noinline)) uint64_t *new_block(size_t size, enum kind kind, size_t *nr)
{
	unsigned char *b = malloc(size);
	if (!b)
		_exit(3);
	memset(b, 0xa5, size); /* nothing in it looks like a pointer */
	recs[(*nr)++] = (struct child_rec){ (uintptr_t)b, size, kind, 0 };
	return (uint64_t *)b;
}

/* Everything allocated; returns the block its caller keeps in a local. */
/* Whether this kernel maps the shared zero page on a read fault of anonymous memory: two pages
 * only read have the same frame then. Some do not (6.18 under Firecracker's PVM gives each its
 * own zeroed page); there the scan has no zero page to skip. */
static bool kernel_maps_zero_page(void)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *p = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	if (p == MAP_FAILED)
		return false;
	char sum = (char)(p[0] + p[page]);
	(void)sum;
	uint64_t e[2] = { 0, 0 };
	FILE *f = fopen("/proc/self/pagemap", "re");
	bool same = false;
	if (f && fseek(f, (long)((uintptr_t)p / (uintptr_t)page * 8), SEEK_SET) == 0 &&
	    fread(e, 8, 2, f) == 2) {
		uint64_t pfn_mask = (1ull << 55) - 1;
		same = (e[0] >> 63) && (e[1] >> 63) && (e[0] & pfn_mask) && (e[0] & pfn_mask) == (e[1] & pfn_mask);
	}
	if (f)
		fclose(f);
	munmap((void *)p, (size_t)page * 2);
	return same;
}

static __attribute__((noinline)) void *make_blocks(void)
{
	static const size_t sizes[] = { 16, 32, 48, 112, 256, 1008, 4096, 5008, 65536, 200000, 1 << 20 };
	size_t nr = 0;
	for (size_t i = 0; i < N_CYCLE; i++) {
		size_t size = sizes[i % (sizeof(sizes) / sizeof(sizes[0]))];
		enum kind kind = (enum kind)(i % 4); /* K_START, K_INTERIOR, K_DROPPED, K_PAST_END */
		unsigned char *b = (unsigned char *)new_block(size, kind, &nr);
		kept[i] = kind == K_START ? b : kind == K_INTERIOR ? b + size / 2 : kind == K_PAST_END ? b + size : NULL;
	}
	uint64_t *self = new_block(4096, K_SELF, &nr);
	self[0] = (uintptr_t)self;
	self[10] = (uintptr_t)(self + 100);
	uint64_t *held = new_block(256, K_HELD, &nr);
	uint64_t *holder = new_block(512, K_HOLDER, &nr);
	holder[3] = (uintptr_t)(held + 5);
	uint64_t *c1 = new_block(128, K_CYCLE, &nr), *c2 = new_block(128, K_CYCLE, &nr);
	c1[0] = (uintptr_t)c2;
	c2[1] = (uintptr_t)(c1 + 3);
	uint64_t *un = new_block(64, K_UNALIGNED, &nr);
	uintptr_t v = (uintptr_t)un;
	memcpy(unaligned_store + 3, &v, sizeof(v));
	void *on_stack = new_block(96, K_STACK, &nr);
	uint64_t *heap_only = new_block(160, K_HEAP_ONLY, &nr);
	uint64_t *unlisted = malloc(64); /* in the heap, not in the list */
	if (!unlisted)
		_exit(3);
	memset(unlisted, 0xa5, 64);
	unlisted[2] = (uintptr_t)heap_only;
	unlisted_holder = unlisted;
	uint64_t *parent = new_block(208, K_PARENT, &nr), *via = new_block(48, K_VIA, &nr);
	parent[4] = (uintptr_t)via;
	parent_holder = parent;

	long page = sysconf(_SC_PAGESIZE);
	unsigned char *m = mmap(NULL, REGION_PAGES * (size_t)page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		_exit(3);
	m[3 * page] = 1;                    /* written: present */
	(void)*(volatile unsigned char *)(m + 7 * page); /* read: the zero page */
	region = m;
	region_addr = (uintptr_t)m;
	return on_stack;
}

/* The stack below the caller's frame zeroed: no dead frame keeps a dropped pointer. */
static __attribute__((noinline)) void scrub_stack(void)
{
	unsigned char pad[256 << 10];
	explicit_bzero(pad, sizeof(pad));
	__asm__ volatile("" : : "r"(pad) : "memory");
}

static __attribute__((noinline)) void send_records(int fd)
{
	struct part {
		const void *p;
		size_t len;
	} parts[2] = { { &region_addr, sizeof(region_addr) }, { recs, sizeof(recs) } };
	for (int i = 0; i < 2; i++)
		for (size_t done = 0; done < parts[i].len;) {
			ssize_t k = write(fd, (const char *)parts[i].p + done, parts[i].len - done);
			if (k <= 0)
				_exit(4);
			done += (size_t)k;
		}
	explicit_bzero(recs, sizeof(recs));
	close(fd); /* the parent reads to the end: all is in place */
}

static int child_main(int fd)
{
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* Yama: the reader's helpers may read us */
	void *volatile on_stack = make_blocks();
	scrub_stack();
	send_records(fd);
	for (;;)
		pause();
	return on_stack != NULL;
}

/* --heap-bench MiB: blocks of that much heap in all, a pointer into some other block in one word
 * of 16, small integers and zeros elsewhere; sends the block count and the blocks, then sleeps. */
#define BENCH_BLOCKS 100000
static int bench_main(int fd, uint64_t mib)
{
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	uint64_t total = mib << 20, each = total / BENCH_BLOCKS & ~(uint64_t)15;
	uint64_t *list = malloc(BENCH_BLOCKS * 2 * sizeof(*list));
	if (!list || each < 64)
		_exit(3);
	uint64_t rnd = 88172645463325252ull;
	for (size_t i = 0; i < BENCH_BLOCKS; i++) {
		uint64_t *b = malloc(each);
		if (!b)
			_exit(3);
		list[2 * i] = (uintptr_t)b;
		list[2 * i + 1] = each;
		for (size_t w = 0; w < each / 8; w++) {
			rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			b[w] = w % 16 == 0 && i ? list[2 * (rnd % i)] + 8 * (rnd % 4) : w % 3 ? rnd % 1000 : 0;
		}
	}
	uint64_t count = BENCH_BLOCKS;
	if (write(fd, &count, sizeof(count)) != sizeof(count))
		_exit(4);
	for (size_t done = 0, len = BENCH_BLOCKS * 2 * sizeof(*list); done < len;) {
		ssize_t k = write(fd, (const char *)list + done, len - done);
		if (k <= 0)
			_exit(4);
		done += (size_t)k;
	}
	close(fd);
	free(list); /* unmapped: only the blocks' own words point into blocks */
	for (;;)
		pause();
}

/* --nested-child: the mappings of the blocks a target's own allocator could report (see
 * test_nested), their bytes 0xa5; sends where they are and where its array of roots (.bss) is
 * (struct nested_msg), then sleeps. The pointers are written into it by the test
 * (process_vm_writev): the child never holds them, so no stale copy of one in a register it
 * spilled, or in a sanitizer's stack, can point where the test says nothing does. */
#define NESTED 8192 /* blocks of 64 bytes inside one */
#define WALLS 8     /* blocks over one address: the most the scan places (HEAP_REFS_MAX_DEPTH) */
#define NESTED_ROOTS (NESTED / 4 + 1)
struct nested_msg {
	uint64_t region, deep, lone, roots;
};
static volatile uint64_t nested_roots[NESTED_ROOTS];

static int nested_main(int fd)
{
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *r =
		mmap(NULL, NESTED * 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *d = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *lone =
		mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == MAP_FAILED || d == MAP_FAILED || lone == MAP_FAILED || page < 4096)
		_exit(3);
	memset(r, 0xa5, NESTED * 64);
	memset(d, 0xa5, page);
	memset(lone, 0xa5, page);
	nested_roots[0] = 1; /* present */
	struct nested_msg m = { (uintptr_t)r, (uintptr_t)d, (uintptr_t)lone, (uintptr_t)nested_roots };
	if (write(fd, &m, sizeof(m)) != sizeof(m))
		_exit(4);
	close(fd);
	for (;;)
		pause();
}

/* --words-child: WORDS_MIB of pointers into 1,024 blocks of 64 bytes (every word one), in a
 * mapping of its own (guard pages either side: never merged with a neighbour), all present;
 * sends where the blocks and the words are (struct words_msg), then sleeps. */
#define WORDS_MIB 32
#define WORDS_BLOCKS 1024
struct words_msg {
	uint64_t blocks, words, words_len;
};
static struct words_msg words_msg;

static __attribute__((noinline)) void make_words(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (size_t)WORDS_MIB << 20;
	unsigned char *blocks = mmap(NULL, WORDS_BLOCKS * 64, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *area = mmap(NULL, len + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (blocks == MAP_FAILED || area == MAP_FAILED || mprotect(area + page, len, PROT_READ | PROT_WRITE))
		_exit(3);
	memset(blocks, 0xa5, WORDS_BLOCKS * 64);
	uint64_t *w = (uint64_t *)(area + page);
	for (size_t i = 0; i < len / 8; i++)
		w[i] = (uintptr_t)(blocks + 64 * (i % WORDS_BLOCKS) + 8);
	words_msg = (struct words_msg){ (uintptr_t)blocks, (uintptr_t)w, len };
}

static int words_main(int fd)
{
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	make_words();
	if (write(fd, &words_msg, sizeof(words_msg)) != sizeof(words_msg))
		_exit(4);
	close(fd);
	for (;;)
		pause();
}

/* ---- the parent ----------------------------------------------------------------------------- */

struct child {
	pid_t pid;
	int fd;
	uint64_t region;
	struct child_rec recs[N_RECS];
};

/* Reads len bytes from fd within 30 s: 0, or -1. */
static int read_all(int fd, void *buf, size_t len)
{
	for (size_t done = 0; done < len;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 30000) <= 0)
			return -1;
		ssize_t k = read(fd, (char *)buf + done, len - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	return 0;
}

/* Runs this binary with args; c->pid and c->fd (the read end of the child's pipe). */
static int spawn(struct child *c, const char *mode, const char *arg)
{
	int p[2];
	if (pipe(p))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		char fd[16];
		close(p[0]);
		snprintf(fd, sizeof(fd), "%d", p[1]);
		execl("/proc/self/exe", "test_heap_refs", mode, fd, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	c->fd = p[0];
	return 0;
}

static void child_end(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	c->pid = -1;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int child_setup(void **state)
{
	struct child *c = xcalloc(1, sizeof(*c));
	c->pid = c->fd = -1;
	*state = c;
	char end;
	struct pollfd p = { .fd = -1, .events = POLLIN };
	if (spawn(c, "--heap-child", NULL) || read_all(c->fd, &c->region, sizeof(c->region)) ||
	    read_all(c->fd, c->recs, sizeof(c->recs)) || (p.fd = c->fd, poll(&p, 1, 30000) <= 0) ||
	    read(c->fd, &end, 1) != 0) { /* closed: its memory is ready */
		child_end(c);
		return -1;
	}
	return 0;
}

static int child_teardown(void **state)
{
	struct child *c = *state;
	if (c)
		child_end(c);
	free(c);
	return 0;
}

static void show_stats(const char *what, const struct heap_scan_stats *st)
{
	printf("   %s: %" PRIu64 " KiB scanned in %" PRIu64 " mappings, %" PRIu64 " referenced, %.1f ms%s%s\n",
	       what, st->scanned_bytes >> 10, st->mappings, st->referenced, st->elapsed_ns / 1e6,
	       st->complete ? "" : "; ", st->complete ? "" : st->why);
}

static void test_referenced(void **state)
{
	struct child *c = *state;
	/* the child's blocks, then: a second entry for a kept and for a dropped block (a stale entry
	 * of the caller's list), one enclosing a kept block with 64 bytes either side, and a stale
	 * entry inside the parent holding the parent's pointer to `via` (the word is both blocks':
	 * via is reached through the parent, whatever the stale entry is) */
	size_t n = N_RECS + 4;
	struct heap_ref_block b[N_RECS + 4];
	uint8_t want_from[N_RECS + 4], want_reach[N_RECS + 4], reach[N_RECS + 4];
	for (size_t i = 0; i < N_RECS; i++) {
		b[i] = (struct heap_ref_block){ .addr = c->recs[i].addr, .size = c->recs[i].size };
		want_from[i] = kind_from[c->recs[i].kind];
		want_reach[i] = kind_reach[c->recs[i].kind];
	}
	b[N_RECS] = b[0]; /* K_START */
	b[N_RECS + 1] = b[2]; /* K_DROPPED */
	b[N_RECS + 2] = (struct heap_ref_block){ .addr = b[4].addr - 64, .size = b[4].size + 128 }; /* around K_START */
	for (size_t i = 0; i < 3; i++) {
		size_t like = i == 0 ? 0 : i == 1 ? 2 : 4;
		want_from[N_RECS + i] = want_from[like];
		want_reach[N_RECS + i] = want_reach[like];
	}
	size_t parent = N_RECS;
	for (size_t i = 0; i < N_RECS; i++)
		parent = c->recs[i].kind == K_PARENT ? i : parent;
	assert_true(parent < N_RECS);
	b[N_RECS + 3] = (struct heap_ref_block){ .addr = b[parent].addr + 16, .size = 32 }; /* parent[4] at +32 */
	want_from[N_RECS + 3] = 0; /* nothing points into it: the parent's holder points to its start */
	want_reach[N_RECS + 3] = HEAP_REACH_NONE;
	assert_int_equal(c->recs[0].kind, K_START);
	assert_int_equal(c->recs[2].kind, K_DROPPED);
	assert_int_equal(c->recs[4].kind, K_START);

	struct tfile_reader *r = tfile_reader_new();
	struct heap_scan_stats st;
	struct heap_ref_edges edges = { 0 };
	struct diag_err err = { 0 };
	int rc = heap_refs_scan(r, c->pid, b, n, 0, &st, &edges, &err);
	if (rc)
		fail_msg("scan: %s", err.msg);
	show_stats("child", &st);
	assert_true(st.complete);
	assert_true(st.scanned_bytes > 0 && st.mappings > 0);
	heap_refs_reach(b, n, &edges, reach);
	size_t wrong = 0, refd = 0;
	for (size_t i = 0; i < n; i++) {
		refd += b[i].from != 0;
		if (b[i].from != want_from[i] || reach[i] != want_reach[i]) {
			wrong++;
			printf("   block %zu (%s, %" PRIu64 " bytes at 0x%" PRIx64 "): from %u reach %u, expected from %u reach %u\n",
			       i, i < N_RECS ? kind_names[c->recs[i].kind] : "extra", b[i].size, b[i].addr, b[i].from,
			       reach[i], want_from[i], want_reach[i]);
		}
	}
	assert_int_equal(wrong, 0);
	assert_int_equal(st.referenced, refd);
	assert_int_equal(edges.dropped, 0);
	heap_refs_edges_free(&edges);

	/* the lost ones alone, scanned again (the caller's second scan): still lost, the holder's
	 * and the cycle's pointers edges among them */
	struct heap_ref_block again[N_RECS];
	uint8_t reach2[N_RECS];
	size_t m = 0;
	for (size_t i = 0; i < N_RECS; i++)
		if (want_reach[i] == HEAP_REACH_NONE)
			again[m++] = b[i];
	struct heap_scan_stats st2;
	if (heap_refs_scan(r, c->pid, again, m, 0, &st2, &edges, &err))
		fail_msg("second scan: %s", err.msg);
	heap_refs_reach(again, m, &edges, reach2);
	for (size_t k = 0; k < m; k++)
		assert_int_equal(reach2[k], HEAP_REACH_NONE);
	heap_refs_edges_free(&edges);

	/* the pages of the region never touched are still not in memory: the scan read none */
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct tfile_page_run runs[8];
	size_t k;
	uint64_t next;
	int how = tfile_read_page_runs(r, c->pid, c->region, c->region + REGION_PAGES * page, TFILE_PAGES_SCAN,
				       runs, 8, &k, &next, &err);
	assert_true(how >= 0);
	assert_int_equal(next, c->region + REGION_PAGES * page);
	assert_int_equal(k, 2);
	assert_int_equal(runs[0].start, c->region + 3 * page);
	assert_int_equal(runs[0].end, c->region + 4 * page);
	assert_int_equal(runs[0].flags, TFILE_PAGE_PRESENT);
	assert_int_equal(runs[1].start, c->region + 7 * page);
	assert_int_equal(runs[1].end, c->region + 8 * page);
	if (how == TFILE_PAGES_SCAN && kernel_maps_zero_page()) { /* the page only read maps the zero
								     * page: not read */
		assert_int_equal(runs[1].flags, TFILE_PAGE_PRESENT | TFILE_PAGE_ZERO);
		assert_true(st.zero_bytes >= page);
	}
	tfile_reader_free(r);
}

static void test_capped(void **state)
{
	struct child *c = *state;
	struct heap_ref_block b[N_RECS];
	for (size_t i = 0; i < N_RECS; i++)
		b[i] = (struct heap_ref_block){ .addr = c->recs[i].addr, .size = c->recs[i].size };
	struct tfile_reader *r = tfile_reader_new();
	struct heap_scan_stats st;
	struct heap_ref_edges edges = { 0 };
	struct diag_err err = { 0 };
	assert_int_equal(heap_refs_scan(r, c->pid, b, N_RECS, 4096, &st, &edges, &err), 0);
	show_stats("capped", &st);
	assert_false(st.complete);
	assert_true(st.scanned_bytes <= 4096);
	assert_true(st.capped_bytes > 0);
	assert_non_null(strstr(st.why, "over the 4 KiB cap"));
	heap_refs_edges_free(&edges);
	tfile_reader_free(r);
}

static void test_gone(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	struct tfile_reader *r = tfile_reader_new();
	struct heap_ref_block b = { .addr = 0x1000, .size = 16, .from = HEAP_FROM_ROOT };
	struct heap_scan_stats st;
	struct heap_ref_edges edges = { 0 };
	struct diag_err err = { 0 };
	assert_int_equal(heap_refs_scan(r, pid, &b, 1, 0, &st, &edges, &err), -1);
	assert_int_equal(b.from, 0);
	assert_non_null(strstr(err.msg, "heap references of process"));
	/* no blocks: nothing to read, nothing to say */
	assert_int_equal(heap_refs_scan(r, pid, &b, 0, 0, &st, &edges, &err), 0);
	assert_true(st.complete);
	heap_refs_edges_free(&edges);
	tfile_reader_free(r);
}

/* A reader past its deadline reads nothing: the scan fails, and says why. */
static void test_late(void **state)
{
	struct child *c = *state;
	struct heap_ref_block b[N_RECS];
	for (size_t i = 0; i < N_RECS; i++)
		b[i] = (struct heap_ref_block){ .addr = c->recs[i].addr, .size = c->recs[i].size, .from = HEAP_FROM_ROOT };
	struct tfile_reader *r = tfile_reader_new();
	tfile_reader_set_deadline(r, 1);
	struct heap_scan_stats st;
	struct heap_ref_edges edges = { 0 };
	struct diag_err err = { 0 };
	assert_int_equal(heap_refs_scan(r, c->pid, b, N_RECS, 0, &st, &edges, &err), -1);
	assert_int_equal(err.code, TFILE_FAIL_WAIT);
	assert_non_null(strstr(err.msg, "past the run's time"));
	for (size_t i = 0; i < N_RECS; i++)
		assert_int_equal(b[i].from, 0);
	heap_refs_edges_free(&edges);
	tfile_reader_free(r);
}

/* Every run of [start, end) by one way, ZERO read as PRESENT (the entries do not tell it). */
static size_t all_runs(struct tfile_reader *r, int pid, uint64_t start, uint64_t end, enum tfile_pages_how how,
		       struct tfile_page_run *out, size_t cap)
{
	size_t total = 0;
	while (start < end) {
		struct tfile_page_run got_runs[5]; /* a few at a time: runs cut by a call's end */
		size_t k;
		uint64_t next;
		struct diag_err err;
		int got = tfile_read_page_runs(r, pid, start, end, how, got_runs, 5, &k, &next, &err);
		if (got < 0)
			fail_msg("page runs: %s", err.msg);
		if (how == TFILE_PAGES_ENTRIES)
			assert_int_equal(got, TFILE_PAGES_ENTRIES);
		assert_true(next > start && next <= end);
		for (size_t i = 0; i < k; i++) {
			struct tfile_page_run x = got_runs[i];
			if (x.flags & TFILE_PAGE_ZERO)
				x.flags = TFILE_PAGE_PRESENT;
			if (total && out[total - 1].end == x.start && out[total - 1].flags == x.flags)
				out[total - 1].end = x.end; /* one run cut in two by a call's end */
			else
				out[total++] = x;
		}
		assert_true(total < cap);
		start = next;
	}
	return total;
}

static void test_page_runs(void **state)
{
	struct child *c = *state;
	struct tfile_reader *r = tfile_reader_new();
	struct diag_err err;
	char *maps = tfile_read_proc(r, c->pid, "maps", TFILE_MAX_TEXT_BYTES, NULL, &err);
	assert_non_null(maps);
	enum { CAP = 1 << 16 };
	struct tfile_page_run *a = xmalloc(CAP * sizeof(*a)), *e = xmalloc(CAP * sizeof(*e));
	uint64_t present = 0;
	size_t mappings = 0;
	char *cursor = maps;
	for (char *line; (line = procfs_next_line(&cursor));) {
		struct procfs_maps_line m;
		if (procfs_parse_maps_line(line, &m) || !m.write || m.shared || m.end - m.start > ((uint64_t)1 << 32))
			continue; /* a sanitizer's shadow: terabytes of entries */
		size_t na = all_runs(r, c->pid, m.start, m.end, TFILE_PAGES_SCAN, a, CAP);
		size_t ne = all_runs(r, c->pid, m.start, m.end, TFILE_PAGES_ENTRIES, e, CAP);
		assert_int_equal(na, ne);
		for (size_t i = 0; i < na; i++) {
			assert_int_equal(a[i].start, e[i].start);
			assert_int_equal(a[i].end, e[i].end);
			assert_int_equal(a[i].flags, e[i].flags);
			present += a[i].end - a[i].start;
		}
		mappings++;
	}
	assert_true(mappings > 3 && present > (1 << 20));
	/* bad arguments are refused before anything is asked */
	size_t k;
	uint64_t next;
	assert_int_equal(tfile_read_page_runs(r, c->pid, 1, 4096, TFILE_PAGES_SCAN, a, 1, &k, &next, &err), -1);
	free(a);
	free(e);
	free(maps);
	tfile_reader_free(r);
}

static int bench_setup(void **state)
{
	struct child *c = xcalloc(1, sizeof(*c));
	c->pid = c->fd = -1;
	*state = c;
	return 0;
}

/* What reaches what, from given marks and edges (no process): a root's chain, an unlisted heap
 * block's chain that a root's also reaches (root wins), a chain only the heap reaches, a cycle
 * and a lost head with its part, an edge to a block out of range ignored. */
static void test_reach_graph(void **state)
{
	(void)state;
	enum { A, B, C, D, E, F, G, H, I, J, K, N };
	struct heap_ref_block b[N] = { 0 };
	b[A].from = HEAP_FROM_ROOT;   /* A → B → C */
	b[D].from = HEAP_FROM_HEAP;   /* D → E, and D → C (C stays ROOT) */
	b[F].from = HEAP_FROM_HEAP;   /* F → G → F: the heap's, cycle or not */
	b[H].from = HEAP_FROM_BLOCK;  /* H ↔ I: a cycle nothing else reaches */
	b[I].from = HEAP_FROM_BLOCK;
	b[K].from = HEAP_FROM_BLOCK;  /* J (nothing points to it) → K: a lost head and its part */
	struct heap_ref_edge v[] = { { A, B }, { B, C }, { D, E }, { D, C }, { F, G }, { G, F },
				     { H, I }, { I, H }, { J, K }, { K, 99 } };
	struct heap_ref_edges edges = { .v = v, .n = ARRAY_LEN(v), .cap = ARRAY_LEN(v) };
	uint8_t reach[N];
	heap_refs_reach(b, N, &edges, reach);
	const uint8_t want[N] = { HEAP_REACH_ROOT, HEAP_REACH_ROOT, HEAP_REACH_ROOT, HEAP_REACH_HEAP, HEAP_REACH_HEAP,
				  HEAP_REACH_HEAP, HEAP_REACH_HEAP, HEAP_REACH_NONE, HEAP_REACH_NONE, HEAP_REACH_NONE,
				  HEAP_REACH_NONE };
	for (size_t i = 0; i < N; i++)
		assert_int_equal(reach[i], want[i]);
	reach[0] = 77;
	heap_refs_reach(b, 0, &edges, reach); /* nothing: nothing touched */
	assert_int_equal(reach[0], 77);
}

/* Writes len bytes at addr of process pid: 0, or -1. */
static int poke(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)buf, len }, remote = { (void *)(uintptr_t)addr, len };
	return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/* The nested child's blocks (see test_nested for what points where): the outer block over the
 * NESTED ones at region; at deep, the walls [deep + 512, deep + 2056) and the block over their end
 * [deep + 2048, deep + 4096); in lone, Y_BOTH at + 512, Y_WALLS at + 640, Y_NONE at + 768. */
#define WALLS_AT 512
#define Y_AT 512
static int nested_setup(void **state)
{
	struct child *c = xcalloc(1, sizeof(*c));
	c->pid = c->fd = -1;
	*state = c;
	struct nested_msg m;
	char end;
	struct pollfd p = { .fd = -1, .events = POLLIN };
	if (spawn(c, "--nested-child", NULL) || read_all(c->fd, &m, sizeof(m)) ||
	    (p.fd = c->fd, poll(&p, 1, 30000) <= 0) || read(c->fd, &end, 1) != 0) {
		child_end(c);
		return -1;
	}
	uint64_t *region = xmalloc(NESTED * 64), deep[512], roots[NESTED_ROOTS];
	memset(region, 0xa5, NESTED * 64);
	memset(deep, 0xa5, sizeof(deep));
	for (size_t g = 0; g < NESTED / 4; g++) {
		uint64_t b = m.region + 4 * g * 64;
		roots[g] = b + 8;              /* into 4g: a root */
		region[32 * g + 2] = b + 64;   /* 4g -> 4g+1 */
		region[32 * g + 19] = b + 208; /* 4g+2 (nothing points to it) -> 4g+3 */
	}
	roots[NESTED / 4] = m.deep + 3000;              /* into the block over the walls' end */
	deep[2048 / 8] = m.lone + Y_AT + 8;             /* in the walls and that block: to Y_BOTH */
	deep[(WALLS_AT + 8) / 8] = m.lone + Y_AT + 136; /* in the walls only: to Y_WALLS */
	int rc = poke(c->pid, m.region, region, NESTED * 64) ||
		 poke(c->pid, m.deep, deep, sizeof(deep)) ||
		 poke(c->pid, m.roots, roots, sizeof(roots));
	free(region);
	if (rc) {
		child_end(c);
		return -1;
	}
	c->recs[0] = (struct child_rec){ .addr = m.region };
	c->recs[1] = (struct child_rec){ .addr = m.deep };
	c->recs[2] = (struct child_rec){ .addr = m.lone };
	return 0;
}

/* A target's own malloc may report any blocks: here NESTED blocks of 64 bytes inside one that
 * covers them all (every fourth held by a root, the next by it, the next by nothing, the last by
 * that lost one and by the outer block), and WALLS blocks over one range with one more block over
 * their end (a root holds it). The scan must do bounded work for each word it looks up (it walked
 * back over every block inside the outer one: NESTED steps a word), and keep the results exact
 * where at most WALLS blocks lie over an address; where more do, the block it cannot place is
 * "not known" (never lost), and so is what a word inside it points to, even when the word also
 * lies in placed blocks that are lost (the walls). */
static void test_nested(void **state)
{
	struct child *c = *state;
	uint64_t r = c->recs[0].addr, d = c->recs[1].addr, lone = c->recs[2].addr;
	enum {
		OUTER = NESTED,
		WALL0 = NESTED + 1,
		OVER = WALL0 + WALLS,
		Y_BOTH,
		Y_WALLS,
		Y_NONE,
		N
	};
	struct heap_ref_block *b = xcalloc(N, sizeof(*b));
	uint8_t *want_from = xcalloc(N, 1), *want_reach = xcalloc(N, 1), *reach = xcalloc(N, 1);
	for (size_t i = 0; i < NESTED; i++) {
		b[i] = (struct heap_ref_block){ .addr = r + 64 * i, .size = 64 };
		static const uint8_t from[4] = { HEAP_FROM_ROOT, HEAP_FROM_BLOCK, 0, HEAP_FROM_BLOCK };
		want_from[i] = from[i % 4];
		want_reach[i] = i % 4 == 2 ? HEAP_REACH_NONE : HEAP_REACH_ROOT;
	}
	b[OUTER] = (struct heap_ref_block){ .addr = r, .size = NESTED * 64 };
	want_from[OUTER] = HEAP_FROM_ROOT;
	want_reach[OUTER] = HEAP_REACH_ROOT;
	for (size_t k = 0; k < WALLS; k++) {
		b[WALL0 + k] = (struct heap_ref_block){ .addr = d + WALLS_AT, .size = 2056 - WALLS_AT };
		want_from[WALL0 + k] = 0;
		want_reach[WALL0 + k] = HEAP_REACH_NONE;
	}
	b[OVER] = (struct heap_ref_block){ .addr = d + 2048, .size = 2048 };
	b[Y_BOTH] = (struct heap_ref_block){ .addr = lone + Y_AT, .size = 64 };
	b[Y_WALLS] = (struct heap_ref_block){ .addr = lone + Y_AT + 128, .size = 64 };
	b[Y_NONE] = (struct heap_ref_block){ .addr = lone + Y_AT + 256, .size = 64 };
	want_from[Y_WALLS] = HEAP_FROM_BLOCK;
	want_reach[Y_WALLS] = HEAP_REACH_NONE; /* held by the lost walls only */
	want_reach[Y_NONE] = HEAP_REACH_NONE;

	struct tfile_reader *rd = tfile_reader_new();
	struct heap_scan_stats st;
	struct heap_ref_edges edges = { 0 };
	struct diag_err err = { 0 };
	if (heap_refs_scan(rd, c->pid, b, N, 0, &st, &edges, &err))
		fail_msg("scan: %s", err.msg);
	show_stats("nested", &st);
	printf("   %" PRIu64 " words looked up, %" PRIu64 " index steps (%.1f a word)\n", st.looked_up,
	       st.index_steps, (double)st.index_steps / (double)(st.looked_up ? st.looked_up : 1));
	/* bounded work: a word's lookup examines a few entries of each of at most WALLS layers (the
	 * binary searches of a few thousand blocks), never the NESTED blocks it lies among */
	assert_true(st.looked_up >= NESTED / 4 * 3);
	assert_true(st.index_steps <= 1000 * st.looked_up);
	assert_true(st.complete);
	heap_refs_reach(b, N, &edges, reach);
	size_t wrong = 0;
	for (size_t i = 0; i < N; i++)
		if ((i != OVER && i != Y_BOTH && (b[i].from != want_from[i] || reach[i] != want_reach[i])) ||
		    ((i == OVER || i == Y_BOTH) && reach[i] == HEAP_REACH_NONE)) {
			if (wrong++ < 10)
				printf("   block %zu (%" PRIu64 " bytes at 0x%" PRIx64 "): from %u reach %u, expected "
				       "from %u reach %u\n",
				       i, b[i].size, b[i].addr, b[i].from, reach[i], want_from[i],
				       want_reach[i]);
		}
	assert_int_equal(wrong, 0);
	/* OVER cannot be placed: not known, and said */
	assert_int_equal(reach[OVER], HEAP_REACH_HEAP);
	assert_int_equal(reach[Y_BOTH], HEAP_REACH_HEAP);
	assert_int_equal(st.undecided, 1);
	assert_non_null(strstr(st.why, "not decided"));
	heap_refs_edges_free(&edges);
	tfile_reader_free(rd);
	free(b);
	free(want_from);
	free(want_reach);
	free(reach);
}

static int words_setup(void **state)
{
	struct child *c = xcalloc(1, sizeof(*c));
	c->pid = c->fd = -1;
	*state = c;
	struct words_msg m;
	char end;
	struct pollfd p = { .fd = -1, .events = POLLIN };
	if (spawn(c, "--words-child", NULL) || read_all(c->fd, &m, sizeof(m)) ||
	    (p.fd = c->fd, poll(&p, 1, 30000) <= 0) || read(c->fd, &end, 1) != 0) {
		child_end(c);
		return -1;
	}
	c->recs[0] = (struct child_rec){ .addr = m.blocks };
	c->recs[1] = (struct child_rec){ .addr = m.words, .size = m.words_len };
	return 0;
}

/* The deadline and the stop descriptor are honoured inside a chunk, not only between two: scans
 * of WORDS_MIB of pointers (each word looked up) given a deadline, or a stop descriptor (a
 * timerfd) that becomes readable, somewhere within the time a whole scan takes. A stop found
 * before a read leaves the scan at a chunk's start; one found while the scan looks at what it
 * read leaves it within the chunk. Nothing here asserts a time: each try either stops within a
 * chunk of the words' mapping (pass) or elsewhere (try again, 40 times at most); scanned only
 * between chunks, no try ever does. */
static void test_stop_in_chunk(void **state)
{
	struct child *c = *state;
	uint64_t words = c->recs[1].addr, words_end = words + c->recs[1].size;
	struct heap_ref_block b[WORDS_BLOCKS];
	for (size_t i = 0; i < WORDS_BLOCKS; i++)
		b[i] = (struct heap_ref_block){ .addr = c->recs[0].addr + 64 * i, .size = 64 };
	struct heap_scan_stats st;
	struct heap_ref_edges edges = { 0 };
	struct diag_err err = { 0 };
	struct tfile_reader *r = tfile_reader_new();
	if (heap_refs_scan(r, c->pid, b, WORDS_BLOCKS, 0, &st, &edges, &err))
		fail_msg("scan: %s", err.msg);
	show_stats("words", &st);
	assert_true(st.complete);
	assert_true(st.looked_up >= c->recs[1].size / 8);
	uint64_t whole = st.elapsed_ns;
	heap_refs_edges_free(&edges);
	tfile_reader_free(r);

	for (int how = 0; how < 2; how++) { /* the deadline, then the stop descriptor */
		bool within = false;
		for (int k = 0; k < 40 && !within; k++) {
			uint64_t after = whole / 10 + whole * (uint64_t)((k * 37) % 80) / 100;
			r = tfile_reader_new();
			int tfd = -1;
			if (how == 0) {
				tfile_reader_set_deadline(r, mono_ns() + after);
			} else {
				tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
				assert_true(tfd >= 0);
				struct itimerspec when = { .it_value = { (time_t)(after / 1000000000),
									 (long)(after % 1000000000) } };
				assert_int_equal(timerfd_settime(tfd, 0, &when, NULL), 0);
				tfile_reader_set_stop_fd(r, tfd);
			}
			int rc = heap_refs_scan(r, c->pid, b, WORDS_BLOCKS, 0, &st, &edges, &err);
			heap_refs_edges_free(&edges);
			tfile_reader_free(r);
			if (tfd >= 0)
				close(tfd);
			if (rc || st.complete)
				continue; /* stopped before anything was read, or the scan was quicker */
			if (!strstr(st.why, how == 0 ? "run's time" : "stop signal"))
				fail_msg("why: %s", st.why);
			assert_true(st.stopped_at != 0);
			within = st.stopped_at > words && st.stopped_at < words_end &&
				 (st.stopped_at - words) % HEAP_REFS_CHUNK_BYTES != 0;
			if (within)
				printf("   %s: stopped %" PRIu64 " KiB into a chunk of the words (try %d, after %.1f ms "
				       "of %.1f)\n",
				       how == 0 ? "deadline" : "stop descriptor",
				       ((st.stopped_at - words) % HEAP_REFS_CHUNK_BYTES) >> 10,
				       k + 1, after / 1e6, whole / 1e6);
		}
		if (!within)
			fail_msg("the %s was never honoured within a chunk",
				 how == 0 ? "deadline" : "stop descriptor");
	}
}

/* HEAP_REFS_BENCH=MiB: the time of a scan of that much heap in BENCH_BLOCKS blocks. */
static void test_bench(void **state)
{
	struct child *c = *state;
	const char *mib = getenv("HEAP_REFS_BENCH");
	if (!mib || atoi(mib) <= 0)
		skip();
	assert_int_equal(spawn(c, "--heap-bench", mib), 0);
	uint64_t count;
	assert_int_equal(read_all(c->fd, &count, sizeof(count)), 0);
	uint64_t *list = xmalloc(count * 2 * sizeof(*list));
	assert_int_equal(read_all(c->fd, list, count * 2 * sizeof(*list)), 0);
	struct heap_ref_block *b = xmalloc(count * sizeof(*b));
	for (size_t i = 0; i < count; i++) /* shuffled: the caller's list is in no particular order */
		b[i] = (struct heap_ref_block){ .addr = list[2 * ((i * 7919) % count)], .size = list[2 * ((i * 7919) % count) + 1] };
	free(list);
	struct tfile_reader *r = tfile_reader_new();
	struct heap_scan_stats st;
	struct heap_ref_edges edges = { 0 };
	struct diag_err err;
	for (int run = 0; run < 3; run++) {
		assert_int_equal(heap_refs_scan(r, c->pid, b, count, 0, &st, &edges, &err), 0);
		printf("   bench: %" PRIu64 " blocks, %.1f MiB scanned in %.3f s (%.0f MiB/s), %" PRIu64
		       " referenced, %zu edges (%" PRIu64 " past the cap)%s%s\n", count, st.scanned_bytes / 1048576.0,
		       st.elapsed_ns / 1e9, st.scanned_bytes / 1048576.0 / (st.elapsed_ns / 1e9), st.referenced,
		       edges.n, edges.dropped, st.complete ? "" : "; ", st.complete ? "" : st.why);
		heap_refs_edges_free(&edges);
	}
	free(b);
	heap_refs_edges_free(&edges);
	tfile_reader_free(r);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--heap-child"))
		return child_main(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "--words-child"))
		return words_main(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "--nested-child"))
		return nested_main(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "--heap-bench"))
		return bench_main(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_referenced, child_setup, child_teardown),
		cmocka_unit_test_setup_teardown(test_capped, child_setup, child_teardown),
		cmocka_unit_test_setup_teardown(test_page_runs, child_setup, child_teardown),
		cmocka_unit_test(test_gone),
		cmocka_unit_test(test_reach_graph),
		cmocka_unit_test_setup_teardown(test_late, child_setup, child_teardown),
		cmocka_unit_test_setup_teardown(test_nested, nested_setup, child_teardown),
		cmocka_unit_test_setup_teardown(test_stop_in_chunk, words_setup, child_teardown),
		cmocka_unit_test_setup_teardown(test_bench, bench_setup, child_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
