// SPDX-License-Identifier: GPL-2.0
/* file_io.bpf.c — the target's system calls that wait on storage: fsync, fdatasync,
 * sync_file_range, msync, syncfs, sync and the read/write family, timed per process, syscall and
 * file descriptor, with a log2 latency histogram per syscall and, for the sync calls, the user
 * call path.
 *
 * Owns: a watch table (rodata, filled by the engine from the C library's syscall numbers: no
 * architecture's numbers are written here), the entry time in task local storage (before Linux
 * 5.11, an LRU hash by thread id), and on exit
 * the totals per (tgid, syscall, fd, stack) and the histograms. Filters: pid/tid/comm/cgroup of
 * the calling task (syscalls run in its context).
 * Must not: do more than a table lookup for unwatched syscalls, keep per-call records, or name
 * files (user space resolves fds from /proc while the process lives).
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_thread.h"
#include "probes/file_io.h"

#define EFAULT 14

const volatile __u8 watch[FILE_IO_NR_SLOTS] = {};
const volatile bool sync_stacks = true;
const volatile __u32 self_tgid = 0; /* the engine itself: its reading of /proc is not the host's I/O */

/* A watched call's start, per thread (task storage, or before Linux 5.11 an LRU hash by thread:
 * diag_thread.h; what a thread killed inside a call leaves there is evicted). */
DIAG_THREAD_STATE(in_call, struct file_io_entry);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load */
	__type(key, struct file_io_key);
	__type(value, struct file_io_val);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FILE_IO_CLASSES * FILE_IO_HIST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} hist_us SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, DIAG_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 1024); /* set from the recipe before load */
} stacks SEC(".maps");

static __always_inline __u8 watched(long nr)
{
	if (nr < 0 || nr >= FILE_IO_NR_SLOTS)
		return 0;
	return watch[nr];
}

SEC("raw_tp/sys_enter")
int BPF_PROG(file_io_enter, struct pt_regs *regs, long nr)
{
	bool count_only = diag_count_only();
	__u8 w = watched(nr);
	if (!diag_admit(count_only, w && diag_current_wanted() && (bpf_get_current_pid_tgid() >> 32) != self_tgid))
		return 0;
	if (!diag_sampled_in())
		return 0;
	struct file_io_entry *e = in_call_get(true);
	if (!e) {
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
		return 0;
	}
	e->fd = (w & FILE_IO_HAS_FD) ? (__s32)PT_REGS_PARM1_CORE_SYSCALL(regs) : -1;
	e->nr = nr;
	e->watch = w;
	e->start_ns = bpf_ktime_get_ns();
	return 0;
}

/* log2 slot into the class's histogram: a subprogram, so that its branches are explored once */
static __noinline void hist_add(__u32 class, __u64 us)
{
	__u32 slot = diag_log2(us);
	if (slot >= FILE_IO_HIST_SLOTS)
		slot = FILE_IO_HIST_SLOTS - 1;
	__u32 idx = class * FILE_IO_HIST_SLOTS + slot;
	__u64 *b = bpf_map_lookup_elem(&hist_us, &idx);
	if (b)
		__sync_fetch_and_add(b, 1);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(file_io_exit, struct pt_regs *regs, long ret)
{
	if (diag_count_only())
		return 0;
	struct file_io_entry *entry = in_call_get(false);
	if (!entry || !entry->start_ns)
		return 0; /* not a watched call, or entered before we attached */
	struct file_io_entry cur = *entry, *e = &cur; /* the hash's entry goes now */
	entry->start_ns = 0;
	in_call_drop();
	__u64 delta = bpf_ktime_get_ns() - e->start_ns;
	if ((__s64)delta < 0)
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	struct file_io_key key = { .tgid = bpf_get_current_pid_tgid() >> 32, .fd = e->fd,
				   .nr = e->nr, .user_stack_id = -1 };
	if (!(e->watch & FILE_IO_HAS_FD))
		diag_stat_inc(&stats, FILE_IO_STAT_NO_FD);
	if ((e->watch & FILE_IO_SYNC) && sync_stacks) {
		key.user_stack_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
		if (key.user_stack_id < 0 && key.user_stack_id != -EFAULT)
			diag_stat_inc(&stats, DIAG_STAT_LOST);
	}
	struct file_io_val *v = bpf_map_lookup_elem(&calls, &key);
	if (!v) {
		struct file_io_val zero = {};
		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
		bpf_map_update_elem(&calls, &key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&calls, &key);
		if (!v) {
			diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
			return 0;
		}
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->total_ns, delta);
	if (delta > v->max_ns)
		v->max_ns = delta; /* racy max: good enough for "slowest" */
	if (ret > 0)
		__sync_fetch_and_add(&v->bytes, ret);
	else if (ret < 0)
		__sync_fetch_and_add(&v->errors, 1);
	hist_add((e->watch & FILE_IO_CLASS_MASK) - 1, delta / 1000);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
