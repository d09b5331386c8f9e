/* pg_activity.c — catalog entry without BPF: what a PostgreSQL server's backends are doing,
 * sampled from outside in the server's own shared memory (the backend status array that
 * pg_stat_activity is built from, and the PGPROC array's wait events), at a fixed rate that costs
 * the server nothing per statement; what is in flight when the window opens and when it closes,
 * with how long each statement and transaction has run and, for a lock wait, who holds the lock.
 *
 * Finding it (load): the target's memory map (/proc/PID/maps) names the shared segments a
 * PostgreSQL server maps (anonymous shared: "/dev/zero (deleted)", "/anon_hugepage (deleted)",
 * "/SYSV... (deleted)"); the main one starts with a PGShmemHeader (its magic, its size, the
 * postmaster's pid) whose `index` is the shared-memory index, a dynahash table of named areas:
 * "Backend Status Array" (its size / sizeof(PgBackendStatus) = the slots), "Backend Activity
 * Buffer" (its size / the slots = track_activity_query_size), "Proc Header" (PROC_HDR: allProcs,
 * allProcCount). Nothing of the binary's symbols is needed (Debian's are stripped); the version
 * comes from the binary's own PG_VERSION_STR in its read-only mapping, and picks the layout
 * (pg_layout.h). The memory is read through the postmaster when it maps the same segment (a
 * backend that ends mid-run takes nothing with it), else through the target.
 *
 * Sampling (a timer at `hz`, the session's wake descriptor; one reading at attach, one at the
 * window's end): the status array and the PGPROC array in one read each; a slot's text only when
 * its statement is new (a statement that runs on is not read again), the texts of a sample in one
 * read when they are close; then the status array again: a slot whose st_changecount was odd, or
 * changed, between the two copies was being written, and is read again alone (at most twice) or
 * counted as torn. Every count, size and pointer is checked against the segment before it is used.
 *
 * Owns: the discovery, the readings (all through tfile_read_mem / tfile_read_proc: bounded,
 * in helper processes the server cannot stall), their aggregation and the results.
 * Must not: connect to the server, read its files or its data directory, write to its memory,
 * keep a statement's constants (texts are normalized; the raw text only with raw_text), or judge
 * what is stuck (lua/postgres-slow.lua does).
 *
 * Why one file (~1,400 lines): discovery, sampling and results all work on one checked view of the
 * server's shared memory (the segment, the slot counts, the layout), which none of them may use
 * unchecked. What stands apart is apart: the layouts per release (pg_layout.c), the wait event
 * names (pg_wait_names.c, generated), statement normalizing (pg_normalize.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "common/hash.h"
#include "probes/pg_layout.h"
#include "probes/pg_normalize.h"
#include "target/target.h"
#include "target/tfile.h"

#define MAX_SEGMENT_CANDIDATES 16
#define MAX_INDEX_ELEMENTS 4096 /* ShmemIndex entries walked at most (a server has ~100) */
#define MAX_HASH_SEGS 256
#define MAX_HASH_SSIZE 4096
#define MAX_TEXT_SIZE (1u << 20) /* track_activity_query_size's own maximum */
#define MAX_VERSION_SCAN ((size_t)64 << 20)
#define VERSION_CHUNK ((size_t)1 << 20)
#define SPAN_READ_MAX ((size_t)256 << 10) /* texts read in one piece up to this span */
#define SLOT_RETRIES 2
#define STMT_WAITS 12 /* wait events kept per statement; the rest are "other" */
#define MAX_AGG_ROWS 4096
#define TOP_ACTIVITY 100
#define TOP_STATEMENTS 50
#define MAX_IN_FLIGHT 200
#define MAX_BLOCKERS 8
#define MAX_PROCLOCKS 64                   /* holders walked per lock */
#define NORM_MAX 1024                      /* a normalized text kept, at most */
#define PG_EPOCH_UNIX_US 946684800000000LL /* 2000-01-01 in Unix microseconds */

struct slot_memo {
	int pid;
	int64_t proc_start, activity_start;
	int32_t stmt; /* index in stmts, -1: none (over the limit), -2: not known */
};

struct stmt_wait {
	uint32_t info; /* 0: not waiting (on a CPU, or in code without a wait event) */
	uint64_t samples;
};

struct stmt {
	char *text;
	uint64_t hash, samples;
	bool cut;
	struct stmt_wait waits[STMT_WAITS];
	size_t n_waits;
	uint64_t other_waits;
};

struct agg_row {
	uint16_t btype, state;
	uint32_t wait;
	uint64_t samples;
};

struct flight {
	int pid, btype, state;
	uint32_t wait, dbid;
	int64_t activity_start, xact_start, state_start;
	char *query; /* normalized */
	char *raw;   /* with raw_text only */
	bool cut, torn;
	bool has_lock;
	int lock_type, lock_mode;
	uint32_t f1, f2, f3;
	uint16_t f4;
	int blockers[MAX_BLOCKERS];
	size_t n_blockers;
	bool blockers_cut, blockers_unknown;
};

struct snapshot {
	bool taken;
	int64_t at_us; /* Unix microseconds */
	struct flight *v;
	size_t n;
	uint64_t over; /* backends in flight past MAX_IN_FLIGHT */
};

struct pga_priv {
	const struct pg_layout *L;
	bool ok;       /* found: sampling runs */
	char why[768]; /* why not, when !ok */
	char version[40];
	int major, pid, target_pid, postmaster;
	uint64_t seg_start, seg_end;
	uint64_t status_addr, activity_addr, procs_addr;
	uint32_t slots, nprocs, text_size, text_read;
	unsigned hz;
	bool raw_text;
	size_t max_statements;
	int timer_fd;
	unsigned char *st_a, *st_b, *procs, *texts, *one;
	int32_t *pid_index; /* open addressing: PGPROC index + 1 by pid */
	size_t pid_index_size;
	struct slot_memo *memo;
	bool *need;
	/* aggregation */
	struct agg_row *agg;
	size_t n_agg;
	uint64_t agg_over;
	struct stmt *stmts;
	size_t n_stmts, *stmt_index, stmt_index_size;
	uint64_t stmts_over;
	/* counts */
	uint64_t samples, samples_failed, slot_samples, active_samples, torn, text_reads, retries;
	uint64_t reads, read_bytes, read_ns, read_ns_max, sample_ns_total, cpu_ns_total;
	uint64_t backends_max;
	int consecutive_failures;
	char last_error[768];
	struct snapshot start, end;
};

/* ---- options ------------------------------------------------------------------------------ */

static const struct option_spec pga_options[] = {
	{ .name = "hz",
	  .type = OPT_UINT,
	  .dflt = 20,
	  .min = 1,
	  .max = 100,
	  .help = "samples a second of the backends' states (each a few reads of the server's shared "
		  "memory, whatever its statement rate)" },
	{ .name = "raw_text",
	  .type = OPT_BOOL,
	  .dflt = 0,
	  .help = "also report the in-flight statements' texts as they are, constants included "
		  "(they can be sensitive: off by default; the normalized text is always there)" },
	{ .name = "text_bytes",
	  .type = OPT_UINT,
	  .dflt = 1024,
	  .min = 64,
	  .max = 65536,
	  .help = "bytes of a statement's text read at most (the server keeps "
		  "track_activity_query_size)" },
	{ .name = "max_backends",
	  .type = OPT_UINT,
	  .dflt = 4096,
	  .min = 16,
	  .max = 65536,
	  .help = "backend slots (max_connections and the server's own processes) read at most: a "
		  "server with more is refused" },
	{ .name = "max_statements",
	  .type = OPT_UINT,
	  .dflt = 1024,
	  .min = 16,
	  .max = 65536,
	  .help = "distinct statements (normalized) kept; the others are counted" },
};
static const char *const pga_variants[] = { "shmem", NULL };

/* ---- reading ------------------------------------------------------------------------------ */

