/* chain.h — `diagnose RECIPE --follow`: a recipe, then the follow-up its worst verdict names.
 *
 * Owns: the chain's stages (each one a run_recipe with its report captured), its bounds
 * (budgets.max_chain_depth and max_chain_duration_s of the first recipe), its report (text or
 * --json, --output) and its exit code.
 * Must not: parse the command line, or run a stage other than through run_recipe.
 */
#ifndef DIAG_CHAIN_H
#define DIAG_CHAIN_H

#include <stdbool.h>
#include <stdio.h>

#include "recipe.h"
#include "run.h"
#include "value.h"

/* A recipe's `next:` as a value: [{verdict, recipe, params: ["NAME=VALUE", ...]}] (caller frees). */
struct value *chain_decl_value(const struct recipe *r);

/* The chain a recipe could take, walked through the `next:` of each follow-up within the head's
 * budgets.max_chain_depth: one row per declared step {stage, from, verdict, recipe, params[],
 * approved (only when checking approvals)}. Each follow-up is read from dir (NAME.yaml; trusted:
 * production's ownership checks) and checked: it exists and is valid, every parameter is one of
 * its own and literal values have its type, its required parameters are given, and no recipe
 * runs twice on one path (a cycle within the depth). approvals: each is checked against the lock;
 * an unapproved one fails the walk (DIAG_EXIT_REFUSED, naming it) unless allow_unapproved (a dry
 * run: marked approved false). Errors of the recipes: DIAG_EXIT_USAGE, "PATH: next[i]...". */
int chain_plan(const struct recipe *head, const char *dir, bool trusted, bool approvals,
	       bool allow_unapproved, struct value **out, struct diag_err *err);
/* The rows of chain_plan as text, for the dry run. */
void chain_plan_text(const struct value *rows, FILE *out);

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
