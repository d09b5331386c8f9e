/* allocations.c — catalog entry for engine/probes/allocations.bpf.c: the target's heap blocks still
 * outstanding at the end of the window, by the user stack that allocated them, with what each
 * stack allocated and freed during the window, how old its outstanding blocks are, and which of
 * them no word of the process points to any more (lost).
 *
 * Owns: finding the allocator the target really uses (the mapped file that defines malloc, read
 * through its mapping by tfile.c, the uprobes placed on that very file: a library other than libc
 * that defines it — jemalloc, tcmalloc, mimalloc, a static binary — wins over libc), which it is
 * and how it is linked, the file offsets of every entry point it has (alloc_funcs: those it lacks
 * are skipped; malloc and free are required), attaching the uprobes limited to the target process
 * (the returns first, so that no entry is seen without its return); the two modes — fp: every
 * block per site keyed in BPF by the frame-pointer stack; dwarf (default): a block recorded per
 * ~sample_bytes allocated, its stack unwound by the sampler (stack_sampler.c) and joined to the
 * block by its cookie —; the reference scan at the window's end (heap_refs.c, through the run's
 * reader, while frees are still seen); the scaling; and turning the blocks and per-stack totals
 * into results (ages measured against the end of the window).
 * Must not: attach to every process mapping the library (always the target's pid), judge what is
 * a leak (the recipe's Lua does, from the counts), write to or stop the target, or lose silently:
 * untracked blocks, full maps, failed stack walks and an incomplete scan are in the results.
 *
 * Why one file (~1,200 lines): finding the allocator, placing and attaching its uprobes, the two
 * modes, the scaling and the results share one state (the sites, blocks and stacks, what was
 * sampled); what stands apart is apart: the reference scan (heap_refs.c), stack unwinding
 * (stack_sampler.c).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "probes/allocations.h"
#include "allocations.skel.h"
#include "abi/diag_unwind.h"
#include "common/hash.h"
#include "probes/heap_refs.h"
#include "symbolize/stacks.h"
#include "target/procfs.h"
#include "symbolize/python.h"
#include "probes/stack_sampler.h"
#include "target/tfile.h"
#include "symbolize/unwind.h"
#include "symbolize/usyms.h"

#define MAX_MAPPED_FILES 64

/* The entry program a function's arguments need (its return, for every allocating one, is
 * alloc_return). */
enum alloc_prog { AP_MALLOC, AP_CALLOC, AP_REALLOC, AP_REALLOCARRAY, AP_MEMALIGN, AP_POSIX_MEMALIGN, AP_FREE };

/* The functions probed, in attach order: the C standard's and glibc's, jemalloc's extended API
 * (mallocx/rallocx/sdallocx/dallocx: Redis's defragmenter, Rust's and C++ code built on it call
 * them directly), mimalloc's own API, and C++'s operator new/delete when the allocator's file
 * defines them (jemalloc, tcmalloc and mimalloc replace libstdc++'s, which would otherwise call
 * malloc: probed through malloc then). Aliases (one address, several names: glibc's
 * aligned_alloc and memalign, tcmalloc's tc_malloc and malloc) are probed once. */
struct alloc_func {
	const char *name;  /* the symbol */
	const char *shown; /* in reports */
	enum alloc_prog prog;
	bool required;
};
static const struct alloc_func alloc_funcs[] = {
	{ "malloc", "malloc", AP_MALLOC, true },
	{ "free", "free", AP_FREE, true },
	{ "calloc", "calloc", AP_CALLOC, false },
	{ "realloc", "realloc", AP_REALLOC, false },
	{ "reallocarray", "reallocarray", AP_REALLOCARRAY, false },
	{ "posix_memalign", "posix_memalign", AP_POSIX_MEMALIGN, false },
	{ "aligned_alloc", "aligned_alloc", AP_MEMALIGN, false },
	{ "memalign", "memalign", AP_MEMALIGN, false },
	{ "valloc", "valloc", AP_MALLOC, false },
	{ "pvalloc", "pvalloc", AP_MALLOC, false },
	/* jemalloc (xallocx resizes in place: not probed, a block it grows keeps its size here) */
	{ "mallocx", "mallocx", AP_MALLOC, false },
	{ "rallocx", "rallocx", AP_REALLOC, false },
	{ "sdallocx", "sdallocx", AP_FREE, false },
	{ "dallocx", "dallocx", AP_FREE, false },
	/* mimalloc's API, called directly */
	{ "mi_malloc", "mi_malloc", AP_MALLOC, false },
	{ "mi_zalloc", "mi_zalloc", AP_MALLOC, false },
	{ "mi_calloc", "mi_calloc", AP_CALLOC, false },
	{ "mi_realloc", "mi_realloc", AP_REALLOC, false },
	{ "mi_free", "mi_free", AP_FREE, false },
	/* C++ (Itanium ABI, 64-bit size_t) */
	{ "_Znwm", "operator new", AP_MALLOC, false },
	{ "_Znam", "operator new[]", AP_MALLOC, false },
	{ "_ZnwmRKSt9nothrow_t", "operator new(nothrow)", AP_MALLOC, false },
	{ "_ZnamRKSt9nothrow_t", "operator new[](nothrow)", AP_MALLOC, false },
	{ "_ZnwmSt11align_val_t", "operator new(align_val_t)", AP_MALLOC, false },
	{ "_ZnamSt11align_val_t", "operator new[](align_val_t)", AP_MALLOC, false },
	{ "_ZnwmSt11align_val_tRKSt9nothrow_t", "operator new(align_val_t, nothrow)", AP_MALLOC, false },
	{ "_ZnamSt11align_val_tRKSt9nothrow_t", "operator new[](align_val_t, nothrow)", AP_MALLOC, false },
	{ "_ZdlPv", "operator delete", AP_FREE, false },
	{ "_ZdaPv", "operator delete[]", AP_FREE, false },
	{ "_ZdlPvm", "operator delete(sized)", AP_FREE, false },
	{ "_ZdaPvm", "operator delete[](sized)", AP_FREE, false },
	{ "_ZdlPvRKSt9nothrow_t", "operator delete(nothrow)", AP_FREE, false },
	{ "_ZdaPvRKSt9nothrow_t", "operator delete[](nothrow)", AP_FREE, false },
	{ "_ZdlPvSt11align_val_t", "operator delete(align_val_t)", AP_FREE, false },
	{ "_ZdaPvSt11align_val_t", "operator delete[](align_val_t)", AP_FREE, false },
	{ "_ZdlPvmSt11align_val_t", "operator delete(sized, align_val_t)", AP_FREE, false },
	{ "_ZdaPvmSt11align_val_t", "operator delete[](sized, align_val_t)", AP_FREE, false },
};
#define N_FUNCS (sizeof(alloc_funcs) / sizeof(alloc_funcs[0]))

struct alloc_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct allocations_bpf *skel;
	char path[PATH_MAX];      /* the allocator's file as the target maps it */
	int file_fd;              /* an O_PATH descriptor of the very file read (-1: none) */
	char attach_path[64];     /* /proc/self/fd/N of it: where the uprobes go */
	bool found[N_FUNCS];
	uint64_t offset[N_FUNCS];
	uint64_t detached_ns;
	struct python_procs *py;  /* a CPython target: its Python frames (NULL: none) */
	const char *family;       /* "glibc", "jemalloc", "tcmalloc", "mimalloc" or "unknown" */
	/* dwarf mode: the stacks of the blocks recorded, unwound by the sampler; each block's cookie
	 * → its row (cookie_row, open addressing, cookie 0 = empty), and per row what its blocks
	 * did (rows_*) */
	struct stack_sampler *sampler;
	struct cookie_row *cookies;
	size_t cookies_size, n_cookies, cookies_max;
	uint64_t cookies_refused;
	struct row_sums *rows;
	size_t n_rows;
	/* the reference scan at the end of the window (reach_scan): which blocks allocated before
	 * scan_mid no word of the target's memory points to, twice, and still held after */
	uint64_t attached_ns, scan_mid;
	bool scanned;
	struct heap_scan_stats scan;
	char scan_error[160];
	uint64_t checked, indirect, *unref; /* unref: open addressing set of block addresses, 0 = empty */
	size_t unref_size, n_unref;
	bool in_executable;       /* the allocator is linked into the program itself */
};