/* Reads process pid's memory through the run's bounded reader, counting what it cost. */
static int mem_of(struct probe *p, int pid, uint64_t addr, size_t len, void *buf, struct diag_err *err)
{
	struct pga_priv *pp = p->priv;
	uint64_t t0 = mono_ns();
	int rc = tfile_read_mem(p->files, pid, addr, len, buf, err);
	uint64_t dt = mono_ns() - t0;
	pp->reads++;
	pp->read_ns += dt;
	if (dt > pp->read_ns_max)
		pp->read_ns_max = dt;
	if (!rc)
		pp->read_bytes += len;
	return rc;
}

static int mem(struct probe *p, uint64_t addr, size_t len, void *buf, struct diag_err *err)
{
	return mem_of(p, ((struct pga_priv *)p->priv)->pid, addr, len, buf, err);
}

/* [addr, addr + len) inside the segment. */
static bool in_seg(const struct pga_priv *pp, uint64_t addr, uint64_t len)
{
	return addr >= pp->seg_start && addr <= pp->seg_end && len <= pp->seg_end - addr;
}

static uint64_t u64_at(const unsigned char *b, size_t off)
{
	uint64_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

static uint32_t u32_at(const unsigned char *b, size_t off)
{
	uint32_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int32_t i32_at(const unsigned char *b, size_t off)
{
	int32_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

static int64_t i64_at(const unsigned char *b, size_t off)
{
	int64_t v;
	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* ---- finding the server ------------------------------------------------------------------- */

struct map_line {
	uint64_t start, end, offset, inode;
	char perms[5];
	const char *path; /* into the maps text, up to the line's end (cut there) */
};

/* The next line of /proc/PID/maps text at *cur (its newline replaced); false at the end. */
static bool next_map(char **cur, struct map_line *m)
{
	while (**cur) {
		char *line = *cur, *nl = strchr(line, '\n');
		if (nl) {
			*nl = '\0';
			*cur = nl + 1;
		} else {
			*cur = line + strlen(line);
		}
		unsigned long long s, e, off, ino;
		unsigned maj, min;
		int n = 0;
		if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &s, &e, m->perms, &off, &maj,
			   &min, &ino, &n) < 7)
			continue;
		m->start = s;
		m->end = e;
		m->offset = off;
		m->inode = ino;
		m->path = n > 0 ? line + n : "";
		return true;
	}
	return false;
}

/* A mapping PostgreSQL's main segment can be: anonymous shared memory of mmap or SysV. */
static bool shared_candidate(const struct map_line *m)
{
	if (m->perms[3] != 's' || m->perms[0] != 'r')
		return false;
	return !strncmp(m->path, "/dev/zero", 9) || !strncmp(m->path, "/anon_hugepage", 14) ||
	       !strncmp(m->path, "/SYSV", 5);
}

/* The main segment of the process whose maps are given: the candidate with PostgreSQL's magic
 * and the largest size within its mapping. 0 with seg and *creator, or -1 with why. */
static int find_segment(struct probe *p, int pid, char *maps, uint64_t *start, uint64_t *end,
			uint64_t *inode, int *creator, struct diag_err *err)
{
	struct map_line m;
	char *cur = maps;
	unsigned tried = 0;
	uint64_t best = 0;
	while (next_map(&cur, &m) && tried < MAX_SEGMENT_CANDIDATES) {
		if (!shared_candidate(&m) || m.end - m.start < PG_SHMEM_HDR_SIZE)
			continue;
		tried++;
		unsigned char h[PG_SHMEM_HDR_SIZE];
		struct diag_err e2;
		if (mem_of(p, pid, m.start, sizeof(h), h, &e2))
			continue;
		uint64_t total = u64_at(h, PG_SHMEM_HDR_TOTALSIZE), index = u64_at(h, PG_SHMEM_HDR_INDEX);
		if (i32_at(h, PG_SHMEM_HDR_MAGIC) != PG_SHMEM_MAGIC || total > m.end - m.start ||
		    total <= best || index <= m.start || index >= m.start + total)
			continue;
		best = total;
		*start = m.start;
		*end = m.start + total;
		*inode = m.inode;
		*creator = i32_at(h, PG_SHMEM_HDR_CREATOR);
	}
	if (!best)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "process %d maps no PostgreSQL shared memory "
				 "segment (%u shared mappings looked at)",
				 pid, tried);
	return 0;
}

/* The server's version from the PG_VERSION_STR in its executable's read-only mappings (the
 * executable: the mapping that holds /proc/PID/stat's start of code). */
static int find_version(struct probe *p, int pid, char *maps, struct diag_err *err)
{
	struct pga_priv *pp = p->priv;
	char *stat = tfile_read_proc(p->files, pid, "stat", 4096, NULL, err);
	if (!stat)
		return diag_wrap(err, "the version of process %d", pid);
	/* startcode is the 26th field; the 2nd, (comm), may hold anything up to its last ')' */
	char *rp = strrchr(stat, ')');
	unsigned long long startcode = 0;
	if (rp) {
		char *f = rp + 2;
		for (int i = 3; i < 26 && f; i++) {
			f = strchr(f, ' ');
			if (f)
				f++;
		}
		if (f)
			startcode = strtoull(f, NULL, 10);
	}
	free(stat);
	struct map_line m;
	char *copy = xstrdup(maps), *cur = copy;
	uint64_t exe_inode = 0;
	while (next_map(&cur, &m))
		if (startcode >= m.start && startcode < m.end && m.inode)
			exe_inode = m.inode;
	free(copy);
	if (!exe_inode)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "process %d: its executable's mapping not found", pid);
	char *buf = xmalloc(VERSION_CHUNK + 1024);
	size_t scanned = 0;
	bool found = false;
	copy = xstrdup(maps);
	cur = copy;
	while (!found && next_map(&cur, &m) && scanned < MAX_VERSION_SCAN) {
		if (m.inode != exe_inode || strcmp(m.perms, "r--p"))
			continue;
		for (uint64_t a = m.start; a < m.end && !found && scanned < MAX_VERSION_SCAN;) {
			size_t len = m.end - a < VERSION_CHUNK + 1024 ? (size_t)(m.end - a)
								      : VERSION_CHUNK + 1024;
			struct diag_err e2;
			if (mem_of(p, pid, a, len, buf, &e2))
				break;
			scanned += len;
			found = pg_version_find(buf, len, &pp->major, pp->version, sizeof(pp->version));
			a += VERSION_CHUNK; /* the chunks overlap by 1 KiB: a string across two is seen */
		}
	}
	free(copy);
	free(buf);
	if (!found)
		return diag_fail(err, DIAG_ERR_NOT_APPLICABLE,
				 "process %d: no PostgreSQL version string in its "
				 "executable (%zu bytes of its read-only mappings read): not a PostgreSQL "
				 "server",
				 pid, scanned);
	return 0;
}

/* The shared-memory index's entries wanted: their location and size. */
struct index_want {
	const char *name;
	uint64_t location, size;
	bool found;
};

/* Walks the ShmemIndex (a dynahash table in the segment: HASHHDR, its directory right after,
 * segments of bucket pointers, chains of HASHELEMENT + ShmemIndexEnt). */
