// SPDX-License-Identifier: GPL-2.0
/* preflight.bpf.c — the budget pre-flight's counting-only program: attached for a short window
 * to the raw tracepoints a probe will use, it counts how often they fire and how many of those
 * firings pass the probe's pid filter, so the engine can refuse or sample before attaching the
 * real programs.
 * Must not: do anything but count.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

const volatile __u32 target_tgid = 0; /* 0: no pid filter */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2); /* [0] every firing, [1] firings that pass the filter */
	__type(key, __u32);
	__type(value, __u64);
} firings SEC(".maps");

static __always_inline void bump(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&firings, &slot);
	if (v)
		*v += 1;
}

SEC("raw_tp")
int count_firing(void *ctx)
{
	bump(0);
	if (!target_tgid || (bpf_get_current_pid_tgid() >> 32) == target_tgid)
		bump(1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