PROBE_BPF_SKELETON(allocations)
STACK_SAMPLER_PROBE_OPS(alloc, struct alloc_priv)

/* A cookie's home slot in a table of mask + 1: every bit of it mixed in (splitmix64's
 * finaliser), so that the per-CPU cookies of older kernels (the CPU in the high bits) spread. */
static size_t cookie_slot(uint64_t cookie, size_t mask)
{
	cookie ^= cookie >> 30;
	cookie *= 0xbf58476d1ce4e5b9ull;
	cookie ^= cookie >> 27;
	cookie *= 0x94d049bb133111ebull;
	cookie ^= cookie >> 31;
	return (size_t)cookie & mask;
}

/* dwarf mode: a recorded block's stack row, by its cookie. */
struct cookie_row {
	uint64_t cookie;
	long row;       /* < 0: the sampler's rows were full */
	uint64_t size;  /* the block's size */
	int64_t growth; /* a realloc's: new size - old size */
};
/* dwarf mode: what the blocks of one stack row did in the window, scaled (1 / the chance each
 * was recorded). */
struct row_sums {
	double allocs, alloc_bytes, held, held_bytes, old, old_bytes, growth, checked, unref, unref_bytes, heap_only;
	double checked_bytes, heap_only_bytes;
	uint64_t unref_seen; /* lost blocks found, not scaled */
	uint64_t oldest_ts;
};

static void cookie_put(struct alloc_priv *ap, uint64_t cookie, uint64_t weight, int64_t aux, long row)
{
	if (ap->n_cookies * 2 >= ap->cookies_size) {
		if (ap->cookies_size >= ap->cookies_max) {
			ap->cookies_refused++;
			return;
		}
		size_t old_size = ap->cookies_size;
		struct cookie_row *old = ap->cookies;
		ap->cookies_size = old_size ? old_size * 2 : 4096;
		ap->cookies = xcalloc(ap->cookies_size, sizeof(*ap->cookies));
		ap->n_cookies = 0;
		for (size_t i = 0; i < old_size; i++)
			if (old[i].cookie)
				cookie_put(ap, old[i].cookie, old[i].size, old[i].growth, old[i].row);
		free(old);
	}
	size_t mask = ap->cookies_size - 1, i = cookie_slot(cookie, mask);
	while (ap->cookies[i].cookie && ap->cookies[i].cookie != cookie)
		i = (i + 1) & mask;
	if (!ap->cookies[i].cookie)
		ap->n_cookies++;
	ap->cookies[i] = (struct cookie_row){ cookie, row, weight, aux };
}

/* The sampler's hook (stack_sampler_set_own_records): a recorded block's stack, counted in row. */
static void on_sample(void *ctx, const void *data, size_t size, long row)
{
	const struct diag_user_sample *rec = data;
	if (size >= offsetof(struct diag_user_sample, stack) && rec->cookie)
		cookie_put(ctx, rec->cookie, rec->weight, rec->aux, row);
}

static const struct cookie_row *cookie_find(const struct alloc_priv *ap, uint64_t cookie)
{
	if (!ap->cookies_size || !cookie)
		return NULL;
	size_t mask = ap->cookies_size - 1, i = cookie_slot(cookie, mask);
	for (; ap->cookies[i].cookie; i = (i + 1) & mask)
		if (ap->cookies[i].cookie == cookie)
			return &ap->cookies[i];
	return NULL;
}

static const struct option_spec alloc_options[] = {
	{ .name = "max_outstanding", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 131072,
	  .min = 1024, .max = 1u << 24, .bytes_per_entry = 8 + sizeof(struct alloc_block) + 64,
	  .help = "outstanding blocks tracked at once; more are counted in `dropped`, not tracked" },
	{ .name = "max_sites", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 8192,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = sizeof(struct alloc_site_key) + sizeof(struct alloc_site) + 64,
	  .help = "distinct allocating stacks counted" },
	{ .name = "max_stacks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 8192,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = sizeof(__u32) + DIAG_STACK_DEPTH * sizeof(__u64),
	  .help = "distinct stacks kept (native; as many Python stacks for a CPython target)" },
	{ .name = "max_threads", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20, .bytes_per_entry = 4 + sizeof(struct alloc_pending) + 64,
	  .help = "threads inside an allocating call at once" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "record 1 allocation in N at random and scale (raised by the pre-flight under "
		  "degrade: sample; every call still traps into the uprobe)" },
	STACK_SAMPLER_PYTHON_OPTION,
	{ .name = "user_unwind", .type = OPT_STRING, .dflt_str = "dwarf", .check = stack_sampler_check_unwind,
	  .help = "dwarf (default): the stacks of blocks recorded by sample_bytes are copied and unwound "
		  "by CFI in user space (real programs' allocating paths have no frame pointers); fp: "
		  "every block, by the kernel's frame-pointer walk (exact counts, for programs built "
		  "with frame pointers)" },
	{ .name = "sample_bytes", .type = OPT_UINT, .dflt = 16384, .min = 1, .max = 1u << 30,
	  .help = "dwarf: a block is recorded with probability size / sample_bytes (always when "
		  "larger), figures scaled back: about one stack per sample_bytes allocated" },
	{ .name = "stack_bytes", .type = OPT_UINT, .dflt = 8192, .min = 512, .max = DIAG_MAX_STACK_BYTES,
	  .help = "dwarf: bytes of user stack above sp copied per recorded block (deeper: truncated)" },
	{ .name = "ring_buffer_kib", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 4, .max = 262144, .bytes_per_entry = 1024,
	  .help = "dwarf: KiB of ring buffer for the recorded blocks' stacks (a power of 2; full: the "
		  "block is tracked without a stack, counted in lost_stacks)" },
	{ .name = "reach_scan", .type = OPT_BOOL, .dflt = 1, .max = 1,
	  .help = "at the end of the window, scan the target's writable memory for pointers to the blocks "
		  "held since the window's first half (twice; those freed meanwhile left out): a block that "
		  "no root and no unrecorded heap memory reaches is lost (a leak), one a root reaches is "
		  "kept on purpose, one reached only from unrecorded heap memory is not known" },
	{ .name = "max_scan_bytes", .type = OPT_UINT, .dflt = 1u << 30, .min = 1u << 20, .max = UINT32_MAX,
	  .help = "reach_scan: resident memory read at most (more: the scan is incomplete and no block is "
		  "called lost)" },
	{ .name = "reach_max_blocks", .type = OPT_UINT, .dflt = 262144, .min = 16, .max = 1u << 24,
	  .help = "reach_scan: blocks checked at most (the oldest first come, the rest not checked)" },
	{ .name = "max_recorded", .type = OPT_UINT, .dflt = 1u << 20, .min = 1024, .max = 1u << 26,
	  .help = "dwarf: recorded blocks remembered with their stack over the run (more: counted in "
		  "lost_stacks)" },
};

static const char *const alloc_variants[] = { "uprobe", NULL };

static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5);
}

/* Which allocator a file defining malloc is, by the functions only that one defines. */
static const char *allocator_family(struct tfile_image *img, const char *path)
{
	static const struct { const char *symbol, *family; } marks[] = {
		{ "mallctl", "jemalloc" },           { "tc_malloc", "tcmalloc" },
		{ "MallocExtension_GetStats", "tcmalloc" }, { "mi_malloc", "mimalloc" },
	};
	uint64_t off;
	struct diag_err ignore;
	for (size_t i = 0; i < ARRAY_LEN(marks); i++)
		if (elf_image_symbol_offset(img, path, marks[i].symbol, &off, &ignore) == 0)
			return marks[i].family;
	return is_libc(path) ? "glibc" : "unknown";
}

/* Whether an ELF file is a program rather than a shared library: ET_EXEC, or a PIE (ET_DYN
 * flagged DF_1_PIE; libc.so.6 is ET_DYN with an interpreter too, but no such flag). */
