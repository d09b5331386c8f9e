/* stack_sampler.h — stacks of samples a probe streamed with their user registers and stack copy
 * (engine/abi/diag_unwind.h, struct diag_user_sample): each sample's user stack fixed by engine/symbolize/unwind.c
 * (a frameless leaf's caller inserted from CFI, or a DWARF unwind of the copy), counted per
 * distinct (thread name, tag, user addresses and their origin, kernel stack id), and handed to
 * the shared stack table. For every stack probe (on-CPU samples, off-CPU intervals, wakers): the
 * probe's BPF object owns the ring buffer map; the sampler reads it (stack_sampler_open_ring) and
 * the probe's drain/tick/wake_fd ops call stack_sampler_drain/tick/wake_fd, and the probe's
 * detach stack_sampler_consume.
 *
 * Owns: the ring buffer reader, the fixed stacks and their weights and counts (at most max_rows
 * distinct ones; more are counted, not kept), samples waiting for their weight, the unwinder,
 * the counts of what unwinding did, and the results fields that report them
 * (STACK_SAMPLER_RESULT_FIELDS); for CPython targets, its python_procs (python.c: which processes
 * run CPython, written into the probe's py_procs map), the Python frames records waiting for
 * their sample, and their splice into the sample's stack (python_splice). What a probe's own
 * records and the bytes it adds after a sample's copy mean is the probe's (set_own_records).
 * Must not: symbolize (stacks.c; Python frames are named there through python.c's namer), read
 * the target's memory itself (only the copy; python.c reads what it needs through tfile), or
 * drop a sample without counting it.
 */
#ifndef DIAG_STACK_SAMPLER_H
#define DIAG_STACK_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/stacks.h"
#include "common/value.h"

struct stack_sampler;

/* dwarf: unwind the copies with DWARF (falling back to the frame-pointer stack when not even one
 * caller is found; continued by it where the copy ended first); else the frame-pointer stack of
 * stacks_fd, its leaf's caller recovered by CFI when leaf_fixup. stacks_fd < 0 (samples of other
 * tasks than the one a program ran in, which the kernel does not walk): the frame-pointer walk
 * over the sample's own copy. tags (n_tags names, or NULL):
 * what a sample's tag means, passed to the stack table as the row's tag. max_pending: threads
 * that may have a sample waiting for its weight at once (samples sent with a cookie). */
struct tfile_reader;
/* files: how the target's files are read for unwinding (tfile.h; shared, not owned; NULL: a reader
 * of its own). */
struct stack_sampler *stack_sampler_new(int stacks_fd, bool dwarf, bool leaf_fixup, size_t max_rows,
					const char *const *tags, size_t n_tags, size_t max_pending,
					struct tfile_reader *files);
void stack_sampler_free(struct stack_sampler *s);

/* Feeds s from the BPF ring buffer map ring_fd (records as below). Returns 0, or -1 with errno. */
int stack_sampler_open_ring(struct stack_sampler *s, int ring_fd);
/* Everything that waits in the ring buffer (s NULL, or no ring: nothing): after the probe is
 * detached, when nothing more comes. */
void stack_sampler_consume(struct stack_sampler *s);
/* What waits in the ring buffer, for at most 200 ms (the rest at the next call): the run loop's
 * drain, while the probe still produces. */
void stack_sampler_drain(struct stack_sampler *s);
/* The fd the run loop polls to know records wait (-1: none). */
int stack_sampler_wake_fd(const struct stack_sampler *s);
/* A session tick: drain, and start a new period (s NULL: nothing). */
void stack_sampler_tick(struct stack_sampler *s);
/* The ring buffer size for about want bytes: a power of 2, at least one page. */
uint32_t stack_sampler_ring_size(uint64_t want);

/* The check of a probe's user_unwind option: "fp" or "dwarf". */
const char *stack_sampler_check_unwind(const char *value);
/* True when a probe's user_unwind option asks for DWARF unwinding in user space. */
bool stack_sampler_wants_dwarf(const char *user_unwind);

/* Defines NAME_drain, NAME_wake_fd and NAME_tick, the run loop's hooks (struct probe_kind's
 * drain, wake_fd, tick), for a probe kind whose private state PTYPE keeps its sampler in
 * `sampler`: read the ring when it wakes, and once a second. */
#define STACK_SAMPLER_PROBE_OPS(name, ptype)                                                      \
	static void name##_drain(struct probe *p)                                                 \
	{                                                                                         \
		stack_sampler_drain(((ptype *)p->priv)->sampler);                                   \
	}                                                                                         \
	static int name##_wake_fd(struct probe *p)                                                \
	{                                                                                         \
		return stack_sampler_wake_fd(((ptype *)p->priv)->sampler);                          \
	}                                                                                         \
	static void name##_tick(struct probe *p)                                                  \
	{                                                                                         \
		stack_sampler_tick(((ptype *)p->priv)->sampler);                                    \
	}

