// SPDX-License-Identifier: GPL-2.0
/* allocations.bpf.c — the target's heap allocations by call path, from uprobes on the allocator
 * it maps (malloc, calloc, realloc, reallocarray, free, memalign, aligned_alloc, posix_memalign,
 * valloc; jemalloc's mallocx, rallocx, sdallocx, dallocx; C++'s operator new and delete where the
 * allocator defines them — allocations.c says which program each gets): each
 * block recorded at the return of the allocating call (address → size, time, user stack) and
 * dropped when freed, so that what is still outstanding at the end, and since when, is known per
 * stack.
 *
 * Owns: the per-thread pending call (entry → return: the size and, for realloc, the old block),
 * the 1-in-N sampling decided at entry, the user stack taken at the *return* (at the entry of a
 * function the frame-pointer walk has not seen its caller's frame yet), realloc moving ownership
 * (the old block freed when the call succeeds), and the per-stack totals.
 * Must not: guess or lose silently: a block the `blocks` map cannot hold, a stack the `sites` map
 * cannot hold, a free of a block never seen, a return without its entry and a stack walk that
 * fails are all counted; no per-event output (the maps are read at the end).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "probes/allocations.h"
#include "abi/diag_python.h"
#include "abi/diag_unwind.h"

/* The allocator is glibc's: a block's usable size is in the chunk header before it (size | flags;
 * the size counts the 8-byte header, mmapped chunks another 8). */
const volatile bool glibc_chunks = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, __u32);        /* thread id */
	__type(value, struct alloc_pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 131072); /* set from the recipe before load */
	__type(key, __u64);          /* block address */
	__type(value, struct alloc_block);
} blocks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* set from the recipe before load */
	__type(key, struct alloc_site_key);
	__type(value, struct alloc_site);
} sites SEC(".maps");

/* dwarf mode (sample_bytes > 0): the stacks of the blocks recorded go to user space, each with
 * its registers and a copy of the stack (the ring `samples`, DIAG_UNWIND_MAPS), to be unwound by
 * CFI there (real programs' allocating paths are frameless: Debian builds without frame
 * pointers); a block is recorded with probability size / sample_bytes (1 when larger: a
 * Poisson sample by bytes, as tcmalloc's and jemalloc's heap profilers do; at least 1 in
 * ALLOC_MIN_EVERY however small), its cookie keeps it
 * with its stack. fp mode (0): every block, per site keyed by the frame-pointer stack. */
const volatile __u64 sample_bytes = 0;
DIAG_UNWIND_MAPS;

/* The blocks recorded, counted: a block's cookie. An atomic fetch-and-add (Linux 5.12), which the
 * twins for older kernels (compat: before 5.17) cannot have even unreached; they count per CPU, a
 * cookie being its CPU (high 16 bits, plus one: never 0) and that count — there a uprobe program
 * never interleaves with another on its CPU (bpf_prog_active skips the second; from 6.0 uprobe
 * programs can be preempted, which is why the others take the atomic). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} next_cookie SEC(".maps");
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} next_cookie_cpu SEC(".maps");

/* A CPython target (py_walk): the Python frames of each allocation, by their hash. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192); /* set from the recipe before load (max_stacks) */
	__type(key, __u64);
	__type(value, struct diag_py_rec);
} py_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, DIAG_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 8192); /* set from the recipe before load */
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ALLOC_C_NR);
	__type(key, __u32);
	__type(value, __u64);
} calls SEC(".maps");

static __always_inline void count(__u32 slot)
{
	diag_stat_inc(&calls, slot);
}

