/* chain_plan.h — the chain a recipe declares (`next:`), walked without running it: for lint, the
 * dry run, and production's approvals of every stage before the first one runs.
 *
 * Owns: a recipe's `next:` as a value, the walk of the declared chain and its checks, and the
 * walk's rows as text.
 * Must not: run a recipe (chain.h runs a chain), or print anything but the rows it is handed.
 */
#ifndef DIAG_CHAIN_PLAN_H
#define DIAG_CHAIN_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "recipe/recipe.h"
#include "common/util.h"
#include "common/value.h"

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

#endif