static bool is_executable(struct tfile_image *img)
{
	Elf *e = tfile_image_elf(img);
	GElf_Ehdr eh;
	bool exe = false;
	if (!e || !gelf_getehdr(e, &eh))
		goto out;
	if (eh.e_type == ET_EXEC) {
		exe = true;
		goto out;
	}
	for (Elf_Scn *scn = NULL; !exe && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			if (gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE))
				exe = true;
		}
	}
out:
	if (e)
		elf_end(e);
	return exe;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* The file the target's malloc comes from: a mapped file other than libc that defines it, else
 * libc, each read through its mapping by the run's reader (tfile.h: the mapped file itself, never
 * a path the target could point elsewhere). Sets ap->path and *img (the caller frees it; its fd:
 * an O_PATH descriptor of that very file, for the uprobes). */
static int find_allocator(struct alloc_priv *ap, struct tfile_reader *r, int pid,
			  struct tfile_image **img, struct diag_err *err)
{
	char *maps = tfile_read_proc(r, pid, "maps", TFILE_MAX_TEXT_BYTES, NULL, err);
	if (!maps) {
		err->code = DIAG_EXIT_USAGE;
		return -1;
	}
	uint64_t seen[MAX_MAPPED_FILES][2];
	size_t n_seen = 0;
	struct tfile_image *libc = NULL, *other = NULL;
	char libc_path[PATH_MAX] = "";
	char *cursor = maps;
	for (char *line; !other && (line = procfs_next_line(&cursor));) {
		struct procfs_maps_line m;
		if (procfs_parse_maps_line(line, &m) || !m.exec || m.path[0] != '/' ||
		    strstr(m.path, " (deleted)") || has_control(m.path))
			continue; /* the name reaches errors and reports: a control byte in it is no allocator */
		uint64_t dev = (uint64_t)m.major << 32 | m.minor;
		bool dup = false;
		for (size_t i = 0; i < n_seen && !dup; i++)
			dup = seen[i][0] == dev && seen[i][1] == m.inode;
		if (dup || n_seen == MAX_MAPPED_FILES)
			continue;
		seen[n_seen][0] = dev;
		seen[n_seen++][1] = m.inode;
		struct tfile_src src = { .pid = pid, .start = m.start, .end = m.end, .path = m.path,
					 .dev = dev, .ino = m.inode };
		struct tfile_image *f;
		struct diag_err ignore;
		uint64_t off;
		if (tfile_read_elf(r, &src, TFILE_KEEP_FD, &f, &ignore))
			continue;
		if (elf_image_symbol_offset(f, m.path, "malloc", &off, &ignore)) {
			tfile_image_free(f);
			continue;
		}
		char *keep_path = is_libc(m.path) ? libc_path : ap->path;
		if (is_libc(m.path) && libc) {
			tfile_image_free(f);
			continue;
		}
		snprintf(keep_path, PATH_MAX, "%s", m.path);
		if (is_libc(m.path))
			libc = f;
		else
			other = f;
	}
	free(maps);
	if (other) {
		tfile_image_free(libc);
		*img = other;
		return 0;
	}
	if (!libc)
		return diag_fail(err, DIAG_ERR_NOT_APPLICABLE, "process %d maps no file that defines malloc "
				 "(a static binary without symbols, or an allocator this probe does not know)", pid);
	snprintf(ap->path, sizeof(ap->path), "%s", libc_path);
	*img = libc;
	return 0;
}

