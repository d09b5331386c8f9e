/* kernel_memory.c — catalog entry without BPF: the kernel's own memory and the page cache over
 * the collection window, machine-wide. What memory-growth reads on a host-wide run: which slab
 * caches grew (/proc/slabinfo, readable by root only), and whether the working set still fits
 * (refaults, major faults, page-ins from /proc/vmstat; the page cache and the slab totals from
 * /proc/meminfo).
 *
 * Owns: reading those three files (and each memory cgroup's refault counter, to say whose working
 * set does not fit) when the probe attaches and again when it is collected, and
 * turning the two readings into deltas over the window (never the kernel's running averages).
 * Parsing is in engine/target/procfs.c (pure functions on text); this file only reads files and builds
 * results. A malformed slabinfo line is skipped and counted (`slab.malformed_lines`), never
 * fatal; an unreadable slabinfo leaves `slab` out and says why in `slab_error`.
 * Must not: attach anything to the kernel, filter by process (these files are the machine's),
 * or judge what it reads (lua/memory-growth.lua does).
 *
 * Results (gauges: the value at the end and its *_delta_*; counters: deltas over the window):
 *   wall_s, page_size,
 *   slab {caches, malformed_lines, overflow_lines, total_bytes, total_delta_bytes,
 *         grown [{name, bytes, delta_bytes, bytes_per_s, objects, objects_delta, object_size,
 *                 new (opt), reclaimable (opt)}] (most grown first, top_n),
 *         shrunk [same fields] (most shrunk first, top_n)}  (opt), slab_error (opt)
 *   vmstat {workingset_refault_file, workingset_refault_anon, workingset_activate_file,
 *           workingset_activate_anon, workingset_restore_file, pgmajfault, pgpgin, pgpgout, pswpin,
 *           pswpout, pgscan, pgsteal, allocstall} (each when the kernel has it)
 *   meminfo {mem_total_bytes, mem_free_bytes, mem_available_bytes, buffers_bytes, cached_bytes,
 *            active_file_bytes, inactive_file_bytes, active_anon_bytes, inactive_anon_bytes,
 *            anon_pages_bytes, shmem_bytes, slab_bytes, sreclaimable_bytes, sunreclaim_bytes,
 *            dirty_bytes, swap_total_bytes, swap_free_bytes, and NAME_delta_bytes for each}
 *   refault_cgroups [{path, version, refaults, limit_bytes (opt)}]: the memory cgroups whose
 *            refaults (memory.stat workingset_refault_file + _anon) grew in the window, most
 *            first, top_n (v1: the cgroup's own; v2: with its descendants); at most 4096
 *            cgroups, 8 levels deep, are read
 * The reference is schemas/recipe.md (probe kinds).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "target/procfs.h"

#define MAX_SLABS 1024

/* /proc/vmstat counters reported, kernel names. pgscan, pgsteal and allocstall are sums. */
static const char *const vmstat_names[] = {
	"workingset_refault_file", "workingset_refault_anon", "workingset_activate_file",
	"workingset_activate_anon", "workingset_restore_file", "pgmajfault", "pgpgin", "pgpgout",
	"pswpin", "pswpout",
};
#define N_VMSTAT (ARRAY_LEN(vmstat_names) + 3)
enum { VM_PGSCAN = ARRAY_LEN(vmstat_names), VM_PGSTEAL, VM_ALLOCSTALL };
static const char *const vmstat_sum_names[] = { "pgscan", "pgsteal", "allocstall" };

