/* test_json.c — the strict JSON reader (engine/common/json_parse.c, on jansson): what
 * value_write_json writes reads back the same, numbers keep their type, escapes and surrogate
 * pairs decode, duplicate keys and nesting past max_depth are refused, raw_bytes brings back the
 * bytes that are not UTF-8, and malformed text is refused with the byte offset of the problem
 * (the start of the token jansson quotes). No root, no files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_parse.h"

static char *json_of(const struct value *v, int indent)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	value_write_json(v, f, indent);
	fclose(f);
	return buf;
}

static struct value *parse(const char *text, const struct json_limits *lim)
{
	struct diag_err err = { 0 };
	struct value *v = json_parse(text, strlen(text), lim, &err);
	if (!v)
		fail_msg("%s: %s", text, err.msg);
	return v;
}

/* Expects text (len bytes) to be refused with a message containing needle. */
static void refuse_n(const char *text, size_t len, const struct json_limits *lim, const char *needle)
{
	struct diag_err err = { 0 };
	struct value *v = json_parse(text, len, lim, &err);
	if (v) {
		value_free(v);
		fail_msg("accepted: %.*s", (int)len, text);
	}
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	if (!strstr(err.msg, needle))
		fail_msg("%.*s: \"%s\" does not contain \"%s\"", (int)len, text, err.msg, needle);
}

static void refuse(const char *text, const char *needle)
{
	refuse_n(text, strlen(text), NULL, needle);
}

