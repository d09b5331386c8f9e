/* kernel_allocs.c — catalog entry for engine/probes/kernel_allocs.bpf.c: the kernel's slab allocations
 * (kmem:kmalloc, kmem:kmem_cache_alloc) by call site, 1 in N when sampled, and the blocks of each
 * site still held at the end of the window (kmem:kfree, kmem:kmem_cache_free forget a block).
 * What names the code that fills a slab cache that grows, on a host-wide memory-growth run.
 *
 * Owns: sizing and loading the object, attaching its four tracepoint programs, and turning the
 * maps into per-site results: the site's function (kernel symbols), its cache (kmem_cache_alloc's
 * name, or before 6.2 only that it came from one: `unnamed_cache`; kmalloc's size class from the
 * object size), allocations and frees recorded in the window, blocks and bytes still held, all
 * scaled by N when sampled.
 * Must not: filter by process (kernel memory is the machine's), judge what it counts (the recipe's
 * Lua does), or drop a block silently (a full map is counted: `untracked`, `dropped`).
 * Blocks allocated before the window are not recorded: their frees are not seen either.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "kernel_allocs.skel.h"
#include "symbolize/ksyms.h"

#define KA_CACHE_LEN 32

/* Same layouts as in engine/probes/kernel_allocs.bpf.c (checked at load). */
struct ka_site {
	uint64_t allocs, bytes;
	uint64_t frees, freed_bytes;
	uint32_t object_size;
	char cache[KA_CACHE_LEN];
	uint8_t unnamed_cache;
};
struct ka_block {
	uint64_t site;
	uint64_t bytes;
};

struct ka_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct kernel_allocs_bpf *skel;
};

PROBE_BPF_SKELETON(kernel_allocs)

static const struct option_spec ka_options[] = {
	{ .name = "max_live", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 262144,
	  .min = 1024, .max = 1u << 22, .bytes_per_entry = 8 + sizeof(struct ka_block) + 64,
	  .help = "recorded blocks held at once (beyond it new blocks are counted as untracked)" },
	{ .name = "max_sites", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 64, .max = 1u << 20, .bytes_per_entry = 8 + sizeof(struct ka_site) + 64,
	  .help = "distinct call sites (beyond it their allocations are counted as dropped)" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "record 1 allocation in N at random and scale the figures (the budget pre-flight "
		  "raises it when the recipe says degrade: sample)" },
	{ .name = "top_n", .type = OPT_UINT, .dflt = 32, .min = 1, .max = 4096,
	  .help = "call sites listed, most bytes held first" },
};

static const char *const ka_variants[] = { "tracepoint", NULL };

static int ka_load(struct probe *p, struct diag_err *err)
{
	struct ka_priv *kp = p->priv;
	if (!(kp->skel = kernel_allocs_skel_open(p, err)))
		return -1;
	if (bpf_map__value_size(kp->skel->maps.sites) != sizeof(struct ka_site) ||
	    bpf_map__value_size(kp->skel->maps.live) != sizeof(struct ka_block))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "internal: map layouts differ from the BPF side");
	bpf_map__set_max_entries(kp->skel->maps.live, (__u32)probe_opt(p, "max_live"));
	bpf_map__set_max_entries(kp->skel->maps.sites, (__u32)probe_opt(p, "max_sites"));
	int rc = kernel_allocs_bpf__load(kp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading the kmem tracepoint programs: %s",
				 strerror(-rc));
	p->variant = "tracepoint";
	return 0;
}

struct ka_row {
	uint64_t addr;
	struct ka_site s;
	uint64_t held, held_bytes; /* blocks recorded and not freed */
};

