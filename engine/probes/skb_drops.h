/* skb_drops.h — the layouts engine/probes/skb_drops.bpf.c and engine/probes/skb_drops.c share.
 * Must not: hold anything but plain layouts (both sides compile it).
 */
#ifndef DIAG_SKB_DROPS_H
#define DIAG_SKB_DROPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Drops counted per (reason, protocol, local port, where). */
struct skbd_key {
	__u32 reason;    /* enum skb_drop_reason of the running kernel (0 when it has none) */
	__u16 protocol;  /* skb->protocol, host order: 0x0800 IPv4, 0x86dd IPv6, ... */
	__u16 port;      /* local port of the socket the packet belonged to (0: none) */
	__u64 location;  /* kernel address that dropped it */
};

/* Sampled kernel stacks per reason. */
struct skbd_stack_key {
	__u32 reason;
	__s32 kernel_stack_id;
};

#define SKBD_STAT_UNATTRIBUTED 4 /* with a target: drops of packets that had no socket */

#endif
