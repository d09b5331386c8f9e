// SPDX-License-Identifier: GPL-2.0
/* cpu_profile.bpf.c — on-CPU stack sampling, attached to one perf event per CPU (cpu-clock
 * software event, or the hardware cycles counter where there is one).
 *
 * Owns: the filter to the target process (all its threads), user and kernel stack ids, and the
 * count of samples per (process, thread name, user stack, kernel stack); when the engine asks
 * for user-space unwinding (copy_bytes > 0), the sample goes instead to the `samples` ring
 * buffer with the user registers and the top copy_bytes of the user stack (struct
 * diag_user_sample, engine/abi/diag_unwind.h), and only falls back to the count map when the ring
 * buffer is full.
 * Must not: symbolize or unwind (no CFI here: engine/symbolize/unwind.c does it), put registers or stack
 * words in a map key (the key space would explode), or lose a sample silently: stack walks that
 * fail, a full count map and a full ring buffer are counted in `stats`.
 */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "abi/diag_bpf.h"
#include "abi/diag_unwind.h"
#include "probes/cpu_profile.h"

#define EFAULT 14

const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
/* copy_bytes 0: no ring buffer (count map only). The engine is woken only when wake_bytes are
 * waiting: one wakeup per sample would cost more than the sample. */
DIAG_UNWIND_MAPS;

DIAG_STACK_MAP(stacks);

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, __u64);
	__uint(max_entries, 16384); /* set from the recipe before load */
} counts SEC(".maps");

/* compat: the twin without the Python walk (diag_bpf.h's DIAG_COMPAT_SUFFIX) */
static __always_inline int sample(struct bpf_perf_event_data *ctx, const bool compat)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct profile_key key = {};
	bool count_only = diag_count_only();

	if (!diag_admit(count_only, tgid != 0 && diag_current_wanted())) /* never the idle task */
		return 0;
	diag_stat_inc(&stats, DIAG_STAT_EVENTS);

	key.tgid = tgid;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.kernel_stack_id = kernel_stacks ? bpf_get_stackid(ctx, &stacks, 0) : -1;
	key.user_stack_id = user_stacks ? bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) : -1;

	/* -EFAULT means "no such stack" (no kernel stack in user mode, no user stack for kernel
	 * threads); anything else is a stack we failed to record. */
	if (kernel_stacks && key.kernel_stack_id != -EFAULT)
		diag_stat_inc(&stats, PROFILE_STAT_IN_KERNEL);
	if ((kernel_stacks && key.kernel_stack_id < 0 && key.kernel_stack_id != -EFAULT) ||
	    (user_stacks && key.user_stack_id < 0 && key.user_stack_id != -EFAULT))
		diag_stat_inc(&stats, DIAG_STAT_LOST);

	if ((copy_bytes || py_walk) && user_stacks && key.user_stack_id != -EFAULT) {
		if (diag_send_user_sample(&samples, &scratch, copy_bytes, wake_bytes, tgid, key.comm,
					  key.user_stack_id, key.kernel_stack_id, 1, 0, 0,
					  DIAG_PY_MAPS_ARGS_IF(!compat)) == 0) {
			diag_stat_inc(&stats, PROFILE_STAT_SENT);
			return 0;
		}
		diag_stat_inc(&stats, PROFILE_STAT_RING_FULL);
	}
	diag_count_key(&counts, &key, &stats);
	return 0;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx) { return sample(ctx, false); }

SEC("perf_event")
int on_cpu_sample_compat(struct bpf_perf_event_data *ctx) { return sample(ctx, true); }

char LICENSE[] SEC("license") = "GPL";
