/* strset.h — a set of distinct strings, kept in the order they were added.
 *
 * Owns: the copies of the strings added, their index (a posindex by the keyed hash of hash.h: the
 * names are often a target's), lookups by bytes and
 * length (a name need not end where the
 * caller's text does: libbpf's "essential" names, a name inside a longer buffer).
 * Must not: hold global state, or keep pointers into what its callers pass.
 */
#ifndef DIAG_STRSET_H
#define DIAG_STRSET_H

#include <stdbool.h>
#include <stddef.h>

#include "common/posindex.h"

struct strset {
	char **names;  /* the strings, in the order added (a caller may sort them once it adds and
			* looks up no more) */
	size_t n, cap;
	struct posindex index; /* positions in names by their hash */
};

bool strset_has(const struct strset *s, const char *name, size_t len);
/* Adds a copy of the len bytes at name (a NUL ends it) unless it is there already. */
void strset_add(struct strset *s, const char *name, size_t len);
void strset_free(struct strset *s);

#endif
