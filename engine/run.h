/* run.h — one run of a recipe (`diagnose SYMPTOM ...`), every stage in order.
 *
 * Owns: the stages of a run and its exit code (DESIGN contract): policy and trust root, recipe
 * read once, plan, approval, audit start record, pre-flight, session, verdict, report and output
 * files, audit end record. Prints the report on stdout and one-line errors on stderr.
 * Must not: parse the command line, or hold anything between two runs.
 */
#ifndef DIAG_RUN_H
#define DIAG_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "target.h"

/* What the command line asks of a run. */
struct run_options {
	const char *symptom;        /* recipe name, or a path to a recipe file */
	int pid;                    /* --pid, 0 when none */
	struct target_sel target;   /* --comm, --cgroup, --unit, --container (kind TARGET_NONE: none) */
	double duration_s;          /* --duration, 0 = the recipe's */
	bool dry_run, json, production, verbose, force;
	const char *output, *folded; /* --output, --folded; NULL when not asked */
	const char *flamegraph, *pprof; /* --flamegraph FILE.svg, --pprof FILE.pb.gz; NULL: not asked */
	const char *stacks_probe;   /* --stacks-probe (alias --folded-probe): whose stacks --folded,
				     * --flamegraph and --pprof show; NULL: the first probe whose
				     * results carry stacks */
	const char *recipes_dir;    /* --recipes, NULL when not given */
	const char *const *params;  /* --param NAME=VALUE, the recipe's own parameters */
	size_t n_params;
};

/* Runs it; returns the exit code (0 ok/info, 1 runtime, 2 usage, 3 refused, 4 warning,
 * 5 critical). */
int run_recipe(const struct run_options *opts);

#endif
