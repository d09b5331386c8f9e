/* test_strset.c — the set of distinct strings (engine/common/strset.c): names kept once, in the
 * order added; looked up by bytes and length (a prefix of a longer text, as core_btf's names
 * without their ___flavour suffix); a set grown past several resizes still finds every name and
 * none that was not added; names a target could choose so that FNV-1a (the hash before the keyed
 * one) put them all in one slot spread over the index. No root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strset.h"

static void test_order_and_lengths(void **state)
{
	(void)state;
	struct strset s = { 0 };
	assert_false(strset_has(&s, "x", 1));
	strset_add(&s, "task_struct___old", 11); /* "task_struct" */
	strset_add(&s, "sk_buff", SIZE_MAX);
	strset_add(&s, "task_struct", SIZE_MAX); /* there already */
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names[0], "task_struct");
	assert_string_equal(s.names[1], "sk_buff");
	assert_true(strset_has(&s, "task_struct___new", 11));
	assert_false(strset_has(&s, "task_struct___new", 12)); /* "task_struct_" */
	assert_false(strset_has(&s, "task", 4));
	assert_true(strset_has(&s, "sk_buff", 100)); /* the NUL ends it */
	strset_free(&s);
	assert_int_equal(s.n, 0);
}

static void test_growth(void **state)
{
	(void)state;
	struct strset s = { 0 };
	char name[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		strset_add(&s, name, SIZE_MAX);
		strset_add(&s, name, SIZE_MAX);
	}
	assert_int_equal(s.n, 5000);
	assert_true(s.index.size > 2 * s.n && s.index.count == s.n);
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_true(strset_has(&s, name, SIZE_MAX));
		assert_string_equal(s.names[i], name);
		snprintf(name, sizeof(name), "g%d", i);
		assert_false(strset_has(&s, name, SIZE_MAX));
	}
	strset_free(&s);
}

/* FNV-1a 64, the hash strset used: the low k bits of its state after a byte depend only on the
 * low k bits before it and the byte (xor, then a product modulo 2^64). */
static uint64_t fnv1a(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h;
}

#define FLOOD 2048
#define FLOOD_BITS 16 /* the low bits they share: one home slot in any index of up to 2^16 slots */

/* FLOOD names whose FNV-1a hashes share their low FLOOD_BITS bits, as a target can choose its
 * symbol names: "sNNNNNNN" and a last byte y, kept when the prefix's state p gives
 * (p ^ y) * prime = T modulo 2^16, that is p ^ y = T * prime^-1 = U: y = (p ^ U) & 0xff, when
 * p ^ U has no other bit set (one prefix in 256). */
static void flood_names(char (*names)[16])
{
	const uint64_t mask = ((uint64_t)1 << FLOOD_BITS) - 1, prime = 0x100000001b3ull, target = 0x2a2a;
	uint64_t inv = prime; /* prime^-1 modulo 2^64, by Newton's iteration */
	for (int i = 0; i < 6; i++)
		inv *= 2 - prime * inv;
	uint64_t u = (target * inv) & mask;
	size_t found = 0;
	for (unsigned n = 0; found < FLOOD; n++) {
		char *name = names[found];
		int len = snprintf(name, 16, "s%07u", n);
		uint64_t x = (fnv1a(name, (size_t)len) ^ u) & mask;
		if (x > 0xff || x == 0)
			continue;
		name[len] = (char)x;
		name[len + 1] = '\0';
		assert_int_equal(fnv1a(name, (size_t)len + 1) & mask, target);
		found++;
	}
}

/* Names chosen to collide under FNV-1a (all in one home slot, and each lookup walking all those
 * added before it: FLOOD^2/2 slots) are spread by the keyed hash: the slots between each name's
 * home and where it lies add up to a few per name, as for names nobody chose. */
static void test_flood(void **state)
{
	(void)state;
	char(*names)[16] = calloc(FLOOD, sizeof(*names));
	assert_non_null(names);
	flood_names(names);
	struct strset s = { 0 };
	for (size_t i = 0; i < FLOOD; i++)
		strset_add(&s, names[i], SIZE_MAX);
	assert_int_equal(s.n, FLOOD);
	assert_true(s.index.size <= ((size_t)1 << FLOOD_BITS));
	size_t mask = s.index.size - 1, walked = 0;
	for (size_t slot = 0; slot < s.index.size; slot++)
		if (s.index.slots[slot].pos_1)
			walked += (slot - ((size_t)s.index.slots[slot].hash & mask)) & mask;
	printf("   %d names, %zu slots: %zu slots walked past their homes in all\n", FLOOD,
	       s.index.size, walked);
	assert_true(walked <= 4 * FLOOD);
	for (size_t i = 0; i < FLOOD; i++)
		assert_true(strset_has(&s, names[i], SIZE_MAX));
	strset_free(&s);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_lengths),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_flood),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
