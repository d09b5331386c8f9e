// SPDX-License-Identifier: GPL-2.0
/* usdt.bpf.c — one USDT probe of an application (SystemTap SDT: PostgreSQL, Python, the JVM, ...),
 * counted per value of one of its arguments, or timed from it to a "done" probe on the same
 * thread: `usdt:BIN:provider:name { @[arg0] = count() }`, or the start/done pair
 * `@s[tid] = nsecs` ... `@[key] = hist(nsecs - @s[tid])`.
 *
 * Owns: reading the key argument through the site's fetch plan (diag_usdt.h; the uprobe's cookie
 * names it), the per-thread open start, and the per-key count, total, maximum and log2 histogram.
 * Must not: guess a time: a done without its start, or a start that replaces an open one, is
 * counted, never timed.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_usdt.h"
#include "probes/usdt.h"

/* 0: no key; N: argument N-1 */
const volatile __u32 key_arg = 0;
/* the key argument points to a string (str:argN) */
const volatile bool key_is_string = false;
/* a done probe was named: pairs are timed */
const volatile bool timed = false;

DIAG_USDT_SPECS_MAP(USDT_MAX_SPECS);

/* str:argN keys (the string, 64 bytes hashed) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* max_keys, set before load (1 when keys are numbers) */
	__type(key, struct usdt_key);
	__type(value, struct usdt_stat);
} keys SEC(".maps");

/* argN keys, and the one line of timed pairs without a key (8 bytes hashed) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* max_keys, set before load (1 for string keys) */
	__type(key, __s64);
	__type(value, struct usdt_stat);
} num_keys SEC(".maps");

/* hits without a key, untimed: the count alone, per CPU (bpftrace's @ = count()) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hit_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* max_threads, set before load */
	__type(key, __u32);
	__type(value, struct usdt_open);
} open_starts SEC(".maps");

/* Zeroed values built off the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct usdt_open);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct usdt_stat);
} zero_stat SEC(".maps");

static __always_inline struct usdt_stat *stat_of(void *map, const void *key)
{
	struct usdt_stat *st = bpf_map_lookup_elem(map, key);
	if (st)
		return st;
	__u32 z = 0;
	struct usdt_stat *zero = bpf_map_lookup_elem(&zero_stat, &z);
	return zero ? diag_lookup_or_init(map, key, zero) : NULL;
}

static __always_inline void record(struct usdt_stat *st, __u64 ns, bool with_time)
{
	__sync_fetch_and_add(&st->count, 1);
	if (!with_time)
		return;
	__sync_fetch_and_add(&st->total_ns, ns);
	if (ns > st->max_ns)
		st->max_ns = ns; /* racy max: good enough for "longest" */
	__u32 slot = diag_log2(ns);
	/* kept from the compiler: it would fold the bound into the access, and 6.1's verifier
	 * then sees an unbounded index (a mask alone is refused there too) */
	asm volatile("" : "+r"(slot));
	if (slot < USDT_HIST_SLOTS)
		__sync_fetch_and_add(&st->slots[slot], 1);
	diag_stat_inc(&stats, USDT_STAT_TIMED);
}

/* The line of a key: the string map for str:argN, else the number map. */
static __always_inline struct usdt_stat *line_of(const struct usdt_key *key)
{
	if (key_is_string)
		return stat_of(&keys, key);
	return stat_of(&num_keys, &key->num);
}

SEC("uprobe")
int usdt_fire(struct pt_regs *ctx)
{
	bool count_only = diag_count_only();
	if (!diag_admit(count_only, diag_current_wanted()))
		return 0;
	__u32 idx = 0;
	if (!key_arg && !timed) { /* the count alone: one per-CPU increment (the events, too) */
		__u64 *n = diag_sampled_in() ? bpf_map_lookup_elem(&hit_count, &idx) : NULL;
		if (n)
			*n += 1;
		return 0;
	}
	const struct diag_usdt_spec *spec = diag_usdt_spec(ctx, &usdt_specs);
	if (!spec)
		return 0;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (spec->probe == USDT_SITE_DONE) {
		struct usdt_open *o = bpf_map_lookup_elem(&open_starts, &tid);
		if (!o || !o->start_ns) { /* under 1-in-N sampling, most are starts not kept */
			if (diag_ctl.sample_every <= 1)
				diag_stat_inc(&stats, USDT_STAT_UNMATCHED);
			return 0;
		}
		__u64 now = bpf_ktime_get_ns(), start = o->start_ns;
		o->start_ns = 0;
		struct usdt_stat *st = now > start ? line_of(&o->key) : NULL;
		if (st)
			record(st, now - start, true);
		bpf_map_delete_elem(&open_starts, &tid);
		return 0;
	}
	if (!diag_sampled_in())
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	__s64 v = 0;
	if (key_arg && diag_usdt_arg(ctx, spec, key_arg - 1, &v)) {
		diag_stat_inc(&stats, DIAG_STAT_LOST);
		return 0;
	}
	if (!timed && !key_is_string) { /* a number: 8 bytes hashed, nothing copied */
		struct usdt_stat *st = stat_of(&num_keys, &v);
		if (st)
			record(st, 0, false);
		return 0;
	}
	struct usdt_open *o = bpf_map_lookup_elem(&scratch, &idx);
	if (!o)
		return 0;
	o->key.num = v;
	o->key.str[0] = '\0';
	if (key_is_string) {
		__builtin_memset(o->key.str, 0, sizeof(o->key.str)); /* hashed whole: no stale bytes */
		o->key.num = 0;
		if (v && bpf_probe_read_user_str(o->key.str, sizeof(o->key.str), (void *)v) < 0)
			o->key.str[0] = '\0';
	}
	if (!timed) {
		struct usdt_stat *st = line_of(&o->key);
		if (st)
			record(st, 0, false);
		return 0;
	}
	struct usdt_open *prev = bpf_map_lookup_elem(&open_starts, &tid);
	if (prev && prev->start_ns)
		diag_stat_inc(&stats, USDT_STAT_RESTARTED);
	o->start_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&open_starts, &tid, o, BPF_ANY))
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
