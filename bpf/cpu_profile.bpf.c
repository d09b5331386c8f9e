// SPDX-License-Identifier: GPL-2.0
/* cpu_profile.bpf.c — on-CPU stack sampling, attached to one perf event per CPU (cpu-clock
 * software event, or the hardware cycles counter where there is one).
 *
 * Owns: the filter to the target process (all its threads), user and kernel stack ids, and the
 * count of samples per (process, thread name, user stack, kernel stack); when the engine asks
 * for user-space unwinding (copy_bytes > 0), the sample goes instead to the `samples` ring
 * buffer with the user registers and the top copy_bytes of the user stack (struct
 * profile_sample), and only falls back to the count map when the ring buffer is full.
 * Must not: symbolize or unwind (no CFI here: engine/unwind.c does it), put registers or stack
 * words in a map key (the key space would explode), or lose a sample silently: stack walks that
 * fail, a full count map and a full ring buffer are counted in `stats`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "diag_bpf.h"
#include "cpu_profile.h"

#define EFAULT 14

const volatile bool user_stacks = true;
const volatile bool kernel_stacks = true;
/* Bytes of user stack to copy above sp with each sample, 0: no ring buffer (count map only). */
const volatile __u32 copy_bytes = 0;
/* Wake the engine (its run loop polls the ring buffer) only when this much is waiting: one
 * wakeup per sample would cost more than the sample. */
const volatile __u64 wake_bytes = 1024;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* set from the recipe before load (a power of 2 of pages) */
} samples SEC(".maps");

/* One sample being built: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profile_sample);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, DIAG_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384); /* set from the recipe before load */
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct profile_key);
	__type(value, __u64);
	__uint(max_entries, 16384); /* set from the recipe before load */
} counts SEC(".maps");

/* Sends the sample with the user registers and stack to the ring buffer; false when it could not
 * (the caller counts it by stack ids instead). */
static __always_inline bool send_sample(const struct profile_key *key)
{
	__u32 zero = 0;
	struct profile_sample *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return false;
	/* the task's user registers, also when the sample interrupted it in the kernel */
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	s->tgid = key->tgid;
	s->tid = (__u32)bpf_get_current_pid_tgid();
	s->user_stack_id = key->user_stack_id;
	s->kernel_stack_id = key->kernel_stack_id;
	__builtin_memcpy(s->comm, key->comm, sizeof(s->comm));
	s->ip = BPF_CORE_READ(regs, ip);
	s->sp = BPF_CORE_READ(regs, sp);
	s->bp = BPF_CORE_READ(regs, bp);
	s->flags = 0;

	/* Page by page from sp: a piece never crosses a page, so the copy ends at the top of the
	 * stack mapping (or at a page not present) with what was readable before it. */
	/* 64-bit throughout: the verifier keeps unsigned bounds through the comparisons */
	__u64 len = 0, want = copy_bytes;
	for (int i = 0; i < PROFILE_MAX_STACK_BYTES / PROFILE_PAGE + 1; i++) {
		if (len >= want || len >= PROFILE_MAX_STACK_BYTES)
			break;
		__u64 at = s->sp + len;
		__u64 n = PROFILE_PAGE - (at & (PROFILE_PAGE - 1));
		__u64 left = want - len;
		if (n > left)
			n = left;
		if (bpf_probe_read_user(&s->stack[len & (PROFILE_MAX_STACK_BYTES - 1)], n,
					(const void *)at)) {
			s->flags |= PROFILE_SAMPLE_CUT;
			break;
		}
		len += n;
	}
	s->stack_len = (__u32)len;
	__u64 size = __builtin_offsetof(struct profile_sample, stack) + (__u64)len;
	if (size > sizeof(*s))
		size = sizeof(*s);
	__u64 wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) + size >= wake_bytes
			     ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&samples, s, size, wake)) {
		diag_stat_inc(&stats, PROFILE_STAT_RING_FULL);
		return false;
	}
	diag_stat_inc(&stats, PROFILE_STAT_SENT);
	return true;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct profile_key key = {};
	bool count_only = diag_count_only();

	if (tgid == 0 || !diag_current_wanted()) /* never the idle task */
		return 0;
	if (count_only) {
		diag_passed();
		return 0;
	}
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

	if (copy_bytes && user_stacks && key.user_stack_id != -EFAULT && send_sample(&key))
		return 0;
	diag_count_key(&counts, &key, &stats);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
