/* snippet.h — a recipe's snippet in one Lua state of this process: what the verdict phase is
 * given (struct verdict_input), its two stages, the whole run in process (tests, the fuzzer), and
 * lint's syntax checks. Part of the verdict API (verdict.h includes it).
 *
 * Owns: the declarations of snippet.c: verdict_prepare makes the sandbox, runs the libraries and
 * compiles the snippet before any result exists (verdict.c's child does it while the collection
 * goes on); verdict_answer then runs the snippet on the results (both internal to
 * engine/verdict/).
 * Must not: fork, or print.
 */
#ifndef DIAG_VERDICT_SNIPPET_H
#define DIAG_VERDICT_SNIPPET_H

#include <stddef.h>

#include "common/util.h"
#include "common/value.h"
#include "recipe/source.h"
#include "verdict/answer.h"
#include "verdict/limits.h"

/* What the verdict phase is given (verdict_run, verdict_start, verdict_run_inprocess). */
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

/* verdict_run (verdict.h) in this process, for tests and the fuzzer: every limit holds but the wall clock, so
 * one pathological C library call can run for minutes. The engine calls verdict_run. */
int verdict_run_inprocess(const struct verdict_input *in, struct verdict_answer *out,
			  struct diag_err *err);

/* Checks that a Lua file compiles (text only), for lint. On failure returns -1, err->code
 * DIAG_EXIT_USAGE (an invalid recipe), message "FILE:LINE: what" as Lua gives it. */
int verdict_check_syntax(const struct source_file *lua, struct diag_err *err);
/* The same for a recipe's libraries and snippet, in load order: the first that does not compile. */
int verdict_check_sources(const struct recipe_sources *src, struct diag_err *err);

struct verdict_state;

/* Stage 1: in->lua, in->libs, in->thresholds and the limits are used (in must outlive the state;
 * in->results and in->run are not). Never NULL: a failure is kept and given by verdict_answer. */
struct verdict_state *verdict_prepare(const struct verdict_input *in);
/* Stage 2, once: the snippet on results and run (NULL: empty objects, which must outlive the
 * call). As verdict_run_inprocess: 0 with *out set, or -1 with err. */
int verdict_answer(struct verdict_state *st, const struct value *results, const struct value *run,
		   struct verdict_answer *out, struct diag_err *err);
void verdict_state_free(struct verdict_state *st);

#endif
