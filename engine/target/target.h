/* target.h — what a run covers: one process (--pid), every process of a name (--comm), of a
 * cgroup (--cgroup: a v2 directory, or a v1 one on hybrid hosts), of a systemd unit (--unit) or
 * of a container (--container), and which processes those are from one moment to the next.
 *
 * Owns: resolving a selection to a cgroup directory or a process name (errors name what was not
 * found), scanning /proc or the cgroup's cgroup.procs (its descendants included) for the
 * processes it covers now, and the record of every process it covered during the run.
 * Must not: load BPF or know probes: the session copies the members into the kernel's set of
 * tgids (engine/abi/diag_bpf.h's diag_targets) after each scan.
 */
#ifndef DIAG_TARGET_H
#define DIAG_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "common/value.h"

enum target_kind {
	TARGET_NONE = 0,
	TARGET_PID,       /* --pid: one process, all its threads */
	TARGET_COMM,      /* --comm: every process whose name (/proc/PID/comm) is that */
	TARGET_CGROUP,    /* --cgroup: the processes of a cgroup directory and its descendants */
	TARGET_UNIT,      /* --unit: a systemd unit's cgroup */
	TARGET_CONTAINER, /* --container: a container's cgroup (docker, containerd, cri-o, podman) */
};

/* The most processes one run covers at once (the kernel's set of tgids has this many entries),
 * and the most it records over the run (processes that came and went included). */
#define TARGET_MAX_PROCS 4096
#define TARGET_MAX_RECORDS 16384

/* A selection as given on the command line. */
struct target_sel {
	enum target_kind kind;
	const char *text; /* the name, path, unit or id; NULL for TARGET_NONE and TARGET_PID */
};

struct target_proc {
	int pid;
	char comm[16];
	bool alive;     /* found by the last scan */
	bool in_kernel; /* the session's: in the kernel's set now */
};

struct target {
	enum target_kind kind;
	char text[256];             /* the selection as given (for reports) */
	char cgroup_dir[PATH_MAX];  /* cgroup kinds: the directory resolved */
	int cgroup_version;         /* 1 or 2; 0 for --comm */
	uint64_t cgroup_id;         /* v2 directories: what bpf_get_current_cgroup_id() returns */
	struct target_proc *procs;  /* every process covered so far, in the order first seen */
	size_t n_procs, cap_procs;
	size_t n_alive;             /* alive after the last scan */
	size_t over_limit;          /* processes the last scan could not cover: beyond
				     * TARGET_MAX_PROCS alive or TARGET_MAX_RECORDS recorded */
	size_t not_permitted;       /* processes the last scan left out: run with capabilities
				     * but not root, the caller could not ptrace them (privilege.h) */
	bool follows_forks;         /* the session's: members' children joined at fork */
	uint64_t joined_at_fork;    /* the session's: how many did (short-lived ones included,
				     * which no scan may have seen) */
};

/* "pid", "comm", "cgroup", "unit", "container" ("" for TARGET_NONE). */
const char *target_kind_name(enum target_kind k);
/* The command-line flag of a kind ("--comm", ...). */
const char *target_kind_flag(enum target_kind k);

/* Resolves a set selection (not TARGET_PID / TARGET_NONE) and scans it once. Errors
 * (DIAG_EXIT_USAGE) name what was not found: no process named X, no unit X in the cgroup
 * hierarchies, a container id matching no cgroup or several. A selection that resolves but
 * covers no process now is an error too (nothing to diagnose). */
int target_resolve(const struct target_sel *sel, struct target **out, struct diag_err *err);
/* Rescans the members: marks gone processes, adds new ones. Returns how many are alive. */
size_t target_scan(struct target *t);
/* The first process alive, else the first ever seen (0 if none): where probes that need one
 * process's files (a libc to probe) look. */
int target_first_pid(const struct target *t);
/* For reports: {"selection", "name", "cgroup", "processes": [{pid, comm, alive}], ...}; comm
 * is the process's own bytes (escaped by whoever prints it). Caller frees. */
struct value *target_to_value(const struct target *t);
void target_free(struct target *t);

/* Whether process pid has a child process now (a process whose parent it is, diagnose's own
 * aside): a server that forks its workers (a PostgreSQL postmaster, an nginx master, a pre-fork
 * pool), whose future children inherit what is written into its memory, a uprobe's breakpoint
 * too. From the children files of its first TARGET_CHILDREN_MAX_THREADS threads (the kernel's
 * lists: one read a thread, stopped at the first child); where the kernel has none
 * (CONFIG_PROC_CHILDREN off), from every /proc/N/stat until one names pid its parent. */
#define TARGET_CHILDREN_MAX_THREADS 4096
bool target_has_children(int pid);

/* ---- pure parts, exposed for the unit tests ------------------------------------------------ */

/* Does a /proc/PID/comm (newline stripped) match the name asked for? The kernel keeps 15 bytes
 * of a name: a longer name matches on its first 15. */
bool target_comm_matches(const char *want, const char *comm);
/* Is a cgroup directory's name the one a container runtime gives container `id` (a prefix of
 * 12+ hex digits of its id)? docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope,
 * libpod-ID.scope, or ID itself (cgroupfs driver: /docker/ID, /kubepods/.../ID). */
bool target_container_dir_matches(const char *dirname, const char *id);
/* A unit name as systemd spells its cgroup: "nginx" -> "nginx.service"; names with a unit
 * suffix are kept. NULL when the name cannot be a unit (empty, a '/', "..", too long). */
const char *target_unit_dir_name(const char *unit, char *buf, size_t len);
/* Below root, depth-first to `max_depth` levels, the directories whose name `match`es: the
 * first goes to out, and the count of matches is returned (symbolic links are not followed). */
int target_find_dir(const char *root, bool (*match)(const char *name, const void *arg),
		    const void *arg, int max_depth, char *out, size_t len);

#endif
