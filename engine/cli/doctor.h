/* doctor.h — `diagnose doctor`: what this machine lets recipes do, checked by really trying.
 * Owns: one line per check (kernel feature) with its consequence for recipes, one per probe kind
 * with the features it needs that are missing, and the summary (each recipe's line:
 * doctor_recipes.h). Must not: change the machine beyond
 * mounting tracefs. */
#ifndef DIAG_DOCTOR_H
#define DIAG_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>

/* Prints the checks to out, then what each recipe of the recipe directory (--recipes, else the
 * search path) runs here; returns an exit code: 0 when the engine can run and every recipe can
 * run (fully or degraded), 3 (DIAG_EXIT_REFUSED) otherwise. */
int doctor_run(FILE *out, const char *recipes_dir);

/* Whether `feature` names one of doctor's checks (what probe kinds list in `features`). */
bool doctor_knows_feature(const char *feature);

#endif