/* /proc/meminfo gauges: kernel key, result name. */
static const char *const meminfo_keys[][2] = {
	{ "MemTotal", "mem_total_bytes" },       { "MemFree", "mem_free_bytes" },
	{ "MemAvailable", "mem_available_bytes" }, { "Buffers", "buffers_bytes" },
	{ "Cached", "cached_bytes" },            { "Active(file)", "active_file_bytes" },
	{ "Inactive(file)", "inactive_file_bytes" }, { "Active(anon)", "active_anon_bytes" },
	{ "Inactive(anon)", "inactive_anon_bytes" }, { "AnonPages", "anon_pages_bytes" },
	{ "Shmem", "shmem_bytes" },              { "Slab", "slab_bytes" },
	{ "SReclaimable", "sreclaimable_bytes" }, { "SUnreclaim", "sunreclaim_bytes" },
	{ "Dirty", "dirty_bytes" },              { "SwapTotal", "swap_total_bytes" },
	{ "SwapFree", "swap_free_bytes" },
};
#define N_MEMINFO ARRAY_LEN(meminfo_keys)

struct kmem_reading {
	bool valid, has_slab;
	uint64_t at_ns;
	int slab_errno;
	struct procfs_slabinfo slabinfo;
	struct procfs_slab slabs[MAX_SLABS];
	uint64_t vm[N_VMSTAT], mem[N_MEMINFO];
	bool has_vm[N_VMSTAT], has_mem[N_MEMINFO];
};

/* A memory cgroup's refault counter at one reading. */
struct cg_refaults {
	char *path; /* below the hierarchy's root, "/" for the root itself */
	uint64_t refaults;
};
struct cg_list {
	struct cg_refaults *items;
	size_t n, cap;
};

#define CG_MAX 4096
#define CG_DEPTH 8

struct kmem_priv {
	uint64_t page_size;
	struct kmem_reading start, end;
	/* the memory hierarchy: v1 controller directory, else the v2 mount; "" when neither */
	char cg_root[64];
	int cg_version;
	struct cg_list cg_start, cg_end;
};

static const struct option_spec kmem_options[] = {
	{ .name = "top_n", .type = OPT_UINT, .dflt = 16, .min = 1, .max = 1000,
	  .help = "slab caches listed as grown and as shrunk, memory cgroups as refaulting" },
};
static const char *const kmem_variants[] = { "procfs", NULL };

static void read_vmstat(struct kmem_reading *r)
{
	char *text = read_file("/proc/vmstat", NULL);
	if (!text)
		return;
	for (size_t i = 0; i < ARRAY_LEN(vmstat_names); i++)
		r->has_vm[i] = procfs_key_u64(text, vmstat_names[i], &r->vm[i]);
	/* before 5.9 file refaults were the only ones: "workingset_refault" */
	if (!r->has_vm[0])
		r->has_vm[0] = procfs_key_u64(text, "workingset_refault", &r->vm[0]);
	if (!r->has_vm[4])
		r->has_vm[4] = procfs_key_u64(text, "workingset_restore", &r->vm[4]);
	uint64_t a, b;
	bool ha = procfs_key_u64(text, "pgscan_kswapd", &a), hb = procfs_key_u64(text, "pgscan_direct", &b);
	r->has_vm[VM_PGSCAN] = ha || hb;
	r->vm[VM_PGSCAN] = (ha ? a : 0) + (hb ? b : 0);
	ha = procfs_key_u64(text, "pgsteal_kswapd", &a);
	hb = procfs_key_u64(text, "pgsteal_direct", &b);
	r->has_vm[VM_PGSTEAL] = ha || hb;
	r->vm[VM_PGSTEAL] = (ha ? a : 0) + (hb ? b : 0);
	r->vm[VM_ALLOCSTALL] = procfs_sum_prefixed(text, "allocstall_", &r->has_vm[VM_ALLOCSTALL]);
	free(text);
}

static void read_meminfo(struct kmem_reading *r)
{
	char *text = read_file("/proc/meminfo", NULL);
	if (!text)
		return;
	for (size_t i = 0; i < N_MEMINFO; i++)
		r->has_mem[i] = procfs_key_u64(text, meminfo_keys[i][0], &r->mem[i]);
	free(text);
}

