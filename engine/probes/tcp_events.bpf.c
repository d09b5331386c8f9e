// SPDX-License-Identifier: GPL-2.0
/* tcp_events.bpf.c — TCP trouble per flow: retransmits, resets sent and received, failed
 * connects and the errors sockets report (refused, timed out, reset).
 *
 * Owns: the programs on tcp:tcp_retransmit_skb, tcp:tcp_send_reset, tcp:tcp_receive_reset,
 * sock:inet_sock_set_state and sock:inet_sk_error_report; the counts per flow (struct tcpe_flow,
 * bounded: a full map is counted, not silent); the port/address filters; and, with a target, the
 * sets of sockets, flows and listening ports that are the target's. These events mostly run in
 * softirq context, where the current task is whoever was interrupted: a socket becomes the
 * target's when the target itself connects, listens or closes it (transitions that only happen
 * in the process's own context), when it was accepted on one of the target's listening ports, or
 * when user space found it among the target's file descriptors (engine/probes/tcp_events.c).
 * Must not: filter on the current task for anything else, keep per-packet records, or read a
 * tracepoint field whose existence it has not checked (their layouts change between kernels).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include "abi/diag_bpf.h"
#include "probes/tcp_events.h"
#include "probes/net_owner.h"

#define IPPROTO_TCP 6
#define ECONNREFUSED 111
#define ETIMEDOUT 110
#define ECONNRESET 104
#define EPIPE 32

#define TCP_CA_LOSS 4

/* Filters of the recipe (engine/plan/filters.c), set before load; 0: none. */
const volatile __u16 filt_local_port = 0;
const volatile __u16 filt_remote_port = 0;
const volatile __u16 filt_remote_family = 0;
const volatile __u8 filt_remote_addr[16] = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, struct tcpe_flow);
	__type(value, struct tcpe_counts);
} flows SEC(".maps");

/* Before 6.10 tcp:tcp_send_reset, and before 6.11 tcp:tcp_retransmit_skb, had the record of the
 * event class tcp_event_sk_skb. */
struct trace_event_raw_tcp_event_sk_skb___old {
	const void *skbaddr;
	const void *skaddr;
	__u16 sport;
	__u16 dport;
	__u16 family;
	__u8 saddr[4];
	__u8 daddr[4];
	__u8 saddr_v6[16];
	__u8 daddr_v6[16];
} __attribute__((preserve_access_index));

static __always_inline bool filters_pass(const struct tcpe_flow *f)
{
	if (filt_local_port && f->sport != filt_local_port)
		return false;
	if (filt_remote_port && f->dport != filt_remote_port)
		return false;
	if (filt_remote_family) {
		int n = filt_remote_family == TCPE_AF_INET ? 4 : 16;
		if (f->family != filt_remote_family)
			return false;
		for (int i = 0; i < 16; i++)
			if (i < n && f->daddr[i] != filt_remote_addr[i])
				return false;
	}
	return true;
}

enum what { W_RETRANS, W_RST_SENT, W_RST_RECV, W_CONNECT_FAIL, W_ERROR };

/* Counts one event of a flow; sk (may be NULL) for the socket's own counters. */
static __always_inline void count(const struct tcpe_flow *f, enum what w, const struct sock *sk,
				  __u32 netns, int state, int error)
{
	struct tcpe_counts zero = {}, *c = bpf_map_lookup_elem(&flows, f);
	if (!c) {
		/* another CPU may insert it meanwhile: then the lookup finds theirs */
		bpf_map_update_elem(&flows, f, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&flows, f);
		if (!c) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return;
		}
	}
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	if (netns)
		c->netns = netns;
	switch (w) {
	case W_RETRANS: {
		const struct tcp_sock *tp = (const void *)sk;
		const struct inet_connection_sock *icsk = (const void *)sk;
		__sync_fetch_and_add(&c->retrans, 1);
		if (state == ST_SYN_SENT)
			__sync_fetch_and_add(&c->retrans_syn, 1);
		else if (BPF_CORE_READ_BITFIELD_PROBED(icsk, icsk_ca_state) == TCP_CA_LOSS)
			__sync_fetch_and_add(&c->retrans_loss, 1);
		if (bpf_core_field_exists(tp->segs_out)) {
			__u64 segs = BPF_CORE_READ(tp, segs_out);
			__u64 retr = BPF_CORE_READ(tp, total_retrans);
			if (!c->segs_out_first) {
				c->segs_out_first = segs;
				c->total_retrans_first = retr;
			}
			c->segs_out_last = segs;
			c->total_retrans_last = retr;
		}
		break;
	}
	case W_RST_SENT:
		__sync_fetch_and_add(&c->rst_sent, 1);
		break;
	case W_RST_RECV:
		__sync_fetch_and_add(&c->rst_recv, 1);
		if (state == ST_SYN_SENT)
			__sync_fetch_and_add(&c->rst_recv_syn, 1);
		break;
	case W_CONNECT_FAIL:
		__sync_fetch_and_add(&c->connect_fail, 1);
		break;
	case W_ERROR:
		c->last_error = error;
		if (error == ECONNREFUSED)
			__sync_fetch_and_add(&c->refused, 1);
		else if (error == ETIMEDOUT)
			__sync_fetch_and_add(&c->timedout, 1);
		else if (error == ECONNRESET || error == EPIPE)
			__sync_fetch_and_add(&c->reset, 1);
		else
			__sync_fetch_and_add(&c->other_err, 1);
		break;
	}
}

