// SPDX-License-Identifier: GPL-2.0
/* mappings.bpf.c — the target's address-space changes, from the syscall tracepoints (the same on
 * every kernel): mmap, munmap, brk, mremap, and madvise(MADV_DONTNEED / MADV_FREE). Each change
 * that adds address space (or gives memory back, madvise) goes to the `samples` ring buffer with
 * the caller's user registers and the top of its user stack (struct diag_user_sample, unwound in
 * user space: glibc's syscall wrappers have no frame pointer, and their caller is the answer),
 * and what the call did after the copied stack (struct maps_event); removals (munmap, the break
 * lowered) go as small records without a stack (struct maps_unmap_rec): the engine credits them
 * to whoever mapped the region.
 *
 * Owns: the filter to the target, the per-thread call between entry and exit (its arguments, and
 * for brk the break before it), the page rounding of lengths, the class of a mapping (anonymous
 * private, anonymous shared, file, PROT_NONE), the failed calls, and the totals per kind of
 * change in `counters` (counted whether or not the ring buffer takes the record).
 * Must not: track regions or call paths (engine/probes/mappings.c does, in order of the ring
 * buffer), unwind (engine/probes/stack_sampler.c), or lose a call silently: refused records,
 * exits without their entry, a full pending map and failed stack walks are counted.
 *
 * The stack is taken at the syscall's exit for mmap, brk and mremap (the call's result is known
 * there; the user registers and stack are those of the entry: the thread is still in the
 * kernel), at the entry for madvise. munmap is recorded at its entry, before the range is free
 * for another thread's mmap to take (and its record to come first); a munmap the kernel will
 * refuse for its arguments (unaligned, empty) is counted as failed instead.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_unwind.h"
#include "probes/mappings.h"

#define EFAULT 14
#define MAX_ERRNO 4095
#define MAP_TYPE_MASK 0x0f
#define MAP_PRIVATE_ 0x02
#define MAP_ANONYMOUS_ 0x20
#define MREMAP_DONTUNMAP_ 4
#define MADV_DONTNEED_ 4
#define MADV_FREE_ 8

const volatile __u64 page_bytes = 4096; /* a power of 2 */
DIAG_UNWIND_MAPS;

DIAG_STACK_MAP(stacks);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set from the recipe before load (max_threads) */
	__type(key, __u32);        /* thread id */
	__type(value, struct maps_pending);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAPS_C_NR);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* The tracepoints' records (tracefs events/syscalls/sys_enter_mmap/format and the others):
 * __syscall_nr at 8, the arguments (or the return value) from 16 on. */
struct sys_enter_args {
	__u64 common;
	__s32 nr;
	__u32 pad;
	__u64 args[6];
};

struct sys_exit_args {
	__u64 common;
	__s32 nr;
	__u32 pad;
	__s64 ret;
};

static __always_inline void add(__u32 slot, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &slot);
	if (c)
		*c += v;
}

static __always_inline __u64 page_up(__u64 len)
{
	return (len + page_bytes - 1) & ~(page_bytes - 1);
}

static __always_inline bool is_error(__s64 ret)
{
	return ret < 0 && ret >= -MAX_ERRNO;
}

static __always_inline __u64 wake_flag(__u64 size)
{
	return bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) + size >= wake_bytes ? BPF_RB_FORCE_WAKEUP
										     : BPF_RB_NO_WAKEUP;
}

/* The current thread's stack sample with ev after its copy, through the ring buffer. */
/* compat: in the twins (diag_bpf.h's DIAG_COMPAT_SUFFIX), without the Python walk. */
static __always_inline void send_event(void *ctx, __u32 tgid, const struct maps_event *ev,
				       const bool compat)
{
	char comm[16];
	bpf_get_current_comm(comm, sizeof(comm));
	__s32 user_id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (user_id < 0 && user_id != -EFAULT)
		diag_stat_inc(&stats, DIAG_STAT_LOST);
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	struct diag_user_sample *s = diag_fill_user_sample(&scratch, copy_bytes, tgid, comm, user_id,
							   -1, 0, 0, 0);
	if (!s) {
		add(MAPS_C_RING_FULL, 1);
		return;
	}
	/* a call made under the allocations probe's uretprobe (malloc → mmap): the caller back */
	diag_restore_uretprobe_returns(s);
	__u64 len = s->stack_len;
	if (len > DIAG_MAX_STACK_BYTES)
		len = DIAG_MAX_STACK_BYTES;
	__builtin_memcpy(&s->stack[len], ev, sizeof(*ev));
	if (py_walk && !compat) { /* as diag_output_user_sample: the thread's Python frames first */
		struct diag_py_rec *py = diag_py_walk(&py_procs, &py_tstates, &py_scratch, tgid, s->tid);
		if (py && diag_py_output(&samples, py) == 0)
			s->flags |= DIAG_SAMPLE_PY;
	}
	__u64 size = __builtin_offsetof(struct diag_user_sample, stack) + len + sizeof(*ev);
	if (size > sizeof(*s))
		size = sizeof(*s);
	add(bpf_ringbuf_output(&samples, s, size, wake_flag(size)) ? MAPS_C_RING_FULL : MAPS_C_SENT, 1);
}