static void take_reading(struct kmem_reading *r)
{
	memset(r, 0, sizeof(*r));
	char *text = read_file("/proc/slabinfo", NULL);
	if (!text)
		r->slab_errno = errno ? errno : EIO;
	else if (procfs_parse_slabinfo(text, r->slabs, MAX_SLABS, &r->slabinfo) < 0)
		r->slab_errno = EPROTO; /* not slabinfo 2.x */
	else
		r->has_slab = true;
	free(text);
	read_vmstat(r);
	read_meminfo(r);
	r->at_ns = mono_ns();
	r->valid = true;
}

/* ---- memory cgroups' refaults ------------------------------------------------------------- */

static void cg_list_free(struct cg_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i].path);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/* Reads DIR/memory.stat's refaults and recurses into the subdirectories (cgroups). */
static void cg_walk(struct kmem_priv *kp, struct cg_list *l, const char *rel, int depth)
{
	char dir[4096], path[4160];
	if (snprintf(dir, sizeof(dir), "%s%s", kp->cg_root, rel) >= (int)sizeof(dir) || l->n >= CG_MAX)
		return;
	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	char *text = read_file(path, NULL);
	if (text) {
		uint64_t f = 0, a = 0;
		bool hf = procfs_key_u64(text, "workingset_refault_file", &f);
		bool ha = procfs_key_u64(text, "workingset_refault_anon", &a);
		if (!hf) /* before 5.9 */
			hf = procfs_key_u64(text, "workingset_refault", &f);
		free(text);
		if (hf || ha) {
			if (l->n == l->cap) {
				l->cap = l->cap ? l->cap * 2 : 64;
				l->items = xrealloc(l->items, l->cap * sizeof(*l->items));
			}
			l->items[l->n++] = (struct cg_refaults){ xstrdup(rel[0] ? rel : "/"), f + a };
		}
	}
	if (depth >= CG_DEPTH)
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d)) && l->n < CG_MAX;) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		char sub[4096];
		if (snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) < (int)sizeof(sub))
			cg_walk(kp, l, sub, depth + 1);
	}
	closedir(d);
}

static void cg_read(struct kmem_priv *kp, struct cg_list *l)
{
	cg_list_free(l);
	if (kp->cg_root[0])
		cg_walk(kp, l, "", 0);
}

struct cg_change {
	const char *path;
	int64_t delta;
};

static int by_refaults(const void *x, const void *y)
{
	const struct cg_change *a = x, *b = y;
	if (a->delta != b->delta)
		return a->delta > b->delta ? -1 : 1;
	return strcmp(a->path, b->path);
}

static struct value *cg_results(const struct kmem_priv *kp, size_t top_n)
{
	struct value *arr = value_arr();
	const struct cg_list *a = &kp->cg_start, *b = &kp->cg_end;
	struct cg_change *ch = xcalloc(b->n ? b->n : 1, sizeof(*ch));
	size_t n = 0;
	for (size_t i = 0; i < b->n; i++) {
		const struct cg_refaults *x = NULL;
		if (i < a->n && !strcmp(a->items[i].path, b->items[i].path))
			x = &a->items[i];
		for (size_t j = 0; !x && j < a->n; j++)
			if (!strcmp(a->items[j].path, b->items[i].path))
				x = &a->items[j];
		/* a cgroup created during the window counts from zero */
		uint64_t before = x ? x->refaults : 0;
		if (b->items[i].refaults > before)
			ch[n++] = (struct cg_change){ b->items[i].path, (int64_t)(b->items[i].refaults - before) };
	}
	qsort(ch, n, sizeof(*ch), by_refaults);
	for (size_t i = 0; i < n && i < top_n; i++) {
		struct value *o = value_arr_push(arr, value_obj());
		value_set_str(o, "path", ch[i].path);
		value_set_int(o, "version", kp->cg_version);
		value_set_int(o, "refaults", ch[i].delta);
		char lim[4200];
		snprintf(lim, sizeof(lim), "%s%s/%s", kp->cg_root, strcmp(ch[i].path, "/") ? ch[i].path : "",
			 kp->cg_version == 1 ? "memory.limit_in_bytes" : "memory.max");
		char *text = read_file(lim, NULL);
		uint64_t bytes;
		bool unlimited;
		if (text && procfs_parse_limit(text, &bytes, &unlimited) == 0 && !unlimited)
			value_set_int(o, "limit_bytes", (int64_t)bytes);
		free(text);
	}
	free(ch);
	return arr;
}