/* The common path of the events that name a socket. */
static __always_inline int on_sk_event(const struct sock *sk, enum what w, int state)
{
	struct tcpe_flow f = {};
	bool count_only = diag_count_only();
	__u32 netns;

	if (!sk)
		return 0;
	flow_from_sk(sk, &f);
	netns = sk_netns(sk);
	if (!diag_admit(count_only, filters_pass(&f) && net_owned(sk, &f, netns)))
		return 0;
	count(&f, w, sk, netns, state, 0);
	return 0;
}

SEC("tracepoint/tcp/tcp_retransmit_skb")
int tcpe_retransmit(void *ctx)
{
	const struct sock *sk;
	if (bpf_core_type_exists(struct trace_event_raw_tcp_retransmit_skb))
		sk = (const void *)BPF_CORE_READ((struct trace_event_raw_tcp_retransmit_skb *)ctx, skaddr);
	else
		sk = (const void *)BPF_CORE_READ((struct trace_event_raw_tcp_event_sk_skb___old *)ctx, skaddr);
	return on_sk_event(sk, W_RETRANS, sk ? BPF_CORE_READ(sk, __sk_common.skc_state) : 0);
}

SEC("tracepoint/tcp/tcp_receive_reset")
int tcpe_rst_recv(struct trace_event_raw_tcp_event_sk *ctx)
{
	const struct sock *sk = (const void *)BPF_CORE_READ(ctx, skaddr);
	return on_sk_event(sk, W_RST_RECV, sk ? BPF_CORE_READ(sk, __sk_common.skc_state) : 0);
}

/* An RST the host sends. The flow is the record's, not the socket's: a socket aborted with unread
 * data is already CLOSE, its port given back in struct sock_common, when it sends the reset.
 * Without a socket (nothing listens on the port, or the connection is unknown) the record holds
 * the packet that provoked it, reversed by the kernel: saddr is the sender of the RST. */
SEC("tracepoint/tcp/tcp_send_reset")
int tcpe_rst_sent(void *ctx)
{
	struct trace_event_raw_tcp_send_reset *n = ctx;
	struct trace_event_raw_tcp_event_sk_skb___old *o = ctx;
	const struct sock *sk;
	struct tcpe_flow f = {};
	bool count_only;
	__u32 netns = 0;

	if (bpf_core_field_exists(n->saddr) && bpf_core_field_size(n->saddr) == 28)
		sk = (const void *)BPF_CORE_READ(n, skaddr);
	else if (bpf_core_field_exists(o->sport))
		sk = (const void *)BPF_CORE_READ(o, skaddr);
	else
		return 0;
	count_only = diag_count_only();
	if (sk) {
		netns = sk_netns(sk);
	} else {
		const struct sk_buff *skb = bpf_core_field_exists(n->saddr) ?
			(const void *)BPF_CORE_READ(n, skbaddr) : (const void *)BPF_CORE_READ(o, skbaddr);
		if (skb)
			netns = BPF_CORE_READ(skb, dev, nd_net.net, ns.inum);
	}
	if (bpf_core_field_exists(n->saddr) && bpf_core_field_size(n->saddr) == 28) {
		/* struct sockaddr_in / sockaddr_in6: family, port (network order), address */
		__u8 s[28], d[28];
		__u16 fam;
		bpf_probe_read_kernel(s, sizeof(s), &n->saddr);
		bpf_probe_read_kernel(d, sizeof(d), &n->daddr);
		__builtin_memcpy(&fam, s, 2);
		f.family = fam;
		f.sport = (__u16)s[2] << 8 | s[3];
		f.dport = (__u16)d[2] << 8 | d[3];
		if (fam == TCPE_AF_INET) {
			__builtin_memcpy(f.saddr, s + 4, 4);
			__builtin_memcpy(f.daddr, d + 4, 4);
		} else {
			__builtin_memcpy(f.saddr, s + 8, 16);
			__builtin_memcpy(f.daddr, d + 8, 16);
		}
	} else {
		/* Linux 5.10's record has no family: the socket's (a reset there always has one) */
		if (bpf_core_field_exists(o->family))
			f.family = BPF_CORE_READ(o, family);
		else
			f.family = sk ? BPF_CORE_READ(sk, __sk_common.skc_family) : TCPE_AF_INET;
		f.sport = BPF_CORE_READ(o, sport);
		f.dport = BPF_CORE_READ(o, dport);
		if (f.family == TCPE_AF_INET) {
			bpf_probe_read_kernel(f.saddr, 4, &o->saddr);
			bpf_probe_read_kernel(f.daddr, 4, &o->daddr);
		} else {
			bpf_probe_read_kernel(f.saddr, 16, &o->saddr_v6);
			bpf_probe_read_kernel(f.daddr, 16, &o->daddr_v6);
		}
	}
	if (!diag_admit(count_only, filters_pass(&f) && net_owned(sk, &f, netns)))
		return 0;
	count(&f, W_RST_SENT, NULL, netns, 0, 0);
	return 0;
}

