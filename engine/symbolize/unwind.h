/* unwind.h — user stacks the kernel's frame-pointer walk gets wrong or cannot take, recovered in
 * user space from what a stack probe copied with each sample (user registers, the top of the user
 * stack), with the call frame information (CFI: .eh_frame, .debug_frame) of the target's ELF
 * files, through elfutils (libdw, libdwfl). x86-64.
 *
 * Owns: per process, a snapshot of its executable mappings and the ELF files and CFI they map
 * (read by tfile.c, like usyms.c's); leaf-frame recovery (where the return
 * address of the frame at ip is, when that frame has no frame pointer of its own); DWARF
 * unwinding of a copied stack (libdwfl over the copy, as perf's unwind-libdw.c).
 * Must not: symbolize (stacks.c, ksyms.c and usyms.c do), read the target's live memory (only the
 * copy the probe took: the stack has moved on since), trust the copy or the ELF files (every read
 * is bounded by what was copied or what the file holds), or print.
 */
#ifndef DIAG_UNWIND_H
#define DIAG_UNWIND_H

#include <stddef.h>
#include <stdint.h>

/* Where a user frame came from, for the report. */
enum frame_origin {
	FRAME_FP = 0, /* the kernel's frame-pointer walk (bpf_get_stackid) */
	FRAME_CFI,    /* a frameless leaf's caller, from the CFI at the sampled address */
	FRAME_DWARF,  /* a DWARF unwind of the copied stack */
	FRAME_PY,     /* a Python frame read in BPF (python.h: not an address, a packed slot) */
};
const char *frame_origin_name(enum frame_origin o);

/* What a probe copied with a sample: user registers, and the stack bytes at [sp, sp + len). */
struct user_sample {
	uint64_t ip, sp, bp;
	const uint8_t *stack;
	size_t len;
};

/* Where the return address of the frame executing at an address is, by its CFI. */
enum cfi_ra {
	CFI_RA_UNKNOWN = -1, /* no CFI covers the address, or a rule this reader does not follow */
	CFI_RA_FRAME = 0,    /* the frame has a frame pointer (CFA from rbp): the fp walk is right */
	CFI_RA_AT_SP = 1,    /* no frame pointer (CFA from rsp): the return address is at sp + off */
};

/* The rule at address pc (an address of the ELF file as linked, not as mapped) of the ELF file
 * at path: .eh_frame, else .debug_frame. *sp_offset gets the return address's offset from sp for
 * CFI_RA_AT_SP. For tests and tools; the unwinder below caches the files. */
enum cfi_ra cfi_ra_rule_path(const char *path, uint64_t pc, uint64_t *sp_offset);

struct unwinder;
struct tfile_reader;

/* reader: how the target's files and maps are read (tfile.h; shared, not owned); NULL: a reader
 * of its own. */
struct unwinder *unwinder_new(struct tfile_reader *reader);
void unwinder_free(struct unwinder *u);
/* A new period (a probe's tick): a process's mappings are read again, at most once a period,
 * when an address falls outside those known. */
void unwinder_new_period(struct unwinder *u);

/* Leaf-frame recovery for a sample of process pid: returns 1 and sets *caller to the return
 * address of the frame at s->ip when its CFI says the frame has no frame pointer (a frameless
 * leaf, or a function before its prologue has run) and the address is in the copied stack;
 * 0 when the frame has a frame pointer (the kernel's walk already has the caller); -1 when it
 * cannot be told (no mapping, no CFI, the word was not copied). */
int unwind_leaf_caller(struct unwinder *u, int pid, const struct user_sample *s, uint64_t *caller);
/* The same through a chain of frameless frames (glibc's __lll_lock_wake called by
 * pthread_mutex_unlock, called by the user's function): the return addresses of each frameless
 * frame from the leaf on, into callers (at most max), until a frame with a frame pointer (the
 * walk has its caller) or one that cannot be unwound. Returns how many (>= 1), 0 when the leaf
 * has a frame pointer, -1 when not even the leaf can be told. */
int unwind_leaf_callers(struct unwinder *u, int pid, const struct user_sample *s, uint64_t *callers,
			size_t max);

/* DWARF unwinding of a sample of thread tid of process pid: up to max return addresses, leaf (ip)
 * first, into ips; *n gets how many. Returns 0 when the unwind reached the outermost frame (CFI
 * says there is no caller), 1 when it stopped before (truncated: the copy ended, or a frame
 * without CFI), -1 when not even the first frame could be unwound. */
int unwind_dwarf(struct unwinder *u, int pid, int tid, const struct user_sample *s, uint64_t *ips,
		 size_t max, size_t *n);

#endif