static int alloc_load(struct probe *p, struct diag_err *err)
{
	struct alloc_priv *ap = p->priv;
	int pid = p->cfg.filter.pid;
	ap->file_fd = -1;
	if (pid <= 0)
		return diag_fail(err, DIAG_EXIT_USAGE, "allocations needs the pid filter (filters: "
				 "{ pid: target }): uprobes on a shared allocator must not trap every process");
	struct tfile_image *img = NULL;
	ap->file_fd = -1;
	if (find_allocator(ap, p->files, pid, &img, err))
		return -1;
	/* the uprobes go on the very file read, not on a path the target could remap meanwhile */
	ap->file_fd = img->fd;
	img->fd = -1;
	snprintf(ap->attach_path, sizeof(ap->attach_path), "/proc/self/fd/%d", ap->file_fd);
	for (size_t i = 0; i < N_FUNCS; i++) {
		struct diag_err e;
		ap->found[i] = elf_image_symbol_offset(img, ap->path, alloc_funcs[i].name, &ap->offset[i], &e) == 0;
		if (!ap->found[i] && alloc_funcs[i].required) {
			tfile_image_free(img);
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: %s", ap->path, e.msg);
		}
		/* aliases (glibc: aligned_alloc is memalign): one probe per address, or each call
		 * would be counted twice */
		for (size_t k = 0; k < i && ap->found[i]; k++)
			if (ap->found[k] && ap->offset[k] == ap->offset[i])
				ap->found[i] = false;
	}
	ap->family = allocator_family(img, ap->path);
	ap->in_executable = is_executable(img);
	tfile_image_free(img);
	if (!(ap->skel = allocations_skel_open(p, err)))
		return -1;
	bpf_map__set_max_entries(ap->skel->maps.blocks, (__u32)probe_opt(p, "max_outstanding"));
	bpf_map__set_max_entries(ap->skel->maps.sites, (__u32)probe_opt(p, "max_sites"));
	bpf_map__set_max_entries(ap->skel->maps.stacks, (__u32)probe_opt(p, "max_stacks"));
	bpf_map__set_max_entries(ap->skel->maps.pending, (__u32)probe_opt(p, "max_threads"));
	ap->skel->rodata->glibc_chunks = is_libc(ap->path);
	struct diag_py_proc proc;
	bool py_walk = false;
	if (probe_opt(p, "python_frames")) {
		ap->py = python_procs_new(p->files);
		py_walk = python_procs_probe(ap->py, pid, &proc) == 1;
	}
	ap->skel->rodata->py_walk = py_walk;
	const char *unwind = probe_opt_str(p, "user_unwind");
	bool dwarf = !unwind || !strcmp(unwind, "dwarf");
	uint32_t ring = stack_sampler_ring_size(probe_opt(p, "ring_buffer_kib") * 1024);
	ap->skel->rodata->sample_bytes = dwarf ? probe_opt(p, "sample_bytes") : 0;
	ap->skel->rodata->copy_bytes = dwarf ? (__u32)probe_opt(p, "stack_bytes") : 0;
	ap->skel->rodata->wake_bytes = ring / 4;
	bpf_map__set_max_entries(ap->skel->maps.samples, dwarf ? ring : 4096);
	/* a Python stack (1 KiB) per distinct one, only for a CPython target in fp mode */
	bpf_map__set_max_entries(ap->skel->maps.py_stacks, py_walk && !dwarf ? (__u32)probe_opt(p, "max_stacks") : 1);
	int rc = allocations_bpf__load(ap->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading the uprobe programs: %s", strerror(-rc));
	if (dwarf) {
		ap->sampler = stack_sampler_new(bpf_map__fd(ap->skel->maps.stacks), true, false,
						(size_t)probe_opt(p, "max_sites"), NULL, 0, 0, p->files);
		ap->cookies_max = 2 * (size_t)probe_opt(p, "max_recorded");
		stack_sampler_set_own_records(ap->sampler, NULL, on_sample, ap);
		/* the sampler splices the Python frames of the samples (the detector is its own) */
		stack_sampler_python_start(ap->sampler, py_walk ? ap->py : NULL,
					   bpf_map__fd(ap->skel->maps.py_procs), pid);
		if (!py_walk)
			python_procs_free(ap->py);
		ap->py = NULL;
		if (stack_sampler_open_ring(ap->sampler, bpf_map__fd(ap->skel->maps.samples)))
			return diag_fail(err, DIAG_EXIT_RUNTIME, "opening the samples ring buffer: %s",
					 strerror(errno));
		p->variant = "uprobe";
		return 0;
	}
	__u32 key = (__u32)pid;
	if (py_walk && bpf_map_update_elem(bpf_map__fd(ap->skel->maps.py_procs), &key, &proc, BPF_ANY))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the Python process map: %s", strerror(errno));
	p->variant = "uprobe";
	return 0;
}

static struct bpf_program *entry_prog(struct allocations_bpf *skel, enum alloc_prog prog)
{
	switch (prog) {
	case AP_FREE:
		return skel->progs.alloc_free;
	case AP_CALLOC:
		return skel->progs.alloc_calloc;
	case AP_REALLOC:
		return skel->progs.alloc_realloc;
	case AP_REALLOCARRAY:
		return skel->progs.alloc_reallocarray;
	case AP_POSIX_MEMALIGN:
		return skel->progs.alloc_posix_mem;
	case AP_MEMALIGN:
		return skel->progs.alloc_memalign;
	case AP_MALLOC:
		break;
	}
	return skel->progs.alloc_malloc;
}

static uint64_t mono_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock bpf_ktime_get_ns() reads */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int alloc_attach(struct probe *p, struct diag_err *err)
{
	struct alloc_priv *ap = p->priv;
	ap->attached_ns = mono_now_ns();
	pid_t pid = p->cfg.filter.pid;
	char what[PATH_MAX + 96];
	/* Returns first: a call entered after this is always seen returning; the links are
	 * released last first, so entries stop before returns. */
	for (size_t i = 0; i < N_FUNCS; i++) {
		if (!ap->found[i] || alloc_funcs[i].prog == AP_FREE)
			continue;
		snprintf(what, sizeof(what), "a uretprobe to %s:%s", ap->path, alloc_funcs[i].name);
		struct uprobe_site site = { .prog = ap->skel->progs.alloc_return, .path = ap->attach_path,
					    .offset = ap->offset[i], .pid = pid, .retprobe = true };
		if (probe_bpf_uprobe(p, &site, what, err))
			return -1;
	}
	if (probe_bpf_uprobes_flush(p, err))
		return -1;
	for (size_t i = 0; i < N_FUNCS; i++) {
		if (!ap->found[i])
			continue;
		snprintf(what, sizeof(what), "a uprobe to %s:%s", ap->path, alloc_funcs[i].name);
		struct uprobe_site site = { .prog = entry_prog(ap->skel, alloc_funcs[i].prog),
					    .path = ap->attach_path, .offset = ap->offset[i], .pid = pid };
		if (probe_bpf_uprobe(p, &site, what, err))
			return -1;
	}
	return probe_bpf_uprobes_flush(p, err);
}

static void alloc_destroy(struct probe *p)
{
	struct alloc_priv *ap = p->priv;
	if (ap->file_fd >= 0) /* load ran first: it sets -1 before anything can fail */
		close(ap->file_fd);
	ap->file_fd = -1;
	python_procs_free(ap->py);
	ap->py = NULL;
	probe_bpf_destroy(p);
	stack_sampler_free(ap->sampler);
	ap->sampler = NULL;
	free(ap->cookies);
	ap->cookies = NULL;
	ap->cookies_size = ap->n_cookies = 0;
	free(ap->rows);
	ap->rows = NULL;
	free(ap->unref);
	ap->unref = NULL;
	ap->unref_size = 0;
}

/* The set of the blocks the scan checked, by address: flags CHECKED; UNREF for those nothing
 * reached in either scan and still held after them (lost); HEAP_ONLY for those reached only from
 * heap memory the probe did not record (not known: an unrecorded block may be lost itself). */
#define REACH_CHECKED 1u
#define REACH_UNREF 2u
#define REACH_HEAP_ONLY 4u
/* Keyed (hash.h): the addresses are what the target's allocator returned. */
static size_t reach_slot(uint64_t addr)
{
	struct hash_state h;
	hash_init(&h);
	hash_u64(&h, addr);
	return (size_t)hash_final(&h);
}

static void reach_put(struct alloc_priv *ap, uint64_t addr, unsigned flags)
{
	size_t mask = ap->unref_size - 1, i = reach_slot(addr) & mask;
	while (ap->unref[i] && (ap->unref[i] & ~7ull) != addr)
		i = (i + 1) & mask;
	ap->unref[i] = addr | flags; /* blocks are 8-aligned: the low bits are free */
}

static unsigned reach_get(const struct alloc_priv *ap, uint64_t addr)
{
	if (!ap->unref_size)
		return 0;
	size_t mask = ap->unref_size - 1, i = reach_slot(addr) & mask;
	for (; ap->unref[i]; i = (i + 1) & mask)
		if ((ap->unref[i] & ~7ull) == addr)
			return (unsigned)(ap->unref[i] & 7u);
	return 0;
}

/* How long both scans may take at most (the reader's deadline meanwhile). */
#define REACH_SCAN_NS 2000000000ull
static void reach_scan_twice(struct alloc_priv *ap, struct probe *p, struct heap_ref_block *b,
			     const uint64_t *ts, size_t n, size_t n_old);

/* The reference scan (heap_refs.h), while the probes still see frees: every recorded block is
 * listed (so that a word inside one is known for a block's, not a root's), those held since the
 * window's first half first, and these are checked: reached from a root, only from unrecorded
 * heap memory, or lost (twice: a pointer moved during the first scan is caught by the second;
 * and still held after). At most reach_max_blocks are listed. */
static void reach_scan(struct alloc_priv *ap, struct probe *p)
{
	ap->scanned = true;
	if (!probe_opt(p, "reach_scan") || !ap->attached_ns)
		return;
	uint64_t now = mono_now_ns();
	ap->scan_mid = ap->attached_ns + (now - ap->attached_ns) / 2;
	int fd = bpf_map__fd(ap->skel->maps.blocks);
	size_t max = (size_t)probe_opt(p, "reach_max_blocks");
	struct heap_ref_block *list[2] = { NULL, NULL }; /* the old ones, the young ones */
	uint64_t *stamps[2] = { NULL, NULL };            /* when each was allocated */
	size_t count[2] = { 0, 0 }, cap[2] = { 0, 0 };
	__u64 keys[2], *prev = NULL, *next = &keys[0];
	while (count[0] < max && bpf_map_get_next_key(fd, prev, next) == 0) {
		struct alloc_block blk;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(fd, prev, &blk))
			continue;
		int young = blk.ts >= ap->scan_mid;
		if (count[young] == max)
			continue;
		if (count[young] == cap[young]) {
			cap[young] = cap[young] ? cap[young] * 2 : 1024;
			list[young] = xrealloc(list[young], cap[young] * sizeof(*list[young]));
			stamps[young] = xrealloc(stamps[young], cap[young] * sizeof(*stamps[young]));
		}
		stamps[young][count[young]] = blk.ts;
		list[young][count[young]++] = (struct heap_ref_block){ .addr = *prev, .size = blk.size };
	}
	size_t n_old = count[0], n_young = count[1] < max - n_old ? count[1] : max - n_old;
	if (!n_old) {
		for (int k = 0; k < 2; k++) {
			free(list[k]);
			free(stamps[k]);
		}
		return;
	}
	struct heap_ref_block *b = xrealloc(list[0], (n_old + n_young) * sizeof(*b));
	uint64_t *ts = xrealloc(stamps[0], (n_old + n_young) * sizeof(*ts));
	if (n_young) {
		memcpy(b + n_old, list[1], n_young * sizeof(*b));
		memcpy(ts + n_old, stamps[1], n_young * sizeof(*ts));
	}
	free(list[1]);
	free(stamps[1]);
	/* both scans within REACH_SCAN_NS of the run's time for reading the target (symbols next) */
	uint64_t deadline = tfile_reader_deadline(p->files), until = now + REACH_SCAN_NS;
	tfile_reader_set_deadline(p->files, deadline && deadline < until ? deadline : until);
	reach_scan_twice(ap, p, b, ts, n_old + n_young, n_old);
	tfile_reader_set_deadline(p->files, deadline);
	free(b);
	free(ts);
}

/* One scan of the n blocks b and what reaches each (reach: enum heap_reach): 0, or -1 with
 * *err when nothing could be scanned. */
static int reach_once(struct probe *p, struct heap_ref_block *b, size_t n, uint8_t *reach,
		      struct heap_scan_stats *st, struct diag_err *err)
{
	struct heap_ref_edges edges = { 0 };
	int rc = heap_refs_scan(p->files, p->cfg.filter.pid, b, n, probe_opt(p, "max_scan_bytes"), st, &edges, err);
	if (!rc)
		heap_refs_reach(b, n, &edges, reach);
	heap_refs_edges_free(&edges);
	return rc;
}