static void test_round_trip(void **state)
{
	(void)state;
	struct value *v = value_obj();
	value_set_int(v, "int", 42);
	value_set_int(v, "min", INT64_MIN);
	value_set_int(v, "max", INT64_MAX);
	value_set_num(v, "num", 1.5);
	value_set_num(v, "tiny", 1.25e-300);
	value_set_num(v, "huge", -3e300);
	value_set_bool(v, "t", true);
	value_set_bool(v, "f", false);
	value_obj_set(v, "null", value_null());
	value_set_str(v, "escapes", "quote \" backslash \\ slash / nl \n cr \r tab \t bell \a esc \x1b del \x7f");
	value_set_str(v, "utf8", "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
	value_set_str(v, "empty", "");
	struct value *a = value_obj_set(v, "arr", value_arr());
	value_arr_push(a, value_arr());
	value_arr_push(a, value_obj());
	struct value *deep = value_arr_push(a, value_arr());
	for (int i = 0; i < 20; i++)
		deep = value_arr_push(deep, value_arr());
	value_arr_push(deep, value_str("bottom"));
	value_set_str(value_obj_set(v, "", value_obj()), "k\"ey\n", "v");

	for (int indent = -1; indent <= 2; indent += 3) {
		char *text = json_of(v, indent);
		struct value *back = parse(text, NULL);
		char *again = json_of(back, indent);
		assert_string_equal(text, again);
		assert_int_equal(value_get(back, "min")->type, V_INT);
		assert_true(value_get(back, "min")->i == INT64_MIN);
		assert_true(value_get(back, "max")->i == INT64_MAX);
		assert_int_equal(value_get(back, "num")->type, V_NUM);
		assert_string_equal(value_get_str(back, "escapes"), value_get_str(v, "escapes"));
		assert_string_equal(value_get_str(back, "utf8"), value_get_str(v, "utf8"));
		free(text);
		free(again);
		value_free(back);
	}
	value_free(v);
}

static void test_numbers(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		enum value_type type;
		double n;
	} cases[] = {
		{ "0", V_INT, 0 },        { "-0", V_INT, 0 },        { "17", V_INT, 17 },
		{ "-17", V_INT, -17 },    { "1.0", V_NUM, 1 },       { "1e2", V_NUM, 100 },
		{ "1E+2", V_NUM, 100 },   { "-2.5e-1", V_NUM, -0.25 }, { "0.1", V_NUM, 0.1 },
		{ "9223372036854775807", V_INT, 9223372036854775807.0 },
		{ "-9223372036854775808", V_INT, -9223372036854775808.0 },
		{ "9223372036854775808", V_NUM, 9223372036854775808.0 },
		{ "-9223372036854775809", V_NUM, -9223372036854775809.0 },
		{ "123456789012345678901234567890", V_NUM, 123456789012345678901234567890.0 },
		{ "1e-400", V_NUM, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct value *v = parse(cases[i].text, NULL);
		if (v->type != cases[i].type)
			fail_msg("%s: type %d", cases[i].text, v->type);
		double got = v->type == V_INT ? (double)v->i : v->n;
		if (got != cases[i].n)
			fail_msg("%s: got %.17g", cases[i].text, got);
		value_free(v);
	}
	struct value *v = parse(" [ 9223372036854775807 , -9223372036854775808 ] ", NULL);
	assert_true(v->arr.items[0]->i == INT64_MAX);
	assert_true(v->arr.items[1]->i == INT64_MIN);
	value_free(v);

	refuse("01", "at byte 0: invalid token near '0'");
	refuse("-01", "at byte 0: invalid token near '-0'");
	refuse("-", "at byte 0: invalid token near '-'");
	refuse("1.", "at byte 0: invalid token near '1.'");
	refuse(".5", "at byte 0: invalid token near '.'");
	refuse("+1", "at byte 0: invalid token near '+'");
	refuse("1e", "at byte 0: invalid token near '1e'");
	refuse("1e+", "at byte 0: invalid token near '1e+'");
	refuse("NaN", "at byte 0: invalid token");
	refuse("Infinity", "at byte 0: invalid token");
	refuse("-Infinity", "at byte 0: invalid token near '-'");
	refuse("1e400", "at byte 0: real number overflow");
	refuse("[1, -1e999]", "at byte 4: real number overflow");
	refuse("0x10", "at byte 1: end of file expected near 'x'");
}

static void test_strings(void **state)
{
	(void)state;
	struct value *v = parse("[\"\\u00e9\\u2192\\ud83d\\ude00\", \"\\/\\b\\f\", \"\\uD83D\\uDE00\"]", NULL);
	assert_string_equal(v->arr.items[0]->s, "\xc3\xa9\xe2\x86\x92\xf0\x9f\x98\x80");
	assert_string_equal(v->arr.items[1]->s, "/\b\f");
	assert_string_equal(v->arr.items[2]->s, "\xf0\x9f\x98\x80");
	value_free(v);

	refuse("\"abc", "at byte 0: premature end of input");
	refuse("\"abc\\\"", "at byte 0: premature end of input");
	refuse("\"a\\x\"", "at byte 0: invalid escape near '\"a\\x'");
	refuse("\"a\\'\"", "at byte 0: invalid escape");
	refuse("\"\\u12\"", "at byte 0: invalid escape");
	refuse("\"\\u12g4\"", "at byte 0: invalid escape near '\"\\u12g'");
	refuse("\"\\u", "at byte 0: invalid escape");
	/* surrogates */
	refuse("\"\\ud800\"", "at byte 0: invalid Unicode '\\uD800'");
	refuse("\"x\\ud800x\"", "at byte 0: invalid Unicode '\\uD800'");
	refuse("\"\\udc00\"", "at byte 0: invalid Unicode '\\uDC00'");
	refuse("\"\\ud800\\u0041\"", "at byte 0: invalid Unicode '\\uD800\\u0041'");
	refuse("\"\\ud800\\ud800\"", "at byte 0: invalid Unicode '\\uD800\\uD800'");
	/* NUL: never silently cut */
	refuse("\"a\\u0000b\"", "at byte 0: \\u0000 is not allowed");
	refuse("{\"k\\u0000\":1}", "at byte 1: NUL byte in object key not supported");
	refuse_n("\"a\0b\"", 5, NULL, "at byte 0: control character 0x0");
	refuse_n("[1]\0", 4, NULL, "at byte 3: end of file expected near byte 0x00");
	refuse("\"tab\there\"", "at byte 0: control character 0x9");
	refuse("\"nl\n\"", "at byte 0: unexpected newline");
	/* UTF-8: strict by default, bytes kept as they are with raw_bytes */
	static const char *const bad[] = { "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
					   "\"\xf4\x90\x80\x80\"", "\"\xe2\x86\"", "\"\x80\"" };
	struct json_limits raw = { .raw_bytes = true };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		refuse(bad[i], "at byte 1: unable to decode byte 0x");
		v = parse(bad[i], &raw);
		assert_int_equal(strlen(v->s), strlen(bad[i]) - 2);
		assert_memory_equal(v->s, bad[i] + 1, strlen(bad[i]) - 2);
		value_free(v);
	}
	/* 0x7f needs no escape */
	v = parse("\"\x7f\"", NULL);
	assert_string_equal(v->s, "\x7f");
	value_free(v);
}

