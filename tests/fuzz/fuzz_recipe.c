/* fuzz_recipe.c — libFuzzer harness for the recipe loader (engine/recipe/recipe.c).
 *
 * Each input is a recipe file's bytes, handed to recipe_load_buffer() as if read from disk. The
 * loader must never crash, leak, hang or read out of bounds (ASan + UBSan + libFuzzer's leak,
 * -timeout and -rss_limit_mb checks), and must keep its contract: on failure *out is NULL,
 * err.code is DIAG_EXIT_USAGE and err.msg is one non-empty line starting with the file name; on
 * success the recipe's required fields are set and within the schema's bounds. The message
 * holds no control characters and is valid UTF-8, however the input's text was cut short.
 *
 * Build and run: make fuzz (see tests/fuzz/README.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe/load.h"
#include "recipe/recipe.h"

#define NAME "fuzz.yaml"

#define FUZZ_NAME "fuzz_recipe"
#include "fuzz.h"

static void check_kv(const struct recipe_kv *kv, unsigned n)
{
	CHECK(n == 0 || kv);
	for (unsigned i = 0; i < n; i++) {
		CHECK(kv[i].key && kv[i].key[0]);
		CHECK(kv[i].value);
		CHECK(kv[i].line > 0);
		CHECK(recipe_kv_find(kv, n, kv[i].key) != NULL);
	}
}

static void check_recipe(const struct recipe *r)
{
	CHECK(r->path && !strcmp(r->path, NAME));
	CHECK(r->name && r->name[0]);
	CHECK(r->symptom && r->summary && r->lua);
	CHECK(strlen(r->lua) >= 5 && r->lua[0] != '/');
	CHECK(r->duration_s >= 1 && r->duration_s <= r->budgets.max_duration_s);
	CHECK(r->budgets.max_cpu_pct > 0 && r->budgets.max_cpu_pct <= 100);
	CHECK(r->budgets.max_map_bytes >= 1);
	CHECK(r->n_probes >= 1 && r->n_probes <= 32 && r->probes);
	for (unsigned i = 0; i < r->n_probes; i++) {
		const struct recipe_probe *p = &r->probes[i];
		CHECK(p->id && p->id[0] && p->kind && p->kind[0]);
		CHECK(p->line > 0);
		CHECK(p->n_attach == 0 || p->attach);
		for (unsigned a = 0; a < p->n_attach; a++)
			CHECK(p->attach[a] && p->attach[a][0]);
		for (unsigned j = 0; j < i; j++)
			CHECK(strcmp(p->id, r->probes[j].id) != 0);
		check_kv(p->options, p->n_options);
	}
	check_kv(r->thresholds, r->n_thresholds);
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when it is not one (overlong forms,
 * surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

static int valid_utf8(const char *s)
{
	for (size_t n; *s; s += n)
		if (!(n = utf8_len((const unsigned char *)s)))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct recipe *r = (struct recipe *)1; /* must be overwritten */
	struct diag_err err = { 0 };

	/* An exact-size heap copy, so ASan sees any read past the end (the loader is given a
	 * length and must not rely on a terminating NUL). */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);

	int rc = recipe_load_buffer(NAME, buf, size, &r, &err);
	if (rc == 0) {
		CHECK(r != NULL);
		check_recipe(r);
	} else {
		CHECK(rc == -1);
		CHECK(r == NULL);
		CHECK(err.code == DIAG_EXIT_USAGE);
		CHECK(err.msg[0]);
		CHECK(!strncmp(err.msg, NAME, strlen(NAME)));
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		for (const char *p = err.msg; *p; p++)
			CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
		CHECK(valid_utf8(err.msg)); /* cut strings must not leave half a character */
	}
	recipe_free(r == (struct recipe *)1 ? NULL : r);
	free(buf);
	return 0;
}
