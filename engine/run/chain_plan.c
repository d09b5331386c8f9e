/* chain_plan.c — the chain a recipe declares (`next:`), walked without running anything: what
 * lint checks across recipes, what the dry run lists, what production must find approved before
 * the first stage loads anything. Contract: chain_plan.h.
 *
 * Owns: the walk through each follow-up's own `next:` within the head's max_chain_depth (each
 * follow-up read and checked: it exists and is valid, its parameters are its own, no recipe runs
 * twice on one path; in production its approval), its rows, and their text for the dry run.
 * Must not: run a recipe (chain.c runs the stages, through run_recipe), follow a recipe path
 * (names only), or print anything but the rows it is handed.
 */
#include "run/chain_plan.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "trust/approval.h"
#include "plan/plan.h"
#include "recipe/recipe.h"
#include "recipe/recipe_find.h"
#include "report/report.h"
#include "common/util.h"
#include "common/value.h"

/* Text a recipe author may have put in (names, parameters), printed as the text report prints
 * such text (report_put_text); NULL as "?". */
static void put_safe(FILE *out, const char *s)
{
	report_put_text(out, s ? s : "?");
}

struct value *chain_decl_value(const struct recipe *r)
{
	struct value *arr = value_arr();
	for (unsigned i = 0; i < r->n_next; i++) {
		struct value *e = value_arr_push(arr, value_obj());
		value_set_str(e, "verdict", r->next[i].verdict);
		value_set_str(e, "recipe", r->next[i].recipe);
		struct value *ps = value_obj_set(e, "params", value_arr());
		for (unsigned k = 0; k < r->next[i].n_params; k++)
			value_arr_push(ps, value_str(r->next[i].params[k]));
	}
	return arr;
}

struct walk {
	const char *dir;
	bool trusted, approvals, allow_unapproved;
	const char *path[CHAIN_DEPTH_MAX + 2]; /* recipe names from the head */
	struct value *rows;
};

/* Checks one declared edge's parameters against the follow-up recipe f. */
static int check_edge_params(const struct recipe *from, unsigned i, const struct recipe *f,
			     struct diag_err *err)
{
	const struct recipe_next *n = &from->next[i];
	for (unsigned k = 0; k < n->n_params; k++) {
		const char *eq = strchr(n->params[k], '=');
		char name[72];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - n->params[k]), n->params[k]);
		const struct recipe_param *p = recipe_param_find(f, name);
		if (!p)
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: next[%u].params[%u]: %s has no parameter %s",
					 from->path, i, k, f->name, name);
		const char *why = strncmp(eq + 1, "${verdict.", 10) ? recipe_param_check(p, eq + 1) : NULL;
		if (why)
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: next[%u].params[%u]: %s of %s: %s",
					 from->path, i, k, name, f->name, why);
	}
	for (unsigned k = 0; k < f->n_params; k++) {
		if (f->params[k].dflt)
			continue;
		bool given = false;
		for (unsigned j = 0; j < n->n_params && !given; j++)
			given = !strncmp(n->params[j], f->params[k].name, strlen(f->params[k].name)) &&
				n->params[j][strlen(f->params[k].name)] == '=';
		if (!given)
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: next[%u]: %s requires the parameter %s",
					 from->path, i, f->name, f->params[k].name);
	}
	return 0;
}

