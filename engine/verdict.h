/* verdict.h — interpretation: a recipe's Lua snippet turns aggregated results into verdicts.
 *
 * Owns: a fresh sandboxed Lua 5.4 state per call (only base without load/loadfile/dofile/require/
 * collectgarbage/rawset/print, string without dump, table, math, utf8; setmetatable refuses __gc,
 * as finalizers run outside the hook; an instruction limit and a memory cap), the shared Lua
 * libraries (lua/lib/NAME.lua, loaded in name order before the snippet), handing results in as
 * read-only tables and reading back the snippet's answer, checked and sorted worst first.
 * Must not: print, or know what any probe's results mean.
 *
 * The snippet is a Lua chunk that sees the globals `results`, `thresholds`, `run` (read-only
 * tables) and the libraries, and returns
 *     { verdicts = { {id=, severity="ok|info|warning|critical", title=, evidence={..},
 *                     next_steps={..}}, ... },
 *       report   = { section, ... } }          -- optional, see report.h for section shapes
 */
#ifndef DIAG_VERDICT_H
#define DIAG_VERDICT_H

#include <stddef.h>

#include "util.h"
#include "value.h"

enum severity { SEV_OK = 0, SEV_INFO = 1, SEV_WARNING = 2, SEV_CRITICAL = 3 };

struct verdict_input {
	const char *lua_path;          /* the recipe's snippet */
	const char *lib_dir;           /* directory of shared *.lua libraries; NULL = none */
	const struct value *results;   /* object: probe id -> probe results */
	const struct value *thresholds; /* object: name -> number or string */
	const struct value *run;       /* object: target, duration_s, stop_reason, ... */
	size_t max_instructions;       /* 0 = VERDICT_DEFAULT_MAX_INSTRUCTIONS */
	size_t max_memory_bytes;       /* 0 = VERDICT_DEFAULT_MAX_MEMORY */
};

#define VERDICT_DEFAULT_MAX_INSTRUCTIONS (50u * 1000 * 1000)
#define VERDICT_DEFAULT_MAX_MEMORY (64u << 20)

/* Runs the snippet. On success *verdicts (array, worst first) and *report (array, possibly empty)
 * are set and owned by the caller. On failure returns -1, err->code DIAG_EXIT_RUNTIME, message
 * naming the Lua file and line where Lua gives it. */
int verdict_run(const struct verdict_input *in, struct value **verdicts, struct value **report,
		struct diag_err *err);

/* Checks that a Lua file compiles (text only), for lint. On failure returns -1, err->code
 * DIAG_EXIT_USAGE (an invalid recipe), message "FILE:LINE: what" as Lua gives it. */
int verdict_check_syntax(const char *lua_path, struct diag_err *err);

enum severity severity_parse(const char *s, int *ok);
const char *severity_name(enum severity s);
/* Worst severity in an array of verdict objects (SEV_OK when empty). */
enum severity verdicts_worst(const struct value *verdicts);

#endif