/* The options of a probe whose events' stacks (a sample, a fault, an off-CPU interval, a wakeup)
 * may be unwound in user space, one by one for a kind whose option differs (cpu_profile's ring
 * serves its fp leaf fixup too), or all three: user_unwind (default unwind_default),
 * stack_bytes (default stack_default), ring_buffer_kib (default ring_default). what: the event,
 * as the help says it ("each sample"). */
#define STACK_SAMPLER_UNWIND_OPTION(what, unwind_default)                                         \
	{ .name = "user_unwind", .type = OPT_STRING, .dflt_str = unwind_default,                  \
	  .check = stack_sampler_check_unwind,                                                    \
	  .help = "fp: the kernel's frame-pointer walk; dwarf: copy stack_bytes of user stack at " \
		  what " and unwind it in user space by CFI, continued by the frame-pointer walk " \
		  "where the copy ends (callers hidden by frameless code such as glibc's)" }
#define STACK_SAMPLER_STACK_BYTES_OPTION(what, stack_default)                                     \
	{ .name = "stack_bytes", .type = OPT_UINT, .dflt = stack_default, .min = 256,             \
	  .max = DIAG_MAX_STACK_BYTES,                                                            \
	  .help = "dwarf: bytes of user stack above sp copied at " what " (deeper: continued by " \
		  "the frame-pointer walk)" }
#define STACK_SAMPLER_RING_OPTION(ring_default)                                                   \
	{ .name = "ring_buffer_kib", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES,              \
	  .dflt = ring_default, .min = 4, .max = 262144, .bytes_per_entry = 1024,                 \
	  .help = "dwarf: KiB of ring buffer for the stacks to unwind (a power of 2; drained when " \
		  "a quarter full; full: the event keeps its frame-pointer stack only)" }
#define STACK_SAMPLER_OPTIONS(what, unwind_default, stack_default, ring_default)                  \
	STACK_SAMPLER_UNWIND_OPTION(what, unwind_default),                                        \
	STACK_SAMPLER_STACK_BYTES_OPTION(what, stack_default),                                    \
	STACK_SAMPLER_RING_OPTION(ring_default)

/* Python frames (engine/abi/diag_python.h): py (owned from here) looks at the
 * processes whose samples come, and those that run CPython go into the probe's py_procs map
 * (py_map_fd), so that their next samples carry their Python frames; those frames replace the
 * evaluation loop's native ones. Call once the probe's object is loaded. */
struct python_procs;
void stack_sampler_set_python(struct stack_sampler *s, struct python_procs *py, int py_map_fd);
/* Before a probe's object loads: the Python detector for it (NULL without the python_frames
 * option), and *py_walk, whether its BPF reads Python frames (the rodata py_walk): when the
 * target pid runs CPython, or when samples stream anyway (copy_bytes > 0: the processes of a set
 * are looked at as their samples come). */
struct tfile_reader;
struct python_procs *stack_sampler_python_plan(bool option, int pid, uint32_t copy_bytes,
					       struct tfile_reader *files, bool *py_walk);
/* Once loaded, with py from stack_sampler_python_plan (s NULL: py is freed): set_python, then
 * the target pid (> 0) looked at now. */
void stack_sampler_python_start(struct stack_sampler *s, struct python_procs *py, int py_map_fd,
				int pid);
/* The option that turns it off (STACK_SAMPLER_PYTHON_OPTION). */
#define STACK_SAMPLER_PYTHON_OPTION                                                               \
	{ .name = "python_frames", .type = OPT_BOOL, .dflt = 1, .max = 1,                         \
	  .help = "CPython 3.11-3.13 targets: read the interpreter's frames in BPF and show "      \
		  "\"function (file.py:line)\" in place of the evaluation loop's native frames" }

/* Looks at process tgid now (before its first sample: the target of a --pid run): 1 when it runs
 * CPython and is in the map, 0 when not, -1 when the map refused it. */
int stack_sampler_python_add(struct stack_sampler *s, int tgid);

/* One record from the ring buffer (libbpf's ring_buffer_sample_fn: ctx is the sampler): a
 * sample (struct diag_user_sample), or the weight of one sent earlier (struct diag_weight_rec). */
int stack_sampler_add(void *ctx, void *data, size_t size);
/* Gives the sample thread tid sent with cookie its weight (a probe does this itself for samples
 * still waiting when it stops, e.g. threads still off the CPU). Returns 0, or -1 when no such
 * sample waits (refused, or replaced by the thread's next one). */
int stack_sampler_settle(struct stack_sampler *s, uint32_t tid, uint64_t cookie, uint64_t weight);
/* A new period (about once a second): mappings of the targets may be read again. */
void stack_sampler_period(struct stack_sampler *s);