static __always_inline void send_unmap(__u32 tgid, __u64 addr, __u64 len)
{
	struct maps_unmap_rec r = { .rec = MAPS_REC_UNMAP, .tgid = tgid, .addr = addr, .len = len };
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	if (bpf_ringbuf_output(&samples, &r, sizeof(r), wake_flag(sizeof(r))))
		add(MAPS_C_UNMAP_LOST, 1);
}

/* An entry: false when the call is not one to record (relevant false), not the target's, or
 * in count-only mode (counted). */
static __always_inline bool entry_wanted(bool relevant)
{
	bool count_only = diag_count_only();
	return diag_admit(count_only, relevant && diag_current_wanted());
}

static __always_inline void put_pending(struct maps_pending *p)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (bpf_map_update_elem(&pending, &tid, p, BPF_ANY))
		diag_stat_inc(&stats, DIAG_STAT_MAP_FULL);
}

/* An exit: the pending call of op of this thread, taken out of the map; false when there is
 * none (not the target, count-only mode, or no entry seen: counted). */
static __always_inline bool take_pending(__u32 op, struct maps_pending *out)
{
	if (diag_count_only() || !diag_current_wanted())
		return false;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct maps_pending *p = bpf_map_lookup_elem(&pending, &tid);
	if (!p || p->op != op) {
		add(MAPS_C_NO_ENTRY, 1);
		return false;
	}
	*out = *p;
	bpf_map_delete_elem(&pending, &tid);
	return true;
}

/* Exits first: the programs are attached in this order and released last first, so that an
 * entry is never seen without its exit. */

static __always_inline int mmap_out(struct sys_exit_args *ctx, const bool compat)
{
	struct maps_pending p;
	if (!take_pending(MAPS_OP_MMAP, &p))
		return 0;
	add(MAPS_C_MMAP_CALLS, 1);
	if (is_error(ctx->ret)) {
		add(MAPS_C_FAILED, 1);
		return 0;
	}
	struct maps_event ev = { .op = MAPS_OP_MMAP, .cls = p.cls, .addr = (__u64)ctx->ret,
				 .len = page_up(p.a), .flags = p.b };
	add(MAPS_C_ANON_BYTES + (p.cls < MAPS_CLS_NR ? p.cls : MAPS_CLS_ANON), ev.len);
	send_event(ctx, bpf_get_current_pid_tgid() >> 32, &ev, compat);
	return 0;
}

static __always_inline int brk_out(struct sys_exit_args *ctx, const bool compat)
{
	struct maps_pending p;
	if (!take_pending(MAPS_OP_BRK, &p))
		return 0;
	add(MAPS_C_BRK_CALLS, 1);
	/* brk returns the break it leaves (the old one when it failed); the heap is mapped up to
	 * the page above the break */
	__u64 old = page_up(p.a), now = page_up((__u64)ctx->ret);
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if ((__u64)ctx->ret == p.a && p.b != p.a) {
		add(MAPS_C_FAILED, 1);
		return 0;
	}
	if (now > old) {
		struct maps_event ev = { .op = MAPS_OP_BRK, .cls = MAPS_CLS_ANON, .addr = old,
					 .len = now - old };
		add(MAPS_C_BRK_GROWTH, ev.len);
		send_event(ctx, tgid, &ev, compat);
	} else if (now < old) {
		add(MAPS_C_BRK_SHRINK, old - now);
		send_unmap(tgid, now, old - now);
	}
	return 0;
}