/* ---- probe operations --------------------------------------------------------------------- */

static int kmem_load(struct probe *p, struct diag_err *err)
{
	(void)err;
	struct kmem_priv *kp = p->priv;
	long ps = sysconf(_SC_PAGESIZE);
	kp->page_size = ps > 0 ? (uint64_t)ps : 4096;
	if (access("/sys/fs/cgroup/memory/memory.stat", R_OK) == 0) {
		snprintf(kp->cg_root, sizeof(kp->cg_root), "/sys/fs/cgroup/memory");
		kp->cg_version = 1;
	} else if (access("/sys/fs/cgroup/cgroup.controllers", R_OK) == 0) {
		snprintf(kp->cg_root, sizeof(kp->cg_root), "/sys/fs/cgroup");
		kp->cg_version = 2;
	}
	p->variant = "procfs";
	return 0;
}

static int kmem_attach(struct probe *p, struct diag_err *err)
{
	(void)err;
	struct kmem_priv *kp = p->priv;
	take_reading(&kp->start);
	cg_read(kp, &kp->cg_start);
	return 0;
}

/* ---- results ------------------------------------------------------------------------------ */

struct slab_change {
	const struct procfs_slab *a, *b; /* a NULL: the cache appeared during the window */
	int64_t delta;
};

static int by_growth(const void *x, const void *y)
{
	const struct slab_change *a = x, *b = y;
	if (a->delta != b->delta)
		return a->delta > b->delta ? -1 : 1;
	return strcmp(a->b->name, b->b->name);
}

/* The cache of the start reading that is `s` at the end: same index when the names agree (the
 * order is stable), else the first of that name. */
static const struct procfs_slab *slab_before(const struct kmem_reading *a, size_t i,
					     const struct procfs_slab *s)
{
	if (i < a->slabinfo.n && strcmp(a->slabs[i].name, s->name) == 0)
		return &a->slabs[i];
	for (size_t j = 0; j < a->slabinfo.n; j++)
		if (strcmp(a->slabs[j].name, s->name) == 0)
			return &a->slabs[j];
	return NULL;
}

/* /sys/kernel/slab/NAME/reclaim_account (SLUB): 1 when the kernel may reclaim the cache's objects
 * under pressure (dentries, inodes); -1 when unknown. */
static int slab_reclaimable(const char *name)
{
	if (!name[0] || strchr(name, '/') || name[0] == '.')
		return -1;
	char path[128];
	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/reclaim_account", name);
	char *text = read_file(path, NULL);
	if (!text)
		return -1;
	int v = text[0] == '1' ? 1 : text[0] == '0' ? 0 : -1;
	free(text);
	return v;
}

static void slab_item(struct value *arr, const struct slab_change *c, uint64_t page_size,
		      double wall)
{
	struct value *o = value_arr_push(arr, value_obj());
	const struct procfs_slab *b = c->b;
	value_set_str(o, "name", b->name);
	value_set_int(o, "bytes", (int64_t)procfs_slab_bytes(b, page_size));
	value_set_int(o, "delta_bytes", c->delta);
	value_set_num(o, "bytes_per_s", wall > 0 ? (double)c->delta / wall : 0);
	value_set_int(o, "objects", (int64_t)b->active_objs);
	value_set_int(o, "objects_delta", (int64_t)b->active_objs - (int64_t)(c->a ? c->a->active_objs : 0));
	value_set_int(o, "object_size", (int64_t)b->objsize);
	if (!c->a)
		value_set_bool(o, "new", true);
	int rec = slab_reclaimable(b->name);
	if (rec >= 0)
		value_set_bool(o, "reclaimable", rec == 1);
}

