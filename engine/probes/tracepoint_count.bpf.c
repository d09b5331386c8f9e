// SPDX-License-Identifier: GPL-2.0
/* tracepoint_count.bpf.c — count the hits of any one tracepoint per (process, thread name).
 *
 * Owns: one generic tracepoint program (it never reads the tracepoint's arguments, so one
 * program fits every tracepoint; the engine attaches it to the "category:event" the recipe
 * names), the pid and comm filters, and the count per (tgid, comm).
 * Must not: read event fields (their layout differs per tracepoint), or lose a hit silently:
 * hits that find the count map full are counted in `stats` (DIAG_STAT_MAP_FULL).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "abi/diag_bpf.h"

#define COMM_LEN 16

/* Same layout as struct tpc_key in engine/probes/tracepoint_count.c (checked at load). */
struct tpc_key {
	__u32 tgid;
	char comm[COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240); /* set from the recipe before load */
	__type(key, struct tpc_key);
	__type(value, __u64);
} counts SEC(".maps");

SEC("tracepoint")
int tracepoint_cnt(void *ctx)
{
	struct tpc_key key = {};
	bool count_only = diag_count_only();

	if (!diag_admit(count_only, diag_current_wanted()))
		return 0;
	key.tgid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (!diag_sampled_in())
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);

	diag_count_key(&counts, &key, &stats);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
