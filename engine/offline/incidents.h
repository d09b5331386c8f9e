/* incidents.h — `diagnose test [RECIPE...]`: a recipe author's test of verdicts, without C and
 * without root: every recorded incident (DIR/RECIPE/NAME.json, a live run's JSON report) replayed
 * with this tree's recipe and Lua, as `diagnose replay` does (the report's recorded thresholds,
 * else the recipe's), and compared with the expectations beside it (DIR/RECIPE/NAME.expect, the
 * format in expect.h).
 *
 * Owns: finding the incidents (the RECIPE directories given, or every directory of DIR named like
 * a recipe; in each, NAME.json and NAME.expect paired by name, in name order), replaying each,
 * one line per case ("ok" or "FAIL", then what differed, indented), a summary line and the exit
 * code. Every name and string from the files is printed escaped (report_put_text).
 * Must not: load BPF, need root, write a file, or stop at the first failing case.
 */
#ifndef DIAG_INCIDENTS_H
#define DIAG_INCIDENTS_H

#include <stddef.h>

/* The recorded incidents of the source tree, relative to the current directory. */
#define INCIDENTS_DEFAULT_DIR "tests/fixtures/reports"

struct incidents_options {
	const char *dir;             /* --dir DIR, or NULL: INCIDENTS_DEFAULT_DIR */
	const char *recipes_dir;     /* --recipes DIR, or NULL: the recipes search path */
	const char *const *recipes;  /* the RECIPE arguments; none: every recipe directory of dir */
	size_t n_recipes;
};

/* Returns 0 when every case passed, 1 when one failed (or there was none), 2 for an argument that
 * cannot be used (DIR not a directory, RECIPE not a recipe name or without a directory). */
int incidents_test(const struct incidents_options *o);

#endif
