/* tcp_flow.h — a TCP flow and a listening port as the network probes key them, in BPF and in the
 * engine alike: the counters of tcp_events, the packets skb_drops attributes, and the maps of
 * net_owner.h that say which sockets are the target's (filled from /proc by netowner.c).
 * Must not: hold anything but plain layouts (both sides compile it).
 */
#ifndef DIAG_TCP_FLOW_H
#define DIAG_TCP_FLOW_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TCPE_AF_INET 2
#define TCPE_AF_INET6 10

/* One TCP flow as the host that sees the event has it: saddr:sport the local end, daddr:dport
 * the peer (an RST sent for a packet no socket wanted: the sender of the RST is local). Ports
 * in host order, addresses in network order (IPv4 in the first 4 bytes). */
struct tcpe_flow {
	__u16 family; /* TCPE_AF_INET / TCPE_AF_INET6 */
	__u16 sport, dport;
	__u8 saddr[16], daddr[16];
};
/* Not in the key: sock:inet_sk_error_report names no socket, so its namespace is unknown (the
 * same 4-tuple in two namespaces is one flow here; tcpe_counts.netns says the last one seen). */

/* A listening port of the target: connections accepted on it are the target's. */
struct tcpe_port {
	__u32 netns;
	__u16 port;
	__u16 pad;
};

#endif
