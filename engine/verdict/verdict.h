/* verdict.h — interpretation: a recipe's Lua snippet turns aggregated results into verdicts.
 *
 * Owns: a fresh sandboxed Lua 5.4 state per call (only base without load/loadfile/dofile/require/
 * collectgarbage/rawset/print, string without dump, table, math, utf8; setmetatable refuses __gc,
 * as finalizers run outside the hook; an instruction limit and a memory cap), the shared Lua
 * libraries (lua/lib/NAME.lua, loaded in name order before the snippet), handing results in as
 * read-only tables and reading back the snippet's answer — within a node and text budget —,
 * checked and sorted worst first. verdict_run does all of it in a forked child process with a
 * wall-clock deadline, RLIMIT_CPU and RLIMIT_AS, so that time spent inside one C library call
 * (string.rep, table.unpack, a backtracking string.find) is bounded too; the answer comes back
 * through a pipe as JSON, read with a size cap and parsed strictly.
 * Must not: print, know what any probe's results mean, or leave a child process behind.
 *
 * The snippet is a Lua chunk that sees the globals `results`, `thresholds`, `run` (read-only
 * tables) and the libraries, and returns
 *     { verdicts  = { {id=, severity="ok|info|warning|critical", title=, evidence={..},
 *                      next_steps={..}, next={recipe=, params={..}} -- optional}, ... },
 *       report    = { section, ... },          -- optional, see report.h for section shapes
 *       ruled_out = { {id=, text=}, ... },     -- optional: what was checked and found fine,
 *                                              -- id [a-z0-9-]+ (a hypothesis), text one line
 *       metrics   = { {name=, value=, help=}, ... } } -- optional: key figures (diagnose watch
 *                                              -- exports them), name ending in its unit
 */
#ifndef DIAG_VERDICT_H
#define DIAG_VERDICT_H

#include <stddef.h>
#include <sys/types.h>

#include "recipe/source.h"
#include "common/util.h"
#include "common/value.h"

enum severity { SEV_OK = 0, SEV_INFO = 1, SEV_WARNING = 2, SEV_CRITICAL = 3 };

struct verdict_input {
	const struct source_file *lua;  /* the recipe's snippet, as read (and hashed) once */
	const struct source_file *libs; /* shared libraries, run in this order before the snippet */
	size_t n_libs;
	const struct value *results;   /* object: probe id -> probe results */
	const struct value *thresholds; /* object: name -> number or string */
	const struct value *run;       /* object: target, duration_s, stop_reason, ... */
	size_t max_instructions;       /* 0 = VERDICT_DEFAULT_MAX_INSTRUCTIONS */
	size_t max_memory_bytes;       /* Lua allocator cap; 0 = VERDICT_DEFAULT_MAX_MEMORY */
	unsigned max_ms;               /* wall clock of the phase (verdict_finish: results sent
					* to answer parsed); 0 = VERDICT_DEFAULT_MAX_MS */
	size_t max_nodes;              /* values in the answer (verdicts, report, ruled_out:
					* every table, string, number, copies of results
					* included);
					* 0 = VERDICT_DEFAULT_MAX_NODES */
	size_t max_text_bytes;         /* bytes of strings and keys in the answer;
					* 0 = VERDICT_DEFAULT_MAX_TEXT_BYTES */
};

#define VERDICT_DEFAULT_MAX_INSTRUCTIONS (50u * 1000 * 1000)
#define VERDICT_DEFAULT_MAX_MEMORY (64u << 20)
/* Above what the instruction limit allows (50 M instructions of proxy-heavy Lua, as high-cpu.lua
 * on 16384 stacks, take about 6 s on an idle machine): a backstop for time inside C calls. */
#define VERDICT_DEFAULT_MAX_MS 10000u
#define VERDICT_DEFAULT_MAX_NODES (200u * 1000)
#define VERDICT_DEFAULT_MAX_TEXT_BYTES (16u << 20)

/* What a snippet answered, checked; every member an array, owned by whoever holds the answer
 * (verdict_answer_free). */
struct verdict_answer {
	struct value *verdicts;  /* worst first (stable: the snippet's order within a severity) */
	struct value *report;    /* sections, possibly empty */
	struct value *ruled_out; /* {id, text} objects in the snippet's order, possibly empty */
	struct value *metrics;   /* {name, value, help}: the run's key figures, possibly empty */
};
void verdict_answer_free(struct verdict_answer *a);

/* Runs the snippet in a child process. On success *out is set (every member an array) and owned
 * by the caller. On failure returns -1 with *out all NULL, err->code
 * DIAG_EXIT_RUNTIME, a one-line message starting with the Lua file's path: the Lua error (with
 * the line where Lua gives it), "...: report[1].rows: result too large (over N nodes)",
 * "...: verdict phase over its time limit of N ms (killed)", or the signal that ended the child.
 * The child is always reaped before this returns; blocked signals stay blocked in it (the parent
 * kills it with SIGKILL). */
int verdict_run(const struct verdict_input *in, struct verdict_answer *out, struct diag_err *err);

/* verdict_run in two steps, so that the child's start (the fork, the sandbox, the libraries run
 * and the snippet compiled: most of the phase's time) overlaps the collection: verdict_start
 * forks it from in (which must outlive it; in->results and in->run are not read), verdict_finish
 * hands it the results and takes its answer as verdict_run does (its deadline, in->max_ms, counts
 * from there), verdict_cancel kills and reaps one that will not be needed. After verdict_finish
 * or verdict_cancel the child is gone. */
struct verdict_child {
	pid_t pid;
	int pidfd, to_child, from_child;
	const struct verdict_input *in;
};
/* A verdict_child with no child: what verdict_start leaves on failure, and after the end. */
#define VERDICT_CHILD_NONE ((struct verdict_child){ .pid = -1, .pidfd = -1, .to_child = -1, .from_child = -1 })
int verdict_start(const struct verdict_input *in, struct verdict_child *ch, struct diag_err *err);
int verdict_finish(struct verdict_child *ch, const struct value *results, const struct value *run,
		   struct verdict_answer *out, struct diag_err *err);
void verdict_cancel(struct verdict_child *ch);

/* The same in this process, for tests and the fuzzer: every limit holds but the wall clock, so
 * one pathological C library call can run for minutes. The engine calls verdict_run. */
int verdict_run_inprocess(const struct verdict_input *in, struct verdict_answer *out,
			  struct diag_err *err);

/* Checks that a Lua file compiles (text only), for lint. On failure returns -1, err->code
 * DIAG_EXIT_USAGE (an invalid recipe), message "FILE:LINE: what" as Lua gives it. */
int verdict_check_syntax(const struct source_file *lua, struct diag_err *err);
/* The same for a recipe's libraries and snippet, in load order: the first that does not compile. */
int verdict_check_sources(const struct recipe_sources *src, struct diag_err *err);

enum severity severity_parse(const char *s, int *ok);
const char *severity_name(enum severity s);
/* Worst severity in an array of verdict objects (SEV_OK when empty). */
enum severity verdicts_worst(const struct value *verdicts);

#endif