/* Whether block addr is still the one listed (allocated at ts), not freed since (its memory may
 * now be another block's, which the probe did not record). */
static bool still_listed(int fd, uint64_t addr, uint64_t ts)
{
	struct alloc_block blk;
	return bpf_map_lookup_elem(fd, &addr, &blk) == 0 && blk.ts == ts;
}

/* The blocks b[0 .. n_old) checked, b[n_old .. n) listed only for where words lie; ts: when each
 * was allocated. */
static void reach_scan_twice(struct alloc_priv *ap, struct probe *p, struct heap_ref_block *b,
			     const uint64_t *ts, size_t n, size_t n_old)
{
	struct diag_err err;
	int fd = bpf_map__fd(ap->skel->maps.blocks);
	uint8_t *reach = xmalloc(n);
	if (reach_once(p, b, n, reach, &ap->scan, &err)) {
		snprintf(ap->scan_error, sizeof(ap->scan_error), "%.150s", err.msg);
		free(reach);
		return;
	}
	ap->unref_size = 64;
	while (ap->unref_size < 2 * n_old)
		ap->unref_size *= 2;
	ap->unref = xcalloc(ap->unref_size, sizeof(*ap->unref));
	ap->checked = n_old;
	/* the second scan: what nothing reached and is still as listed, again, alone (a pointer that
	 * moved during the first is found now; among themselves their words are still edges: a lost
	 * object's parts stay lost with it; a block freed since is not listed: its memory may be
	 * another's now, unrecorded heap) */
	bool *lost = xcalloc(n_old, sizeof(*lost));
	struct heap_ref_block *again = xmalloc(n * sizeof(*again));
	uint32_t *which = xmalloc(n * sizeof(*which));
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (reach[i] == HEAP_REACH_NONE && still_listed(fd, b[i].addr, ts[i])) {
			again[m] = (struct heap_ref_block){ .addr = b[i].addr, .size = b[i].size };
			which[m++] = (uint32_t)i;
		}
	if (m && ap->scan.complete) {
		struct heap_scan_stats st;
		uint8_t *reach2 = xmalloc(m);
		if (reach_once(p, again, m, reach2, &st, &err) || !st.complete) {
			ap->scan.complete = false;
			snprintf(ap->scan.why, sizeof(ap->scan.why), "the second scan did not complete: %.120s",
				 st.why[0] ? st.why : err.msg);
		} else {
			if (st.undecided && !ap->scan.undecided)
				snprintf(ap->scan.why, sizeof(ap->scan.why), "the second scan: %.140s", st.why);
			ap->scan.undecided += st.undecided;
			for (size_t k = 0; k < m; k++) {
				size_t i = which[k];
				if (reach2[k] != HEAP_REACH_NONE)
					reach[i] = reach2[k];
				else if (i < n_old && still_listed(fd, b[i].addr, ts[i])) {
					lost[i] = true;
					ap->indirect += again[k].from != 0; /* pointed to, by lost blocks only */
				}
			}
		}
		ap->scan.elapsed_ns += st.elapsed_ns;
		free(reach2);
	}
	for (size_t i = 0; i < n_old; i++)
		reach_put(ap, b[i].addr, REACH_CHECKED | (lost[i] ? REACH_UNREF : 0) |
						 (reach[i] == HEAP_REACH_HEAP ? REACH_HEAP_ONLY : 0));
	free(lost);
	free(again);
	free(which);
	free(reach);
}

static void alloc_detach(struct probe *p)
{
	struct alloc_priv *ap = p->priv;
	struct timespec ts;
	if (!ap->scanned && ap->skel)
		reach_scan(ap, p);
	/* The window ends now: releasing uprobes can take hundreds of milliseconds (the kernel
	 * waits for their users), during which the links go one by one — a free no longer seen
	 * while malloc still is. Count-only mode records nothing more, consistently, first. */
	probe_set_mode(p, true, 1);
	clock_gettime(CLOCK_MONOTONIC, &ts); /* the clock bpf_ktime_get_ns() reads */
	ap->detached_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	probe_bpf_detach(p);
	stack_sampler_consume(ap->sampler); /* NULL: nothing */
}

/* Ages of the outstanding blocks of one site, in an open-addressing table by site key. */
struct site_age {
	struct alloc_site_key key;
	bool used;
	uint64_t old_count, old_bytes, oldest_ts;
	uint64_t checked, unref, unref_bytes, heap_only, checked_bytes, heap_only_bytes; /* the reference scan's */
};

static size_t site_slot(const struct site_age *ages, size_t size, const struct alloc_site_key *k)
{
	struct hash_state hs; /* keyed (hash.h): py_id hashes the target's code objects */
	hash_init(&hs);
	hash_u64(&hs, (uint32_t)k->stack_id);
	hash_u64(&hs, k->py_id);
	size_t i = (size_t)hash_final(&hs) & (size - 1);
	while (ages[i].used && (ages[i].key.stack_id != k->stack_id || ages[i].key.py_id != k->py_id))
		i = (i + 1) & (size - 1);
	return i;
}

/* The native stack of site k with its Python frames (py_stacks, read into rec) spliced in: 0
 * and ips/from/n, or -1 when the site has no Python frames (or they are gone). */
static int site_python_stack(struct alloc_priv *ap, int pid, int stacks_fd, const struct alloc_site_key *k,
			     struct diag_py_rec *rec, uint64_t *ips, uint8_t *from, size_t *n)
{
	if (!ap->py || !k->py_id ||
	    bpf_map_lookup_elem(bpf_map__fd(ap->skel->maps.py_stacks), &k->py_id, rec))
		return -1;
	size_t native = stacks_read_ids(stacks_fd, k->stack_id, ips);
	memset(from, FRAME_FP, native);
	bool unplaced;
	uint32_t nf = rec->n < DIAG_PY_MAX_FRAMES ? rec->n : DIAG_PY_MAX_FRAMES;
	*n = python_splice(ap->py, pid, rec->f, nf, ips, from, native, DIAG_STACK_DEPTH, &unplaced);
	return 0;
}

enum { X_ALLOCS, X_ALLOC_BYTES, X_FREES, X_FREE_BYTES, X_OLD_COUNT, X_OLD_BYTES, X_OLDEST_MS,
       X_REALLOC_GROWTH, X_CHECKED, X_UNREF, X_UNREF_BYTES, X_HEAP_ONLY, X_CHECKED_BYTES,
       X_HEAP_ONLY_BYTES, X_UNREF_SEEN, X_NR };
static const char *const extra_names[X_NR] = { "allocs", "alloc_bytes", "frees", "free_bytes",
					       "old_count", "old_bytes", "oldest_age_ms",
					       "realloc_growth_bytes", "checked_count", "unref_count",
					       "unref_bytes", "heap_only_count", "checked_bytes",
					       "heap_only_bytes", "unref_seen" };
static const bool extra_max[X_NR] = { [X_OLDEST_MS] = true };
_Static_assert(X_NR <= STACKS_MAX_EXTRA, "every extra field of a stack fits the stack table");

/* dwarf mode: the figures of one row, as stacks[] extras (rows_end: the window's end). */
struct dwarf_collect {
	struct alloc_priv *ap;
	uint64_t end;
};