static struct value *slab_results(const struct kmem_priv *kp, double wall, size_t top_n)
{
	const struct kmem_reading *a = &kp->start, *b = &kp->end;
	struct value *s = value_obj();
	value_set_int(s, "caches", (int64_t)b->slabinfo.n);
	value_set_int(s, "malformed_lines", (int64_t)(a->slabinfo.malformed + b->slabinfo.malformed));
	value_set_int(s, "overflow_lines", (int64_t)(a->slabinfo.overflow + b->slabinfo.overflow));
	struct slab_change *ch = xcalloc(b->slabinfo.n ? b->slabinfo.n : 1, sizeof(*ch));
	uint64_t total_a = 0, total_b = 0;
	for (size_t i = 0; i < a->slabinfo.n; i++)
		total_a += procfs_slab_bytes(&a->slabs[i], kp->page_size);
	for (size_t i = 0; i < b->slabinfo.n; i++) {
		const struct procfs_slab *y = &b->slabs[i], *x = slab_before(a, i, y);
		uint64_t by = procfs_slab_bytes(y, kp->page_size);
		total_b += by;
		ch[i] = (struct slab_change){ x, y, (int64_t)by - (int64_t)(x ? procfs_slab_bytes(x, kp->page_size) : 0) };
	}
	value_set_int(s, "total_bytes", (int64_t)total_b);
	value_set_int(s, "total_delta_bytes", (int64_t)total_b - (int64_t)total_a);
	qsort(ch, b->slabinfo.n, sizeof(*ch), by_growth);
	struct value *grown = value_obj_set(s, "grown", value_arr());
	for (size_t i = 0, k = 0; i < b->slabinfo.n && k < top_n && ch[i].delta > 0; i++, k++)
		slab_item(grown, &ch[i], kp->page_size, wall);
	struct value *shrunk = value_obj_set(s, "shrunk", value_arr());
	for (size_t i = b->slabinfo.n, k = 0; i-- > 0 && k < top_n && ch[i].delta < 0; k++)
		slab_item(shrunk, &ch[i], kp->page_size, wall);
	free(ch);
	return s;
}

static int kmem_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	(void)ctx;
	struct kmem_priv *kp = p->priv;
	if (!kp->start.valid)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "kernel_memory: no first reading");
	take_reading(&kp->end);
	cg_read(kp, &kp->cg_end);
	const struct kmem_reading *a = &kp->start, *b = &kp->end;
	double wall = (double)(b->at_ns - a->at_ns) / 1e9;
	struct value *res = value_obj();
	value_set_num(res, "wall_s", wall);
	value_set_int(res, "page_size", (int64_t)kp->page_size);
	if (a->has_slab && b->has_slab)
		value_obj_set(res, "slab", slab_results(kp, wall, probe_opt(p, "top_n")));
	else {
		char why[160];
		int e = a->has_slab ? b->slab_errno : a->slab_errno;
		snprintf(why, sizeof(why), "/proc/slabinfo: %s",
			 e == EPROTO ? "not slabinfo version 2" : strerror(e));
		value_set_str(res, "slab_error", why);
	}
	struct value *vm = value_obj_set(res, "vmstat", value_obj());
	for (size_t i = 0; i < N_VMSTAT; i++) {
		if (!a->has_vm[i] || !b->has_vm[i])
			continue;
		const char *name = i < ARRAY_LEN(vmstat_names) ? vmstat_names[i]
							       : vmstat_sum_names[i - ARRAY_LEN(vmstat_names)];
		value_set_int(vm, name, b->vm[i] >= a->vm[i] ? (int64_t)(b->vm[i] - a->vm[i]) : 0);
	}
	struct value *mem = value_obj_set(res, "meminfo", value_obj());
	for (size_t i = 0; i < N_MEMINFO; i++) {
		if (!a->has_mem[i] || !b->has_mem[i])
			continue;
		const char *name = meminfo_keys[i][1];
		value_set_int(mem, name, (int64_t)b->mem[i]);
		char dname[64]; /* "cached_bytes" -> "cached_delta_bytes" */
		snprintf(dname, sizeof(dname), "%.*s_delta_bytes", (int)(strlen(name) - strlen("_bytes")), name);
		value_set_int(mem, dname, (int64_t)b->mem[i] - (int64_t)a->mem[i]);
	}
	if (kp->cg_root[0])
		value_obj_set(res, "refault_cgroups", cg_results(kp, probe_opt(p, "top_n")));
	*out = res;
	return 0;
}

