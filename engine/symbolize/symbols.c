/* symbols.c — the helpers that the kernel and the user symbol tables share (symbols.h).
 *
 * Owns: the sorted-table search and the alias preference.
 * Must not: allocate, print or hold state.
 */
#include "symbols.h"

#include <string.h>

size_t upper_bound_u64(const void *base, size_t n, size_t size, size_t field, uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t v;
		memcpy(&v, (const char *)base + mid * size + field, sizeof(v));
		if (v <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int leading_underscores(const char *s)
{
	int n = 0;
	while (s[n] == '_')
		n++;
	return n;
}