static int walk_index(struct probe *p, uint64_t hctl, struct index_want *want, size_t n_want,
		      struct diag_err *err)
{
	struct pga_priv *pp = p->priv;
	const struct pg_layout *L = pp->L;
	unsigned char h[1024];
	if (L->hash_size > sizeof(h) || !in_seg(pp, hctl, L->hash_size) ||
	    mem(p, hctl, L->hash_size, h, err))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the shared-memory index's header is unreadable");
	uint64_t keysize = u64_at(h, L->hash_keysize), entrysize = u64_at(h, L->hash_entrysize);
	int64_t dsize = i64_at(h, L->hash_dsize), nsegs = i64_at(h, L->hash_nsegs),
		ssize = i64_at(h, L->hash_ssize);
	int32_t sshift = i32_at(h, L->hash_sshift);
	uint32_t max_bucket = u32_at(h, L->hash_max_bucket);
	if (keysize != PG_SHMEM_INDEX_KEYSIZE || entrysize != PG_SHMEM_INDEX_ENT_SIZE ||
	    nsegs < 1 || nsegs > dsize || nsegs > MAX_HASH_SEGS || ssize < 1 ||
	    ssize > MAX_HASH_SSIZE || (ssize & (ssize - 1)) || sshift < 0 || sshift > 12 ||
	    (1LL << sshift) != ssize || (uint64_t)max_bucket >= (uint64_t)nsegs * (uint64_t)ssize)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "the shared-memory index's header does not have "
				 "PostgreSQL %d's layout (key size %" PRIu64 ", entry size %" PRIu64 ")",
				 pp->major, keysize, entrysize);
	uint64_t dir[MAX_HASH_SEGS];
	uint64_t dir_addr = hctl + L->hash_size;
	if (!in_seg(pp, dir_addr, (uint64_t)nsegs * 8) || mem(p, dir_addr, (size_t)nsegs * 8, dir, err))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the shared-memory index's directory is unreadable");
	uint64_t *buckets = xmalloc((size_t)ssize * 8);
	size_t walked = 0;
	unsigned char el[PG_HASH_ELEMENT_SIZE + PG_SHMEM_INDEX_ENT_SIZE];
	int rc = 0;
	for (int64_t s = 0; s < nsegs && !rc; s++) {
		if (s * ssize > (int64_t)max_bucket)
			break;
		if (!in_seg(pp, dir[s], (uint64_t)ssize * 8) ||
		    mem(p, dir[s], (size_t)ssize * 8, buckets, err)) {
			rc = diag_fail(err, DIAG_EXIT_RUNTIME,
				       "a segment of the shared-memory index is unreadable");
			break;
		}
		for (int64_t b = 0; b < ssize && s * ssize + b <= (int64_t)max_bucket && !rc; b++) {
			for (uint64_t e = buckets[b]; e; e = u64_at(el, 0)) {
				if (++walked > MAX_INDEX_ELEMENTS || !in_seg(pp, e, sizeof(el)) ||
				    mem(p, e, sizeof(el), el, err)) {
					rc = diag_fail(err, DIAG_EXIT_RUNTIME,
						       "the shared-memory index's entries are "
						       "unreadable or too many");
					break;
				}
				const char *key = (const char *)el + PG_HASH_ELEMENT_SIZE;
				if (!memchr(key, '\0', PG_SHMEM_INDEX_KEYSIZE))
					continue;
				for (size_t w = 0; w < n_want; w++)
					if (!strcmp(key, want[w].name)) {
						want[w].location =
							u64_at(el, PG_HASH_ELEMENT_SIZE +
									   PG_SHMEM_INDEX_LOCATION);
						want[w].size = u64_at(el, PG_HASH_ELEMENT_SIZE +
										  PG_SHMEM_INDEX_SIZE);
						want[w].found = true;
					}
			}
		}
	}
	free(buckets);
	return rc;
}

/* The process whose memory is read: the postmaster when it maps the same segment at the same
 * address (a backend may end mid-run), else the target itself. */
static int reader_pid(struct probe *p, int target, uint64_t inode, int creator)
{
	struct pga_priv *pp = p->priv;
	if (creator <= 0 || creator == target)
		return target;
	struct diag_err e2;
	char *maps = tfile_read_proc(p->files, creator, "maps", TFILE_MAX_TEXT_BYTES, NULL, &e2);
	if (!maps)
		return target; /* another pid namespace (a container's), or gone */
	struct map_line m;
	char *cur = maps;
	bool same = false;
	while (next_map(&cur, &m))
		if (m.start == pp->seg_start && m.inode == inode && shared_candidate(&m))
			same = true;
	free(maps);
	return same ? creator : target;
}

/* Finds everything in process pid; 0, or -1 with err (pp->ok stays false). */
static int discover(struct probe *p, int pid, struct diag_err *err)
{
	struct pga_priv *pp = p->priv;
	char *maps = tfile_read_proc(p->files, pid, "maps", TFILE_MAX_TEXT_BYTES, NULL, err);
	if (!maps)
		return diag_wrap(err, "the memory map of process %d", pid);
	uint64_t inode = 0;
	int creator = 0;
	int rc = find_version(p, pid, maps, err);
	if (!rc && !(pp->L = pg_layout_of(pp->major)))
		rc = diag_fail(err, DIAG_EXIT_USAGE,
			       "PostgreSQL %s: its shared memory's layout is known "
			       "for %d to %d only",
			       pp->version, PG_LAYOUT_MIN_MAJOR, PG_LAYOUT_MAX_MAJOR);
	char *copy = rc ? NULL : xstrdup(maps);
	if (!rc)
		rc = find_segment(p, pid, copy, &pp->seg_start, &pp->seg_end, &inode, &creator, err);
	free(copy);
	free(maps);
	if (rc)
		return -1;
	pp->target_pid = pid;
	pp->postmaster = creator;
	pp->pid = pid;
	unsigned char h[PG_SHMEM_HDR_SIZE];
	if (mem(p, pp->seg_start, sizeof(h), h, err))
		return -1;
	struct index_want want[] = {
		{ "Backend Status Array", 0, 0, false },
		{ "Backend Activity Buffer", 0, 0, false },
		{ "Proc Header", 0, 0, false },
	};
	if (walk_index(p, u64_at(h, PG_SHMEM_HDR_INDEX), want, ARRAY_LEN(want), err))
		return -1;
	for (size_t i = 0; i < ARRAY_LEN(want); i++)
		if (!want[i].found || !in_seg(pp, want[i].location, want[i].size))
			return diag_fail(err, DIAG_EXIT_RUNTIME,
					 "the shared-memory index has no valid \"%s\"", want[i].name);
	const struct pg_layout *L = pp->L;
	if (!want[0].size || want[0].size % L->st_size)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "the backend status array's %" PRIu64 " bytes are "
				 "not slots of PostgreSQL %d's %u",
				 want[0].size, pp->major, L->st_size);
	uint64_t slots = want[0].size / L->st_size;
	if (slots > probe_opt(p, "max_backends"))
		return diag_fail(err, DIAG_EXIT_REFUSED,
				 "the server has %" PRIu64 " backend slots, over "
				 "max_backends %" PRIu64,
				 slots, probe_opt(p, "max_backends"));
	if (want[1].size % slots || want[1].size / slots < 64 || want[1].size / slots > MAX_TEXT_SIZE)
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "the backend activity buffer's %" PRIu64
				 " bytes do not fit %" PRIu64 " slots",
				 want[1].size, slots);
	unsigned char hdr[64];
	if (want[2].size < L->hdr_all_proc_count + 4 || want[2].size > 4096 ||
	    mem(p, want[2].location, L->hdr_all_proc_count + 4, hdr, err))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the proc header is unreadable");
	uint64_t all_procs = u64_at(hdr, L->hdr_all_procs);
	uint32_t nprocs = u32_at(hdr, L->hdr_all_proc_count);
	if (!nprocs || nprocs > slots + 64 || !in_seg(pp, all_procs, (uint64_t)nprocs * L->proc_size))
		return diag_fail(err, DIAG_EXIT_RUNTIME,
				 "the proc header's array (%u procs) is not inside "
				 "the segment",
				 nprocs);
	pp->slots = (uint32_t)slots;
	pp->status_addr = want[0].location;
	pp->activity_addr = want[1].location;
	pp->text_size = (uint32_t)(want[1].size / slots);
	pp->text_read = pp->text_size < probe_opt(p, "text_bytes")
				? pp->text_size
				: (uint32_t)probe_opt(p, "text_bytes");
	pp->procs_addr = all_procs;
	pp->nprocs = nprocs;
	pp->pid = reader_pid(p, pid, inode, creator);
	return 0;
}

/* ---- the tables --------------------------------------------------------------------------- */

