/* stacks.h — symbolized call stacks with a weight: what every stack probe reports (on-CPU
 * samples, off-CPU time, bytes allocated, ...).
 *
 * Owns: a bounded table that a probe fills row by row while it iterates its own counts map;
 * reading stack ids from a BPF stack-trace map (DIAG_STACK_DEPTH frames, engine/abi/diag_bpf.h) and
 * symbolizing them (collect_ctx: ksyms, usyms); merging rows that are equal once symbolized;
 * ordering by weight; and the results shape every stack probe shares:
 *   stack_unit: "samples" | "ns" | "bytes" | ...   (what weight measures)
 *   stacks: [{weight, count, comm, in_kernel, user: [leaf..root], kernel: [leaf..root], tag?,
 *             user_from?: ["fp"|"cfi"|"dwarf"|"python", ...]}]  ("python": a frame named by the
 *             namer a probe set, stacks_set_namer: python.c's code objects)
 *   jit_frames?: [names]   (the user frame names a process's perf map gave: JIT code, named)
 *   debug_hints?: [{file, path, self_weight, vaddr_bias, build_id?, debug_path?, package?,
 *                   package_version?, dbgsym_package?}]: the stripped files user frames point
 *             into ("module+0xOFF" frames), heaviest first, with what would name their code
 *             (the owner from our root's dpkg database only when the mapped file is the one at
 *             its path in our root; pkgdb.h)
 * Must not: know a probe's map keys or what its weight means, or interpret the stacks (that is
 * the recipe's Lua).
 */
#ifndef DIAG_STACKS_H
#define DIAG_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan/catalog.h"
#include "common/value.h"

struct stack_table;

/* A table of at most max_rows rows (a probe passes its counts map's max_entries: it is fed at
 * most one row per entry). ctx symbolizes stack ids; it may be NULL when only
 * stacks_add_frames is used. */
struct stack_table *stacks_new(const struct collect_ctx *ctx, size_t max_rows);

/* One row from the ids of a BPF stack-trace map (stacks_fd): user_stack_id and kernel_stack_id
 * < 0 mean no such stack (empty frames). Kernel frames unknown to ksyms are "[unknown]", user
 * frames are named by the symbolizer of process tgid (collect_usyms; "0x..." without one). comm
 * is NUL-terminated. in_kernel: the
 * probe's own reading of where the task was (cpu_profile: sampled in kernel mode). weight: in
 * the probe's stack_unit; count: events behind it. tag (NULL or "": none) splits rows that the
 * stacks alone do not, e.g. a task state "blocked-uninterruptible". Returns 0, or -1 when the
 * table already holds max_rows rows (the row is counted in stacks_refused, not kept). */
int stacks_add_ids(struct stack_table *t, int stacks_fd, int tgid, const char *comm, int32_t user_stack_id,
		   int32_t kernel_stack_id, bool in_kernel, uint64_t weight, uint64_t count,
		   const char *tag);

/* The return addresses of stack id in stacks_fd, leaf first, into ips (DIAG_STACK_DEPTH of them);
 * returns how many (0 for id < 0 or an id the map no longer has). For probes that fix a stack
 * (engine/symbolize/unwind.c) before adding it with stacks_add_user_ips. */
size_t stacks_read_ids(int stacks_fd, int32_t id, uint64_t *ips);

/* A row whose user stack is given as addresses, leaf first, with where each came from (origin:
 * enum frame_origin of unwind.h, NULL: all from the frame-pointer walk); the kernel stack from
 * stacks_fd as in stacks_add_ids. Rows with frames not all from "fp" carry `user_from`. */
int stacks_add_user_ips(struct stack_table *t, int stacks_fd, int tgid, const char *comm,
			const uint64_t *user, const uint8_t *origin, size_t n_user,
			int32_t kernel_stack_id, bool in_kernel, uint64_t weight, uint64_t count,
			const char *tag);

/* What names the frames of origin FRAME_PY (an interpreter's frames, packed into a slot by the
 * sampler that read them: python.h) of process tgid, in rows added from now on: writes the name
 * into buf, returns 1 when named. */
typedef int (*stacks_frame_namer)(void *arg, int tgid, uint64_t slot, char *buf, size_t len);
void stacks_set_namer(struct stack_table *t, stacks_frame_namer namer, void *arg);

/* The same with frames already named, leaf first (at most DIAG_STACK_DEPTH of each are kept). */
int stacks_add_frames(struct stack_table *t, const char *comm, const char *const *user,
		      size_t n_user, const char *const *kernel, size_t n_kernel, bool in_kernel,
		      uint64_t weight, uint64_t count, const char *tag);

/* One stack's frames named as the rows' are, without a table (a probe reporting stacks one by one,
 * per thread): user frames by process tgid's symbolizer (origin per frame, NULL: all from the
 * frame-pointer walk; FRAME_PY ones by namer, NULL: "[python]"), kernel ones by ctx's ksyms,
 * leading tracing frames dropped; leaf first, as a new array of strings. No hints or JIT names
 * are gathered. */
