/* prom_check.h — a checker of Prometheus's text exposition format (0.0.4) as diagnose writes it,
 * for test_watch.c and tests/fuzz/fuzz_prom.c: the text valid UTF-8 with no character
 * utf8_char_unsafe names (controls, bidirectional controls, ...) but the line ends, and every
 * line one of
 *   # HELP name text          text: a backslash only as \\ or \n
 *   # TYPE name type          counter, gauge, histogram, summary or untyped
 *   name{label="value",...} number    value: a backslash only as \\, \" or \n; no raw "
 * with metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*, and numbers as
 * Go's ParseFloat reads them (NaN, +Inf, -Inf). Header only: static functions.
 */
#ifndef DIAG_TEST_PROM_CHECK_H
#define DIAG_TEST_PROM_CHECK_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static bool pc_name_char(char c, bool first, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (colon && c == ':') || (!first && c >= '0' && c <= '9');
}

/* A name at *p before end: advances past it. */
static bool pc_name(const char **p, const char *end, bool colon)
{
	const char *s = *p;
	if (s == end || !pc_name_char(*s, true, colon))
		return false;
	while (s < end && pc_name_char(*s, false, colon))
		s++;
	*p = s;
	return true;
}

/* Escaped text up to end (HELP) or to the closing quote (a label value, quote true): advances
 * past it, not past the quote. */
static bool pc_escaped(const char **p, const char *end, bool quote)
{
	const char *s = *p;
	while (s < end && !(quote && *s == '"')) {
		if (*s == '\\') {
			if (s + 1 == end || !(s[1] == '\\' || s[1] == 'n' || (quote && s[1] == '"')))
				return false;
			s++;
		}
		s++;
	}
	*p = s;
	return true;
}

static bool pc_number(const char *s, const char *end)
{
	size_t n = (size_t)(end - s);
	if ((n == 3 && !memcmp(s, "NaN", 3)) ||
	    (n == 4 && (!memcmp(s, "+Inf", 4) || !memcmp(s, "-Inf", 4))))
		return true;
	if (n == 0 || n > 40)
		return false;
	char buf[48];
	memcpy(buf, s, n);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789.eE+-", buf[i]))
			return false;
	char *stop;
	strtod(buf, &stop);
	return *stop == '\0';
}

static const char *pc_line(const char *s, const char *end)
{
	if (end - s >= 7 && !memcmp(s, "# HELP ", 7)) {
		s += 7;
		if (!pc_name(&s, end, true) || s == end || *s++ != ' ')
			return "HELP: no metric name and blank";
		return pc_escaped(&s, end, false) ? NULL : "HELP: a backslash that escapes nothing";
	}
	if (end - s >= 7 && !memcmp(s, "# TYPE ", 7)) {
		s += 7;
		if (!pc_name(&s, end, true) || s == end || *s++ != ' ')
			return "TYPE: no metric name and blank";
		static const char *const types[] = { "counter", "gauge", "histogram", "summary", "untyped" };
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if ((size_t)(end - s) == strlen(types[i]) &&
			    !memcmp(s, types[i], strlen(types[i])))
				return NULL;
		return "TYPE: not a type";
	}
	if (!pc_name(&s, end, true))
		return "sample: no metric name";
	if (s < end && *s == '{') {
		s++;
		for (bool first = true; s < end && *s != '}'; first = false) {
			if (!first && *s++ != ',')
				return "sample: labels not separated by a comma";
			if (!pc_name(&s, end, false))
				return "sample: not a label name";
			if (end - s < 2 || s[0] != '=' || s[1] != '"')
				return "sample: a label name without =\"";
			s += 2;
			if (!pc_escaped(&s, end, true))
				return "sample: a label value's backslash escapes nothing";
			if (s == end)
				return "sample: a label value without its closing quote";
			s++;
		}
		if (s == end)
			return "sample: labels without their closing brace";
		s++;
	}
	if (s == end || *s++ != ' ')
		return "sample: no blank before the value";
	return pc_number(s, end) ? NULL : "sample: not a number";
}

/* NULL when text (len bytes) is an exposition as above, else what is wrong, its line in *line
 * (from 1). */
static const char *prom_check(const char *text, size_t len, size_t *line)
{
	*line = 0;
	const char *end = text + len;
	for (const char *p = text; p < end;) {
		/* bytes: a NUL within len is no character */
		size_t n = *p ? utf8_char_len(p) : 0;
		if (n == 0 || (size_t)(end - p) < n)
			return "not UTF-8 (or a NUL)";
		if (*p != '\n' && utf8_char_unsafe(p, n))
			return "a control or another character utf8_char_unsafe names";
		p += n;
	}
	if (len && text[len - 1] != '\n')
		return "the last line has no newline";
	for (const char *s = text; s < end;) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		++*line;
		const char *why = pc_line(s, nl);
		if (why)
			return why;
		s = nl + 1;
	}
	*line = 0;
	return NULL;
}

#endif
