// SPDX-License-Identifier: GPL-2.0
/* procset.bpf.c — keeps the kernel's set of target processes (diag_targets) current between the
 * engine's rescans (engine/session/procset.c, once a second), so that short-lived children (a worker per
 * request, a CGI, the compilers under make) are covered from their first instruction instead of
 * missed: a process forked by a member joins the set at fork, recording the parent whose address
 * space it copied; when it execs it records that (with a --comm selection it leaves the set if the
 * new program's name is another); when it exits, or leaves at exec, before any scan found it, the
 * CPU time it spent as a member is counted here, since /proc never showed it.
 *
 * Owns: the fork, exec and exit programs, their counters (DIAG_SET_STAT_* in `stats`), the
 * record of members that exec'd (`execs`) and the notices of those that stay in the set
 * (`exec_notices`: the engine reads a new program's mappings while it lives, however briefly).
 * Must not: change an entry the engine's scan made (DIAG_SET_SCANNED), or decide membership
 * beyond what fork and exec imply: the scans confirm or drop what it adds.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "abi/diag_bpf.h"

/* --comm: the name (15 bytes at most, NUL-padded); empty for cgroup selections, whose children
 * stay in the cgroup across exec. */
const volatile char follow_comm[16] = {};

/* Members that exec'd during the run (any of them: the engine stops lending a forked child its
 * parent's symbolizer once the child runs a program of its own). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* TARGET_MAX_PROCS */
	__type(key, __u32);
	__type(value, __u8);
} execs SEC(".maps");

/* Members (joined at fork) that exec'd and stay in the set (struct diag_set_exec_notice); a
 * notice the ring has no room for is counted in DIAG_STAT_LOST (their frames stay addresses). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} exec_notices SEC(".maps");

static __always_inline void add_stat(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &slot);
	if (v)
		*v += n; /* per-CPU */
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(diag_set_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	if (child_tgid == parent_tgid) /* a thread: its process is covered already */
		return 0;
	if (!bpf_map_lookup_elem(&diag_targets, &parent_tgid))
		return 0;
	if (bpf_map_update_elem(&diag_targets, &child_tgid, &parent_tgid, BPF_NOEXIST) == 0) {
		add_stat(DIAG_SET_STAT_JOINED, 1);
		bpf_map_delete_elem(&execs, &child_tgid); /* a pid back as a new process: not exec'd */
	}
	else if (!bpf_map_lookup_elem(&diag_targets, &child_tgid)) /* not there already: full */
		add_stat(DIAG_STAT_MAP_FULL, 1);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(diag_set_exec, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *how = bpf_map_lookup_elem(&diag_targets, &tgid);
	if (!how)
		return 0;
	__u8 yes = 1;
	bpf_map_update_elem(&execs, &tgid, &yes, BPF_ANY);
	if (*how == DIAG_SET_SCANNED)
		return 0;
	struct diag_set_exec_notice notice = { .tgid = tgid, .again = *how == DIAG_SET_EXECED };
	*how = DIAG_SET_EXECED; /* the parent's symbols no longer describe it */
	char comm[16];
	BPF_CORE_READ_STR_INTO(&comm, task, comm); /* the new program's name already */
	for (int i = 0; follow_comm[0] && i < 16; i++) {
		if (comm[i] != follow_comm[i]) {
			bpf_map_delete_elem(&diag_targets, &tgid);
			add_stat(DIAG_SET_STAT_LEFT, 1);
			/* Its time until now (the fork's return, the exec itself) was the set's: the
			 * profile sampled it. Threads de_thread() ended were counted at their exit. */
			add_stat(DIAG_SET_STAT_UNSCANNED_NS, BPF_CORE_READ(task, se.sum_exec_runtime));
			add_stat(DIAG_SET_STAT_UNSCANNED, 1);
			return 0;
		}
		if (!comm[i])
			break;
	}
	if (bpf_ringbuf_output(&exec_notices, &notice, sizeof(notice), 0))
		add_stat(DIAG_STAT_LOST, 1);
	return 0;
}

/* Every thread of an exiting process passes here: the CPU time of those of a process that joined
 * at fork and that no scan turned into a scanned member (their time is nowhere else). */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(diag_set_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 *how = bpf_map_lookup_elem(&diag_targets, &tgid);
	if (!how || *how == DIAG_SET_SCANNED)
		return 0;
	add_stat(DIAG_SET_STAT_UNSCANNED_NS, BPF_CORE_READ(task, se.sum_exec_runtime));
	if (BPF_CORE_READ(task, pid) == tgid)
		add_stat(DIAG_SET_STAT_UNSCANNED, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