static int32_t stmt_of(struct pga_priv *pp, const char *text, bool cut)
{
	uint64_t h = hash_mem(text, strlen(text)); /* keyed: the texts are the clients' */
	size_t mask = pp->stmt_index_size - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		size_t at = pp->stmt_index[i];
		if (!at) {
			if (pp->n_stmts == pp->max_statements)
				return -1;
			struct stmt *s = &pp->stmts[pp->n_stmts];
			s->text = xstrdup(text);
			s->hash = h;
			s->cut = cut;
			pp->stmt_index[i] = ++pp->n_stmts;
			return (int32_t)(pp->n_stmts - 1);
		}
		struct stmt *s = &pp->stmts[at - 1];
		if (s->hash == h && !strcmp(s->text, text))
			return (int32_t)(at - 1);
	}
}

static void stmt_count(struct stmt *s, uint32_t wait)
{
	s->samples++;
	for (size_t i = 0; i < s->n_waits; i++)
		if (s->waits[i].info == wait) {
			s->waits[i].samples++;
			return;
		}
	if (s->n_waits < STMT_WAITS) {
		s->waits[s->n_waits].info = wait;
		s->waits[s->n_waits++].samples = 1;
	} else {
		s->other_waits++;
	}
}

static void agg_count(struct pga_priv *pp, int btype, int state, uint32_t wait)
{
	for (size_t i = 0; i < pp->n_agg; i++) {
		struct agg_row *r = &pp->agg[i];
		if (r->btype == btype && r->state == state && r->wait == wait) {
			r->samples++;
			return;
		}
	}
	if (pp->n_agg == MAX_AGG_ROWS) {
		pp->agg_over++;
		return;
	}
	pp->agg[pp->n_agg++] = (struct agg_row){ (uint16_t)btype, (uint16_t)state, wait, 1 };
}

/* PGPROC index of pid in the sample's procs, -1 when none. */
static int proc_of(struct pga_priv *pp, int pid)
{
	size_t mask = pp->pid_index_size - 1;
	for (size_t i = (size_t)(uint32_t)pid * 2654435761u & mask, n = 0; n <= mask;
	     i = (i + 1) & mask, n++) {
		int32_t at = pp->pid_index[i];
		if (!at)
			return -1;
		if (i32_at(pp->procs, (size_t)(at - 1) * pp->L->proc_size + pp->L->proc_pid) == pid)
			return at - 1;
	}
	return -1;
}

static void index_procs(struct pga_priv *pp)
{
	memset(pp->pid_index, 0, pp->pid_index_size * sizeof(*pp->pid_index));
	size_t mask = pp->pid_index_size - 1;
	for (uint32_t k = 0; k < pp->nprocs; k++) {
		int pid = i32_at(pp->procs, (size_t)k * pp->L->proc_size + pp->L->proc_pid);
		if (pid <= 0)
			continue;
		size_t i = (size_t)(uint32_t)pid * 2654435761u & mask;
		while (pp->pid_index[i])
			i = (i + 1) & mask;
		pp->pid_index[i] = (int32_t)k + 1;
	}
}

static uint32_t wait_of(struct pga_priv *pp, int pid)
{
	int k = proc_of(pp, pid);
	return k < 0 ? 0 : u32_at(pp->procs, (size_t)k * pp->L->proc_size + pp->L->proc_wait_event_info);
}

/* ---- one sample --------------------------------------------------------------------------- */

static int64_t now_unix_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t pg_ts_to_unix_us(int64_t ts)
{
	return ts ? ts + PG_EPOCH_UNIX_US : 0;
}

/* The text of slot i from buf (text_read bytes): NUL-bounded; *cut when it filled what was read
 * of a longer buffer. */
static void slot_text(const struct pga_priv *pp, const unsigned char *buf, char *out, bool *cut)
{
	size_t n = strnlen((const char *)buf, pp->text_read);
	*cut = n == pp->text_read && pp->text_read < pp->text_size;
	if (n == pp->text_read)
		n = pp->text_read - 1; /* the server writes a terminated text: this one was cut by us */
	memcpy(out, buf, n);
	out[n] = '\0';
}

/* Its text pointer is where the server puts slot i's text (st_activity_raw, checked). */
static bool text_where(const struct pga_priv *pp, const unsigned char *slot, uint32_t i, uint64_t *addr)
{
	uint64_t a = u64_at(slot, pp->L->st_activity_raw);
	uint64_t want = pp->activity_addr + (uint64_t)i * pp->text_size;
	*addr = want;
	return a == want;
}

/* Re-reads slot i and its text alone until they are consistent (at most SLOT_RETRIES): true with
 * the slot in pp->one and its text in text. */
static bool retry_slot(struct probe *p, uint32_t i, char *text, bool *cut)
{
	struct pga_priv *pp = p->priv;
	const struct pg_layout *L = pp->L;
	uint64_t at = pp->status_addr + (uint64_t)i * L->st_size, taddr;
	unsigned char *tbuf = pp->one + L->st_size, *again = tbuf + pp->text_read;
	for (int r = 0; r < SLOT_RETRIES; r++) {
		struct diag_err e2;
		pp->retries++;
		if (mem(p, at, L->st_size, pp->one, &e2))
			return false;
		int32_t cc = i32_at(pp->one, L->st_changecount);
		if (cc & 1)
			continue;
		if (!text_where(pp, pp->one, i, &taddr) ||
		    mem(p, taddr, pp->text_read, tbuf, &e2) || mem(p, at, 4, again, &e2))
			return false;
		if (i32_at(again, 0) == cc) {
			slot_text(pp, tbuf, text, cut);
			return true;
		}
	}
	return false;
}

/* The holders of the lock a backend waits for (a Lock wait): the PROCLOCKs on its LOCK whose
 * held modes conflict with the mode it wants, other than its own (and its lock group's). */
static void lock_of(struct probe *p, int k, struct flight *f)
{
	struct pga_priv *pp = p->priv;
	const struct pg_layout *L = pp->L;
	const unsigned char *proc = pp->procs + (size_t)k * L->proc_size;
	uint64_t lock = u64_at(proc, L->proc_wait_lock);
	int mode = i32_at(proc, L->proc_wait_lock_mode);
	uint64_t self = pp->procs_addr + (uint64_t)k * L->proc_size;
	unsigned char l[PG_LOCK_PROCLOCKS + 16], pl[PG_PROCLOCK_SIZE];
	struct diag_err e2;
	f->blockers_unknown = true;
	if (!lock || !in_seg(pp, lock, sizeof(l)) || mem(p, lock, sizeof(l), l, &e2))
		return;
	f->has_lock = true;
	f->lock_mode = mode;
	f->f1 = u32_at(l, PG_LOCK_TAG);
	f->f2 = u32_at(l, PG_LOCK_TAG + 4);
	f->f3 = u32_at(l, PG_LOCK_TAG + 8);
	memcpy(&f->f4, l + PG_LOCK_TAG + 12, 2);
	f->lock_type = l[PG_LOCK_TAG + 14];
	uint32_t conflicts = pg_lock_conflicts(mode);
	uint64_t head = lock + PG_LOCK_PROCLOCKS;
	uint64_t link = u64_at(l, PG_LOCK_PROCLOCKS + 8); /* head.next */
	for (int n = 0; link && link != head; n++) {
		uint64_t at = link - PG_PROCLOCK_LOCKLINK;
		if (n == MAX_PROCLOCKS || !in_seg(pp, at, sizeof(pl)) || mem(p, at, sizeof(pl), pl, &e2))
			return;
		uint64_t who = u64_at(pl, PG_PROCLOCK_MYPROC),
			 leader = u64_at(pl, PG_PROCLOCK_GROUPLEADER);
		uint32_t held = u32_at(pl, PG_PROCLOCK_HOLDMASK);
		link = u64_at(pl, PG_PROCLOCK_LOCKLINK + 8);
		if (who == self || leader == self || !(held & conflicts))
			continue;
		if (who < pp->procs_addr || (who - pp->procs_addr) % L->proc_size ||
		    (who - pp->procs_addr) / L->proc_size >= pp->nprocs)
			continue;
		int pid = i32_at(pp->procs, (size_t)((who - pp->procs_addr) / L->proc_size) * L->proc_size +
						    L->proc_pid);
		if (pid <= 0)
			continue;
		if (f->n_blockers == MAX_BLOCKERS)
			f->blockers_cut = true;
		else
			f->blockers[f->n_blockers++] = pid;
	}
	f->blockers_unknown = false;
}