static void row_added(void *ctx, size_t row, struct stack_table *t)
{
	const struct dwarf_collect *dc = ctx;
	const struct row_sums *r = &dc->ap->rows[row];
	double frees = r->allocs > r->held ? r->allocs - r->held : 0;
	double free_bytes = r->alloc_bytes > r->held_bytes ? r->alloc_bytes - r->held_bytes : 0;
	uint64_t x[X_NR] = {
		[X_ALLOCS] = (uint64_t)(r->allocs + 0.5), [X_ALLOC_BYTES] = (uint64_t)(r->alloc_bytes + 0.5),
		[X_FREES] = (uint64_t)(frees + 0.5), [X_FREE_BYTES] = (uint64_t)(free_bytes + 0.5),
		[X_OLD_COUNT] = (uint64_t)(r->old + 0.5), [X_OLD_BYTES] = (uint64_t)(r->old_bytes + 0.5),
		[X_OLDEST_MS] = r->oldest_ts && r->oldest_ts < dc->end ? (dc->end - r->oldest_ts) / 1000000 : 0,
		[X_REALLOC_GROWTH] = (uint64_t)(r->growth + 0.5),
		[X_CHECKED] = (uint64_t)(r->checked + 0.5), [X_UNREF] = (uint64_t)(r->unref + 0.5),
		[X_UNREF_BYTES] = (uint64_t)(r->unref_bytes + 0.5), [X_HEAP_ONLY] = (uint64_t)(r->heap_only + 0.5),
		[X_CHECKED_BYTES] = (uint64_t)(r->checked_bytes + 0.5),
		[X_HEAP_ONLY_BYTES] = (uint64_t)(r->heap_only_bytes + 0.5), [X_UNREF_SEEN] = r->unref_seen,
	};
	stacks_last_extra(t, x);
}

/* dwarf mode: how many blocks one recorded block of size bytes stands for (1 / the chance it was
 * recorded: allocations.bpf.c's odds). */
static double alloc_weight(uint64_t size, uint64_t sample_bytes)
{
	if (!sample_bytes || size >= sample_bytes)
		return 1.0;
	uint64_t floor = sample_bytes / ALLOC_MIN_EVERY, odds = size > floor ? size : floor;
	return odds ? (double)sample_bytes / (double)odds : 1.0;
}

/* dwarf mode: every recorded block (its cookie) counts as allocated by its stack's row, those
 * still in the blocks map as held; each weighs 1 / the chance it was recorded (size /
 * sample_bytes, below it) times the 1-in-N of the pre-flight. */
static void collect_dwarf(struct alloc_priv *ap, struct probe *p, double scale, uint64_t end,
			  uint64_t mid, struct stack_table *table, struct value *res)
{
	uint64_t sb = ap->skel->rodata->sample_bytes;
	size_t max_rows = (size_t)probe_opt(p, "max_sites");
	free(ap->rows);
	ap->rows = xcalloc(max_rows ? max_rows : 1, sizeof(*ap->rows));
	ap->n_rows = max_rows;
	double allocs = 0, alloc_bytes = 0, held = 0, held_bytes = 0, old = 0, old_bytes = 0;
	uint64_t no_stack = ap->cookies_refused;
	for (size_t i = 0; i < ap->cookies_size; i++) {
		const struct cookie_row *c = &ap->cookies[i];
		if (!c->cookie)
			continue;
		double n = (double)scale * alloc_weight(c->size, sb), b = n * (double)c->size;
		allocs += n;
		alloc_bytes += b;
		if (c->row >= 0 && (size_t)c->row < max_rows) {
			ap->rows[c->row].allocs += n;
			ap->rows[c->row].alloc_bytes += b;
			/* a realloc's growth, scaled as its block (growth / size of what it stands for) */
			if (c->growth > 0 && c->size)
				ap->rows[c->row].growth += (double)c->growth * b / (double)c->size;
		}
	}
	int blocks_fd = bpf_map__fd(ap->skel->maps.blocks);
	__u64 keys[2], *prev = NULL, *next = &keys[0];
	while (bpf_map_get_next_key(blocks_fd, prev, next) == 0) {
		struct alloc_block blk;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(blocks_fd, prev, &blk))
			continue;
		double n = (double)scale * alloc_weight(blk.size, sb), b = n * (double)blk.size;
		held += n;
		held_bytes += b;
		if (blk.ts < mid) {
			old += n;
			old_bytes += b;
		}
		const struct cookie_row *c = cookie_find(ap, blk.cookie);
		if (!c || c->row < 0 || (size_t)c->row >= max_rows) {
			no_stack++;
			continue;
		}
		struct row_sums *r = &ap->rows[c->row];
		r->held += n;
		r->held_bytes += b;
		unsigned f = reach_get(ap, *prev);
		r->checked += f & REACH_CHECKED ? n : 0;
		r->unref += f & REACH_UNREF ? n : 0;
		r->unref_bytes += f & REACH_UNREF ? b : 0;
		r->heap_only += f & REACH_HEAP_ONLY ? n : 0;
		r->checked_bytes += f & REACH_CHECKED ? b : 0;
		r->heap_only_bytes += f & REACH_HEAP_ONLY ? b : 0;
		r->unref_seen += (f & REACH_UNREF) != 0;
		if (blk.ts < mid) {
			r->old += n;
			r->old_bytes += b;
		}
		if (!r->oldest_ts || blk.ts < r->oldest_ts)
			r->oldest_ts = blk.ts;
	}
	for (size_t i = 0; i < max_rows; i++)
		if (ap->rows[i].held > 0)
			stack_sampler_row_weigh(ap->sampler, i, (uint64_t)(ap->rows[i].held_bytes + 0.5),
						(uint64_t)(ap->rows[i].held + 0.5));
	struct dwarf_collect dc = { ap, end };
	size_t refused = stack_sampler_flush_each(ap->sampler, table, false, row_added, &dc);
	value_set_int(res, "sample_bytes", (int64_t)sb);
	value_set_int(res, "recorded", (int64_t)ap->n_cookies + (int64_t)ap->cookies_refused);
	value_set_int(res, "allocs", (int64_t)(allocs + 0.5));
	value_set_int(res, "alloc_bytes", (int64_t)(alloc_bytes + 0.5));
	value_set_int(res, "frees_matched", (int64_t)(allocs > held ? allocs - held + 0.5 : 0));
	value_set_int(res, "outstanding_bytes", (int64_t)(held_bytes + 0.5));
	value_set_int(res, "outstanding_count", (int64_t)(held + 0.5));
	value_set_int(res, "old_bytes", (int64_t)(old_bytes + 0.5));
	value_set_int(res, "old_count", (int64_t)(old + 0.5));
	value_set_int(res, "dropped", (int64_t)(refused + stacks_refused(table)));
	value_set_int(res, "lost_stacks", (int64_t)no_stack);
}

/* fp mode: the blocks by their site (the frame-pointer stack and Python frames BPF keyed them
 * by), with the totals. */
