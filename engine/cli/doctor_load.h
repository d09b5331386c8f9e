/* doctor_load.h — for `diagnose doctor`: whether a probe kind's real BPF object loads on this
 * kernel (its relocations resolve, the verifier accepts its programs).
 * Owns: one load and unload of one kind, in a child process, and the one line that says why it
 * failed. Must not: attach anything or leave a program loaded (the child's exit frees them). */
#ifndef DIAG_DOCTOR_LOAD_H
#define DIAG_DOCTOR_LOAD_H

#include <stddef.h>

struct probe_kind;

enum kind_load {
	KIND_LOADED,    /* variant says which attach variant */
	KIND_NOT_TRIED, /* no BPF object, or one that needs a recipe's option (why says which) */
	KIND_FAILED,    /* why: the failing relocation or program, or the probe's own error */
	KIND_DEGRADED,  /* loads, short of something on this kernel (why: the probe's degraded) */
};

/* Loads kind k with every option at its default, for doctor's own process (the uprobe kinds need
 * a process: doctor's libc is as good as any), then unloads it. */
enum kind_load doctor_load_kind(const struct probe_kind *k, char *variant, size_t variant_size,
				char *why, size_t why_size);

#endif
