/* doctor.h — `diagnose doctor`: what this machine lets recipes do, checked by really trying.
 * Owns: one line per check with its consequence for recipes. Must not: change the machine beyond
 * mounting tracefs. */
#ifndef DIAG_DOCTOR_H
#define DIAG_DOCTOR_H

#include <stdio.h>

/* Prints the checks to out; returns an exit code (0 when the engine can run its recipes). */
int doctor_run(FILE *out);

#endif
