/* uprobe_multi.h — the kernel's multi-uprobe link (Linux 6.6+): one BPF link for a program on many
 * sites of one file, made and released at once. A uprobe's own link costs the kernel a grace
 * period to release, one after another (20 of them: 2.4 s on 6.18, against 23 ms as one multi
 * link); libbpf 1.1 cannot make one, so the link is made here with BPF_LINK_CREATE.
 *
 * Owns: whether this kernel has it (its BTF's enum bpf_attach_type names
 * BPF_TRACE_UPROBE_MULTI), the attach type a program must be loaded with for it, and the link.
 * Must not: load programs (the caller sets the attach type before loading), resolve symbols, or
 * hold global state.
 */
#ifndef DIAG_UPROBE_MULTI_H
#define DIAG_UPROBE_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/kernel_btf.h"

#define UPROBE_MULTI_ATTACH_TYPE 48 /* BPF_TRACE_UPROBE_MULTI (uapi 6.6; Debian 12's headers: 6.1) */
#define UPROBE_MULTI_MAX_SITES 4096

/* Whether the kernel whose BTF k is has multi-uprobe links (k NULL: no). */
bool uprobe_multi_supported(const struct kernel_btf *k);

/* One link of the program prog_fd (loaded with UPROBE_MULTI_ATTACH_TYPE) on n sites of path:
 * their file offsets, USDT semaphores' offsets (ref_ctr: NULL or 0s for none), cookies (NULL:
 * 0s); entries, or returns with ret; only in process pid (-1, 0: every process). The link's fd,
 * or -1 with errno. */
int uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets, const uint64_t *ref_ctr,
		      const uint64_t *cookies, size_t n, int pid, bool ret);

#endif
