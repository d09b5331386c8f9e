/* run.h — one run of a recipe (`diagnose SYMPTOM ...`), every stage in order.
 *
 * Owns: the stages of a run and its exit code (README.md): policy and trust root, recipe
 * read once, plan, approval, audit start record, pre-flight, session, verdict, report and output
 * files, audit end record. Prints the report on stdout and one-line errors on stderr — or, for a
 * stage of a chain (engine/run/chain.c) or of `diagnose watch`, hands the report back in its
 * struct run_capture instead.
 * Must not: parse the command line, or hold anything between two runs.
 */
#ifndef DIAG_RUN_H
#define DIAG_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "common/value.h"

/* What one stage of a chain (chain.c, --follow) gets back from run_recipe instead of a printed
 * report. */
struct run_capture {
	struct value *report;          /* the report (caller frees); NULL when the run failed first */
	struct diag_err err;           /* why it failed or was refused (also printed on stderr) */
	uint32_t max_chain_depth;      /* the recipe's budgets.max_chain_depth (0 when not read) */
	uint32_t max_chain_duration_s; /* its budgets.max_chain_duration_s */
	struct value *next_decl;       /* its `next:` (chain_decl_value; caller frees) */
	bool plan_chain;               /* in: the chain's first stage: walk the declared chain (lint's
					* checks, and in production every stage approved) before
					* anything runs */
	struct value *chain;           /* out: with plan_chain, the chain it could take (caller frees) */
	int signal;                    /* out: a stop signal that arrived after the collection (taken,
					* not acted on: the run finished): no further stage starts */
	bool write_outputs;            /* in: the report and output files written as without a
					* capture too (a `diagnose watch` run), and handed back */
	bool stacks_if_any;            /* in: the stack outputs (folded, SVG, pprof) only when a probe
					* recorded stacks; none, and no warning, otherwise */
};

#include "target/target.h"

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
	bool follow;                /* --follow: chain.c runs the worst verdict's follow-up */
	/* Set by chain.c for each stage: a plan longer than max_duration_s (> 0: what is left of the
	 * chain's time) is refused. */
	double max_duration_s;
};

/* Runs it; returns the exit code (0 ok/info, 1 runtime, 2 usage, 3 refused, 4 warning,
 * 5 critical). capture: NULL for a run of its own (the report printed and written); a chain's or
 * watch's stage: the report is handed back in it (written too when it says write_outputs), and
 * what else it asks for filled. opts is only read. */
int run_recipe(const struct run_options *opts, struct run_capture *capture);

#endif
