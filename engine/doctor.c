/* doctor.c — placeholder until the doctor command lands: see doctor.h. */
#include "doctor.h"

#include "util.h"

int doctor_run(FILE *out)
{
	fputs("diagnose doctor: not implemented yet\n", out);
	return DIAG_EXIT_RUNTIME;
}
