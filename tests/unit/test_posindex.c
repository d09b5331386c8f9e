/* test_posindex.c — the index of positions by hash (engine/common/posindex.c): an empty index
 * finds nothing; positions sharing a hash (a collision, or the same key added twice) all come back
 * from one walk, and only they; a full-width hash whose low bits collide is told apart; the index
 * grown past many resizes keeps every position and stays at most half full. No root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/posindex.h"

/* The positions found under hash, as a bit set of positions below 64; how many in *n. */
static uint64_t walk(const struct posindex *ix, uint64_t hash, size_t *n)
{
	uint64_t seen = 0;
	*n = 0;
	for (size_t cur = 0, i; (i = posindex_next(ix, hash, &cur)) != POSINDEX_END;) {
		assert_true(i < 64);
		seen |= 1ull << i;
		++*n;
	}
	return seen;
}

static void test_empty_and_shared_hashes(void **state)
{
	(void)state;
	struct posindex ix = { 0 };
	size_t n, cur = 0;
	assert_int_equal(posindex_next(&ix, 42, &cur), POSINDEX_END);
	posindex_add(&ix, 7, 0);
	posindex_add(&ix, 9, 1);
	posindex_add(&ix, 7, 2);
	posindex_add(&ix, 7 + (1ull << 40), 3); /* the same low bits: the same slot chain */
	posindex_add(&ix, 7 + 64, 4);           /* the same slot in a 64-slot index */
	assert_int_equal(walk(&ix, 7, &n), (1u << 0) | (1u << 2));
	assert_int_equal(n, 2);
	assert_int_equal(walk(&ix, 9, &n), 1u << 1);
	assert_int_equal(walk(&ix, 7 + (1ull << 40), &n), 1u << 3);
	assert_int_equal(walk(&ix, 7 + 64, &n), 1u << 4);
	assert_int_equal(walk(&ix, 8, &n), 0);
	assert_int_equal(n, 0);
	posindex_free(&ix);
	assert_int_equal(ix.size, 0);
	assert_int_equal(walk(&ix, 7, &n), 0);
}

static uint64_t mix(uint64_t i)
{
	return i * 0x9e3779b97f4a7c15ull;
}

static void test_growth(void **state)
{
	(void)state;
	struct posindex ix = { 0 };
	const size_t count = 20000;
	for (size_t i = 0; i < count; i++) {
		posindex_add(&ix, mix(i / 2), i); /* two positions a hash */
		assert_true(ix.size >= 2 * ix.count);
	}
	assert_int_equal(ix.count, count);
	for (size_t i = 0; i < count; i += 2) {
		size_t got[3], n = 0;
		for (size_t cur = 0, p; (p = posindex_next(&ix, mix(i / 2), &cur)) != POSINDEX_END && n < 3;)
			got[n++] = p;
		assert_int_equal(n, 2);
		assert_true((got[0] == i && got[1] == i + 1) || (got[0] == i + 1 && got[1] == i));
	}
	size_t cur = 0;
	assert_int_equal(posindex_next(&ix, mix(count), &cur), POSINDEX_END);
	posindex_free(&ix);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_shared_hashes),
		cmocka_unit_test(test_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
