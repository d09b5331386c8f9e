/* tcp_events.h — the layouts engine/probes/tcp_events.bpf.c and engine/probes/tcp_events.c share: a
 * flow's counters (the flow itself, the key, is tcp_flow.h's).
 * Must not: hold anything but plain layouts (both sides compile it).
 */
#ifndef DIAG_TCP_EVENTS_H
#define DIAG_TCP_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "probes/tcp_flow.h"

struct tcpe_counts {
	__u64 retrans;         /* tcp:tcp_retransmit_skb */
	__u64 retrans_loss;    /* ... while the socket was in loss recovery (an RTO fired) */
	__u64 retrans_syn;     /* ... of a SYN (state SYN_SENT) */
	__u64 rst_sent;        /* tcp:tcp_send_reset */
	__u64 rst_recv;        /* tcp:tcp_receive_reset */
	__u64 rst_recv_syn;    /* ... in answer to a SYN (state SYN_SENT): a refused connect */
	__u64 connect_fail;    /* sock:inet_sock_set_state SYN_SENT -> CLOSE */
	__u64 refused;         /* sock:inet_sk_error_report ECONNREFUSED */
	__u64 timedout;        /* ... ETIMEDOUT */
	__u64 reset;           /* ... ECONNRESET / EPIPE */
	__u64 other_err;       /* ... any other error */
	/* The socket's own counters (struct tcp_sock: segs_out, total_retrans, both in segments)
	 * at the first and the last retransmit of the window, for a retransmitted share. */
	__u64 segs_out_first, segs_out_last;
	__u64 total_retrans_first, total_retrans_last;
	__u32 last_error;
	__u32 netns;           /* inode number of the flow's network namespace (0: unknown) */
};

#endif