static void collect_fp(struct alloc_priv *ap, struct probe *p, double scale, uint64_t end,
		       uint64_t mid, struct stack_table *table, struct value *res)
{
	struct bpf_object *obj = ap->skel->obj;
	int blocks_fd = bpf_map__fd(ap->skel->maps.blocks);
	int sites_fd = bpf_map__fd(ap->skel->maps.sites);
	int stacks_fd = bpf_map__fd(ap->skel->maps.stacks);
	int calls_fd = bpf_map__fd(ap->skel->maps.calls);
	size_t ages_size = 64;
	while (ages_size < 2 * (size_t)bpf_map__max_entries(ap->skel->maps.sites))
		ages_size *= 2;
	struct site_age *ages = xcalloc(ages_size, sizeof(*ages));
	uint64_t out_bytes = 0, out_count = 0, old_bytes = 0, old_count = 0;
	__u64 keys[2], *prev = NULL, *next = &keys[0];
	while (bpf_map_get_next_key(blocks_fd, prev, next) == 0) {
		struct alloc_block b;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(blocks_fd, prev, &b))
			continue;
		size_t i = site_slot(ages, ages_size, &b.site);
		ages[i].used = true;
		ages[i].key = b.site;
		unsigned f = reach_get(ap, *prev);
		ages[i].checked += (f & REACH_CHECKED) != 0;
		ages[i].unref += (f & REACH_UNREF) != 0;
		ages[i].unref_bytes += f & REACH_UNREF ? b.size : 0;
		ages[i].heap_only += (f & REACH_HEAP_ONLY) != 0;
		ages[i].checked_bytes += f & REACH_CHECKED ? b.size : 0;
		ages[i].heap_only_bytes += f & REACH_HEAP_ONLY ? b.size : 0;
		out_bytes += b.size;
		out_count++;
		if (b.ts < mid) {
			ages[i].old_count++;
			ages[i].old_bytes += b.size;
			old_count++;
			old_bytes += b.size;
		}
		if (!ages[i].oldest_ts || b.ts < ages[i].oldest_ts)
			ages[i].oldest_ts = b.ts;
	}

	uint64_t allocs = 0, alloc_bytes = 0;
	struct diag_py_rec *py_rec = ap->py ? xmalloc(sizeof(*py_rec)) : NULL;
	if (ap->py)
		stacks_set_namer(table, python_stack_namer, ap->py);
	struct alloc_site_key sids[2], *sprev = NULL, *snext = &sids[0];
	while (bpf_map_get_next_key(sites_fd, sprev, snext) == 0) {
		struct alloc_site s;
		sprev = snext;
		snext = snext == &sids[0] ? &sids[1] : &sids[0];
		if (bpf_map_lookup_elem(sites_fd, sprev, &s))
			continue;
		struct alloc_site_key sid = *sprev;
		const struct site_age *a = &ages[site_slot(ages, ages_size, &sid)];
		char comm[sizeof(s.comm) + 1];
		snprintf(comm, sizeof(comm), "%s", s.comm);
		allocs += s.allocs;
		alloc_bytes += s.alloc_bytes;
		uint64_t weight = (uint64_t)(s.bytes > 0 ? s.bytes : 0) * scale;
		uint64_t count = (uint64_t)(s.count > 0 ? s.count : 0) * scale;
		uint64_t ips[DIAG_STACK_DEPTH];
		uint8_t from[DIAG_STACK_DEPTH];
		size_t n;
		int added = site_python_stack(ap, p->cfg.filter.pid, stacks_fd, &sid, py_rec, ips, from, &n) == 0
				    ? stacks_add_user_ips(table, stacks_fd, p->cfg.filter.pid, comm, ips, from,
							  n, -1, false, weight, count, NULL)
				    : stacks_add_ids(table, stacks_fd, p->cfg.filter.pid, comm, sid.stack_id, -1,
						     false, weight, count, NULL);
		if (added)
			continue;
		uint64_t x[X_NR] = {
			[X_ALLOCS] = s.allocs * scale, [X_ALLOC_BYTES] = s.alloc_bytes * scale,
			[X_FREES] = s.frees * scale, [X_FREE_BYTES] = s.free_bytes * scale,
			[X_OLD_COUNT] = a->old_count * scale, [X_OLD_BYTES] = a->old_bytes * scale,
			[X_OLDEST_MS] = a->oldest_ts && a->oldest_ts < end ? (end - a->oldest_ts) / 1000000 : 0,
			[X_REALLOC_GROWTH] = s.realloc_growth > 0 ? (uint64_t)s.realloc_growth * scale : 0,
			[X_CHECKED] = a->checked * scale, [X_UNREF] = a->unref * scale,
			[X_UNREF_BYTES] = a->unref_bytes * scale, [X_HEAP_ONLY] = a->heap_only * scale,
			[X_CHECKED_BYTES] = a->checked_bytes * scale, [X_HEAP_ONLY_BYTES] = a->heap_only_bytes * scale,
			[X_UNREF_SEEN] = a->unref,
		};
		stacks_last_extra(table, x);
	}
	free(ages);
	free(py_rec);

	value_set_int(res, "allocs", (int64_t)(allocs * scale));
	value_set_int(res, "alloc_bytes", (int64_t)(alloc_bytes * scale));
	value_set_int(res, "frees_matched", (int64_t)(probe_percpu_sum(calls_fd, ALLOC_C_FREES_MATCHED) * scale));
	value_set_int(res, "outstanding_bytes", (int64_t)(out_bytes * scale));
	value_set_int(res, "outstanding_count", (int64_t)(out_count * scale));
	value_set_int(res, "old_bytes", (int64_t)(old_bytes * scale));
	value_set_int(res, "old_count", (int64_t)(old_count * scale));
	value_set_int(res, "dropped", (int64_t)(probe_percpu_sum(calls_fd, ALLOC_C_SITES_FULL) +
						  stacks_refused(table)));
	value_set_int(res, "lost_stacks", (int64_t)probe_stat_sum(obj, DIAG_STAT_LOST));
}

/* What the reference scan did (reach), when it was asked for. */
static void reach_result(const struct alloc_priv *ap, struct probe *p, struct value *res)
{
	if (!probe_opt(p, "reach_scan"))
		return;
	struct value *r = value_obj_set(res, "reach", value_obj());
	uint64_t unref = 0, heap_only = 0;
	for (size_t i = 0; i < ap->unref_size; i++) {
		unref += (ap->unref[i] & REACH_UNREF) != 0;
		heap_only += (ap->unref[i] & REACH_HEAP_ONLY) != 0;
	}
	bool ran = ap->unref_size > 0;
	value_set_bool(r, "complete", ran && ap->scan.complete);
	if (!ran)
		value_set_str(r, "why", ap->scan_error[0] ? ap->scan_error : "no block held since the window's first half to check");
	else if (!ap->scan.complete || ap->scan.undecided)
		value_set_str(r, "why", ap->scan.why);
	value_set_int(r, "checked_count", (int64_t)ap->checked);
	value_set_int(r, "unref_count", (int64_t)unref);
	value_set_int(r, "indirect_count", (int64_t)ap->indirect);
	value_set_int(r, "heap_only_count", (int64_t)heap_only);
	value_set_int(r, "undecided_count", (int64_t)ap->scan.undecided);
	value_set_int(r, "scanned_bytes", (int64_t)ap->scan.scanned_bytes);
	value_set_int(r, "mappings", (int64_t)ap->scan.mappings);
	value_set_int(r, "swapped_bytes", (int64_t)ap->scan.swapped_bytes);
	value_set_int(r, "shared_bytes", (int64_t)ap->scan.shared_bytes);
	value_set_num(r, "elapsed_ms", (double)ap->scan.elapsed_ns / 1e6);
}

static int alloc_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			 struct diag_err *err)
{
	struct alloc_priv *ap = p->priv;
	struct bpf_object *obj = ap->skel->obj;
	int calls_fd = bpf_map__fd(ap->skel->maps.calls);
	double scale = probe_scale(p);
	(void)err;
	if (scale < 1)
		scale = 1;

	/* The window the blocks were recorded in: the collection after the pre-flight. */
	uint64_t window_ns = ctx->wall_s > 0 ? (uint64_t)(ctx->wall_s * 1e9) : 0;
	uint64_t end = ap->detached_ns, mid = end - window_ns / 2;

	struct value *res = value_obj();
	struct stack_table *table = stacks_new(ctx, bpf_map__max_entries(ap->skel->maps.sites));
	stacks_set_extra(table, extra_names, extra_max, X_NR);
	if (ap->sampler)
		collect_dwarf(ap, p, scale, end, mid, table, res);
	else
		collect_fp(ap, p, scale, end, mid, table, res);
	value_set_str(res, "allocator", ap->path);
	value_set_str(res, "allocator_family", ap->family);
	value_set_str(res, "allocator_linked", ap->in_executable ? "executable" : "shared");
	struct value *fns = value_obj_set(res, "functions", value_arr());
	for (size_t i = 0; i < N_FUNCS; i++)
		if (ap->found[i])
			value_arr_push(fns, value_str(alloc_funcs[i].shown));
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_num(res, "window_s", (double)window_ns / 1e9);
	value_set_int(res, "alloc_calls", (int64_t)probe_percpu_sum(calls_fd, ALLOC_C_ALLOC_CALLS));
	value_set_int(res, "free_calls", (int64_t)probe_percpu_sum(calls_fd, ALLOC_C_FREE_CALLS));
	value_set_int(res, "frees_unknown", (int64_t)probe_percpu_sum(calls_fd, ALLOC_C_FREES_UNKNOWN));
	value_set_int(res, "failed", (int64_t)probe_percpu_sum(calls_fd, ALLOC_C_FAILED));
	value_set_int(res, "max_outstanding", (int64_t)probe_opt(p, "max_outstanding"));
	value_set_int(res, "untracked", (int64_t)probe_stat_sum(obj, DIAG_STAT_MAP_FULL));
	value_set_int(res, "unmatched_returns", (int64_t)probe_percpu_sum(calls_fd, ALLOC_C_NO_ENTRY));
	reach_result(ap, p, res);
	stack_sampler_report(ap->sampler, res, ap->skel->rodata->copy_bytes,
			     probe_percpu_sum(calls_fd, ALLOC_C_SENT), probe_percpu_sum(calls_fd, ALLOC_C_RING_FULL));
	stacks_finish(table, res, p->kind->stack_unit);
	*out = res;
	return 0;
}

