/* hitcost.h — what a BPF program's attachment costs the code it traces, beyond the program's own
 * run time, per hit, on this machine: the part of a run's cost the kernel's BPF run-time
 * statistics do not see.
 *
 * Owns: the classes of attachment that cost something fixed per hit (a uprobe's trap into the
 * kernel and back, a uretprobe's trap and return trampoline, the syscall tracepoints' slow path
 * taken by every syscall of the machine while any is attached), the class of a loaded program
 * (from its section name), and their measurement: a nop program on a function of our own and on
 * sys_enter, a loop of calls timed with it attached and without, medians of several batches.
 * Must not: keep the programs or links past hitcost_release, print, or hold global state.
 */
#ifndef DIAG_HITCOST_H
#define DIAG_HITCOST_H

#include <stdbool.h>
#include <stdint.h>

#include "common/util.h"

struct bpf_program;

enum hit_class {
	HIT_OTHER = 0,  /* a tracepoint, raw_tp, tp_btf, perf event: the program's run time is most
			 * of what it costs (the dispatch: a few ns) */
	HIT_UPROBE,     /* a uprobe (USDT sites included): a trap per hit */
	HIT_URETPROBE,  /* a uretprobe: a trap at the entry and one at the return */
	HIT_SYSCALL,    /* a program on a syscall tracepoint: every syscall of the machine takes
			 * the slow path while it is attached (hits: the machine's syscalls) */
	HIT_N
};

/* Nanoseconds per hit of each class; 0 for HIT_OTHER and for a class not measured. */
struct hit_costs {
	double ns[HIT_N];
	bool measured[HIT_N];
};

/* The class of a loaded program, from its section name. */
enum hit_class hitcost_class_of(const struct bpf_program *prog);
/* Whether a program on a syscall tracepoint (raw_syscalls or syscalls:*): its attachment turns the
 * machine's slow path on, whatever it counts. */
bool hitcost_turns_slow_path_on(const struct bpf_program *prog);

/* What a measurement left attached: released by hitcost_release. */
struct hitcost_held {
	int fd[4];
	unsigned n;
};

/* Measures the classes whose bit (1u << class) is in mask, into out (others left as they are).
 * Takes a few milliseconds of CPU per class (uprobe classes: a few thousand traps). The uprobes
 * stay attached, in *held, for the caller to release after it has used the figures: releasing a
 * uprobe waits for the kernel's grace periods (tens to hundreds of ms). 0, or -1 with err (out's
 * classes unmeasured). */
int hitcost_measure(unsigned mask, struct hit_costs *out, struct hitcost_held *held,
		    struct diag_err *err);
/* Releases what a measurement left attached (slow: run it off the critical path). */
void hitcost_release(struct hitcost_held *held);

/* A counter of the machine's syscalls: a nop program on raw_syscalls' sys_enter (its run count,
 * while BPF run-time statistics are on, is the number of syscalls). For a run whose probes put
 * syscalls on the slow path without seeing them all (syscalls:sys_enter_mmap...). The fd of the
 * link (its program's fd in *prog_fd), or -1 with err. */
int hitcost_syscall_counter_open(int *prog_fd, struct diag_err *err);

/* Our own executable's file offset of a function of ours (for a uprobe on it). 0, or -1 with
 * errno. */
int hitcost_self_offset(const void *fn, uint64_t *offset);

#endif
