// SPDX-License-Identifier: GPL-2.0
/* name_lookups.bpf.c — how long the target's host name lookups take, and for which names:
 * uprobes and uretprobes on the resolver functions of the libc it maps (getaddrinfo,
 * gethostbyname, gethostbyname2 and their _r forms). A slow DNS server or a resolv.conf that
 * tries an unreachable one first is a classic hidden cause of request latency.
 *
 * Owns: per thread, the lookup in progress (its start and the name asked for, read at entry);
 * at return, a log2 histogram (ns) of the lookup times, and per (name, function) the count,
 * total, longest and failures (getaddrinfo: a non-zero EAI_* code; gethostbyname*: NULL;
 * the _r forms: a non-zero return). Which function a uprobe is on comes from its attach cookie
 * (Linux 5.15), or before from the program it runs (one per function).
 * A resolver function called by another (glibc's getaddrinfo calls gethostbyname2_r) is part of
 * the outer lookup: only the outermost call is timed, under its own function.
 * Must not: follow a lookup into the resolver (the time is the caller's wait, whatever the
 * resolver did), or lose a lookup silently (full maps and unmatched returns are counted).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "probes/name_lookups.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, __u32);        /* thread id */
	__type(value, struct lookup_start);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* set from the recipe before load */
	__type(key, struct lookup_key);
	__type(value, struct lookup_val);
} lookups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LOOKUP_HIST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} hist_ns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} totals SEC(".maps"); /* [0] sum of lookup times in ns, [1] longest */

/* One struct lookup_start being built: too big for comfort on the BPF stack with the key. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lookup_start);
} scratch SEC(".maps");

/* An entry of resolver function fn (enum lookup_fn). */
static __always_inline int on_entry(const char *name, __u32 fn)
{
	if (!diag_admit(diag_count_only(), diag_current_wanted()))
		return 0;
	__u32 zero = 0, tid = (__u32)bpf_get_current_pid_tgid();
	struct lookup_start *outer = bpf_map_lookup_elem(&inflight, &tid);
	if (outer) { /* a resolver function inside a lookup: part of it */
		outer->depth++;
		return 0;
	}
	struct lookup_start *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	s->depth = 0;
	__builtin_memset(s->name, 0, sizeof(s->name));
	if (!name || bpf_probe_read_user_str(s->name, sizeof(s->name), name) < 0)
		s->name[0] = '\0'; /* getaddrinfo(NULL, service): the name is the service's host */
	s->fn = fn;
	s->ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&inflight, &tid, s, BPF_ANY))
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
	return 0;
}

/* Which function: the link's cookie (Linux 5.15); before, a program per function, the engine
 * attaching each to its own (name_lookups.c), and lookup_entry not loaded. */
SEC("uprobe")
int BPF_KPROBE(lookup_entry, const char *name)
{
	return on_entry(name, (__u32)bpf_get_attach_cookie(ctx));
}

SEC("uprobe")
int BPF_KPROBE(lookup_entry_0, const char *name) { return on_entry(name, 0); }
SEC("uprobe")
int BPF_KPROBE(lookup_entry_1, const char *name) { return on_entry(name, 1); }
SEC("uprobe")
int BPF_KPROBE(lookup_entry_2, const char *name) { return on_entry(name, 2); }
SEC("uprobe")
int BPF_KPROBE(lookup_entry_3, const char *name) { return on_entry(name, 3); }
SEC("uprobe")
int BPF_KPROBE(lookup_entry_4, const char *name) { return on_entry(name, 4); }
_Static_assert(LOOKUP_NR_FNS == 5, "a lookup_entry_N program per resolver function");

SEC("uretprobe")
int BPF_KRETPROBE(lookup_return, long ret)
{
	if (diag_count_only())
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lookup_start *s = bpf_map_lookup_elem(&inflight, &tid);
	if (!s) {
		if (diag_current_wanted())
			diag_stat_inc(&stats, LOOKUP_STAT_UNMATCHED);
		return 0;
	}
	if (s->depth) {
		s->depth--;
		return 0;
	}
	__u64 ns = bpf_ktime_get_ns() - s->ts;
	struct lookup_key key = { .fn = s->fn };
	__builtin_memcpy(key.name, s->name, sizeof(key.name));
	bpf_map_delete_elem(&inflight, &tid);
	if ((__s64)ns < 0)
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	bool failed = key.fn == LOOKUP_GETHOSTBYNAME || key.fn == LOOKUP_GETHOSTBYNAME2 ? ret == 0 : ret != 0;

	__u32 slot = diag_log2(ns);
	if (slot >= LOOKUP_HIST_SLOTS)
		slot = LOOKUP_HIST_SLOTS - 1;
	__u64 *bucket = bpf_map_lookup_elem(&hist_ns, &slot);
	if (bucket)
		__sync_fetch_and_add(bucket, 1);
	diag_add_total(&totals, ns);

	struct lookup_val *v = bpf_map_lookup_elem(&lookups, &key);
	if (!v) {
		struct lookup_val zero = {};
		if (bpf_map_update_elem(&lookups, &key, &zero, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&lookups, &key)) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return 0;
		}
		v = bpf_map_lookup_elem(&lookups, &key);
		if (!v)
			return 0;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, ns);
	if (failed)
		__sync_fetch_and_add(&v->failed, 1);
	if (ns > v->max_ns)
		v->max_ns = ns; /* racy max: good enough for "longest" */
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
