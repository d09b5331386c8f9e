/* symbols.h — what the kernel and the user symbol tables share (ksyms.c, usyms.c).
 *
 * Owns: the search of a table sorted by start address (the last entry starting at or below an
 * address), sorting one in place, and the preference among aliases of one address (fewer
 * leading underscores wins).
 * Must not: know either table's layout, allocate, or hold state. Callers that symbolize include
 * ksyms.h or usyms.h, not this.
 */
#ifndef DIAG_SYMBOLS_H
#define DIAG_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

/* The index of the first of n elements, sorted by the uint64_t at byte offset `field` of each
 * `size`-byte element, whose value is above key (n when none): the element before it is the last
 * one starting at or below key. The one binary search of the symbol tables. */
size_t upper_bound_u64(const void *base, size_t n, size_t size, size_t field, uint64_t key);

/* Sorts n elements of `size` bytes (at most 64) by cmp(a, b, arg), in place (a quicksort: no
 * second copy of the table, as qsort's merge sort takes: a 100k-symbol table is 3 MB). */
void sort_in_place(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
		   void *arg);

/* Leading underscores, for choosing among aliases ("malloc" over "__libc_malloc"). */
int leading_underscores(const char *s);

#endif
