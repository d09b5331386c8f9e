// SPDX-License-Identifier: GPL-2.0
/* page_faults.bpf.c — the target's user-mode page faults (exceptions:page_fault_user) by user +
 * kernel stack, each weighted by the page size: where a process first touches memory it did not
 * have, which for growth is the code that initialises new memory (a leak's own stores, or the
 * allocator writing the next chunk's header into a fresh page). Three attach variants of the same
 * logic: tp_btf, raw_tp, tracepoint; the engine loads one set.
 *
 * Owns: the filter to the target, the 1-in-N sampling switch, user and kernel stack ids, and per
 * (process, thread name, stacks) a count; when the engine asks for user-space unwinding
 * (copy_bytes > 0: the leak's faults are inside glibc, which has no frame pointers), the fault goes
 * to the `samples` ring buffer with the user registers and the top of the user stack (struct
 * diag_user_sample), and only falls back to the count map when the ring buffer is full.
 * Must not: unwind or symbolize (engine/probes/stack_sampler.c, unwind.c), read the faulting memory, or
 * lose a fault silently: failed stack walks, a full map and a full ring buffer are counted.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_unwind.h"
#include "probes/page_faults.h"

#define EFAULT 14

const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
const volatile __u64 page_bytes = 4096;
DIAG_UNWIND_MAPS; /* copy_bytes with each fault, 0: no ring buffer (count map only) */

DIAG_STACK_MAP(stacks);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct pf_key);
	__type(value, __u64);
	__uint(max_entries, 16384); /* set from the recipe before load */
} counts SEC(".maps");

/* compat: the twins' body, without the Python walk (diag_bpf.h's DIAG_COMPAT_SUFFIX) */
static __always_inline int on_fault(void *ctx, __u64 error_code, const bool compat)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct pf_key key = {};
	bool count_only = diag_count_only();

	if (!diag_admit(count_only, tgid != 0 && diag_current_wanted()))
		return 0;
	if (!diag_sampled_in())
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);
	if (error_code & 2)
		diag_stat_inc(&stats, PF_STAT_WRITES);

	key.tgid = tgid;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	/* the governor may drop the stacks (their walk, copy and ring) mid-run */
	bool dropped = diag_stacks_dropped();
	bool kstack = kernel_stacks && !dropped, ustack = user_stacks && !dropped;
	key.kernel_stack_id = kstack ? bpf_get_stackid(ctx, &stacks, 0) : -1;
	key.user_stack_id = ustack ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : -1;
	if ((kstack && key.kernel_stack_id < 0 && key.kernel_stack_id != -EFAULT) ||
	    (ustack && key.user_stack_id < 0 && key.user_stack_id != -EFAULT))
		diag_stat_inc(&stats, DIAG_STAT_LOST);

	if ((copy_bytes || py_walk) && ustack) {
		struct diag_user_sample *smp = diag_fill_user_sample(&scratch, copy_bytes, tgid, key.comm,
								     key.user_stack_id, key.kernel_stack_id,
								     page_bytes, 0, 0);
		if (smp && diag_restore_uretprobe_returns(smp))
			diag_stat_inc(&stats, PF_STAT_URETPROBE_FIXED);
		if (smp && diag_output_user_sample(&samples, smp, wake_bytes,
						   DIAG_PY_MAPS_ARGS_IF(!compat)) == 0) {
			diag_stat_inc(&stats, PF_STAT_SENT);
			return 0;
		}
		diag_stat_inc(&stats, PF_STAT_RING_FULL);
	}
	diag_count_key(&counts, &key, &stats);
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(tp_btf_page_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return on_fault(ctx, error_code, false);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(tp_btf_page_fault_compat, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	return on_fault(ctx, error_code, true);
}

SEC("raw_tp/page_fault_user")
int BPF_PROG(raw_tp_page_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	return on_fault(ctx, error_code, false);
}

SEC("raw_tp/page_fault_user")
int BPF_PROG(raw_tp_page_fault_compat, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	return on_fault(ctx, error_code, true);
}

/* The tracepoint's record (tracefs events/exceptions/page_fault_user/format). */
struct pf_tp_args {
	__u64 common;
	unsigned long address;
	unsigned long ip;
	unsigned long error_code;
};

SEC("tracepoint/exceptions/page_fault_user")
int tracepoint_page_fault(struct pf_tp_args *args)
{
	return on_fault(args, args->error_code, false);
}

SEC("tracepoint/exceptions/page_fault_user")
int tracepoint_page_fault_compat(struct pf_tp_args *args)
{
	return on_fault(args, args->error_code, true);
}

char LICENSE[] SEC("license") = "GPL";