static int walk(struct walk *w, const struct recipe *r, unsigned depth, unsigned max_depth,
		struct diag_err *err)
{
	for (unsigned i = 0; i < r->n_next; i++) {
		const struct recipe_next *n = &r->next[i];
		for (unsigned k = 0; k <= depth; k++) {
			if (strcmp(w->path[k], n->recipe) != 0)
				continue;
			char cycle[512] = "";
			size_t o = 0;
			for (unsigned j = 0; j <= depth && o < sizeof(cycle); j++)
				o += (size_t)snprintf(cycle + o, sizeof(cycle) - o, "%s → ", w->path[j]);
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: next[%u].recipe: %s runs again within "
					 "max_chain_depth %u (a cycle: %s%s)", r->path, i, n->recipe, max_depth,
					 cycle, n->recipe);
		}
		char fpath[PATH_MAX];
		struct bundle b = { 0 };
		if (recipe_resolve(n->recipe, w->dir, fpath, sizeof(fpath), err) ||
		    bundle_load(fpath, w->trusted, NULL, &b, err)) {
			bundle_free(&b);
			return diag_wrap(err, "%s: next[%u].recipe", r->path, i);
		}
		if (check_edge_params(r, i, b.recipe, err)) {
			bundle_free(&b);
			return -1;
		}
		struct value *row = value_arr_push(w->rows, value_obj());
		value_set_int(row, "stage", depth + 2);
		value_set_str(row, "from", r->name);
		value_set_str(row, "verdict", n->verdict);
		value_set_str(row, "recipe", n->recipe);
		value_set_bool(row, "needs_pid", recipe_target_required(b.recipe->target));
		value_set_bool(row, "takes_sets", recipe_target_sets(b.recipe->target));
		struct value *ps = value_obj_set(row, "params", value_arr());
		for (unsigned k = 0; k < n->n_params; k++)
			value_arr_push(ps, value_str(n->params[k]));
		if (w->approvals) {
			/* the lock covers the BPF objects of the probe kinds the plan uses: planned with the
			 * literal parameters (a value from the verdict is not known yet) */
			const char *lit[32];
			size_t n_lit = 0;
			for (unsigned k = 0; k < n->n_params && n_lit < 32; k++)
				if (!strstr(n->params[k], "=${verdict."))
					lit[n_lit++] = n->params[k];
			struct plan_args args = { .check_target = false, .params = lit, .n_params = n_lit };
			if (plan_build(b.recipe, &args, &b.plan, err)) {
				bundle_free(&b);
				return diag_wrap(err, "chain stage %u, %s: cannot be planned to check its approval",
						 depth + 2, n->recipe);
			}
			struct diag_err aerr = { 0 };
			bool ok = approval_check(&b, w->trusted, &aerr) == 0;
			value_set_bool(row, "approved", ok);
			if (!ok && !w->allow_unapproved) {
				bundle_free(&b);
				*err = aerr;
				return diag_wrap(err, "chain stage %u, %s (next of %s's verdict %s), is not approved",
						 depth + 2, n->recipe, r->name, n->verdict);
			}
		}
		int rc = 0;
		if (depth + 1 < max_depth) {
			w->path[depth + 1] = b.recipe->name;
			rc = walk(w, b.recipe, depth + 1, max_depth, err);
		}
		bundle_free(&b);
		if (rc)
			return -1;
	}
	return 0;
}

int chain_plan(const struct recipe *head, const char *dir, bool trusted, bool approvals,
	       bool allow_unapproved, struct value **out, struct diag_err *err)
{
	struct walk w = { .dir = dir, .trusted = trusted, .approvals = approvals,
			  .allow_unapproved = allow_unapproved, .rows = value_arr() };
	w.path[0] = head->name;
	*out = NULL;
	if (head->budgets.max_chain_depth && walk(&w, head, 0, head->budgets.max_chain_depth, err)) {
		value_free(w.rows);
		/* an error in a follow-up's own next: says whose chain it breaks */
		if (strncmp(err->msg, head->path, strlen(head->path)) != 0 || err->msg[strlen(head->path)] != ':')
			diag_wrap(err, "%s: in the chain it could take", head->path);
		return -1;
	}
	*out = w.rows;
	return 0;
}

void chain_plan_text(const struct value *rows, FILE *out)
{
	size_t n = rows ? rows->arr.len : 0;
	fprintf(out, "Chain it could take (--follow; declared in next:): %s\n", n ? "" : "none");
	for (size_t i = 0; i < n; i++) {
		const struct value *r = rows->arr.items[i];
		fprintf(out, "  stage %.0f: ", value_get_num(r, "stage", 0));
		put_safe(out, value_get_str(r, "from"));
		fputs(" → ", out);
		put_safe(out, value_get_str(r, "recipe"));
		fputs(" on verdict ", out);
		put_safe(out, value_get_str(r, "verdict"));
		const struct value *ps = value_get(r, "params");
		for (size_t k = 0; ps && k < ps->arr.len; k++) {
			fputs(" --param ", out);
			put_safe(out, ps->arr.items[k]->s);
		}
		const struct value *ok = value_get(r, "approved");
		if (ok)
			fputs(ok->b ? "  (approved)" : "  (NOT approved: production would refuse the chain)", out);
		fputc('\n', out);
	}
}