struct value *stacks_frames_value(const struct collect_ctx *ctx, int tgid, const uint64_t *ips,
				  const uint8_t *origin, size_t n, bool kernel, stacks_frame_namer namer,
				  void *namer_arg);

/* Extra integer fields of every row, for a probe whose stacks carry more than a weight and a
 * count (allocations: blocks allocated and freed, their age): at most STACKS_MAX_EXTRA, named
 * (each becomes a key of the stack's object), summed when rows merge, or kept as the largest for
 * the names whose is_max is true. Call before adding rows; names must outlive the table. */
#define STACKS_MAX_EXTRA 16
void stacks_set_extra(struct stack_table *t, const char *const *names, const bool *is_max, size_t n);
/* The extra values (as many as stacks_set_extra named) of the row added last, after a
 * stacks_add_* that returned 0. */
void stacks_last_extra(struct stack_table *t, const uint64_t *vals);

/* Rows refused because the table was full. */
size_t stacks_refused(const struct stack_table *t);

/* Merges rows with equal (comm, tag, in_kernel, user frames, kernel frames), summing weight and
 * count; orders them by weight, then count, descending, equal ones by comm, tag, in_kernel and
 * frames (the same table always gives the same order); sets res's "stack_unit" to unit and its
 * "stacks" to the array (returned, owned by res). Frees the table. */
struct value *stacks_finish(struct stack_table *t, struct value *res, const char *unit);

/* Stripped files noted per table (more are not hinted at). */
#define STACKS_MAX_HINT_FILES 32

/* The declarations of the fields stacks_finish sets, for a kind's `results` (catalog.h). */
#define STACK_RESULT_FIELDS                                                                       \
	{ "stack_unit", RT_STRING, NULL, false, "what weight measures (the kind's stack_unit)" },  \
	{ "stacks", RT_ARRAY, NULL, false, "distinct stacks, heaviest first" },                   \
	{ "stacks[]", RT_OBJECT, NULL, false, "one distinct stack" },                              \
	{ "stacks[].weight", RT_INTEGER, "stack_unit", false, "the stack's total, in stack_unit" }, \
	{ "stacks[].count", RT_INTEGER, "count", false, "events behind it" },                      \
	{ "stacks[].comm", RT_STRING, NULL, false, "thread name" },                                \
	{ "stacks[].in_kernel", RT_BOOLEAN, NULL, false, "the task was seen in the kernel" },       \
	{ "stacks[].user", RT_ARRAY, NULL, false, "user frames, leaf first" },                     \
	{ "stacks[].user[]", RT_STRING, NULL, false, "a symbol, or 0xADDRESS when unknown" },      \
	{ "stacks[].kernel", RT_ARRAY, NULL, false, "kernel frames, leaf first" },                 \
	{ "stacks[].kernel[]", RT_STRING, NULL, false, "a symbol, or [unknown]" },                 \
	{ "stacks[].tag", RT_STRING, NULL, true, "what else splits the stack (e.g. a task state)" }, \
	{ "stacks[].user_from", RT_ARRAY, NULL, true,                                             \
	  "where each user frame came from, when not all from the frame-pointer walk" },          \
	{ "stacks[].user_from[]", RT_STRING, NULL, false,                                        \
	  "fp, cfi (a leaf's caller), dwarf, or python (a CPython frame: \"qualname (file:line)\")" }, \
	{ "jit_frames", RT_ARRAY, NULL, true,                                                     \
	  "user frame names read from a process's perf map (JIT code: named functions), sorted" }, \
	{ "jit_frames[]", RT_STRING, NULL, false, "a frame name as it appears in stacks[].user" }, \
	{ "debug_hints", RT_ARRAY, NULL, true,                                                    \
	  "stripped files user frames point into (module+0xOFF), heaviest first" },               \
	{ "debug_hints[]", RT_OBJECT, NULL, false, "one stripped file" },                          \
	{ "debug_hints[].file", RT_STRING, NULL, false, "its base name, as frames show it" },      \
	{ "debug_hints[].path", RT_STRING, NULL, false, "the path the process maps it at" },       \
	{ "debug_hints[].self_weight", RT_INTEGER, "stack_unit", false,                           \
	  "weight of the stacks whose leaf is in it" },                                            \
	{ "debug_hints[].vaddr_bias", RT_INTEGER, "bytes", false,                                 \
	  "address minus file offset in its code: OFF + this is what objdump and perf show" },    \
	{ "debug_hints[].build_id", RT_STRING, NULL, true, "its GNU build-id (hex)" },             \
	{ "debug_hints[].debug_path", RT_STRING, NULL, true,                                      \
	  "where its debug file is read by build-id (/usr/lib/debug/.build-id/XX/REST.debug)" },  \
	{ "debug_hints[].package", RT_STRING, NULL, true,                                         \
	  "the installed package that owns it (our root's dpkg database)" },                      \
	{ "debug_hints[].package_version", RT_STRING, NULL, true, "that package's version" },     \
	{ "debug_hints[].dbgsym_package", RT_STRING, NULL, true,                                  \
	  "the package with its debug symbols (Debian: PACKAGE-dbgsym)" }

/* Frees a table that was not finished (NULL is fine). */
void stacks_free(struct stack_table *t);

#endif
