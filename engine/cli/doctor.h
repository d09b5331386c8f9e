/* doctor.h — `diagnose doctor`: what this machine lets recipes do, checked by really trying.
 * Owns: one line per check (kernel feature) with its consequence for recipes, one per probe kind
 * with the features it needs that are missing. Must not: change the machine beyond
 * mounting tracefs. */
#ifndef DIAG_DOCTOR_H
#define DIAG_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>

/* Prints the checks to out; returns an exit code (0 when the engine can run its recipes). */
int doctor_run(FILE *out);

/* Whether `feature` names one of doctor's checks (what probe kinds list in `features`). */
bool doctor_knows_feature(const char *feature);

#endif