static __always_inline int mremap_out(struct sys_exit_args *ctx, const bool compat)
{
	struct maps_pending p;
	if (!take_pending(MAPS_OP_MREMAP, &p))
		return 0;
	add(MAPS_C_MREMAP_CALLS, 1);
	if (is_error(ctx->ret)) {
		add(MAPS_C_FAILED, 1);
		return 0;
	}
	struct maps_event ev = { .op = MAPS_OP_MREMAP, .addr = p.a, .len = page_up(p.b),
				 .addr2 = (__u64)ctx->ret, .len2 = page_up(p.c), .flags = p.d };
	/* MREMAP_DONTUNMAP leaves the old range mapped (emptied): all of the new one is growth */
	__u64 before = (p.d & MREMAP_DONTUNMAP_) ? 0 : ev.len;
	if (ev.len2 > before)
		add(MAPS_C_MREMAP_GROWTH, ev.len2 - before);
	else
		add(MAPS_C_MREMAP_SHRINK, before - ev.len2);
	send_event(ctx, bpf_get_current_pid_tgid() >> 32, &ev, compat);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int maps_mmap_out(struct sys_exit_args *ctx) { return mmap_out(ctx, false); }

SEC("tracepoint/syscalls/sys_exit_mmap")
int maps_mmap_out_compat(struct sys_exit_args *ctx) { return mmap_out(ctx, true); }

SEC("tracepoint/syscalls/sys_exit_brk")
int maps_brk_out(struct sys_exit_args *ctx) { return brk_out(ctx, false); }

SEC("tracepoint/syscalls/sys_exit_brk")
int maps_brk_out_compat(struct sys_exit_args *ctx) { return brk_out(ctx, true); }

SEC("tracepoint/syscalls/sys_exit_mremap")
int maps_mremap_out(struct sys_exit_args *ctx) { return mremap_out(ctx, false); }

SEC("tracepoint/syscalls/sys_exit_mremap")
int maps_mremap_out_compat(struct sys_exit_args *ctx) { return mremap_out(ctx, true); }

SEC("tracepoint/syscalls/sys_enter_mmap")
int maps_mmap_in(struct sys_enter_args *ctx)
{
	if (!entry_wanted(true))
		return 0;
	__u64 prot = ctx->args[2], flags = ctx->args[3];
	struct maps_pending p = { .op = MAPS_OP_MMAP, .a = ctx->args[1], .b = flags };
	p.cls = prot == 0 ? MAPS_CLS_RESERVED
		: !(flags & MAP_ANONYMOUS_) ? MAPS_CLS_FILE
		: (flags & MAP_TYPE_MASK) == MAP_PRIVATE_ ? MAPS_CLS_ANON : MAPS_CLS_SHARED;
	put_pending(&p);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_brk")
int maps_brk_in(struct sys_enter_args *ctx)
{
	__u64 want = ctx->args[0];
	/* brk(0): where the break is, no change (glibc asks once, at start) */
	if (!entry_wanted(want != 0))
		return 0;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task(); /* _btf: 5.11 */
	struct maps_pending p = { .op = MAPS_OP_BRK, .a = BPF_CORE_READ(task, mm, brk), .b = want };
	put_pending(&p);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mremap")
int maps_mremap_in(struct sys_enter_args *ctx)
{
	if (!entry_wanted(true))
		return 0;
	struct maps_pending p = { .op = MAPS_OP_MREMAP, .a = ctx->args[0], .b = ctx->args[1],
				  .c = ctx->args[2], .d = ctx->args[3] };
	put_pending(&p);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int maps_munmap_in(struct sys_enter_args *ctx)
{
	if (!entry_wanted(true))
		return 0;
	__u64 addr = ctx->args[0], len = ctx->args[1];
	add(MAPS_C_MUNMAP_CALLS, 1);
	if ((addr & (page_bytes - 1)) || !len) { /* EINVAL, whatever is mapped */
		add(MAPS_C_FAILED, 1);
		return 0;
	}
	len = page_up(len);
	add(MAPS_C_MUNMAP_BYTES, len);
	send_unmap(bpf_get_current_pid_tgid() >> 32, addr, len);
	return 0;
}

static __always_inline int madvise_in(struct sys_enter_args *ctx, const bool compat)
{
	__u64 advice = ctx->args[2];
	if (!entry_wanted(advice == MADV_DONTNEED_ || advice == MADV_FREE_))
		return 0;
	struct maps_event ev = { .op = MAPS_OP_MADVISE, .addr = ctx->args[0],
				 .len = page_up(ctx->args[1]), .flags = advice };
	add(MAPS_C_MADVISE_CALLS, 1);
	add(MAPS_C_MADVISE_BYTES, ev.len);
	send_event(ctx, bpf_get_current_pid_tgid() >> 32, &ev, compat);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_madvise")
int maps_madvise_in(struct sys_enter_args *ctx) { return madvise_in(ctx, false); }

SEC("tracepoint/syscalls/sys_enter_madvise")
int maps_madvise_in_compat(struct sys_enter_args *ctx) { return madvise_in(ctx, true); }

char LICENSE[] SEC("license") = "GPL";
