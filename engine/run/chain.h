/* chain.h — `diagnose RECIPE --follow`: a recipe, then the follow-up its worst verdict names.
 *
 * Owns: the chain's stages (each one a run_recipe with its report captured), its bounds
 * (budgets.max_chain_depth and max_chain_duration_s of the first recipe), its report (text or
 * --json, --output) and its exit code. The declared chain, walked without running it: chain_plan.h.
 * Must not: parse the command line, or run a stage other than through run_recipe.
 */
#ifndef DIAG_CHAIN_H
#define DIAG_CHAIN_H

#include <stdbool.h>

#include "run/run.h"
#include "common/value.h"

/* The follow-up the report of a run (its capture: plan_chain set, for the declared chain) asks
 * for, picked as --follow picks it, from verdicts of severity warning or critical (critical only:
 * critical_only): {verdict, recipe, params: ["NAME=VALUE", ...]}, with why_not when its
 * parameters cannot be built; NULL when none asks (caller frees). `diagnose watch` uses it. */
struct value *chain_pick(const struct value *report, const struct run_capture *cap,
			 const struct run_options *opts, bool critical_only);

/* Runs opts->symptom, then while the bounds allow, the recipe named by `next` of the first
 * warning or critical verdict of the last stage, on the same target (--pid), in the same mode
 * (production: each stage approved), with next.params as its --param. Prints the chain's report;
 * returns the last stage's exit code (3 when a follow-up was refused, 2 for flags that cannot
 * chain: --dry-run, --folded, --flamegraph, --pprof, --stacks-probe). */
int chain_run(const struct run_options *opts);

#endif
