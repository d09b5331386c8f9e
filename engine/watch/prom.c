/* prom.c — Prometheus's text exposition format. Contract: prom.h. Owns the escaping and names;
 * must not decide which metrics there are. */
#include "prom.h"

#include <math.h>
#include <string.h>

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

/* help text: backslash and newline escaped; label values: double quote too */
static void put_escaped(FILE *out, const char *s, bool quote)
{
	for (; s && *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (quote && *s == '"')
			fputs("\\\"", out);
		else
			fputc(*s, out);
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
