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
 * through a pipe as JSON, read with a size cap and parsed strictly. What the phase is given
 * (struct verdict_input) and runs in one state is snippet.h's; what it answers, answer.h's: both
 * are part of this API, included here.
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

#include "common/util.h"
#include "common/value.h"
#include "verdict/answer.h"
#include "verdict/snippet.h"

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

#endif