static void flight_free(struct flight *f)
{
	free(f->query);
	free(f->raw);
}

static void snapshot_free(struct snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		flight_free(&s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* One sample of every slot; into snap as well when given (the window's start and end). 0, or -1
 * when the arrays could not be read. */
static int sample(struct probe *p, struct snapshot *snap)
{
	struct pga_priv *pp = p->priv;
	const struct pg_layout *L = pp->L;
	struct diag_err err;
	uint64_t t0 = mono_ns();
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	size_t st_bytes = (size_t)pp->slots * L->st_size;
	if (mem(p, pp->status_addr, st_bytes, pp->st_a, &err) ||
	    mem(p, pp->procs_addr, (size_t)pp->nprocs * L->proc_size, pp->procs, &err)) {
		pp->samples_failed++;
		pp->consecutive_failures++;
		memcpy(pp->last_error, err.msg, sizeof(pp->last_error));
		return -1;
	}
	pp->consecutive_failures = 0;
	int64_t now_us = now_unix_us();
	index_procs(pp);
	/* which texts are needed: a running statement not seen before, every in-flight one for a
	 * snapshot */
	uint32_t lo = UINT32_MAX, hi = 0, n_need = 0;
	for (uint32_t i = 0; i < pp->slots; i++) {
		const unsigned char *s = pp->st_a + (size_t)i * L->st_size;
		int pid = i32_at(s, L->st_procpid), state = i32_at(s, L->st_state);
		pp->need[i] = false;
		if (pid <= 0)
			continue;
		bool want = snap ? pg_state_in_flight(state) : pg_state_active(state);
		struct slot_memo *m = &pp->memo[i];
		if (!want || (!snap && m->stmt != -2 && m->pid == pid &&
			      m->proc_start == i64_at(s, L->st_proc_start) &&
			      m->activity_start == i64_at(s, L->st_activity_start)))
			continue;
		pp->need[i] = true;
		n_need++;
		lo = i < lo ? i : lo;
		hi = i > hi ? i : hi;
	}
	bool texts_ok = true;
	if (n_need) {
		size_t span = (size_t)(hi - lo + 1) * pp->text_size;
		if (pp->text_read == pp->text_size && span <= SPAN_READ_MAX) {
			texts_ok = !mem(p, pp->activity_addr + (uint64_t)lo * pp->text_size, span,
					pp->texts + (size_t)lo * pp->text_size, &err);
			pp->text_reads += n_need;
		} else {
			for (uint32_t i = lo; i <= hi && texts_ok; i++)
				if (pp->need[i]) {
					texts_ok = !mem(p, pp->activity_addr + (uint64_t)i * pp->text_size,
							pp->text_read,
							pp->texts + (size_t)i * pp->text_size, &err);
					pp->text_reads++;
				}
		}
		if (texts_ok)
			texts_ok = !mem(p, pp->status_addr, st_bytes, pp->st_b, &err);
	}
	if (snap) {
		snap->taken = true;
		snap->at_us = now_us;
	}
	char *text = xmalloc(pp->text_read + 1), *norm = xmalloc(NORM_MAX);
	uint64_t live = 0;
	for (uint32_t i = 0; i < pp->slots; i++) {
		const unsigned char *s = pp->st_a + (size_t)i * L->st_size;
		int pid = i32_at(s, L->st_procpid);
		if (pid <= 0)
			continue;
		live++;
		int state = i32_at(s, L->st_state), btype = i32_at(s, L->st_backend_type);
		uint32_t wait = wait_of(pp, pid);
		pp->slot_samples++;
		agg_count(pp, btype, state, wait);
		bool active = pg_state_active(state);
		if (active)
			pp->active_samples++;
		int32_t stmt = pp->memo[i].stmt;
		bool cut = false, have_text = false;
		if (pp->need[i]) {
			uint64_t taddr;
			int32_t cc = i32_at(s, L->st_changecount);
			if (texts_ok && !(cc & 1) &&
			    i32_at(pp->st_b + (size_t)i * L->st_size, L->st_changecount) == cc &&
			    text_where(pp, s, i, &taddr)) {
				slot_text(pp, pp->texts + (size_t)i * pp->text_size, text, &cut);
				have_text = true;
			} else if (retry_slot(p, i, text, &cut)) {
				s = pp->one; /* the consistent copy */
				state = i32_at(s, L->st_state);
				active = pg_state_active(state);
				have_text = pid == i32_at(s, L->st_procpid);
			}
			if (have_text) {
				pg_normalize(text, norm, NORM_MAX);
				stmt = active ? stmt_of(pp, norm[0] ? norm : "(no text)", cut) : -2;
				if (active && stmt < 0)
					pp->stmts_over++;
				pp->memo[i] = (struct slot_memo){ pid, i64_at(s, L->st_proc_start),
								  i64_at(s, L->st_activity_start), stmt };
			} else {
				pp->torn++;
				stmt = -2;
				pp->memo[i].stmt = -2;
			}
		}
		if (active && stmt >= 0)
			stmt_count(&pp->stmts[stmt], wait);
		if (!snap || !pg_state_in_flight(state))
			continue;
		if (snap->n == MAX_IN_FLIGHT) {
			snap->over++;
			continue;
		}
		struct flight *f = &snap->v[snap->n++];
		memset(f, 0, sizeof(*f));
		f->pid = pid;
		f->btype = btype;
		f->state = state;
		f->wait = wait;
		f->dbid = u32_at(s, L->st_databaseid);
		f->activity_start = pg_ts_to_unix_us(i64_at(s, L->st_activity_start));
		f->xact_start = pg_ts_to_unix_us(i64_at(s, L->st_xact_start));
		f->state_start = pg_ts_to_unix_us(i64_at(s, L->st_state_start));
		f->torn = !have_text;
		f->cut = cut;
		f->query = xstrdup(have_text ? (norm[0] ? norm : "(no text)")
					     : "(not read: it changed while read)");
		if (have_text && pp->raw_text)
			f->raw = xstrdup(text);
		int k = proc_of(pp, pid);
		if (k >= 0 && (wait & 0xFF000000u) == PG_WAIT_CLASS_LOCK)
			lock_of(p, k, f);
	}
	free(text);
	free(norm);
	if (live > pp->backends_max)
		pp->backends_max = live;
	pp->samples++;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	pp->sample_ns_total += mono_ns() - t0;
	pp->cpu_ns_total += (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec));
	return 0;
}

/* ---- probe operations --------------------------------------------------------------------- */

static int pga_load(struct probe *p, struct diag_err *err)
{
	struct pga_priv *pp = p->priv;
	(void)err;
	pp->timer_fd = -1;
	p->variant = "shmem";
	pp->hz = (unsigned)probe_opt(p, "hz");
	pp->raw_text = probe_opt(p, "raw_text") != 0;
	pp->max_statements = probe_opt(p, "max_statements");
	/* the target, or the first process of a set that maps the server's memory (the logger,
	 * for one, does not) */
	int pids[16], n = 0;
	if (p->cfg.filter.pid_set && p->cfg.filter.target) {
		const struct target *t = p->cfg.filter.target;
		for (size_t i = 0; i < t->n_procs && n < 16; i++)
			if (t->procs[i].alive)
				pids[n++] = t->procs[i].pid;
	} else if (p->cfg.filter.pid > 0) {
		pids[n++] = p->cfg.filter.pid;
	}
	struct diag_err why = { 0 };
	if (!p->files)
		n = 0;
	if (!n)
		diag_fail(&why, DIAG_EXIT_USAGE, "no PostgreSQL process to read (a --pid or --comm target)");
	for (int i = 0; i < n && !pp->ok; i++) {
		struct diag_err e = { 0 };
		if (discover(p, pids[i], &e) == 0)
			pp->ok = true;
		else if (!why.msg[0] || i == 0)
			why = e;
	}
	if (!pp->ok && why.code == DIAG_ERR_NOT_APPLICABLE) /* not PostgreSQL: nothing to sample */
		return diag_fail(err, DIAG_ERR_NOT_APPLICABLE, "%s", why.msg);
	if (!pp->ok) {
		/* a server it cannot read: the recipe's other probes still run, the results say why
		 * this one has nothing */
		memcpy(pp->why, why.msg, sizeof(pp->why));
		snprintf(p->note, sizeof(p->note), "no backend activity: %.200s", why.msg);
		return 0;
	}
	const struct pg_layout *L = pp->L;
	pp->st_a = xmalloc((size_t)pp->slots * L->st_size);
	pp->st_b = xmalloc((size_t)pp->slots * L->st_size);
	pp->procs = xmalloc((size_t)pp->nprocs * L->proc_size);
	pp->texts = xmalloc((size_t)pp->slots * pp->text_size);
	pp->one = xmalloc(L->st_size + pp->text_read + 8);
	pp->pid_index_size = 16;
	while (pp->pid_index_size < 2 * (size_t)pp->nprocs)
		pp->pid_index_size <<= 1;
	pp->pid_index = xcalloc(pp->pid_index_size, sizeof(*pp->pid_index));
	pp->memo = xcalloc(pp->slots, sizeof(*pp->memo));
	for (uint32_t i = 0; i < pp->slots; i++)
		pp->memo[i].stmt = -2;
	pp->need = xcalloc(pp->slots, sizeof(*pp->need));
	pp->agg = xcalloc(MAX_AGG_ROWS, sizeof(*pp->agg));
	pp->stmts = xcalloc(pp->max_statements, sizeof(*pp->stmts));
	pp->stmt_index_size = 1;
	while (pp->stmt_index_size < 2 * pp->max_statements)
		pp->stmt_index_size <<= 1;
	pp->stmt_index = xcalloc(pp->stmt_index_size, sizeof(*pp->stmt_index));
	pp->start.v = xcalloc(MAX_IN_FLIGHT, sizeof(struct flight));
	pp->end.v = xcalloc(MAX_IN_FLIGHT, sizeof(struct flight));
	return 0;
}

static int pga_attach(struct probe *p, struct diag_err *err)
{
	struct pga_priv *pp = p->priv;
	if (!pp->ok)
		return 0;
	sample(p, &pp->start);
	pp->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (pp->timer_fd < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "pg_activity: timerfd: %s", strerror(errno));
	long ns = 1000000000L / (long)pp->hz;
	struct itimerspec its = { .it_interval = { ns / 1000000000L, ns % 1000000000L },
				  .it_value = { ns / 1000000000L, ns % 1000000000L } };
	if (timerfd_settime(pp->timer_fd, 0, &its, NULL))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "pg_activity: timerfd: %s", strerror(errno));
	return 0;
}

static int pga_wake_fd(struct probe *p)
{
	struct pga_priv *pp = p->priv;
	return pp->timer_fd;
}

/* The timer fired: one sample (however many periods passed: a late loop does not catch up). */
static void pga_drain(struct probe *p)
{
	struct pga_priv *pp = p->priv;
	uint64_t expirations;
	if (pp->timer_fd < 0 || read(pp->timer_fd, &expirations, sizeof(expirations)) != sizeof(expirations))
		return;
	if (pp->consecutive_failures >= 3) /* the server is gone, or its memory unreadable */
		return;
	sample(p, NULL);
}

/* The last sample, at the window's edge; also when the governor stops the probe (detach). */
static void pga_detach(struct probe *p)
{
	struct pga_priv *pp = p->priv;
	if (pp->timer_fd >= 0) {
		close(pp->timer_fd);
		pp->timer_fd = -1;
		if (pp->ok && pp->consecutive_failures < 3)
			sample(p, &pp->end);
	}
}

/* ---- results ------------------------------------------------------------------------------ */

static void wait_fields(struct value *v, int major, uint32_t info)
{
	const char *t = pg_wait_type(info);
	if (!t)
		return;
	value_set_str(v, "wait_event_type", t);
	value_set_str(v, "wait_event", pg_wait_event(major, info));
}

static double elapsed_s(int64_t now_us, int64_t then_us)
{
	return then_us && now_us > then_us ? (double)(now_us - then_us) / 1e6 : 0;
}

static struct value *flights_value(struct pga_priv *pp, const struct snapshot *s)
{
	struct value *arr = value_arr();
	for (size_t i = 0; i < s->n; i++) {
		const struct flight *f = &s->v[i];
		struct value *v = value_arr_push(arr, value_obj());
		value_set_int(v, "pid", f->pid);
		value_set_str(v, "backend_type", pg_backend_type_name(pp->L, f->btype));
		value_set_str(v, "state", pg_state_name(f->state));
		wait_fields(v, pp->major, f->wait);
		value_set_str(v, "query", f->query);
		if (f->raw)
			value_set_str(v, "query_raw", f->raw);
		if (f->cut)
			value_set_bool(v, "text_cut", true);
		if (f->torn)
			value_set_bool(v, "text_unread", true);
		if (f->dbid)
			value_set_int(v, "database", f->dbid);
		if (f->activity_start)
			value_set_num(v, "query_elapsed_s", elapsed_s(s->at_us, f->activity_start));
		if (f->xact_start)
			value_set_num(v, "xact_elapsed_s", elapsed_s(s->at_us, f->xact_start));
		if (f->state_start)
			value_set_num(v, "state_elapsed_s", elapsed_s(s->at_us, f->state_start));
		if (f->has_lock) {
			struct value *l = value_obj_set(v, "lock", value_obj());
			const char *type = pg_lock_type_name(pp->major, f->lock_type);
			value_set_str(l, "locktype", type);
			value_set_str(l, "mode", pg_lock_mode_name(f->lock_mode));
			if (!strcmp(type, "relation") || !strcmp(type, "extend") ||
			    !strcmp(type, "page") || !strcmp(type, "tuple")) {
				value_set_int(l, "database", f->f1);
				value_set_int(l, "relation", f->f2);
				if (!strcmp(type, "page") || !strcmp(type, "tuple"))
					value_set_int(l, "page", f->f3);
				if (!strcmp(type, "tuple"))
					value_set_int(l, "tuple", f->f4);
			} else if (!strcmp(type, "transactionid")) {
				value_set_int(l, "transactionid", f->f1);
			} else if (!strcmp(type, "virtualxid")) {
				char vx[32];
				snprintf(vx, sizeof(vx), "%u/%u", f->f1, f->f2);
				value_set_str(l, "virtualxid", vx);
			} else {
				value_set_int(l, "database", f->f1);
				value_set_int(l, "objid", f->f2);
			}
		}
		if (f->has_lock || f->blockers_unknown) {
			struct value *b = value_obj_set(v, "blocked_by", value_arr());
			for (size_t k = 0; k < f->n_blockers; k++)
				value_arr_push(b, value_int(f->blockers[k]));
			if (f->blockers_cut)
				value_set_bool(v, "blocked_by_cut", true);
			if (f->blockers_unknown)
				value_set_bool(v, "blocked_by_unknown", true);
		}
	}
	return arr;
}

static int agg_by_samples(const void *a, const void *b)
{
	const struct agg_row *x = a, *y = b;
	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

static int stmt_by_samples(const void *a, const void *b)
{
	const struct stmt *x = a, *y = b;
	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

static int wait_by_samples(const void *a, const void *b)
{
	const struct stmt_wait *x = a, *y = b;
	return x->samples < y->samples ? 1 : x->samples > y->samples ? -1 : 0;
}

static int pga_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		       struct diag_err *err)
{
	struct pga_priv *pp = p->priv;
	(void)ctx;
	(void)err;
	struct value *res = value_obj();
	value_set_bool(res, "available", pp->ok);
	if (!pp->ok) {
		value_set_str(res, "unavailable", pp->why);
		*out = res;
		return 0;
	}
	struct value *srv = value_obj_set(res, "server", value_obj());
	value_set_str(srv, "version", pp->version);
	value_set_int(srv, "major_version", pp->major);
	value_set_int(srv, "postmaster_pid", pp->postmaster);
	value_set_int(srv, "read_through_pid", pp->pid);
	value_set_int(srv, "segment_bytes", (int64_t)(pp->seg_end - pp->seg_start));
	value_set_int(srv, "backend_slots", pp->slots);
	value_set_int(srv, "procs", pp->nprocs);
	value_set_int(srv, "track_activity_query_size", pp->text_size);
	value_set_int(res, "hz", pp->hz);
	value_set_int(res, "samples", (int64_t)pp->samples);
	value_set_int(res, "samples_failed", (int64_t)pp->samples_failed);
	if (pp->last_error[0])
		value_set_str(res, "last_error", pp->last_error);
	value_set_int(res, "backend_samples", (int64_t)pp->slot_samples);
	value_set_int(res, "active_samples", (int64_t)pp->active_samples);
	value_set_int(res, "backends_max", (int64_t)pp->backends_max);
	value_set_int(res, "texts_read", (int64_t)pp->text_reads);
	value_set_int(res, "slots_reread", (int64_t)pp->retries);
	value_set_int(res, "slots_torn", (int64_t)pp->torn);
	struct value *cost = value_obj_set(res, "cost", value_obj());
	double n = pp->samples ? (double)pp->samples : 1;
	value_set_num(cost, "wall_us_per_sample", (double)pp->sample_ns_total / n / 1e3);
	value_set_num(cost, "cpu_us_per_sample", (double)pp->cpu_ns_total / n / 1e3);
	value_set_num(cost, "reads_per_sample", (double)pp->reads / n);
	value_set_num(cost, "bytes_per_sample", (double)pp->read_bytes / n);
	value_set_num(cost, "read_us_max", (double)pp->read_ns_max / 1e3);

	double samples = pp->samples ? (double)pp->samples : 1;
	qsort(pp->agg, pp->n_agg, sizeof(*pp->agg), agg_by_samples);
	struct value *act = value_obj_set(res, "activity", value_arr());
	for (size_t i = 0; i < pp->n_agg && i < TOP_ACTIVITY; i++) {
		const struct agg_row *r = &pp->agg[i];
		struct value *v = value_arr_push(act, value_obj());
		value_set_str(v, "backend_type", pg_backend_type_name(pp->L, r->btype));
		value_set_str(v, "state", pg_state_name(r->state));
		wait_fields(v, pp->major, r->wait);
		value_set_int(v, "samples", (int64_t)r->samples);
		value_set_num(v, "avg_backends", (double)r->samples / samples);
		value_set_num(v, "share_pct",
			      pp->slot_samples ? 100.0 * (double)r->samples / (double)pp->slot_samples : 0);
	}
	value_set_int(res, "activity_rows_over",
		      (int64_t)(pp->agg_over + (pp->n_agg > TOP_ACTIVITY ? pp->n_agg - TOP_ACTIVITY : 0)));

	qsort(pp->stmts, pp->n_stmts, sizeof(*pp->stmts), stmt_by_samples);
	struct value *st = value_obj_set(res, "statements", value_arr());
	for (size_t i = 0; i < pp->n_stmts && i < TOP_STATEMENTS; i++) {
		struct stmt *s = &pp->stmts[i];
		struct value *v = value_arr_push(st, value_obj());
		value_set_str(v, "query", s->text);
		if (s->cut)
			value_set_bool(v, "text_cut", true);
		value_set_int(v, "samples", (int64_t)s->samples);
		value_set_num(v, "avg_backends", (double)s->samples / samples);
		qsort(s->waits, s->n_waits, sizeof(*s->waits), wait_by_samples);
		struct value *w = value_obj_set(v, "waits", value_arr());
		for (size_t k = 0; k < s->n_waits; k++) {
			struct value *x = value_arr_push(w, value_obj());
			wait_fields(x, pp->major, s->waits[k].info);
			value_set_int(x, "samples", (int64_t)s->waits[k].samples);
		}
		if (s->other_waits)
			value_set_int(v, "other_wait_samples", (int64_t)s->other_waits);
	}
	value_set_int(res, "distinct_statements", (int64_t)pp->n_stmts);
	value_set_int(res, "statements_over_limit", (int64_t)pp->stmts_over);
	if (pp->start.taken) {
		value_obj_set(res, "in_flight_at_start", flights_value(pp, &pp->start));
		if (pp->start.over)
			value_set_int(res, "in_flight_at_start_over", (int64_t)pp->start.over);
	}
	if (pp->end.taken) {
		value_obj_set(res, "in_flight", flights_value(pp, &pp->end));
		if (pp->end.over)
			value_set_int(res, "in_flight_over", (int64_t)pp->end.over);
	}
	*out = res;
	return 0;
}

static void pga_destroy(struct probe *p)
{
	struct pga_priv *pp = p->priv;
	if (pp->timer_fd > 0)
		close(pp->timer_fd);
	pp->timer_fd = -1;
	free(pp->st_a);
	free(pp->st_b);
	free(pp->procs);
	free(pp->texts);
	free(pp->one);
	free(pp->pid_index);
	free(pp->memo);
	free(pp->need);
	free(pp->agg);
	for (size_t i = 0; i < pp->n_stmts; i++)
		free(pp->stmts[i].text);
	free(pp->stmts);
	free(pp->stmt_index);
	snapshot_free(&pp->start);
	snapshot_free(&pp->end);
	pp->st_a = pp->st_b = pp->procs = pp->texts = pp->one = NULL;
	pp->pid_index = NULL;
	pp->memo = NULL;
	pp->need = NULL;
	pp->agg = NULL;
	pp->stmts = NULL;
	pp->stmt_index = NULL;
	pp->n_stmts = pp->n_agg = 0;
	pp->ok = false;
}

static struct bpf_object *pga_object(struct probe *p)
{
	(void)p;
	return NULL;
}

#define WAIT_FIELDS(name)                                                                           \
	{ name ".wait_event_type", RT_STRING, NULL, true,                                           \
	  "as pg_stat_activity.wait_event_type (absent: not waiting)" },                            \
	{                                                                                           \
		name ".wait_event", RT_STRING, NULL, true,                                          \
			"as pg_stat_activity.wait_event (transactionid, ClientRead, WALWrite, ...)" \
	}

#define FLIGHT_FIELDS(name)                                                                                  \
	{ name, RT_ARRAY, NULL, true,                                                                        \
	  "backends with a statement or a transaction open (active, idle in transaction)" },                 \
		{ name "[]", RT_OBJECT, NULL, false, "one backend" },                                        \
		{ name "[].pid", RT_INTEGER, NULL, false,                                                    \
		  "its pid (as the server's pid namespace sees it)" },                                       \
		{ name "[].backend_type", RT_STRING, NULL, false, "as pg_stat_activity.backend_type" },      \
		{ name "[].state", RT_STRING, NULL, false, "as pg_stat_activity.state" },                    \
		WAIT_FIELDS(name "[]"),                                                                      \
		{ name "[].query", RT_STRING, NULL, false,                                                   \
		  "its statement (idle in transaction: the last one), constants replaced by ?" },            \
		{ name "[].query_raw", RT_STRING, NULL, true,                                                \
		  "the text as the server has it (raw_text only)" },                                         \
		{ name "[].text_cut", RT_BOOLEAN, NULL, true, "the text was longer than what was read" },    \
		{ name "[].text_unread", RT_BOOLEAN, NULL, true, "the text changed each time it was read" }, \
		{ name "[].database", RT_INTEGER, NULL, true, "the database's OID" },                        \
		{ name "[].query_elapsed_s", RT_NUMBER, "s", true,                                           \
		  "since its statement started (query_start)" },                                             \
		{ name "[].xact_elapsed_s", RT_NUMBER, "s", true,                                            \
		  "since its transaction started (xact_start)" },                                            \
		{ name "[].state_elapsed_s", RT_NUMBER, "s", true,                                           \
		  "since its state last changed (state_change)" },                                           \
		{ name "[].lock", RT_OBJECT, NULL, true, "a Lock wait: the lock, as pg_locks shows it" },    \
		{ name "[].lock.locktype", RT_STRING, NULL, false, "relation, tuple, transactionid, ..." },  \
		{ name "[].lock.mode", RT_STRING, NULL, false, "the mode it waits for" },                    \
		{ name "[].lock.database", RT_INTEGER, NULL, true, "the database's OID" },                   \
		{ name "[].lock.relation", RT_INTEGER, NULL, true,                                           \
		  "the relation's OID (SELECT OID::regclass)" },                                             \
		{ name "[].lock.page", RT_INTEGER, NULL, true, "page, tuple: the block" },                   \
		{ name "[].lock.tuple", RT_INTEGER, NULL, true, "tuple: its offset in the block" },          \
		{ name "[].lock.transactionid", RT_INTEGER, NULL, true,                                      \
		  "transactionid: the xid waited for" },                                                     \
		{ name "[].lock.virtualxid", RT_STRING, NULL, true, "virtualxid: backend/local xid" },       \
		{ name "[].lock.objid", RT_INTEGER, NULL, true, "object, advisory, ...: its second field" }, \
		{ name "[].blocked_by", RT_ARRAY, NULL, true,                                                \
		  "a Lock wait: the pids that hold the lock in a conflicting mode" },                        \
		{ name "[].blocked_by[]", RT_INTEGER, NULL, false, "a pid" },                                \
		{ name "[].blocked_by_cut", RT_BOOLEAN, NULL, true, "more holders than listed (8)" },        \
	{                                                                                                    \
		name "[].blocked_by_unknown", RT_BOOLEAN, NULL, true,                                        \
			"the lock's holders could not be read (it changed meanwhile)"                        \
	}

static const struct result_field pga_results[] = {
	{ "available", RT_BOOLEAN, NULL, false, "the server's shared memory was found and read" },
	{ "unavailable", RT_STRING, NULL, true, "why not (not PostgreSQL 13-17, no segment, ...)" },
	{ "server", RT_OBJECT, NULL, true, "the server read" },
	{ "server.version", RT_STRING, NULL, false, "from its binary's PG_VERSION_STR" },
	{ "server.major_version", RT_INTEGER, NULL, false, "its layout's version" },
	{ "server.postmaster_pid", RT_INTEGER, NULL, false, "the segment's creator" },
	{ "server.read_through_pid", RT_INTEGER, NULL, false, "the process whose memory was read" },
	{ "server.segment_bytes", RT_INTEGER, "bytes", false, "the main shared-memory segment" },
	{ "server.backend_slots", RT_INTEGER, "count", false, "slots of the backend status array" },
	{ "server.procs", RT_INTEGER, "count", false, "PGPROC entries" },
	{ "server.track_activity_query_size", RT_INTEGER, "bytes", false,
	  "the server's text buffer per backend" },
	{ "hz", RT_INTEGER, "per_s", true, "the sampling rate" },
	{ "samples", RT_INTEGER, "count", true, "samples taken (the window's start and end included)" },
	{ "samples_failed", RT_INTEGER, "count", true, "samples the arrays could not be read for" },
	{ "last_error", RT_STRING, NULL, true, "why the last of them failed" },
	{ "backend_samples", RT_INTEGER, "count", true, "backends seen over all samples" },
	{ "active_samples", RT_INTEGER, "count", true, "of them, running a statement" },
	{ "backends_max", RT_INTEGER, "count", true, "backends in one sample at most" },
	{ "texts_read", RT_INTEGER, "count", true, "statement texts read (a statement seen again is not)" },
	{ "slots_reread", RT_INTEGER, "count", true, "slots read again alone: the server was writing them" },
	{ "slots_torn", RT_INTEGER, "count", true, "slots never read whole (their statement not counted)" },
	{ "cost", RT_OBJECT, NULL, true, "what sampling cost diagnose" },
	{ "cost.wall_us_per_sample", RT_NUMBER, "us", false, "wall time of a sample" },
	{ "cost.cpu_us_per_sample", RT_NUMBER, "us", false,
	  "CPU time of a sample (diagnose's thread; the reader helper's not included)" },
	{ "cost.reads_per_sample", RT_NUMBER, "count", false, "memory reads a sample" },
	{ "cost.bytes_per_sample", RT_NUMBER, "bytes", false, "bytes read a sample" },
	{ "cost.read_us_max", RT_NUMBER, "us", false, "the longest read" },
	{ "activity", RT_ARRAY, NULL, true,
	  "samples by backend type, state and wait event, most first (at most 100)" },
	{ "activity[]", RT_OBJECT, NULL, false, "one combination" },
	{ "activity[].backend_type", RT_STRING, NULL, false, "as pg_stat_activity.backend_type" },
	{ "activity[].state", RT_STRING, NULL, false,
	  "as pg_stat_activity.state (\"\" for processes without one)" },
	WAIT_FIELDS("activity[]"),
	{ "activity[].samples", RT_INTEGER, "count", false, "backend-samples in it" },
	{ "activity[].avg_backends", RT_NUMBER, "count", false,
	  "backends in it on average (samples / samples taken)" },
	{ "activity[].share_pct", RT_NUMBER, "pct", false, "share of all backend-samples" },
	{ "activity_rows_over", RT_INTEGER, "count", true, "combinations not listed" },
	{ "statements", RT_ARRAY, NULL, true, "running statements by samples, most first (at most 50)" },
	{ "statements[]", RT_OBJECT, NULL, false, "one normalized text" },
	{ "statements[].query", RT_STRING, NULL, false, "the text, constants replaced by ?" },
	{ "statements[].text_cut", RT_BOOLEAN, NULL, true, "the text was longer than what was read" },
	{ "statements[].samples", RT_INTEGER, "count", false, "backend-samples running it" },
	{ "statements[].avg_backends", RT_NUMBER, "count", false, "backends running it on average" },
	{ "statements[].waits", RT_ARRAY, NULL, false, "its samples by wait event, most first" },
	{ "statements[].waits[]", RT_OBJECT, NULL, false,
	  "one wait event (none: running, or in code without one)" },
	WAIT_FIELDS("statements[].waits[]"),
	{ "statements[].waits[].samples", RT_INTEGER, "count", false, "samples in it" },
	{ "statements[].other_wait_samples", RT_INTEGER, "count", true,
	  "samples in wait events past the 12 listed" },
	{ "distinct_statements", RT_INTEGER, "count", true, "texts after normalization" },
	{ "statements_over_limit", RT_INTEGER, "count", true, "samples of texts beyond max_statements" },
	FLIGHT_FIELDS("in_flight"),
	{ "in_flight_over", RT_INTEGER, "count", true, "backends in flight not listed (200 are)" },
	FLIGHT_FIELDS("in_flight_at_start"),
	{ "in_flight_at_start_over", RT_INTEGER, "count", true, "backends in flight not listed (200 are)" },
};

/* No BPF: the server's memory, read through tfile. */
static const char *const pga_features[] = { NULL };

const struct probe_kind probe_kind_pg_activity = {
	.name = "pg_activity",
	.summary = "A PostgreSQL server's backends sampled in its shared memory (pg_stat_activity "
		   "from outside): states and wait events, running statements, what is in flight "
		   "at the window's start and end and who blocks it",
	.options = pga_options,
	.n_options = ARRAY_LEN(pga_options),
	.filters = FILTER_PID,
	.variants = pga_variants,
	.private_size = sizeof(struct pga_priv),
	.results = pga_results,
	.n_results = ARRAY_LEN(pga_results),
	.features = pga_features,
	.load = pga_load,
	.attach = pga_attach,
	.window_end = pga_detach,
	.detach = pga_detach,
	.wake_fd = pga_wake_fd,
	.drain = pga_drain,
	.collect = pga_collect,
	.destroy = pga_destroy,
	.object = pga_object,
};
