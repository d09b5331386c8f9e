/* filters.h — the in-kernel filters a recipe may give a probe, and their resolution.
 *
 * Owns: the filter vocabulary (names, the bits a probe kind declares in struct probe_kind.filters
 * for the ones it honours), what a resolved filter holds (struct probe_filters, what the BPF side
 * compares: engine/abi/diag_bpf.h's diag_* rodata for pid, tid, comm and cgroup), and the resolution of
 * the recipe's text: "target" and pids, thread names, cgroup v2 paths to the id
 * bpf_get_current_cgroup_id() returns, block device names to dev_t, ports and addresses. The
 * parsers are pure functions (unit-tested); the resolvers read /proc and /sys.
 * Must not: load BPF, or know any probe kind.
 */
#ifndef DIAG_FILTERS_H
#define DIAG_FILTERS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

enum filter_bit {
	FILTER_PID = 1u << 0,         /* a process, all its threads */
	FILTER_TID = 1u << 1,         /* one thread */
	FILTER_COMM = 1u << 2,        /* a thread name */
	FILTER_CGROUP = 1u << 3,      /* a cgroup v2 directory (containers, systemd units) */
	FILTER_DEVICE = 1u << 4,      /* a block device */
	FILTER_LOCAL_PORT = 1u << 5,  /* network probes: the socket's own port */
	FILTER_REMOTE_PORT = 1u << 6, /* network probes: the peer's port */
	FILTER_REMOTE_ADDR = 1u << 7, /* network probes: the peer's address */
	FILTER_ALL = (1u << 8) - 1,
};

/* The filter's name in a recipe (`filters.NAME`) for one bit. */
const char *filter_name(enum filter_bit bit);

struct filter_addr {
	int family;            /* AF_INET, AF_INET6; 0 = no filter */
	uint8_t bytes[16];     /* network order; IPv4 in the first 4 */
};

/* A probe's filters as resolved; 0 / NULL / empty = not filtered on that. */
struct target;

struct probe_filters {
	int pid;
	/* "pid: target" when the run covers a set of processes (--comm, --cgroup, --unit,
	 * --container): pid is 0, the kernel checks its set of tgids (engine/abi/diag_bpf.h's
	 * diag_targets, the map at targets_fd, shared by every probe of the run and set by the
	 * session before load), and `target` lists the processes (kinds that read /proc). */
	bool pid_set;
	int targets_fd;
	const struct target *target;
	int tid;
	const char *comm;          /* owned by the recipe (or the plan's parameters) */
	uint64_t cgroup_id;
	char cgroup_path[PATH_MAX]; /* the directory it was resolved from, for reports */
	uint32_t dev;              /* the kernel's dev_t: major << 20 | minor */
	char device[32];           /* the name it was resolved from */
	uint16_t local_port, remote_port;
	struct filter_addr remote_addr;
};

/* The recipe's text of each filter, parameters already substituted (NULL = not set). */
struct filter_text {
	const char *pid, *tid, *comm, *cgroup, *device, *local_port, *remote_port, *remote_addr;
};

/* Checks every filter set in `text` is one `honoured` (a kind's FILTER_* bits) and resolves it
 * into *out; target_pid is the run's --pid. With on_this_machine false (lint, show), only the
 * form is checked: "target" needs no --pid and cgroup paths and devices are not looked up.
 * Errors are DIAG_EXIT_USAGE with "filters.NAME: ..." (the caller adds file, line and probe),
 * DIAG_EXIT_REFUSED when the machine has no cgroup v2 hierarchy. */
int filters_resolve(const struct filter_text *text, unsigned honoured, int target_pid,
		    bool on_this_machine, struct probe_filters *out, struct diag_err *err);

/* The processes f covers now, for kinds that read /proc: its pid, or the live processes of its
 * set (pid: target over --comm, --cgroup, ...), at most max into pids. Returns how many. */
size_t filters_live_pids(const struct probe_filters *f, int *pids, size_t max);

struct value;
/* Adds "filters" (as written) and, where resolved, "cgroup_id" / "dev" to a plan probe's value. */
void filters_to_value(const struct filter_text *text, const struct probe_filters *f, struct value *v);

/* ---- pure parsers (no files), exposed for the unit tests ---------------------------------- */

/* The mount point of the cgroup v2 hierarchy in /proc/self/mountinfo text (the first cgroup2
 * mount: /sys/fs/cgroup on pure v2 hosts, /sys/fs/cgroup/unified on hybrid ones). */
int filters_cgroup2_mount(const char *mountinfo, char *out, size_t len);
/* The process's cgroup v2 path from /proc/PID/cgroup text (the "0::PATH" line). */
int filters_cgroup2_path(const char *proc_cgroup, char *out, size_t len);
/* "MAJOR:MINOR\n" (a /sys/class/block/NAME/dev file) to the kernel's dev_t. */
int filters_parse_dev(const char *text, uint32_t *dev);
/* A device name as a recipe gives it ("vda", "nvme0n1p2", "/dev/sdb"): the name in
 * /sys/class/block, or NULL when it cannot be one (a path elsewhere, "..", empty). */
const char *filters_device_name(const char *text);
/* 1..65535. */
int filters_parse_port(const char *text, uint16_t *port);
/* An IPv4 or IPv6 address (no prefix length). */
int filters_parse_addr(const char *text, struct filter_addr *addr);

#endif