/* ---- results declared (catalog.h: struct result_field) --------------------------------------- */

#define SLAB_ITEM_FIELDS(name)                                                                    \
	{ name, RT_ARRAY, NULL, false, "slab caches, top_n at most" },                            \
	{ name "[]", RT_OBJECT, NULL, false, "one cache" },                                        \
	{ name "[].name", RT_STRING, NULL, false, "the cache's name in /proc/slabinfo" },          \
	{ name "[].bytes", RT_INTEGER, "bytes", false, "its slabs' memory at the end" },            \
	{ name "[].delta_bytes", RT_INTEGER, "bytes", false, "change over the window" },           \
	{ name "[].bytes_per_s", RT_NUMBER, "bytes_per_s", false, "delta_bytes over wall_s" },      \
	{ name "[].objects", RT_INTEGER, "count", false, "active objects at the end" },             \
	{ name "[].objects_delta", RT_INTEGER, "count", false, "change of active objects" },        \
	{ name "[].object_size", RT_INTEGER, "bytes", false, "size of one object" },               \
	{ name "[].new", RT_BOOLEAN, NULL, true, "the cache appeared during the window" },         \
	{ name "[].reclaimable", RT_BOOLEAN, NULL, true, "/sys/kernel/slab/NAME/reclaim_account: reclaimed under memory pressure (dentries, inodes)" }

#define MEMINFO_FIELD(key, name)                                                                  \
	{ "meminfo." name "_bytes", RT_INTEGER, "bytes", true, key " at the end" },                 \
	{ "meminfo." name "_delta_bytes", RT_INTEGER, "bytes", true, key " change over the window" }