static int by_addr(const void *a, const void *b)
{
	const struct ka_row *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_held(const void *a, const void *b)
{
	const struct ka_row *x = a, *y = b;
	if (x->held_bytes != y->held_bytes)
		return x->held_bytes > y->held_bytes ? -1 : 1;
	if (x->s.bytes != y->s.bytes)
		return x->s.bytes > y->s.bytes ? -1 : 1;
	return by_addr(a, b);
}

static int ka_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		      struct diag_err *err)
{
	(void)err;
	struct ka_priv *kp = p->priv;
	int sfd = bpf_map__fd(kp->skel->maps.sites), lfd = bpf_map__fd(kp->skel->maps.live);
	size_t n = 0, cap = 64;
	struct ka_row *rows = xmalloc(cap * sizeof(*rows));
	uint64_t key, next;
	void *prev = NULL;
	while (bpf_map_get_next_key(sfd, prev, &next) == 0) {
		struct ka_site s;
		if (bpf_map_lookup_elem(sfd, &next, &s) == 0) {
			if (n == cap)
				rows = xrealloc(rows, (cap *= 2) * sizeof(*rows));
			rows[n++] = (struct ka_row){ .addr = next, .s = s };
		}
		key = next;
		prev = &key;
	}
	qsort(rows, n, sizeof(*rows), by_addr);
	prev = NULL;
	while (bpf_map_get_next_key(lfd, prev, &next) == 0) {
		struct ka_block b;
		if (bpf_map_lookup_elem(lfd, &next, &b) == 0) {
			struct ka_row want = { .addr = b.site };
			struct ka_row *r = bsearch(&want, rows, n, sizeof(*rows), by_addr);
			if (r) {
				r->held++;
				r->held_bytes += b.bytes;
			}
		}
		key = next;
		prev = &key;
	}
	qsort(rows, n, sizeof(*rows), by_held);

	double scale = probe_scale(p);
	struct value *res = value_obj();
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_int(res, "allocs", (int64_t)(probe_stat_sum(kp->skel->obj, DIAG_STAT_EVENTS) * scale));
	value_set_int(res, "untracked", (int64_t)(probe_stat_sum(kp->skel->obj, DIAG_STAT_PROBE_3) * scale));
	value_set_int(res, "dropped", (int64_t)(probe_stat_sum(kp->skel->obj, DIAG_STAT_MAP_FULL) * scale));
	value_set_int(res, "max_live", (int64_t)probe_opt(p, "max_live"));
	uint64_t held = 0, held_bytes = 0;
	for (size_t i = 0; i < n; i++) {
		held += rows[i].held;
		held_bytes += rows[i].held_bytes;
	}
	value_set_int(res, "held", (int64_t)(held * scale));
	value_set_int(res, "held_bytes", (int64_t)(held_bytes * scale));
	struct value *sites = value_obj_set(res, "sites", value_arr());
	uint64_t top = probe_opt(p, "top_n");
	for (size_t i = 0; i < n && i < top; i++) {
		const struct ka_row *r = &rows[i];
		struct value *o = value_arr_push(sites, value_obj());
		uint64_t off = 0;
		const char *sym = ctx->ksyms ? ksyms_lookup(ctx->ksyms, r->addr, &off) : NULL;
		char name[160];
		if (sym)
			snprintf(name, sizeof(name), "%s+0x%llx", sym, (unsigned long long)off);
		else
			snprintf(name, sizeof(name), "0x%llx", (unsigned long long)r->addr);
		value_set_str(o, "site", name);
		char cache[KA_CACHE_LEN + 1];
		snprintf(cache, sizeof(cache), "%.*s", KA_CACHE_LEN, r->s.cache);
		if (cache[0])
			value_set_str(o, "cache", cache);
		if (r->s.unnamed_cache)
			value_set_bool(o, "unnamed_cache", true);
		value_set_int(o, "object_size", r->s.object_size);
		value_set_int(o, "allocs", (int64_t)(r->s.allocs * scale));
		value_set_int(o, "alloc_bytes", (int64_t)(r->s.bytes * scale));
		value_set_int(o, "frees", (int64_t)(r->s.frees * scale));
		value_set_int(o, "held", (int64_t)(r->held * scale));
		value_set_int(o, "held_bytes", (int64_t)(r->held_bytes * scale));
	}
	free(rows);
	*out = res;
	return 0;
}

static const struct result_field ka_results[] = {
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 allocation in N recorded, figures scaled by N" },
	{ "allocs", RT_INTEGER, "count", false, "slab allocations (kmalloc + kmem_cache_alloc) in the window" },
	{ "untracked", RT_INTEGER, "count", false, "allocations whose block was not recorded: max_live was reached" },
	{ "dropped", RT_INTEGER, "count", false, "allocations not counted by site: max_sites was reached" },
	{ "max_live", RT_INTEGER, "count", false, "blocks the probe can record at once" },
	{ "held", RT_INTEGER, "count", false, "blocks allocated in the window and not freed by its end" },
	{ "held_bytes", RT_INTEGER, "bytes", false, "their bytes (bytes_alloc)" },
	{ "sites", RT_ARRAY, NULL, false, "call sites, most bytes held first, top_n" },
	{ "sites[]", RT_OBJECT, NULL, false, "one call site" },
	{ "sites[].site", RT_STRING, NULL, false, "the allocating kernel function and offset (\"shmem_alloc_inode+0x1a\"), or its address" },
	{ "sites[].cache", RT_STRING, NULL, true, "the cache kmem_cache_alloc took it from (absent for kmalloc: see object_size)" },
	{ "sites[].unnamed_cache", RT_BOOLEAN, NULL, true, "only before 6.2, whose kmem_cache_alloc names no cache: a cache's site with no name (tell it by object_size)" },
	{ "sites[].object_size", RT_INTEGER, "bytes", false, "bytes_alloc of its first allocation (kmalloc: the size class)" },
	{ "sites[].allocs", RT_INTEGER, "count", false, "allocations in the window" },
	{ "sites[].alloc_bytes", RT_INTEGER, "bytes", false, "their bytes" },
	{ "sites[].frees", RT_INTEGER, "count", false, "of those, freed in the window" },
	{ "sites[].held", RT_INTEGER, "count", false, "of those, still held at its end" },
	{ "sites[].held_bytes", RT_INTEGER, "bytes", false, "their bytes" },
};
static const char *const ka_features[] = { "btf", "tracefs", "tracepoint", NULL };

const struct probe_kind probe_kind_kernel_allocs = {
	.name = "kernel_allocs",
	.summary = "the kernel's slab allocations by call site and what each still holds at the end "
		   "(kmem:kmalloc, kmem:kmem_cache_alloc, their frees; machine-wide, 1 in N when sampled)",
	.options = ka_options,
	.n_options = ARRAY_LEN(ka_options),
	.filters = 0,
	.variants = ka_variants,
	.private_size = sizeof(struct ka_priv),
	.results = ka_results,
	.n_results = ARRAY_LEN(ka_results),
	.features = ka_features,
	.load = ka_load,
	.attach = probe_bpf_attach_all,
	.detach = probe_bpf_detach,
	.collect = ka_collect,
	.destroy = probe_bpf_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = kernel_allocs_bpf__elf_bytes,
};
