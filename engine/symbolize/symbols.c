/* symbols.c — the helpers that the kernel and the user symbol tables share (symbols.h).
 *
 * Owns: the sorted-table search, the in-place sort and the alias preference.
 * Must not: allocate, print or hold state.
 */
#include "symbolize/symbols.h"

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

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
	unsigned char t[64];
	memcpy(t, a, size);
	memcpy(a, b, size);
	memcpy(b, t, size);
}

/* Insertion sort of n elements: for the short runs quicksort leaves. */
static void insertion_sort(unsigned char *b, size_t n, size_t size,
			   int (*cmp)(const void *, const void *, void *), void *arg)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && cmp(b + (j - 1) * size, b + j * size, arg) > 0; j--)
			swap_bytes(b + (j - 1) * size, b + j * size, size);
}

void sort_in_place(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
		   void *arg)
{
	unsigned char *b = base;
	if (size > 64)
		return;
	/* quicksort, median of three, the smaller side first and the larger looped (the depth stays
	 * under 64); short runs by insertion */
	while (n > 16) {
		unsigned char *lo = b, *mid = b + (n / 2) * size, *hi = b + (n - 1) * size;
		if (cmp(mid, lo, arg) < 0)
			swap_bytes(mid, lo, size);
		if (cmp(hi, mid, arg) < 0) {
			swap_bytes(hi, mid, size);
			if (cmp(mid, lo, arg) < 0)
				swap_bytes(mid, lo, size);
		}
		swap_bytes(mid, b + size, size); /* the pivot at 1: 0 <= pivot <= n - 1 already */
		unsigned char *pivot = b + size;
		size_t i = 1, j = n - 1;
		for (;;) {
			do
				i++;
			while (cmp(b + i * size, pivot, arg) < 0);
			do
				j--;
			while (cmp(b + j * size, pivot, arg) > 0);
			if (i >= j)
				break;
			swap_bytes(b + i * size, b + j * size, size);
		}
		swap_bytes(pivot, b + j * size, size);
		/* [0, j) <= pivot at j <= (j, n) */
		size_t left = j, right = n - j - 1;
		if (left < right) {
			sort_in_place(b, left, size, cmp, arg);
			b += (j + 1) * size;
			n = right;
		} else {
			sort_in_place(b + (j + 1) * size, right, size, cmp, arg);
			n = left;
		}
	}
	insertion_sort(b, n, size, cmp, arg);
}
