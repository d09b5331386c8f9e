/* chain.h — `diagnose RECIPE --follow`: a recipe, then the follow-up its worst verdict names.
 *
 * Owns: the chain's stages (each one a run_recipe with its report captured), its bounds
 * (budgets.max_chain_depth and max_chain_duration_s of the first recipe), its report (text or
 * --json, --output) and its exit code.
 * Must not: parse the command line, or run a stage other than through run_recipe.
 */
#ifndef DIAG_CHAIN_H
#define DIAG_CHAIN_H

#include "run.h"

/* Runs opts->symptom, then while the bounds allow, the recipe named by `next` of the first
 * warning or critical verdict of the last stage, on the same target (--pid), in the same mode
 * (production: each stage approved), with next.params as its --param. Prints the chain's report;
 * returns the last stage's exit code (3 when a follow-up was refused, 2 for flags that cannot
 * chain: --dry-run, --folded, --flamegraph, --pprof, --stacks-probe). */
int chain_run(const struct run_options *opts);

#endif
