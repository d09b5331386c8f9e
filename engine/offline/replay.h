/* replay.h — `diagnose replay REPORT.json`: a recipe's Lua run again on the results a JSON report
 * recorded, without root and without BPF, printed as a live run prints its report (text, or JSON
 * with --json) with the same exit codes. How a recipe author tries a Lua change on recorded
 * incidents, in review and in CI.
 *
 * Owns: reading the report (bounded), finding its recipe by name (the recipes search path) for the
 * snippet and libraries — a name only ([a-z0-9-]+): a report is data, a path in it is refused —, or taking the snippet from --lua FILE; the thresholds (the report's, else
 * the recipe's) with --threshold K=V overrides, checked against the recipe's names; the run
 * object the Lua sees (the report's, else rebuilt from its fields); and the replayed report: the
 * recorded one with new verdicts, sections and thresholds, and a "replayed" object saying from
 * what.
 * Must not: load BPF, need root, change the recorded results, or open a file a report names.
 */
#ifndef DIAG_REPLAY_H
#define DIAG_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/util.h"
#include "common/value.h"

struct replay_options {
	const char *report_path;
	const char *lua_path;          /* --lua FILE: the snippet instead of the recipe's, or NULL */
	const char *recipes_dir;       /* --recipes DIR, or NULL: the search path */
	const char *const *thresholds; /* --threshold NAME=VALUE */
	size_t n_thresholds;
	bool json;
};

/* Returns the exit code: the worst verdict's (0, 4, 5), 1 when the Lua fails, 2 for a report or
 * an option that cannot be used (the message names the file, or the option). */
int replay_run(const struct replay_options *o);

/* What replay_run prints, as a tree (caller frees), printing nothing: 0, or -1 with err (code
 * DIAG_EXIT_USAGE for a report or option that cannot be used, DIAG_EXIT_RUNTIME when the Lua
 * failed). o->json is not used. */
int replay_report(const struct replay_options *o, struct value **out, struct diag_err *err);
/* The exit code a live run gives for these verdicts: the worst one's (0, 4 or 5). */
int replay_exit_code(const struct value *verdicts);

#endif
