// SPDX-License-Identifier: GPL-2.0
/* skb_drops.bpf.c — packets the kernel drops, with its reason, per protocol and local port.
 *
 * Owns: the program on skb:kfree_skb (the kernel's drop tracepoint: consumed packets go to
 * skb:consume_skb instead), the counts per (reason, protocol, local port, dropping address), a
 * kernel stack for the first stack_first drops of each reason and then for 1 drop in
 * stack_every, and, with a target, the ownership
 * rules of net_owner.h (its program on sock:inet_sock_set_state only grows those sets): a drop
 * is the target's when the packet's socket is. The tracepoint's fields changed over the
 * kernel's versions (reason in 5.17, rx_sk in 6.12): each is read only if the running kernel has
 * it; the names of the reasons are user space's (the kernel's BTF enum skb_drop_reason).
 * Must not: keep per-packet records, or attribute a drop by the current task (softirq context).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "abi/diag_bpf.h"
#include "probes/net_owner.h"
#include "probes/skb_drops.h"

#define IPPROTO_TCP 6

/* Kernel stacks cost more than the rest of the program (a deep softirq stack: tens of µs on a
 * VM): the first stack_first drops of each reason get one, then 1 drop in stack_every. */
const volatile __u32 stack_first = 16;
const volatile __u32 stack_every = 256; /* 0: none after the first ones */
const volatile __u16 filt_local_port = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, struct skbd_key);
	__type(value, __u64);
} drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, DIAG_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 1024); /* set from the recipe before load */
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024); /* set from the recipe before load */
	__type(key, struct skbd_stack_key);
	__type(value, __u64);
} drop_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);   /* reason */
	__type(value, __u64); /* stacks taken */
} stacks_taken SEC(".maps");

static __always_inline bool want_stack(__u32 reason)
{
	__u64 *taken = bpf_map_lookup_elem(&stacks_taken, &reason);
	if (stack_first && (!taken || *taken < stack_first)) {
		if (taken)
			__sync_fetch_and_add(taken, 1);
		else
			diag_count_key(&stacks_taken, &reason, &stats);
		return true;
	}
	return stack_every && (stack_every == 1 || bpf_get_prandom_u32() % stack_every == 0);
}

/* Before 6.12 the event had no rx_sk; before 5.17 no reason. */
struct trace_event_raw_kfree_skb___pre612 {
	void *skbaddr;
	void *location;
	unsigned short protocol;
	int reason;
} __attribute__((preserve_access_index));

SEC("tracepoint/skb/kfree_skb")
int skbd_kfree_skb(struct trace_event_raw_kfree_skb *ctx)
{
	struct skbd_key key = {};
	struct tcpe_flow f = {};
	const struct sock *sk = NULL;
	const struct sk_buff *skb = (const void *)BPF_CORE_READ(ctx, skbaddr);
	bool count_only = diag_count_only();
	__u32 netns = 0;

	if (bpf_core_field_exists(ctx->rx_sk))
		sk = (const void *)BPF_CORE_READ(ctx, rx_sk);
	if (!sk && skb)
		sk = BPF_CORE_READ(skb, sk);
	if (sk) {
		flow_from_sk(sk, &f);
		netns = sk_netns(sk);
	}
	if (filt_local_port && f.sport != filt_local_port)
		return 0;
	if (diag_has_process_target()) {
		if (!sk) {
			if (!count_only)
				diag_stat_inc(&stats, SKBD_STAT_UNATTRIBUTED);
			return 0;
		}
		if (!net_owned(sk, &f, netns))
			return 0;
	}
	if (!diag_admit(count_only, true))
		return 0;
	if (!diag_sampled_in())
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);

	if (bpf_core_field_exists(ctx->reason))
		key.reason = BPF_CORE_READ(ctx, reason);
	else if (bpf_core_field_exists(((struct trace_event_raw_kfree_skb___pre612 *)ctx)->reason))
		key.reason = BPF_CORE_READ((struct trace_event_raw_kfree_skb___pre612 *)ctx, reason);
	key.protocol = BPF_CORE_READ(ctx, protocol); /* the event stores it in host order */
	key.port = f.sport;
	key.location = (unsigned long)BPF_CORE_READ(ctx, location);
	diag_count_key(&drops, &key, &stats);

	if (want_stack(key.reason)) {
		struct skbd_stack_key sk_key = { .reason = key.reason };
		sk_key.kernel_stack_id = bpf_get_stackid(ctx, &stacks, 0);
		if (sk_key.kernel_stack_id < 0)
			diag_stat_inc(&stats, DIAG_STAT_LOST);
		else
			diag_count_key(&drop_stacks, &sk_key, &stats);
	}
	return 0;
}

/* With a target: the sets of its sockets grow as it connects, listens and accepts. */
SEC("tracepoint/sock/inet_sock_set_state")
int skbd_set_state(struct trace_event_raw_inet_sock_set_state *ctx)
{
	const struct sock *sk = (const void *)BPF_CORE_READ(ctx, skaddr);
	struct tcpe_flow f = {};

	if (!diag_has_process_target() || !sk || BPF_CORE_READ(ctx, protocol) != IPPROTO_TCP)
		return 0;
	flow_from_sk(sk, &f);
	net_owner_set_state(sk, &f, sk_netns(sk), BPF_CORE_READ(ctx, oldstate),
			    BPF_CORE_READ(ctx, newstate));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