static void test_structure(void **state)
{
	(void)state;
	struct value *v = parse(" \t\r\n{ \"a\" : [ ] , \"b\" : { } , \"c\" : null } \n", NULL);
	assert_int_equal(v->obj.len, 3);
	assert_string_equal(v->obj.keys[2], "c"); /* file order kept */
	value_free(v);
	v = parse("\"top-level scalar\"", NULL);
	value_free(v);

	refuse("", "at byte 0: unexpected token near end of file");
	refuse("  ", "at byte 2: unexpected token near end of file");
	refuse("{\"a\":1} x", "at byte 8: end of file expected near 'x'");
	refuse("[1] [2]", "at byte 4: end of file expected");
	refuse("[1,]", "at byte 3: unexpected token near ']'");
	refuse("[1 2]", "at byte 3: ']' expected near '2'");
	refuse("[", "at byte 1: ']' expected near end of file");
	refuse("{\"a\":1,}", "at byte 7: string or '}' expected near '}'");
	refuse("{a:1}", "at byte 1: string or '}' expected near 'a'");
	refuse("{'a':1}", "at byte 1: string or '}' expected");
	refuse("{\"a\" 1}", "at byte 5: ':' expected near '1'");
	refuse("{\"a\":1 \"b\":2}", "at byte 7: '}' expected near '\"b\"'");
	refuse("{\"a\":1,\"b\":2,\"a\":3}", "at byte 13: duplicate object key near '\"a\"'");
	refuse("tru", "at byte 0: invalid token near 'tru'");
	refuse("nul", "at byte 0: invalid token near 'nul'");
	refuse("True", "at byte 0: invalid token near 'True'");
	refuse("\xef\xbb\xbf{}", "at byte 0: invalid token near '?\?\?'"); /* no BOM */
	refuse("[1] // comment", "at byte 4: end of file expected near '/'");
	refuse("/* c */ 1", "at byte 0: invalid token near '/'");
	refuse("[\v1]", "at byte 1: invalid token near '?'");

	/* the length given is the end, whatever follows in memory */
	struct diag_err err = { 0 };
	v = json_parse("[1]garbage", 3, NULL, &err);
	assert_non_null(v);
	value_free(v);
	refuse_n("[1]", 2, NULL, "at byte 2: ']' expected near end of file");
	v = json_parse(NULL, 0, NULL, &err);
	assert_null(v);
}

static void test_limits(void **state)
{
	(void)state;
	char text[2 * 200 + 1];
	for (size_t depth = 63; depth <= 65; depth++) {
		memset(text, '[', depth);
		memset(text + depth, ']', depth);
		text[2 * depth] = '\0';
		struct diag_err err = { 0 };
		struct value *v = json_parse(text, 2 * depth, NULL, &err);
		if (depth <= JSON_DEFAULT_MAX_DEPTH) {
			assert_non_null(v);
			value_free(v);
		} else {
			assert_null(v);
			assert_string_equal(err.msg, "at byte 64: nested deeper than 64 levels");
		}
	}
	/* deep nesting a recursive parser would crash on */
	size_t n = 1u << 20;
	char *deep = malloc(n);
	memset(deep, '[', n);
	refuse_n(deep, n, NULL, "nested deeper than 64 levels");
	memset(deep, '{', n);
	refuse_n(deep, n, NULL, "at byte 1: string or '}' expected near '{'");
	free(deep);
	struct json_limits lim = { .max_depth = 2 };
	refuse_n("[[[]]]", 6, &lim, "at byte 2: nested deeper than 2 levels");
	refuse_n("{\"a\":{\"b\":{}}}", 14, &lim, "at byte 10: nested deeper than 2 levels");

	lim = (struct json_limits){ .max_nodes = 3 };
	struct value *v = parse("[1,2]", &lim);
	value_free(v);
	refuse_n("[1,2,3]", 7, &lim, "at byte 5: more than 3 values");
	refuse_n("{\"a\":{\"b\":[1]}}", 15, &lim, "at byte 11: more than 3 values");
}

