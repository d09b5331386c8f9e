/* kernel.h — what the running kernel and our privileges allow, checked before anything loads.
 *
 * Owns: privilege checks (root or CAP_BPF + CAP_PERFMON), BTF presence, mounting tracefs when it
 * is missing, libbpf's log routing, and BPF run-time statistics (the overhead governor's source).
 * Must not: load probes or decide what a recipe needs.
 */
#ifndef DIAG_KERNEL_H
#define DIAG_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/util.h"

/* One line naming what is missing; DIAG_EXIT_REFUSED. */
int kernel_check_privileges(struct diag_err *err);
int kernel_check_btf(struct diag_err *err);
/* Whether tracefs lists a tracepoint ("tcp/tcp_retransmit_skb") or a group of them ("block"),
 * at /sys/kernel/tracing or /sys/kernel/debug/tracing; false also when tracefs is not mounted. */
bool kernel_has_tracepoint(const char *tp);

/* Mounts tracefs at /sys/kernel/tracing when no tracefs is mounted. *mounted_now tells. */
int kernel_ensure_tracefs(bool *mounted_now, struct diag_err *err);
/* Route libbpf's messages to stderr only when verbose. */
void kernel_set_libbpf_verbose(bool verbose);

/* Turns BPF run-time statistics on for as long as the returned fd is open (the kernel counts
 * users, so closing it restores the previous setting). -1 when unavailable. */
int kernel_enable_bpf_stats(void);
/* Whether run-time statistics can be turned on at all (tries, and turns them back off). */
bool kernel_bpf_stats_available(void);
/* Run time (ns) and run count of a loaded program fd. */
int kernel_prog_runtime(int prog_fd, uint64_t *run_ns, uint64_t *run_cnt);

#endif
