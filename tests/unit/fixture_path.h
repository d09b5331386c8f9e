/* fixture_path.h — where the unit tests find their fixtures, the programs and files that
 * tests/unit/{symbols,unwind,memory}.mk build from tests/unit/fixtures/ (BUILD/fixtures/NAME),
 * whatever directory the tests run from. Recorded and trimmed incidents are not fixtures (tests/fixtures/, read through
 * recorded_verdicts.h).
 * Must not: build anything, or fail a test by itself (the caller decides whether a missing
 * fixture is a failure or a skip).
 */
#ifndef DIAG_TEST_FIXTURE_PATH_H
#define DIAG_TEST_FIXTURE_PATH_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Path of fixture NAME in a static buffer (copy it to keep two), or NULL when it is not built.
 * $BUILD (default "build") is relative to $DIAG_SRCDIR (default ".") unless absolute. */
static inline const char *fixture_path(const char *name)
{
	static char path[PATH_MAX];
	const char *src = getenv("DIAG_SRCDIR"), *build = getenv("BUILD");
	if (!build)
		build = "build";
	if (build[0] == '/')
		snprintf(path, sizeof(path), "%s/fixtures/%s", build, name);
	else
		snprintf(path, sizeof(path), "%s/%s/fixtures/%s", src ? src : ".", build, name);
	return access(path, R_OK) ? NULL : path;
}

#endif
