/* posindex.h — an index of positions in a caller's array, by a hash the caller computes (keyed,
 * hash.h, where a target chooses the keys: a slot is the hash's low bits, and keys chosen to share
 * them make every lookup walk).
 *
 * Owns: its slots (open addressing, linear probing, at most half full, each slot the position
 * and its hash, so that growing needs nothing from the caller and a lookup compares keys only
 * where the hashes agree).
 * Must not: know the caller's keys (the caller tells a match: several positions may share a
 * hash), remove positions (its callers only add), or hold global state.
 *
 *	for (size_t cur = 0, i; (i = posindex_next(&ix, h, &cur)) != POSINDEX_END;)
 *		if (same_key(&items[i], key))
 *			return &items[i];
 */
#ifndef DIAG_POSINDEX_H
#define DIAG_POSINDEX_H

#include <stddef.h>
#include <stdint.h>

#define POSINDEX_END ((size_t)-1)

struct posindex_slot {
	size_t pos_1; /* position + 1; 0 = empty */
	uint64_t hash;
};

struct posindex {
	struct posindex_slot *slots;
	size_t size; /* a power of two, more than twice count; 0 before the first add */
	size_t count;
};

/* Adds pos under hash (a position already there is added again: the caller looks first). */
void posindex_add(struct posindex *ix, uint64_t hash, size_t pos);
/* The next position added under hash, or POSINDEX_END: *cursor 0 starts the walk. */
size_t posindex_next(const struct posindex *ix, uint64_t hash, size_t *cursor);
void posindex_free(struct posindex *ix);

#endif
