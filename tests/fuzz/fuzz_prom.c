/* fuzz_prom.c — libFuzzer harness for the Prometheus exposition writer of `diagnose watch`
 * (prom_family and prom_sample, engine/watch/prom.c), which writes what targets and recipes
 * control: a process's name in a label, a verdict id, a recipe's help text.
 *
 * Each input is fields separated by NUL bytes: help text, a metric name, a label name, three label
 * values, then the sample's value (its first 8 bytes as a double, NaN and infinities included).
 * Contract: no crash, leak or undefined behaviour; the exposition is valid UTF-8 with no control
 * but its line ends and every line in the format's grammar (tests/unit/prom_check.h); a metric
 * name prom_metric_name_ok refuses is never written (the harness falls back to a fixed one); a
 * label name that is not one is left out; and the help text and each label value read back, the
 * format's escapes undone, as utf8_safe_char's text of the input (the rule every output shares):
 * nothing lost, nothing added.
 *
 * Build and run: make fuzz FUZZ_TARGET=prom (see tests/fuzz/README.md).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "watch/prom.h"
#include "prom_check.h"

#define FUZZ_NAME "fuzz_prom"
#include "fuzz.h"

/* s as utf8_safe_char shows it (malloc'd). */
static char *safe_text(const char *s)
{
	char *out = malloc(strlen(s) * 4 + 1), c[UTF8_SAFE_CHAR_MAX];
	CHECK(out);
	size_t n = 0;
	while (*s) {
		s += utf8_safe_char(s, c);
		memcpy(out + n, c, strlen(c));
		n += strlen(c);
	}
	out[n] = '\0';
	return out;
}

/* The escaped text at *p up to stop (a quote, or the line's end for HELP), unescaped (malloc'd);
 * *p left at stop. */
static char *unescape(const char **p, char stop)
{
	const char *s = *p;
	char *out = malloc(strlen(s) + 1);
	CHECK(out);
	size_t n = 0;
	for (; *s && *s != stop; s++) {
		if (*s == '\\') {
			s++;
			CHECK(*s == '\\' || *s == '"' || *s == 'n');
			out[n++] = *s == 'n' ? '\n' : *s;
		} else {
			out[n++] = *s;
		}
	}
	CHECK(*s == stop);
	out[n] = '\0';
	*p = s;
	return out;
}

/* At *p: key="value" whose unescaped value must be want's safe text; *p left after the quote. */
static void expect_label(const char **p, const char *key, const char *want)
{
	size_t kl = strlen(key);
	CHECK(!strncmp(*p, key, kl) && (*p)[kl] == '=' && (*p)[kl + 1] == '"');
	*p += kl + 2;
	char *got = unescape(p, '"'), *safe = safe_text(want);
	CHECK(!strcmp(got, safe));
	free(got);
	free(safe);
	++*p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the fields: copies, each NUL-terminated */
	char *buf = malloc(size + 1);
	CHECK(buf);
	memcpy(buf, data, size);
	buf[size] = '\0';
	const char *field[7] = { "", "", "", "", "", "", "" };
	size_t nf = 0, at = 0;
	while (nf < 6 && at <= size) {
		field[nf++] = buf + at;
		at += strlen(buf + at) + 1;
	}
	double value = 0.5;
	if (at + sizeof(value) <= size)
		memcpy(&value, data + at, sizeof(value));
	const char *help = field[0], *label = field[2];
	const char *name = prom_metric_name_ok(field[1]) ? field[1] : "diagnose_fuzz";
	bool label_ok = label[0] && !strchr("0123456789", label[0]) &&
			strspn(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
				strlen(label);
	const char *l[] = { "recipe", field[3], label, field[4], "target", field[5] };

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(f);
	prom_family(f, name, "gauge", help);
	prom_sample(f, name, l, 3, value);
	fclose(f);

	size_t line;
	const char *why = prom_check(text, len, &line);
	if (why)
		fprintf(stderr, "fuzz_prom: line %zu: %s\n", line, why);
	CHECK(!why);
	/* # HELP name help */
	const char *p = text;
	CHECK(!strncmp(p, "# HELP ", 7) && !strncmp(p + 7, name, strlen(name)) &&
	      p[7 + strlen(name)] == ' ');
	p += 8 + strlen(name);
	char *got = unescape(&p, '\n'), *safe = safe_text(help);
	CHECK(!strcmp(got, safe));
	free(got);
	free(safe);
	p = strchr(p + 1, '\n'); /* past # TYPE */
	CHECK(p);
	p++;
	/* name{recipe="...",LABEL="...",target="..."} value */
	CHECK(!strncmp(p, name, strlen(name)) && p[strlen(name)] == '{');
	p += strlen(name) + 1;
	expect_label(&p, "recipe", field[3]);
	CHECK(*p++ == ',');
	if (label_ok) {
		expect_label(&p, label, field[4]);
		CHECK(*p++ == ',');
	}
	expect_label(&p, "target", field[5]);
	CHECK(*p == '}');
	free(text);
	free(buf);
	return 0;
}
