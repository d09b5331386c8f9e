/* net_owner.h — which sockets are the target's, for network probes whose events run in softirq
 * context (engine/probes/tcp_events.bpf.c, engine/probes/skb_drops.bpf.c): the maps of its sockets, flows and
 * listening ports, the flow of a socket, and the rule that grows them. A socket is the target's
 * when the target itself connects, listens or closes it (transitions a process only makes in its
 * own context), when it was accepted on one of the target's listening ports (same network
 * namespace), or when user space found it among the target's descriptors at the start and at
 * every tick (engine/probes/netowner.c fills owned_flows and owned_ports). A socket that closes is
 * forgotten: the kernel reuses its address for the next socket, maybe another process's.
 * Must not: count events, or trust the current task in any other transition (softirq work runs
 * on whatever task it interrupted). Included once per BPF object, after diag_bpf.h.
 */
#ifndef DIAG_NET_OWNER_H
#define DIAG_NET_OWNER_H

#include "probes/tcp_flow.h"

#define NET_STAT_NOT_OWNED 3 /* events seen but not the target's (with a target) */

enum {
	ST_ESTABLISHED = 1, ST_SYN_SENT = 2, ST_SYN_RECV = 3, ST_FIN_WAIT1 = 4, ST_CLOSE = 7,
	ST_CLOSE_WAIT = 8, ST_LAST_ACK = 9, ST_LISTEN = 10,
};

#ifdef __BPF__
/* The target's sockets (struct sock addresses), flows and listening ports. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* set from the recipe before load (max_owned) */
	__type(key, __u64);
	__type(value, __u8);
} owned_socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* set from the recipe before load (max_owned) */
	__type(key, struct tcpe_flow);
	__type(value, __u8);
} owned_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct tcpe_port);
	__type(value, __u8);
} owned_ports SEC(".maps");

static __always_inline __u32 sk_netns(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
}

/* The flow of a socket: any struct sock_common (full, request or time-wait sockets). */
static __always_inline void flow_from_sk(const struct sock *sk, struct tcpe_flow *f)
{
	f->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	f->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	f->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (f->family == TCPE_AF_INET) {
		__u32 s = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		__builtin_memcpy(f->saddr, &s, 4);
		__builtin_memcpy(f->daddr, &d, 4);
	} else {
		BPF_CORE_READ_INTO(&f->saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&f->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
}

static __always_inline void own(const void *sk, const struct tcpe_flow *f)
{
	__u8 one = 1;
	__u64 skp = (unsigned long)sk;
	if (sk)
		bpf_map_update_elem(&owned_socks, &skp, &one, BPF_ANY);
	if (f && f->sport && f->dport)
		bpf_map_update_elem(&owned_flows, f, &one, BPF_ANY);
}

/* Without a target every flow counts; with one, only the target's (see the header comment). */
static __always_inline bool net_owned(const void *sk, const struct tcpe_flow *f, __u32 netns)
{
	__u64 skp = (unsigned long)sk;
	struct tcpe_port lp = { .netns = netns, .port = f->sport };

	if (!diag_has_process_target())
		return true;
	if (sk && bpf_map_lookup_elem(&owned_socks, &skp)) {
		own(NULL, f);
		return true;
	}
	if (bpf_map_lookup_elem(&owned_flows, f)) {
		/* a closed socket (an abort's reset comes after the close) is not taken back: its
		 * address goes to the next socket, maybe another process's */
		if (sk && BPF_CORE_READ((const struct sock *)sk, __sk_common.skc_state) != ST_CLOSE)
			own(sk, NULL);
		return true;
	}
	if (netns && f->sport && bpf_map_lookup_elem(&owned_ports, &lp)) {
		own(sk, f);
		return true;
	}
	diag_stat_inc(&stats, NET_STAT_NOT_OWNED);
	return false;
}

/* Called on every sock:inet_sock_set_state of a TCP socket, after the caller has judged the
 * transition itself (a socket closing is forgotten here). */
static __always_inline void net_owner_set_state(const struct sock *sk, const struct tcpe_flow *f,
						__u32 netns, int oldstate, int newstate)
{
	if (!diag_has_process_target())
		return;
	if (diag_tgid_targeted((__u32)(bpf_get_current_pid_tgid() >> 32)) &&
	    ((oldstate == ST_CLOSE && (newstate == ST_SYN_SENT || newstate == ST_LISTEN)) ||
	     (oldstate == ST_ESTABLISHED && newstate == ST_FIN_WAIT1) ||
	     (oldstate == ST_CLOSE_WAIT && newstate == ST_LAST_ACK))) {
		own(sk, f);
		if (newstate == ST_LISTEN) {
			struct tcpe_port lp = { .netns = netns, .port = f->sport };
			__u8 one = 1;
			bpf_map_update_elem(&owned_ports, &lp, &one, BPF_ANY);
		}
	}
	/* Accepted on a listening port of the target: its own from the first transition. */
	if (oldstate == ST_SYN_RECV && newstate != ST_CLOSE)
		net_owned(sk, f, netns);
	if (newstate == ST_CLOSE) {
		__u64 skp = (unsigned long)sk;
		bpf_map_delete_elem(&owned_socks, &skp);
	}
}
#endif

#endif
