/* doctor_recipes.h — for `diagnose doctor`: what each recipe can run on this machine, from what
 * doctor found of each probe kind (doctor.c loads them: doctor_load.h).
 * Owns: a recipe's fit (runs fully, degraded and what it loses, cannot run) and the lines that
 * say it. Must not: load a probe (the kinds' results are given), or exit. */
#ifndef DIAG_DOCTOR_RECIPES_H
#define DIAG_DOCTOR_RECIPES_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli/doctor_load.h"

struct recipe;

/* What doctor found of one probe kind: loaded (or needs nothing), not tried (it needs a
 * recipe's option, or doctor runs unprivileged), or failed (why: a feature missing, its object
 * refused). */
struct kind_found {
	const char *name;
	enum kind_load load;
	char why[512];
};

enum recipe_fit {
	RECIPE_RUNS,       /* every probe's kind loads */
	RECIPE_UNTRIED,    /* none fails, but some kind's load was not tried */
	RECIPE_DEGRADED,   /* some probes do not load (the run goes on without them), or load short
			    * of something on this kernel */
	RECIPE_CANNOT_RUN, /* no probe but context probes loads: the run is refused (exit 3) */
};

/* r's fit given the kinds found (n of them); `lost` gets "without probe ID (KIND): why; ..." for
 * the probes that do not load and "probe ID (KIND) loads WHAT" for those degraded, or "" when
 * none. */
enum recipe_fit doctor_recipe_fit(const struct recipe *r, const struct kind_found *kinds, size_t n,
				  char *lost, size_t lost_size);

/* Counts of the recipes in a directory, by fit. */
struct recipe_tally {
	unsigned runs, untried, degraded, cannot_run, invalid;
	bool found_dir; /* false: no recipe directory (nothing said of recipes) */
	char dir[PATH_MAX];
};

/* One line per recipe of the directory recipe_dir_find gives for explicit_dir (--recipes), with
 * its fit; the counts in *tally. */
void doctor_print_recipes(FILE *out, const char *explicit_dir, const struct kind_found *kinds, size_t n,
			  struct recipe_tally *tally);

#endif