/* An allocating call's entry: remembers what the return needs. */
static __always_inline int on_alloc_entry(__u32 fn, __u64 size, __u64 arg)
{
	bool count_only = diag_count_only();
	/* an allocator call: the event this probe pays for */
	if (!diag_admit(count_only, diag_current_wanted()))
		return 0;
	count(ALLOC_C_ALLOC_CALLS);
	bool sampled = diag_sampled_in();
	if (sampled && sample_bytes && size < sample_bytes) {
		/* at least 1 block in ALLOC_MIN_EVERY however small (a lost object's small head) */
		__u64 floor = sample_bytes / ALLOC_MIN_EVERY, odds = size > floor ? size : floor;
		sampled = (__u64)bpf_get_prandom_u32() % sample_bytes < odds;
	}
	/* realloc frees its old block whether or not the new one is sampled */
	if (!sampled && fn != ALLOC_FN_REALLOC)
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct alloc_pending p = { .size = size, .arg = arg, .fn = fn, .sampled = sampled };
	if (fn == ALLOC_FN_REALLOC && arg && glibc_chunks) {
		__u64 hdr = 0;
		if (bpf_probe_read_user(&hdr, sizeof(hdr), (void *)(arg - 8)) == 0 && hdr > 16)
			p.old_size = (hdr & ~7ULL) - ((hdr & 2) ? 16 : 8);
	}
	if (bpf_map_update_elem(&pending, &tid, &p, BPF_ANY))
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
	return 0;
}

/* Forgets a freed block; returns its recorded size, 0 when it was not recorded. */
static __always_inline __u64 free_block(__u64 addr)
{
	struct alloc_block *b = bpf_map_lookup_elem(&blocks, &addr);
	if (!b) {
		count(ALLOC_C_FREES_UNKNOWN);
		return 0;
	}
	__u64 size = b->size;
	struct alloc_site_key sid = b->site;
	if (bpf_map_delete_elem(&blocks, &addr)) /* another CPU freed it meanwhile */
		return 0;
	count(ALLOC_C_FREES_MATCHED);
	if (sample_bytes)
		return size;
	struct alloc_site *s = bpf_map_lookup_elem(&sites, &sid);
	if (!s)
		return size;
	__sync_fetch_and_add(&s->bytes, -(__s64)size);
	__sync_fetch_and_add(&s->count, -1);
	__sync_fetch_and_add(&s->frees, 1);
	__sync_fetch_and_add(&s->free_bytes, size);
	return size;
}

/* dwarf mode: the block under a new cookie, its stack sent with that cookie (weight: its size). */
/* compat: in the twins (diag_bpf.h's DIAG_COMPAT_SUFFIX), without the Python walk. */
static __always_inline void record_sampled_block(__u64 addr, struct alloc_block *b, __s64 growth,
						 const bool compat)
{
	__u32 zero = 0;
	__u64 *next = bpf_map_lookup_elem(compat ? (void *)&next_cookie_cpu : (void *)&next_cookie, &zero);
	if (!next)
		return;
	if (compat) {
		__u64 n = *next + 1;
		*next = n;
		b->cookie = ((__u64)(bpf_get_smp_processor_id() + 1) << 48) | (n & 0xffffffffffffull);
	} else {
		b->cookie = __sync_fetch_and_add(next, 1) + 1;
	}
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	if (bpf_map_update_elem(&blocks, &addr, b, BPF_ANY)) {
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
		return;
	}
	__u64 id = bpf_get_current_pid_tgid();
	char comm[16];
	bpf_get_current_comm(comm, sizeof(comm));
	struct diag_user_sample *smp = diag_fill_user_sample(&scratch, copy_bytes, id >> 32, comm, -1, -1,
							     b->size, 0, b->cookie);
	if (smp) {
		diag_restore_uretprobe_returns(smp);
		smp->aux = growth;
	}
	if (smp && diag_output_user_sample(&samples, smp, wake_bytes, DIAG_PY_MAPS_ARGS_IF(!compat)) == 0)
		count(ALLOC_C_SENT);
	else
		count(ALLOC_C_RING_FULL);
}

