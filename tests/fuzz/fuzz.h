/* fuzz.h — what every libFuzzer harness here shares: CHECK, which aborts (so libFuzzer keeps the
 * input) when a contract of the code under test is broken. Define FUZZ_NAME before including.
 */
#ifndef DIAG_FUZZ_H
#define DIAG_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                      \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, FUZZ_NAME ": contract broken: %s (line %d)\n", #cond, \
				__LINE__);                                               \
			abort();                                                         \
		}                                                                        \
	} while (0)

#endif