/* The fixed user stack of row (a row index the probe's own sample hook got, below): its addresses,
 * leaf first, and each one's origin (enum frame_origin of unwind.h); returns how many (0 for a
 * row it does not have). Valid until the sampler is freed. */
size_t stack_sampler_row_frames(const struct stack_sampler *s, size_t row, const uint64_t **ips,
				const uint8_t **from);
/* Adds weight and count to row (a row index the probe's own sample hook got, below). */
void stack_sampler_row_weigh(struct stack_sampler *s, size_t row, uint64_t weight, uint64_t count);
/* A probe that sends records of its own through the ring buffer of its samples, in order with
 * them, and keeps figures of its own per row (the mappings probe: what each call path mapped, and
 * what of it is still mapped at the end): from now on a record whose first word is none of the
 * DIAG_REC_* types goes to record (instead of being counted as malformed), and each sample, once
 * counted in its row, to sample with the whole record (bytes after its stack_len bytes of copy are
 * the probe's: the sampler does not read them) and the row (< 0: refused, the rows are full). A
 * sample without a cookie is counted with its weight; one with a cookie with none, its weight the
 * probe's to give later (the allocations probe: a block's stack when it was allocated, weighed by
 * whether the block is still held at the end) instead of waiting for a diag_weight_rec. A row keeps its index until the sampler is freed; the probe weighs rows with
 * stack_sampler_row_weigh and adds them with stack_sampler_flush_each. Either hook may be NULL. */
typedef void stack_sampler_record_fn(void *ctx, const void *data, size_t size);
typedef void stack_sampler_sample_fn(void *ctx, const void *data, size_t size, long row);
void stack_sampler_set_own_records(struct stack_sampler *s, stack_sampler_record_fn *record,
				   stack_sampler_sample_fn *sample, void *ctx);
/* Adds the rows with a count to t as weighed (no scaling), calling added(ctx, row, t) after each
 * one t took (for stacks_last_extra). Returns the rows t refused. */
typedef void stack_sampler_row_added(void *ctx, size_t row, struct stack_table *t);
size_t stack_sampler_flush_each(struct stack_sampler *s, struct stack_table *t, bool kernel_stacks,
				stack_sampler_row_added *added, void *ctx);

/* Adds every distinct stack to t (in_kernel: kernel stack id other than -EFAULT, and
 * kernel_stacks), weights and counts multiplied by scale (1-in-scale sampling); *weight and
 * *count get the sums, *in_kernel_count the count in the kernel. Returns the distinct stacks t
 * refused. */
size_t stack_sampler_flush(struct stack_sampler *s, struct stack_table *t, bool kernel_stacks,
			   double scale, uint64_t *weight, uint64_t *count, uint64_t *in_kernel_count);
/* Adds the weight and count of the rows of each tag to weight[tag] and count[tag] (arrays of the
 * n_tags given to stack_sampler_new; unscaled). */
void stack_sampler_tag_sums(const struct stack_sampler *s, uint64_t *weight, uint64_t *count);
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
	  "dwarf: not even one caller: counted with the frame-pointer stack" },                   \
	{ "unwind.dwarf_spliced", RT_INTEGER, "samples", false,                                   \
	  "dwarf: stopped at the end of the copy and continued by the frame-pointer walk" },      \
	{ "unwind.unweighed", RT_INTEGER, "samples", false,                                       \
	  "samples whose weight never came (e.g. off-CPU intervals under min_block_us)" },         \
	/* the python_* fields: optional, as reports recorded before them have none */         \
	{ "unwind.python_runtime", RT_STRING, NULL, true,                                         \
	  "the CPython the target runs (\"CPython 3.11.2\"), or why its frames are not read" },  \
	{ "unwind.python_samples", RT_INTEGER, "samples", true,                                  \
	  "samples whose Python frames were read (they replace the evaluation loop's)" },          \
	{ "unwind.python_frames_avg", RT_INTEGER, "count", true, "Python frames per such sample" }, \
	{ "unwind.python_cut", RT_INTEGER, "samples", true,                                      \
	  "samples with more Python frames than were read (DIAG_PY_MAX_FRAMES)" },               \
	{ "unwind.python_no_thread_state", RT_INTEGER, "samples", true,                          \
	  "samples of a thread of a Python process that has no Python thread state" },           \
	{ "unwind.python_bad_reads", RT_INTEGER, "samples", true,                                \
	  "samples whose frame walk ended at memory it could not read" },                        \
	{ "unwind.python_lost", RT_INTEGER, "samples", true,                                     \
	  "samples of a Python process without their Python frames (before it was looked at)" },  \
	{ "unwind.python_unplaced", RT_INTEGER, "samples", true,                                 \
	  "samples with Python frames the native stack had no evaluation-loop frame for" }

#endif
