/* strset.c — a set of distinct strings in the order they were added (strset.h).
 *
 * Owns: the copies and the index (strset.h says how).
 * Must not: print, or hold global state.
 */
#include "strset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static size_t hash(const char *s, size_t len)
{
	uint64_t h = FNV1A_INIT;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return (size_t)h;
}

static bool same(const char *stored, const char *name, size_t len)
{
	return !strncmp(stored, name, len) && stored[len] == '\0';
}

static void put(struct strset *s, size_t i)
{
	size_t mask = s->size - 1, slot = hash(s->names[i], strlen(s->names[i])) & mask;
	while (s->slots[slot])
		slot = (slot + 1) & mask;
	s->slots[slot] = i + 1;
}

bool strset_has(const struct strset *s, const char *name, size_t len)
{
	len = strnlen(name, len);
	if (!s->size)
		return false;
	size_t mask = s->size - 1;
	for (size_t slot = hash(name, len) & mask; s->slots[slot]; slot = (slot + 1) & mask)
		if (same(s->names[s->slots[slot] - 1], name, len))
			return true;
	return false;
}

void strset_add(struct strset *s, const char *name, size_t len)
{
	len = strnlen(name, len);
	if (strset_has(s, name, len))
		return;
	if (s->n == s->cap)
		s->names = xrealloc(s->names, (s->cap = s->cap ? s->cap * 2 : 16) * sizeof(*s->names));
	char *copy = xmalloc(len + 1);
	memcpy(copy, name, len);
	copy[len] = '\0';
	s->names[s->n++] = copy;
	if (s->n * 2 >= s->size) {
		free(s->slots);
		s->size = s->size ? s->size * 2 : 64;
		s->slots = xcalloc(s->size, sizeof(*s->slots));
		for (size_t i = 0; i < s->n; i++)
			put(s, i);
	} else {
		put(s, s->n - 1);
	}
}

void strset_free(struct strset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
