// SPDX-License-Identifier: GPL-2.0
/* syscall_stats.bpf.c — count (and optionally time) of the target's system calls, by number.
 *
 * Two program sets; the engine loads one:
 *  - count_*: one program on sys_enter that bumps a per-CPU counter. The cheapest possible
 *    syscall probe: no clock read, no per-thread state, no sys_exit program.
 *  - timed_*: sys_enter keeps the entry time in task local storage (no hash lookups, nothing to
 *    clean up when a thread dies; before Linux 5.11, an LRU hash by thread id: an exiting
 *    thread's entry, never followed by a sys_exit, is evicted when the map is full), sys_exit
 *    adds count, time and errors. Clock reads cost tens of ns each on some VMs, so this is opt-in.
 * Must not: keep per-call records, or do anything for other processes beyond the pid check.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_thread.h"
#include "probes/syscall_stats.h"

struct syscall_entry {
	__u64 start_ns; /* 0: not inside a traced syscall */
	__u64 nr;
};

/* A timed syscall's start, per thread (task storage, or before Linux 5.11 an LRU hash by thread:
 * diag_thread.h). exit and exit_group never return to a sys_exit: in the hash their entries
 * would stay, and a thread that later got the same id would find its dead predecessor's start
 * (the engine's numbers: no architecture's are written here). */
DIAG_THREAD_STATE(in_syscall, struct syscall_entry);
const volatile __s64 exit_nr = -1, exit_group_nr = -1;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SYSCALL_SLOTS);
	__type(key, __u32);
	__type(value, struct syscall_total);
} per_syscall SEC(".maps");

SEC("raw_tp/sys_enter")
int BPF_PROG(count_sys_enter, struct pt_regs *regs, long nr)
{
	struct syscall_total *t;
	__u32 slot;
	bool count_only = diag_count_only();

	if (!diag_admit(count_only, diag_current_wanted()))
		return 0;
	if (!diag_sampled_in())
		return 0;
	/* No separate event counter here: the per-syscall counts are the events. */
	slot = (__u64)nr < SYSCALL_SLOTS ? nr : SYSCALL_SLOTS - 1;
	t = bpf_map_lookup_elem(&per_syscall, &slot);
	if (t)
		t->count++;
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(timed_sys_enter, struct pt_regs *regs, long nr)
{
	struct syscall_entry *e;
	bool count_only = diag_count_only();

	if (!diag_admit(count_only, diag_current_wanted()))
		return 0;
	if (!diag_sampled_in())
		return 0;
	if (in_syscall_in_hash && (nr == exit_nr || nr == exit_group_nr))
		return 0;
	e = in_syscall_get(true);
	if (!e) {
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
		return 0;
	}
	e->nr = nr;
	e->start_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(timed_sys_exit, struct pt_regs *regs, long ret)
{
	struct syscall_entry *e;
	struct syscall_total *t;
	__u32 slot;

	if (diag_count_only() || !diag_current_wanted())
		return 0;
	e = in_syscall_get(false);
	if (!e || !e->start_ns)
		return 0; /* entered before we attached */
	slot = e->nr < SYSCALL_SLOTS ? e->nr : SYSCALL_SLOTS - 1;
	t = bpf_map_lookup_elem(&per_syscall, &slot);
	if (t) {
		t->count++;
		t->total_ns += bpf_ktime_get_ns() - e->start_ns;
		if (ret < 0)
			t->errors++;
	}
	e->start_ns = 0;
	in_syscall_drop();
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
