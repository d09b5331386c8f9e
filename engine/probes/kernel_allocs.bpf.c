// SPDX-License-Identifier: GPL-2.0
/* kernel_allocs.bpf.c — the kernel's slab allocations by call site, and which of them are still
 * held at the end of the window: kmem:kmalloc and kmem:kmem_cache_alloc record (1 in N when
 * sampled) the block's address with its call site; kmem:kfree and kmem:kmem_cache_free forget it.
 *
 * Owns: per call site the allocations recorded and their bytes, the cache they came from (its
 * name for kmem_cache_alloc; kmalloc's size class is told by the object size), the frees of
 * recorded blocks; the blocks still recorded (address → site, bytes). On kernels whose
 * kmem_cache_alloc names no cache (6.1), such a site is marked unnamed instead.
 * Must not: filter by process (kernel memory is the machine's: the task allocating is incidental),
 * or lose a block silently: a full `live` map is counted (DIAG_STAT_PROBE_3), a full `sites` map
 * too (DIAG_STAT_MAP_FULL).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "abi/diag_bpf.h"

#define KA_CACHE_LEN 32

/* Same layouts as in engine/probes/kernel_allocs.c (checked at load). */
struct ka_site {
	__u64 allocs, bytes;     /* recorded allocations and their bytes (bytes_alloc) */
	__u64 frees, freed_bytes; /* frees of recorded blocks */
	__u32 object_size;        /* bytes_alloc of the first one */
	char cache[KA_CACHE_LEN]; /* kmem_cache_alloc's cache; "" for kmalloc */
	__u8 unnamed_cache;       /* kmem_cache_alloc on a kernel whose tracepoint names no cache */
};

struct ka_block {
	__u64 site;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, __u64);
	__type(value, struct ka_site);
} sites SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144); /* set from the recipe before load */
	__type(key, __u64);
	__type(value, struct ka_block);
} live SEC(".maps");

/* name_loc: kmem_cache_alloc's __data_loc of the cache name, 0 for kmalloc; unnamed: a
 * kmem_cache_alloc whose kernel records no name (before 6.2). */
static __always_inline int on_alloc(__u64 site, __u64 ptr, __u64 bytes, void *ctx, __u32 name_loc,
				    __u8 unnamed)
{
	if (!diag_admit(diag_count_only(), true))
		return 0;
	if (!ptr || !diag_sampled_in())
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	struct ka_site *s = bpf_map_lookup_elem(&sites, &site);
	if (!s) {
		struct ka_site init = { .object_size = (__u32)bytes, .unnamed_cache = unnamed };
		if (name_loc)
			bpf_probe_read_kernel_str(init.cache, sizeof(init.cache),
						  (char *)ctx + (name_loc & 0xFFFF));
		bpf_map_update_elem(&sites, &site, &init, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&sites, &site);
		if (!s) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return 0;
		}
	}
	__sync_fetch_and_add(&s->allocs, 1);
	__sync_fetch_and_add(&s->bytes, bytes);
	struct ka_block b = { .site = site, .bytes = bytes };
	if (bpf_map_update_elem(&live, &ptr, &b, BPF_ANY))
		diag_stat_inc(&stats, DIAG_STAT_PROBE_3); /* untracked */
	return 0;
}

static __always_inline int on_free(__u64 ptr)
{
	if (diag_count_only())
		return 0; /* a free is no event of its own: only its cost is counted */
	struct ka_block *b = bpf_map_lookup_elem(&live, &ptr);
	if (!b)
		return 0;
	struct ka_site *s = bpf_map_lookup_elem(&sites, &b->site);
	if (s) {
		__sync_fetch_and_add(&s->frees, 1);
		__sync_fetch_and_add(&s->freed_bytes, b->bytes);
	}
	bpf_map_delete_elem(&live, &ptr);
	return 0;
}

/* Before 6.1 (5.10 among them) the kmem events had the records of two event classes: kmem_alloc
 * (kmalloc, kmem_cache_alloc) and kmem_free (kfree, kmem_cache_free). */
struct trace_event_raw_kmem_alloc___old {
	unsigned long call_site;
	const void *ptr;
	size_t bytes_alloc;
} __attribute__((preserve_access_index));

struct trace_event_raw_kmem_free___old {
	const void *ptr;
} __attribute__((preserve_access_index));

static __always_inline int on_alloc_old(void *ctx, __u8 unnamed)
{
	struct trace_event_raw_kmem_alloc___old *o = ctx;
	return on_alloc(o->call_site, (__u64)o->ptr, o->bytes_alloc, ctx, 0, unnamed);
}

SEC("tracepoint/kmem/kmalloc")
int kalloc_kmalloc(void *ctx)
{
	struct trace_event_raw_kmalloc *k = ctx;
	if (!bpf_core_type_exists(struct trace_event_raw_kmalloc))
		return on_alloc_old(ctx, 0);
	return on_alloc(k->call_site, (__u64)k->ptr, k->bytes_alloc, ctx, 0, 0);
}

/* The cache's name is in the event since 6.2; 6.1's has none (and no kmem_cache pointer either): the
 * site is marked unnamed and the recipe matches it to a cache by object size. */
SEC("tracepoint/kmem/kmem_cache_alloc")
int kalloc_cache(void *ctx)
{
	struct trace_event_raw_kmem_cache_alloc *c = ctx;
	if (!bpf_core_type_exists(struct trace_event_raw_kmem_cache_alloc))
		return on_alloc_old(ctx, 1);
	if (!bpf_core_field_exists(c->__data_loc_name))
		return on_alloc(c->call_site, (__u64)c->ptr, c->bytes_alloc, ctx, 0, 1);
	return on_alloc(c->call_site, (__u64)c->ptr, c->bytes_alloc, ctx, c->__data_loc_name, 0);
}

SEC("tracepoint/kmem/kfree")
int kalloc_kfree(void *ctx)
{
	if (!bpf_core_type_exists(struct trace_event_raw_kfree))
		return on_free((__u64)((struct trace_event_raw_kmem_free___old *)ctx)->ptr);
	return on_free((__u64)((struct trace_event_raw_kfree *)ctx)->ptr);
}

SEC("tracepoint/kmem/kmem_cache_free")
int kalloc_cache_free(void *ctx)
{
	if (!bpf_core_type_exists(struct trace_event_raw_kmem_cache_free))
		return on_free((__u64)((struct trace_event_raw_kmem_free___old *)ctx)->ptr);
	return on_free((__u64)((struct trace_event_raw_kmem_cache_free *)ctx)->ptr);
}

char LICENSE[] SEC("license") = "GPL";