/* growth: a realloc's new size minus its old block's (0 for the other calls). */
static __always_inline void record_block(void *ctx, __u64 addr, __u64 size, __s64 growth,
					 const bool compat)
{
	struct alloc_block b = { .size = size, .ts = bpf_ktime_get_ns() };
	if (sample_bytes) {
		record_sampled_block(addr, &b, growth, compat);
		return;
	}
	b.site.stack_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (b.site.stack_id < 0)
		diag_stat_inc(&stats, DIAG_STAT_LOST);
	if (py_walk && !compat) { /* the uretprobe runs in the allocating thread: its Python frames */
		__u64 id = bpf_get_current_pid_tgid();
		struct diag_py_rec *py = diag_py_walk(&py_procs, &py_tstates, &py_scratch, id >> 32,
						      (__u32)id);
		if (py && py->hash) {
			b.site.py_id = py->hash;
			bpf_map_update_elem(&py_stacks, &b.site.py_id, py, BPF_NOEXIST);
		}
	}
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	if (bpf_map_update_elem(&blocks, &addr, &b, BPF_ANY)) {
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL); /* not tracked: its free will be unknown */
		return;
	}
	struct alloc_site *s = bpf_map_lookup_elem(&sites, &b.site);
	if (!s) {
		struct alloc_site zero = {};
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
		bpf_map_update_elem(&sites, &b.site, &zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&sites, &b.site);
		if (!s) {
			count(ALLOC_C_SITES_FULL);
			return;
		}
	}
	__sync_fetch_and_add(&s->bytes, size);
	__sync_fetch_and_add(&s->count, 1);
	__sync_fetch_and_add(&s->allocs, 1);
	__sync_fetch_and_add(&s->alloc_bytes, size);
	if (growth)
		__sync_fetch_and_add(&s->realloc_growth, growth);
}

SEC("uprobe")
int BPF_KPROBE(alloc_malloc, __u64 size)
{
	return on_alloc_entry(ALLOC_FN_MALLOC, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(alloc_calloc, __u64 nmemb, __u64 size)
{
	return on_alloc_entry(ALLOC_FN_CALLOC, nmemb * size, 0);
}

SEC("uprobe")
int BPF_KPROBE(alloc_realloc, __u64 old, __u64 size)
{
	return on_alloc_entry(ALLOC_FN_REALLOC, size, old);
}

SEC("uprobe")
int BPF_KPROBE(alloc_reallocarray, __u64 old, __u64 nmemb, __u64 size)
{
	return on_alloc_entry(ALLOC_FN_REALLOC, nmemb * size, old);
}

SEC("uprobe")
int BPF_KPROBE(alloc_memalign, __u64 align, __u64 size)
{
	return on_alloc_entry(ALLOC_FN_MEMALIGN, size, 0);
}

SEC("uprobe")
int BPF_KPROBE(alloc_posix_mem, __u64 memptr, __u64 align, __u64 size)
{
	return on_alloc_entry(ALLOC_FN_POSIX_MEMALIGN, size, memptr);
}

SEC("uprobe")
int BPF_KPROBE(alloc_free, __u64 addr)
{
	bool count_only = diag_count_only();
	if (!diag_admit(count_only, diag_current_wanted()))
		return 0;
	count(ALLOC_C_FREE_CALLS);
	if (addr)
		free_block(addr);
	return 0;
}

static __always_inline int on_return(void *ctx, __u64 ret, const bool compat)
{
	if (diag_count_only() || !diag_current_wanted())
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct alloc_pending *pp = bpf_map_lookup_elem(&pending, &tid);
	if (!pp) {
		count(ALLOC_C_NO_ENTRY);
		return 0;
	}
	struct alloc_pending p = *pp;
	bpf_map_delete_elem(&pending, &tid);

	__u64 addr = ret;
	if (p.fn == ALLOC_FN_POSIX_MEMALIGN) {
		addr = 0;
		if ((int)ret == 0 && p.arg)
			bpf_probe_read_user(&addr, sizeof(addr), (void *)p.arg);
	}
	/* realloc(old, n) moves the block: the old one is gone when the call succeeded (or when
	 * n == 0, which frees it) */
	__s64 growth = 0;
	if (p.fn == ALLOC_FN_REALLOC && p.arg && (addr || p.size == 0)) {
		__u64 old = free_block(p.arg);
		if (!old)
			old = p.old_size; /* allocated before the window (or not sampled) */
		growth = (__s64)p.size - (__s64)old;
	}
	if (!addr) {
		if (p.size)
			count(ALLOC_C_FAILED);
		return 0;
	}
	if (p.sampled)
		record_block(ctx, addr, p.size, growth, compat);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_return, __u64 ret)
{
	return on_return(ctx, ret, false);
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_return_compat, __u64 ret)
{
	return on_return(ctx, ret, true);
}

char LICENSE[] SEC("license") = "GPL";
