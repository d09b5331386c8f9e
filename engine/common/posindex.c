/* posindex.c — positions by hash, open addressing (posindex.h).
 *
 * Owns: the slot array.
 * Must not: print, or hold global state.
 */
#include "common/posindex.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define POSINDEX_MIN_SIZE 64

static void put(struct posindex_slot *slots, size_t size, uint64_t hash, size_t pos_1)
{
	size_t mask = size - 1, slot = (size_t)hash & mask;
	while (slots[slot].pos_1)
		slot = (slot + 1) & mask;
	slots[slot] = (struct posindex_slot){ pos_1, hash };
}

void posindex_add(struct posindex *ix, uint64_t hash, size_t pos)
{
	if ((ix->count + 1) * 2 > ix->size) {
		size_t size = ix->size ? ix->size * 2 : POSINDEX_MIN_SIZE;
		struct posindex_slot *slots = xcalloc(size, sizeof(*slots));
		for (size_t i = 0; i < ix->size; i++)
			if (ix->slots[i].pos_1)
				put(slots, size, ix->slots[i].hash, ix->slots[i].pos_1);
		free(ix->slots);
		ix->slots = slots;
		ix->size = size;
	}
	put(ix->slots, ix->size, hash, pos + 1);
	ix->count++;
}

/* *cursor: 0 before the walk, then the next slot to look at + 1. */
size_t posindex_next(const struct posindex *ix, uint64_t hash, size_t *cursor)
{
	if (!ix->size)
		return POSINDEX_END;
	size_t mask = ix->size - 1;
	size_t slot = *cursor ? *cursor - 1 : (size_t)hash & mask;
	for (; ix->slots[slot].pos_1; slot = (slot + 1) & mask) {
		if (ix->slots[slot].hash == hash) {
			*cursor = ((slot + 1) & mask) + 1;
			return ix->slots[slot].pos_1 - 1;
		}
	}
	*cursor = slot + 1;
	return POSINDEX_END;
}

void posindex_free(struct posindex *ix)
{
	free(ix->slots);
	memset(ix, 0, sizeof(*ix));
}