/* Many keys: duplicate detection must not be quadratic (a million keys would take minutes). */
static void test_many_keys(void **state)
{
	(void)state;
	size_t n = 200000;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fputc('{', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\"key%zu\":%zu", i ? "," : "", (i * 7919) % n, i);
	fputc('}', f);
	fclose(f);
	struct diag_err err = { 0 };
	struct value *v = json_parse(buf, len, NULL, &err);
	if (!v)
		fail_msg("%s", err.msg);
	assert_int_equal(v->obj.len, n);
	value_free(v);
	/* the same with one key twice, last */
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	fputc('{', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\"key%zu\":0,", i);
	fprintf(f, "\"key%zu\":0}", n / 2);
	fclose(f);
	v = json_parse(buf, len, NULL, &err);
	assert_null(v);
	assert_non_null(strstr(err.msg, "duplicate object key"));
	free(buf);
}

/* Duplicate keys are refused wherever they are, compared after escapes are decoded; with
 * raw_bytes, keys that differ only in bytes that are not UTF-8 stay different. */
static void test_duplicate_keys(void **state)
{
	(void)state;
	refuse("{\"a\":1,\"a\":1}", "at byte 7: duplicate object key");
	refuse("[{}, {\"x\":{\"k\":1,\"k\":2}}]", "at byte 17: duplicate object key");
	refuse("{\"a\":1,\"\\u0061\":2}", "at byte 7: duplicate object key");
	refuse("{\"\xc3\xa9\":1,\"\\u00e9\":2}", "at byte 8: duplicate object key");
	struct value *v = parse("{\"a\":{\"a\":{\"a\":1}}, \"b\":{\"a\":2}}", NULL);
	assert_int_equal(v->obj.len, 2);
	value_free(v);

	struct json_limits raw = { .raw_bytes = true };
	v = parse("{\"\xff\":1,\"\xfe\":2,\"\\uffff\":3,\"\xef\xbf\xbf\xff\":4}", &raw);
	assert_int_equal(v->obj.len, 4);
	assert_string_equal(v->obj.keys[0], "\xff");
	assert_string_equal(v->obj.keys[1], "\xfe");
	assert_string_equal(v->obj.keys[2], "\xef\xbf\xbf");
	assert_string_equal(v->obj.keys[3], "\xef\xbf\xbf\xff");
	value_free(v);
	refuse_n("{\"\xff\":1,\"\xff\":2}", 13, &raw, "at byte 7: duplicate object key near '\"?\"'");
	refuse_n("{\"\\uffff\":1,\"\xef\xbf\xbf\":2}", 20, &raw, "at byte 12: duplicate object key");
}

/* max_depth is ours, checked before jansson reads: jansson's own bound (JSON_PARSER_MAX_DEPTH,
 * 2048 values deep) is never what refuses, and a larger max_depth is held below it. */
static void test_depth_bounds(void **state)
{
	(void)state;
	size_t n = 5000;
	char *text = malloc(2 * n + 1);
	struct json_limits lim = { .max_depth = 100000 };
	for (size_t depth = 2046; depth <= 2048; depth++) {
		memset(text, '[', depth);
		text[depth] = '1';
		memset(text + depth + 1, ']', depth);
		struct diag_err err = { 0 };
		struct value *v = json_parse(text, 2 * depth + 1, &lim, &err);
		if (depth < 2048) {
			assert_non_null(v);
			value_free(v);
		} else {
			assert_null(v);
			assert_string_equal(err.msg, "at byte 2047: nested deeper than 2047 levels");
		}
	}
	free(text);
	/* brackets in strings are not nesting */
	lim = (struct json_limits){ .max_depth = 1 };
	struct value *v = parse("[\"[[[{{{\", \"\\\"[[\"]", &lim);
	value_free(v);
	/* a syntax error before the level too deep is the one named */
	refuse_n("[1 [[[", 6, &(struct json_limits){ .max_depth = 2 }, "at byte 3: ']' expected");
	refuse_n("[[1],[[2]]]", 11, &(struct json_limits){ .max_depth = 2 },
		 "at byte 6: nested deeper than 2 levels");
}

