/* stack_sampler.h — stacks of samples a probe streamed with their user registers and stack copy
 * (bpf/diag_unwind.h, struct diag_user_sample): each sample's user stack fixed by engine/unwind.c
 * (a frameless leaf's caller inserted from CFI, or a DWARF unwind of the copy), counted per
 * distinct (thread name, user addresses and their origin, kernel stack id), and handed to the
 * shared stack table. For every stack probe (on-CPU now, off-CPU next): the probe owns its ring
 * buffer and passes stack_sampler_add as its sample callback.
 *
 * Owns: the fixed stacks and their weights and counts (at most max_rows distinct ones; more are
 * counted, not kept), the unwinder, the counts of what unwinding did, and the results fields
 * that report them (STACK_SAMPLER_RESULT_FIELDS).
 * Must not: symbolize (stacks.c), read the target's memory (only the copy), or drop a sample
 * without counting it.
 */
#ifndef DIAG_STACK_SAMPLER_H
#define DIAG_STACK_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacks.h"
#include "value.h"

struct stack_sampler;

/* dwarf: unwind the copies with DWARF (falling back to the frame-pointer stack when not even one
 * caller is found); else the frame-pointer stack of stacks_fd, its leaf's caller recovered by
 * CFI when leaf_fixup. */
struct stack_sampler *stack_sampler_new(int stacks_fd, bool dwarf, bool leaf_fixup, size_t max_rows);
void stack_sampler_free(struct stack_sampler *s);

/* One record from the ring buffer (libbpf's ring_buffer_sample_fn: ctx is the sampler). */
int stack_sampler_add(void *ctx, void *data, size_t size);
/* A new period (about once a second): mappings of the targets may be read again. */
void stack_sampler_period(struct stack_sampler *s);

/* Adds every distinct stack to t (in_kernel: kernel stack id other than -EFAULT, and
 * kernel_stacks); *weight and *count get the sums, *in_kernel_count the count in the kernel.
 * Returns the distinct stacks t refused. */
size_t stack_sampler_flush(struct stack_sampler *s, struct stack_table *t, bool kernel_stacks,
			   uint64_t *weight, uint64_t *count, uint64_t *in_kernel_count);
/* A probe that records 1 event in n (OPT_ROLE_SAMPLE_EVERY): stack_sampler_flush multiplies
 * every weight and count by n (1, the default: unchanged). */
void stack_sampler_set_scale(struct stack_sampler *s, uint64_t n);
/* Distinct stacks not kept (over max_rows), and records too short to be samples. */
uint64_t stack_sampler_refused(const struct stack_sampler *s);

/* Sets res's "user_unwind" and "unwind" (STACK_SAMPLER_RESULT_FIELDS): copy_bytes asked per
 * sample, sent and ring_full as the probe's BPF side counted them. */
void stack_sampler_report(const struct stack_sampler *s, struct value *res, uint64_t copy_bytes,
			  uint64_t sent, uint64_t ring_full);

#define STACK_SAMPLER_RESULT_FIELDS                                                               \
	{ "user_unwind", RT_STRING, NULL, false, "the user unwinder: fp or dwarf" },              \
	{ "unwind", RT_OBJECT, NULL, false, "user-space unwinding of the samples sent to it" },   \
	{ "unwind.leaf_fixup", RT_BOOLEAN, NULL, false, "fp: leaf callers recovered by CFI" },    \
	{ "unwind.copy_bytes", RT_INTEGER, "bytes", false, "user stack copied per sample (0: none)" }, \
	{ "unwind.sent", RT_INTEGER, "samples", false, "samples sent to user space to unwind" },  \
	{ "unwind.ring_full", RT_INTEGER, "samples", false,                                       \
	  "samples the ring buffer refused: counted with their frame-pointer stack only" },        \
	{ "unwind.unwound", RT_INTEGER, "samples", false, "samples unwound in user space" },      \
	{ "unwind.copied_bytes_avg", RT_INTEGER, "bytes", false, "stack bytes copied per sample" }, \
	{ "unwind.copies_cut", RT_INTEGER, "samples", false,                                      \
	  "copies that ended before copy_bytes (top of the stack, or a page not present)" },      \
	{ "unwind.fixed_leaves", RT_INTEGER, "samples", false,                                    \
	  "fp: samples whose leaf's caller was missing and was inserted from CFI" },              \
	{ "unwind.leaf_frame_ok", RT_INTEGER, "samples", false,                                   \
	  "fp: samples whose frame-pointer stack already had the leaf's caller" },                \
	{ "unwind.leaf_unknown", RT_INTEGER, "samples", false,                                    \
	  "fp: samples whose leaf had no usable CFI (or the word was not copied)" },              \
	{ "unwind.dwarf_complete", RT_INTEGER, "samples", false,                                  \
	  "dwarf: unwound to the outermost frame" },                                              \
	{ "unwind.dwarf_truncated", RT_INTEGER, "samples", false,                                 \
	  "dwarf: unwinding stopped early (end of the copy, a frame without CFI)" },              \
	{ "unwind.dwarf_failed", RT_INTEGER, "samples", false,                                    \
	  "dwarf: not even one caller: counted with the frame-pointer stack" }

#endif
