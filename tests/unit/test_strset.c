/* test_strset.c — the set of distinct strings (engine/common/strset.c): names kept once, in the
 * order added; looked up by bytes and length (a prefix of a longer text, as core_btf's names
 * without their ___flavour suffix); a set grown past several resizes still finds every name and
 * none that was not added. No root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "strset.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_lengths),
		cmocka_unit_test(test_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