/* Integers past int64_t are read as doubles (jansson alone refuses them), and positions after
 * one are still the caller's. */
static void test_big_integers(void **state)
{
	(void)state;
	struct value *v = parse("{\"a\":[18446744073709551616,-18446744073709551616,1]}", NULL);
	const struct value *a = value_get(v, "a");
	assert_int_equal(a->arr.items[0]->type, V_NUM);
	assert_true(a->arr.items[0]->n == 18446744073709551616.0);
	assert_true(a->arr.items[1]->n == -18446744073709551616.0);
	assert_int_equal(a->arr.items[2]->type, V_INT);
	value_free(v);
	refuse("[99999999999999999999, x]", "at byte 23: invalid token near 'x'");
	refuse("[99999999999999999999x]", "at byte 1: too big integer"); /* not a number */
}

/* raw_bytes, the verdict child's pipe: bytes that are not UTF-8 come back as they were, U+FFFF
 * (the mark jansson is handed them with) too, and error positions are the caller's. */
static void test_raw_bytes_wire(void **state)
{
	(void)state;
	struct json_limits raw = { .raw_bytes = true };
	const char *text = "[\"\xef\xbf\xbf\\uFFFF\xff\", \"\\uffff\\u0180\", "
			   "\"a\x80\xc3\xa9\xed\xa0\x80z\"]";
	struct value *v = parse(text, &raw);
	assert_string_equal(v->arr.items[0]->s, "\xef\xbf\xbf\xef\xbf\xbf\xff");
	assert_string_equal(v->arr.items[1]->s, "\xef\xbf\xbf\xc6\x80");
	assert_string_equal(v->arr.items[2]->s, "a\x80\xc3\xa9\xed\xa0\x80z");
	value_free(v);
	/* what the strict reader accepts reads the same with raw_bytes */
	v = parse("[\"\xef\xbf\xbf\\uffff\"]", NULL);
	struct value *w = parse("[\"\xef\xbf\xbf\\uffff\"]", &raw);
	assert_string_equal(v->arr.items[0]->s, w->arr.items[0]->s);
	value_free(v);
	value_free(w);
	refuse_n("[\"\xff\xfe\", x]", 9, &raw, "at byte 7: invalid token near 'x'");
	refuse_n("[\"\xff\\q\"]", 7, &raw, "at byte 1: invalid escape");
	refuse_n("[\xff]", 3, &raw, "at byte 1: unable to decode byte 0xff");
	refuse_n("\"\\u0000\"", 8, &raw, "at byte 0: \\u0000 is not allowed");
}

/* nodes_used: the values read, the cap when the cap stopped the read, and the values before the
 * problem when the text is refused. */
static void test_nodes_used(void **state)
{
	(void)state;
	size_t used = 0;
	struct json_limits lim = { .nodes_used = &used };
	struct value *v = parse("{\"a\":[1,\"s\",{}],\"b\":null}", &lim);
	assert_int_equal(used, 6);
	value_free(v);
	lim.max_nodes = 4;
	refuse_n("{\"a\":[1,\"s\",{}],\"b\":null}", 25, &lim, "at byte 12: more than 4 values");
	assert_int_equal(used, 4);
	lim.max_nodes = 0;
	refuse_n("[1,2,3,x]", 9, &lim, "at byte 7: invalid token");
	assert_int_equal(used, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_structure),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_depth_bounds),
		cmocka_unit_test(test_big_integers),
		cmocka_unit_test(test_raw_bytes_wire),
		cmocka_unit_test(test_nodes_used),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
