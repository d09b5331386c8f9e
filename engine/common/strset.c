/* strset.c — a set of distinct strings in the order they were added (strset.h).
 *
 * Owns: the copies and the index (strset.h says how).
 * Must not: print, or hold global state.
 */
#include "common/strset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/util.h"

/* Keyed (hash.h): the names are a target's (symbols, JIT names), and FNV-1a, unkeyed, let it
 * choose 2,048 names that all went to one slot, each added one walking past all the others. */
static uint64_t hash(const char *s, size_t len)
{
	return hash_mem(s, len);
}

static bool found(const struct strset *s, const char *name, size_t len, uint64_t h)
{
	for (size_t cur = 0, i; (i = posindex_next(&s->index, h, &cur)) != POSINDEX_END;)
		if (!strncmp(s->names[i], name, len) && s->names[i][len] == '\0')
			return true;
	return false;
}

bool strset_has(const struct strset *s, const char *name, size_t len)
{
	len = strnlen(name, len);
	return found(s, name, len, hash(name, len));
}

void strset_add(struct strset *s, const char *name, size_t len)
{
	len = strnlen(name, len);
	uint64_t h = hash(name, len);
	if (found(s, name, len, h))
		return;
	if (s->n == s->cap)
		s->names = xrealloc(s->names, (s->cap = s->cap ? s->cap * 2 : 16) * sizeof(*s->names));
	char *copy = xmalloc(len + 1);
	memcpy(copy, name, len);
	copy[len] = '\0';
	posindex_add(&s->index, h, s->n);
	s->names[s->n++] = copy;
}

void strset_free(struct strset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	posindex_free(&s->index);
	memset(s, 0, sizeof(*s));
}