static const struct result_field kmem_results[] = {
	{ "wall_s", RT_NUMBER, "s", false, "the window: first to last reading" },
	{ "page_size", RT_INTEGER, "bytes", false, "the machine's page size" },
	{ "slab", RT_OBJECT, NULL, true, "/proc/slabinfo deltas (absent when unreadable: slab_error)" },
	{ "slab.caches", RT_INTEGER, "count", false, "caches read at the end" },
	{ "slab.malformed_lines", RT_INTEGER, "count", false, "lines skipped in both readings: not a cache line" },
	{ "slab.overflow_lines", RT_INTEGER, "count", false, "cache lines past the 1024 read" },
	{ "slab.total_bytes", RT_INTEGER, "bytes", false, "all caches' slabs at the end" },
	{ "slab.total_delta_bytes", RT_INTEGER, "bytes", false, "its change over the window" },
	SLAB_ITEM_FIELDS("slab.grown"),
	SLAB_ITEM_FIELDS("slab.shrunk"),
	{ "slab_error", RT_STRING, NULL, true, "why /proc/slabinfo was not read (it is root's only)" },
	{ "vmstat", RT_OBJECT, NULL, false, "/proc/vmstat counters, deltas over the window" },
	{ "vmstat.workingset_refault_file", RT_INTEGER, "count", true, "file pages read again soon after eviction (before 5.9: workingset_refault)" },
	{ "vmstat.workingset_refault_anon", RT_INTEGER, "count", true, "anonymous pages swapped in again soon after eviction" },
	{ "vmstat.workingset_activate_file", RT_INTEGER, "count", true, "refaulted file pages activated at once" },
	{ "vmstat.workingset_activate_anon", RT_INTEGER, "count", true, "refaulted anonymous pages activated at once" },
	{ "vmstat.workingset_restore_file", RT_INTEGER, "count", true, "refaulted file pages that had been active" },
	{ "vmstat.pgmajfault", RT_INTEGER, "count", true, "major faults (a page read from disk)" },
	{ "vmstat.pgpgin", RT_INTEGER, "kb", true, "KiB paged in from disk" },
	{ "vmstat.pgpgout", RT_INTEGER, "kb", true, "KiB paged out to disk" },
	{ "vmstat.pswpin", RT_INTEGER, "count", true, "pages swapped in" },
	{ "vmstat.pswpout", RT_INTEGER, "count", true, "pages swapped out" },
	{ "vmstat.pgscan", RT_INTEGER, "count", true, "pages scanned by reclaim (kswapd + direct)" },
	{ "vmstat.pgsteal", RT_INTEGER, "count", true, "pages reclaimed (kswapd + direct)" },
	{ "vmstat.allocstall", RT_INTEGER, "count", true, "allocations that stalled in direct reclaim (all zones)" },
	{ "meminfo", RT_OBJECT, NULL, false, "/proc/meminfo gauges at the end, with their change" },
	MEMINFO_FIELD("MemTotal", "mem_total"),
	MEMINFO_FIELD("MemFree", "mem_free"),
	MEMINFO_FIELD("MemAvailable", "mem_available"),
	MEMINFO_FIELD("Buffers", "buffers"),
	MEMINFO_FIELD("Cached (page cache)", "cached"),
	MEMINFO_FIELD("Active(file)", "active_file"),
	MEMINFO_FIELD("Inactive(file)", "inactive_file"),
	MEMINFO_FIELD("Active(anon)", "active_anon"),
	MEMINFO_FIELD("Inactive(anon)", "inactive_anon"),
	MEMINFO_FIELD("AnonPages", "anon_pages"),
	MEMINFO_FIELD("Shmem", "shmem"),
	MEMINFO_FIELD("Slab", "slab"),
	MEMINFO_FIELD("SReclaimable", "sreclaimable"),
	MEMINFO_FIELD("SUnreclaim", "sunreclaim"),
	MEMINFO_FIELD("Dirty", "dirty"),
	MEMINFO_FIELD("SwapTotal", "swap_total"),
	MEMINFO_FIELD("SwapFree", "swap_free"),
	{ "refault_cgroups", RT_ARRAY, NULL, true, "memory cgroups whose refaults grew, most first (absent without a memory hierarchy)" },
	{ "refault_cgroups[]", RT_OBJECT, NULL, false, "one memory cgroup" },
	{ "refault_cgroups[].path", RT_STRING, NULL, false, "below the hierarchy's root (\"/\": the root)" },
	{ "refault_cgroups[].version", RT_INTEGER, NULL, false, "cgroup version, 1 or 2" },
	{ "refault_cgroups[].refaults", RT_INTEGER, "count", false, "memory.stat workingset_refault_file + _anon, delta (v1: its own; v2: with its descendants)" },
	{ "refault_cgroups[].limit_bytes", RT_INTEGER, "bytes", true, "its memory limit at the end, when set" },
};
/* No BPF: /proc only. */
static const char *const kmem_features[] = { NULL };

static void kmem_destroy(struct probe *p)
{
	struct kmem_priv *kp = p->priv;
	if (!kp)
		return;
	cg_list_free(&kp->cg_start);
	cg_list_free(&kp->cg_end);
}
static struct bpf_object *kmem_object(struct probe *p) { (void)p; return NULL; }

const struct probe_kind probe_kind_kernel_memory = {
	.name = "kernel_memory",
	.summary = "The kernel's slab caches and the page cache over the window, machine-wide "
		   "(/proc/slabinfo, /proc/vmstat, /proc/meminfo)",
	.options = kmem_options,
	.n_options = ARRAY_LEN(kmem_options),
	.filters = 0,
	.variants = kmem_variants,
	.private_size = sizeof(struct kmem_priv),
	.results = kmem_results,
	.n_results = ARRAY_LEN(kmem_results),
	.features = kmem_features,
	.load = kmem_load,
	.attach = kmem_attach,
	.collect = kmem_collect,
	.destroy = kmem_destroy,
	.object = kmem_object,
};
