/* fuzz_json.c — libFuzzer harness for the JSON reader (engine/common/json_parse.c, on jansson).
 *
 * Each input is JSON text, parsed twice: strictly (UTF-8 checked) and with raw_bytes. Contract:
 * no crash, leak, undefined behaviour, deep recursion or read past the input's length (an
 * exact-size heap copy); on failure the tree is NULL, err.code is DIAG_EXIT_USAGE and the message
 * is one line "at byte N: ..." with N within the input; what the strict parse accepts the raw one
 * accepts identically; and what value_write_json writes of a strictly parsed tree parses again
 * (compact and indented) to text that is stable from then on (numbers settle after one %.6g
 * rounding). Of a tree with bytes that are not UTF-8 (raw only), the text it writes is strict
 * JSON but for duplicate keys (each such byte becomes U+FFFD).
 *
 * Build and run: make fuzz FUZZ_TARGET=json (see tests/fuzz/README.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_parse.h"

#define FUZZ_NAME "fuzz_json"
#include "fuzz.h"

static char *write_json(const struct value *v, int indent, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	CHECK(f);
	value_write_json(v, f, indent);
	fclose(f);
	return text;
}

static void check_error(const struct diag_err *err, size_t size)
{
	CHECK(err->code == DIAG_EXIT_USAGE);
	CHECK(memchr(err->msg, '\0', sizeof(err->msg)) != NULL);
	unsigned long long at;
	int n = 0;
	CHECK(sscanf(err->msg, "at byte %llu: %n", &at, &n) == 1 && n > 0);
	CHECK(at <= size);
	CHECK(err->msg[n]);
	for (const char *p = err->msg; *p; p++)
		CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
}

/* Parses what v writes, and checks that it then stays the same. Returns the settled text. */
static char *settle(const struct value *v, const struct json_limits *lim, size_t *len)
{
	struct diag_err err = { 0 };
	size_t n1;
	char *t1 = write_json(v, -1, &n1);
	struct value *v2 = json_parse(t1, n1, lim, &err);
	if (!v2)
		fprintf(stderr, "fuzz_json: cannot read back %s: %s\n", t1, err.msg);
	CHECK(v2);
	char *t2 = write_json(v2, -1, len);
	struct value *v3 = json_parse(t2, *len, lim, &err);
	CHECK(v3);
	size_t n3;
	char *t3 = write_json(v3, -1, &n3);
	CHECK(n3 == *len && memcmp(t2, t3, n3) == 0);
	/* indented: the same values */
	size_t np;
	char *pretty = write_json(v3, 2, &np);
	struct value *v4 = json_parse(pretty, np, lim, &err);
	CHECK(v4);
	size_t n4;
	char *t4 = write_json(v4, -1, &n4);
	CHECK(n4 == *len && memcmp(t2, t4, n4) == 0);
	free(t1);
	free(t3);
	free(t4);
	free(pretty);
	value_free(v2);
	value_free(v3);
	value_free(v4);
	return t2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);

	struct json_limits strict = { 0 }, raw = { .raw_bytes = true };
	struct diag_err e1 = { 0 }, e2 = { 0 };
	struct value *a = json_parse(buf, size, &strict, &e1);
	struct value *b = json_parse(buf, size, &raw, &e2);
	if (!a)
		check_error(&e1, size);
	if (!b)
		check_error(&e2, size);
	if (a) {
		CHECK(b);
		size_t la, lb;
		char *ta = settle(a, &strict, &la), *tb = settle(b, &raw, &lb);
		CHECK(la == lb && memcmp(ta, tb, la) == 0);
		free(ta);
		free(tb);
	} else if (b) {
		/* Bytes that are not UTF-8 come out as U+FFFD, so two keys that differed only there
		 * may now be the same: the text is valid JSON, refused only for a duplicate key. */
		size_t len;
		char *text = write_json(b, -1, &len);
		struct diag_err err = { 0 };
		struct value *back = json_parse(text, len, &strict, &err);
		if (!back)
			CHECK(strstr(err.msg, "duplicate object key") != NULL);
		value_free(back);
		free(text);
	}
	value_free(a);
	value_free(b);
	free(buf);
	return 0;
}
