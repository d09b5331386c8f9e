/* prom.c — Prometheus's text exposition format. Contract: prom.h. Owns the escaping (on top of
 * util.h's utf8_safe_char, the rule every output shares) and names; must not decide which metrics
 * there are. */
#include "watch/prom.h"

#include <math.h>
#include <string.h>

#include "common/util.h"

static bool name_ok(const char *s, bool colon)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || (colon && *s == ':')))
			return false;
	return true;
}

bool prom_metric_name_ok(const char *name)
{
	return name_ok(name, true);
}

/* Text a target or a recipe controls, as the format wants it: first made safe text by the one rule
 * of every output (utf8_safe_char: each byte that is not UTF-8 or is a control, a newline
 * included, as "\xNN"), then escaped for Prometheus — backslash (that of "\xNN" too) and, in a
 * label value (quote), the double quote. No newline is left to escape. */
static void put_escaped(FILE *out, const char *s, bool quote)
{
	char c[UTF8_SAFE_CHAR_MAX];
	while (s && *s) {
		s += utf8_safe_char(s, c);
		for (const char *p = c; *p; p++) {
			if (*p == '\\')
				fputs("\\\\", out);
			else if (quote && *p == '"')
				fputs("\\\"", out);
			else
				fputc(*p, out);
		}
	}
}

void prom_family(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s ", name);
	put_escaped(out, help, false);
	fprintf(out, "\n# TYPE %s %s\n", name, type);
}

void prom_sample(FILE *out, const char *name, const char *const *labels, size_t n_labels, double value)
{
	fputs(name, out);
	bool open = false;
	for (size_t i = 0; i < n_labels; i++) {
		if (!name_ok(labels[2 * i], false))
			continue;
		fputs(open ? "," : "{", out);
		open = true;
		fprintf(out, "%s=\"", labels[2 * i]);
		put_escaped(out, labels[2 * i + 1], true);
		fputc('"', out);
	}
	if (open)
		fputc('}', out);
	if (isnan(value))
		fputs(" NaN\n", out);
	else if (isinf(value))
		fputs(value > 0 ? " +Inf\n" : " -Inf\n", out);
	else if (value == floor(value) && fabs(value) < 1e15)
		fprintf(out, " %.0f\n", value);
	else
		fprintf(out, " %.9g\n", value);
}