static const struct result_field alloc_results[] = {
	{ "allocator", RT_STRING, NULL, false, "the file probed (as the target maps it): the one defining malloc" },
	{ "allocator_family", RT_STRING, NULL, false, "glibc, jemalloc, tcmalloc, mimalloc, or unknown (by the functions only that one defines)" },
	{ "allocator_linked", RT_STRING, NULL, false, "shared (a library the program maps) or executable (linked into the program)" },
	{ "functions", RT_ARRAY, NULL, false, "the functions probed in it (one name per address: aliases once)" },
	{ "functions[]", RT_STRING, NULL, false, "malloc, free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc; mallocx, rallocx, sdallocx, dallocx (jemalloc); mi_* (mimalloc); operator new/delete and their variants where the allocator defines them" },
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 allocation in N recorded, figures scaled by N" },
	{ "window_s", RT_NUMBER, "s", false, "how long blocks were recorded (the collection after the pre-flight)" },
	{ "alloc_calls", RT_INTEGER, "count", false, "allocating calls seen (all, sampled or not)" },
	{ "free_calls", RT_INTEGER, "count", false, "free calls seen, free(NULL) included" },
	{ "allocs", RT_INTEGER, "count", false, "blocks allocated in the window (scaled)" },
	{ "alloc_bytes", RT_INTEGER, "bytes", false, "bytes allocated in the window (scaled)" },
	{ "frees_matched", RT_INTEGER, "count", false, "blocks allocated in the window and freed in it (scaled)" },
	{ "frees_unknown", RT_INTEGER, "count", false, "frees of blocks not recorded: allocated before the window, not sampled or untracked" },
	{ "failed", RT_INTEGER, "count", false, "allocating calls that failed" },
	{ "outstanding_bytes", RT_INTEGER, "bytes", false, "allocated in the window and not freed by its end (scaled)" },
	{ "outstanding_count", RT_INTEGER, "count", false, "blocks of outstanding_bytes" },
	{ "old_bytes", RT_INTEGER, "bytes", false, "outstanding bytes allocated in the first half of the window" },
	{ "old_count", RT_INTEGER, "count", false, "blocks of old_bytes" },
	{ "max_outstanding", RT_INTEGER, "count", false, "blocks the probe can track at once" },
	{ "untracked", RT_INTEGER, "count", false, "blocks not tracked: max_outstanding was reached (or more than max_threads threads were in allocating calls at once)" },
	{ "dropped", RT_INTEGER, "count", false, "blocks not counted by stack: the sites map or the stack table was full" },
	{ "unmatched_returns", RT_INTEGER, "count", false, "returns without their entry (not sampled, nested calls)" },
	{ "lost_stacks", RT_INTEGER, "count", false, "stacks that could not be walked or stored (dwarf: held blocks whose stack never reached user space)" },
	{ "sample_bytes", RT_INTEGER, "bytes", true, "dwarf mode: a block was recorded with probability size / sample_bytes; figures scaled back" },
	{ "recorded", RT_INTEGER, "count", true, "dwarf mode: blocks recorded with their stack" },
	STACK_SAMPLER_RESULT_FIELDS,
	{ "reach", RT_OBJECT, NULL, true, "reach_scan: the scan of the target's writable memory for pointers to the blocks held since the window's first half" },
	{ "reach.complete", RT_BOOLEAN, NULL, false, "every resident page that could hold a pointer was read, in both scans (else no block is called lost)" },
	{ "reach.why", RT_STRING, NULL, true, "what was not scanned, when not complete; how many blocks were not decided, when some were not" },
	{ "reach.checked_count", RT_INTEGER, "count", false, "blocks checked (recorded ones, not scaled)" },
	{ "reach.unref_count", RT_INTEGER, "count", false, "of those, reached from no root and no unrecorded heap memory in either scan (no word points to them, or only words of lost blocks) and still held after: lost" },
	{ "reach.indirect_count", RT_INTEGER, "count", false, "of those lost, pointed to by lost blocks only (indirectly lost: a lost object's parts)" },
	{ "reach.heap_only_count", RT_INTEGER, "count", false, "of those, reached only from heap memory the probe did not record (blocks it did not sample or that predate the window): neither lost nor known in use" },
	{ "reach.undecided_count", RT_INTEGER, "count", true, "blocks listed (checked or not) the scans could not decide: over 8 listed blocks lay at one address (a target's own allocator reporting blocks inside blocks); counted as reached only from heap memory the probe did not record (heap_only_count): never lost" },
	{ "reach.scanned_bytes", RT_INTEGER, "bytes", false, "resident private writable memory read (first scan)" },
	{ "reach.mappings", RT_INTEGER, "count", false, "mappings examined" },
	{ "reach.swapped_bytes", RT_INTEGER, "bytes", false, "swapped out: not read (the scan is then incomplete)" },
	{ "reach.shared_bytes", RT_INTEGER, "bytes", false, "shared writable mappings: not scanned" },
	{ "reach.elapsed_ms", RT_NUMBER, "ms", false, "both scans" },
	STACK_RESULT_FIELDS,
	{ "stacks[].allocs", RT_INTEGER, "count", false, "blocks this stack allocated in the window" },
	{ "stacks[].alloc_bytes", RT_INTEGER, "bytes", false, "bytes this stack allocated in the window" },
	{ "stacks[].frees", RT_INTEGER, "count", false, "of those, blocks freed in the window" },
	{ "stacks[].free_bytes", RT_INTEGER, "bytes", false, "of those, bytes freed in the window" },
	{ "stacks[].old_count", RT_INTEGER, "count", false, "outstanding blocks allocated in the first half of the window" },
	{ "stacks[].old_bytes", RT_INTEGER, "bytes", false, "their bytes" },
	{ "stacks[].oldest_age_ms", RT_INTEGER, "ms", false, "age of its oldest outstanding block at the end" },
	{ "stacks[].checked_count", RT_INTEGER, "count", false, "its held blocks the reference scan checked (scaled)" },
	{ "stacks[].unref_count", RT_INTEGER, "count", false, "of those, lost: reached from nowhere in the process's memory" },
	{ "stacks[].unref_bytes", RT_INTEGER, "bytes", false, "their bytes" },
	{ "stacks[].heap_only_count", RT_INTEGER, "count", false, "of its checked blocks, reached only from heap memory the probe did not record: not known (scaled)" },
	{ "stacks[].checked_bytes", RT_INTEGER, "bytes", false, "the bytes of its checked blocks (scaled)" },
	{ "stacks[].heap_only_bytes", RT_INTEGER, "bytes", false, "the bytes of those not known (scaled)" },
	{ "stacks[].unref_seen", RT_INTEGER, "count", false, "its lost blocks the scan found, as recorded (not scaled): the evidence the lost figures rest on" },
	{ "stacks[].realloc_growth_bytes", RT_INTEGER, "bytes", false,
	  "what its reallocs grew blocks by (new size - old size, summed; 0 when they shrank): a buffer it grows" },
};
static const char *const alloc_features[] = { "btf", "uprobe", NULL };

const struct probe_kind probe_kind_allocations = {
	.name = "allocations",
	.summary = "heap blocks outstanding by allocating user stack (uprobes on malloc/free/...); "
		   "weight: bytes",
	.options = alloc_options,
	.n_options = ARRAY_LEN(alloc_options),
	.filters = FILTER_PID,
	.variants = alloc_variants,
	.private_size = sizeof(struct alloc_priv),
	.stack_unit = "bytes",
	.results = alloc_results,
	.n_results = ARRAY_LEN(alloc_results),
	.features = alloc_features,
	.load = alloc_load,
	.attach = alloc_attach,
	.detach = alloc_detach,
	.tick = alloc_tick,
	.wake_fd = alloc_wake_fd,
	.drain = alloc_drain,
	.collect = alloc_collect,
	.destroy = alloc_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = allocations_bpf__elf_bytes,
};