/* The flow as an inet_sock_set_state or inet_sk_error_report record has it (read from the socket
 * when the event fired: a closing socket has already given its port back in struct sock_common). */
#define FLOW_FROM_RECORD(ctx, f)                                                                  \
	do {                                                                                      \
		(f)->family = BPF_CORE_READ(ctx, family);                                         \
		(f)->sport = BPF_CORE_READ(ctx, sport);                                           \
		(f)->dport = BPF_CORE_READ(ctx, dport);                                           \
		if ((f)->family == TCPE_AF_INET) {                                                \
			bpf_probe_read_kernel((f)->saddr, 4, &(ctx)->saddr);                      \
			bpf_probe_read_kernel((f)->daddr, 4, &(ctx)->daddr);                      \
		} else {                                                                          \
			bpf_probe_read_kernel((f)->saddr, 16, &(ctx)->saddr_v6);                  \
			bpf_probe_read_kernel((f)->daddr, 16, &(ctx)->daddr_v6);                  \
		}                                                                                 \
	} while (0)

SEC("tracepoint/sock/inet_sock_set_state")
int tcpe_set_state(struct trace_event_raw_inet_sock_set_state *ctx)
{
	const struct sock *sk = (const void *)BPF_CORE_READ(ctx, skaddr);
	int oldstate = BPF_CORE_READ(ctx, oldstate), newstate = BPF_CORE_READ(ctx, newstate);
	struct tcpe_flow f = {};
	bool count_only = diag_count_only();
	__u32 netns;

	if (!sk || BPF_CORE_READ(ctx, protocol) != IPPROTO_TCP)
		return 0;
	FLOW_FROM_RECORD(ctx, &f);
	netns = sk_netns(sk);
	/* a failed connect is judged before the socket, closing, is forgotten */
	bool failed = oldstate == ST_SYN_SENT && newstate == ST_CLOSE;
	bool counted = failed && filters_pass(&f) && net_owned(sk, &f, netns);
	net_owner_set_state(sk, &f, netns, oldstate, newstate);
	if (!diag_admit(count_only, counted))
		return 0;
	count(&f, W_CONNECT_FAIL, sk, netns, 0, 0);
	return 0;
}

/* A socket reports an error to its owner (no socket address in the event: the flow says whose). */
SEC("tracepoint/sock/inet_sk_error_report")
int tcpe_error(struct trace_event_raw_inet_sk_error_report *ctx)
{
	struct tcpe_flow f = {};
	bool count_only = diag_count_only();
	int error = BPF_CORE_READ(ctx, error);

	if (BPF_CORE_READ(ctx, protocol) != IPPROTO_TCP)
		return 0;
	if (!error) /* a report without an error: nothing to count */
		return 0;
	FLOW_FROM_RECORD(ctx, &f);
	/* No peer any more: the socket's own abort (SO_LINGER 0), already disconnected. The reset
	 * it sent is counted on its flow by tcp_send_reset. */
	if (!f.dport)
		return 0;
	if (!diag_admit(count_only, filters_pass(&f) && net_owned(NULL, &f, 0)))
		return 0;
	count(&f, W_ERROR, NULL, 0, 0, error);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
