/* doctor_recipes.c — what each recipe can run here, from doctor's probe kinds (doctor_recipes.h).
 * Must not: load a probe or a recipe's Lua, or decide doctor's exit (doctor.c does, from the
 * tally).
 *
 * A recipe's probes are weighed as a run weighs them (engine/session/session.c): a probe whose
 * kind does not load is skipped and the run degraded; a recipe left with context probes only
 * (reads of /proc) is refused. A probe's recipe-chosen attach variants are not tried apart: the
 * kind's line says which variant loaded. */
#include "cli/doctor_recipes.h"

#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "recipe/load.h"
#include "recipe/recipe.h"
#include "recipe/recipe_find.h"
#include "common/util.h"

static const struct kind_found *found_of(const struct kind_found *kinds, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

enum recipe_fit doctor_recipe_fit(const struct recipe *r, const struct kind_found *kinds, size_t n,
				  char *lost, size_t lost_size)
{
	unsigned left = 0, failed = 0, untried = 0, degraded = 0;
	size_t len = 0;
	lost[0] = '\0';
	for (unsigned i = 0; i < r->n_probes; i++) {
		const struct recipe_probe *rp = &r->probes[i];
		const struct probe_kind *k = catalog_find(rp->kind);
		const struct kind_found *f = found_of(kinds, n, rp->kind);
		bool context = k && k->context_only;
		if (f && f->load == KIND_FAILED) {
			failed++;
			if (len < lost_size)
				len += (size_t)snprintf(lost + len, lost_size - len,
							"%swithout probe %s (%s): %s", len ? "; " : "",
							rp->id, rp->kind, f->why);
			continue;
		}
		if (f && f->load == KIND_DEGRADED) {
			degraded++;
			if (len < lost_size)
				len += (size_t)snprintf(lost + len, lost_size - len,
							"%sprobe %s (%s) loads %s", len ? "; " : "",
							rp->id, rp->kind, f->why);
		}
		untried += f && f->load == KIND_NOT_TRIED && !context;
		left += !context;
	}
	if (failed && !left)
		return RECIPE_CANNOT_RUN;
	if (failed || degraded)
		return RECIPE_DEGRADED;
	return untried ? RECIPE_UNTRIED : RECIPE_RUNS;
}

void doctor_print_recipes(FILE *out, const char *explicit_dir, const struct kind_found *kinds, size_t n,
			  struct recipe_tally *tally)
{
	memset(tally, 0, sizeof(*tally));
	if (recipe_dir_find(explicit_dir, tally->dir, sizeof(tally->dir))) {
		char none[1024];
		if (explicit_dir)
			snprintf(none, sizeof(none), "--recipes %s is not a directory", explicit_dir);
		else
			recipe_dir_none(none, sizeof(none));
		fprintf(out, "%-8s%-14s%s: what each recipe runs here is not said\n", "warn", "recipes", none);
		return;
	}
	tally->found_dir = true;
	size_t count;
	char **names = recipe_list_names(tally->dir, &count);
	for (size_t i = 0; i < count; i++) {
		struct recipe *r;
		struct diag_err err;
		char *path = xasprintf("%s/%s.yaml", tally->dir, names[i]);
		int rc = recipe_load(path, &r, &err);
		free(path);
		if (rc) {
			fprintf(out, "%-8srecipe %-16s invalid: %s\n", "warn", names[i], err.msg);
			tally->invalid++;
			free(names[i]);
			continue;
		}
		char lost[2048];
		switch (doctor_recipe_fit(r, kinds, n, lost, sizeof(lost))) {
		case RECIPE_RUNS:
			fprintf(out, "%-8srecipe %-16s runs fully: every probe's object loads\n", "ok", r->name);
			tally->runs++;
			break;
		case RECIPE_UNTRIED:
			fprintf(out, "%-8srecipe %-16s runs: no probe fails; some load only with a run's "
				"options or as root (not tried)\n", "ok", r->name);
			tally->untried++;
			break;
		case RECIPE_DEGRADED:
			fprintf(out, "%-8srecipe %-16s runs degraded: %s\n", "warn", r->name, lost);
			tally->degraded++;
			break;
		case RECIPE_CANNOT_RUN:
			fprintf(out, "%-8srecipe %-16s cannot run: %s\n", "missing", r->name, lost);
			tally->cannot_run++;
			break;
		}
		recipe_free(r);
		free(names[i]);
	}
	free(names);
}
