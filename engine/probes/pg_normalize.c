/* pg_normalize.c — a SQL statement's text without its constants (pg_normalize.h). */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#include "probes/pg_normalize.h"

struct out {
	char *buf;
	size_t len, cap;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->cap)
		o->buf[o->len++] = c;
}

static void put_blank(struct out *o)
{
	if (o->len && o->buf[o->len - 1] != ' ')
		put(o, ' ');
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || (unsigned char)c >= 0x80;
}

/* A constant ends here: "?", unless it continues a list "?, ?" which becomes "?, ...". */
static void put_const(struct out *o)
{
	size_t n = o->len;
	/* the output ends "?, " or "?," (after a first constant) or "?, ..., " (a list already) */
	while (n && o->buf[n - 1] == ' ')
		n--;
	if (n && o->buf[n - 1] == ',') {
		size_t m = n - 1;
		while (m && o->buf[m - 1] == ' ')
			m--;
		if (m >= 3 && memcmp(o->buf + m - 3, "...", 3) == 0) {
			o->len = m; /* "?, ...": already a list, which this one joins */
			return;
		}
		if (m && o->buf[m - 1] == '?' && (m < 2 || !ident_char(o->buf[m - 2]))) {
			o->len = m;
			put(o, ',');
			put(o, ' ');
			put(o, '.');
			put(o, '.');
			put(o, '.');
			return;
		}
	}
	put(o, '?');
}

/* The end of a '...' string starting at p (p at the quote): past its closing quote ('' is a quote
 * inside; backslash escapes only in E'...'), or the end of the text. */
static const char *skip_quoted(const char *p, bool backslash)
{
	p++;
	while (*p) {
		if (backslash && *p == '\\' && p[1]) {
			p += 2;
			continue;
		}
		if (*p == '\'') {
			if (p[1] == '\'') {
				p += 2;
				continue;
			}
			return p + 1;
		}
		p++;
	}
	return p;
}

void pg_normalize(const char *in, char *outbuf, size_t out_len)
{
	struct out o = { outbuf, 0, out_len };
	const char *p = in;
	while (*p) {
		char c = *p;
		if (isspace((unsigned char)c)) {
			put_blank(&o);
			p++;
		} else if (c == '-' && p[1] == '-') { /* a comment to the end of the line */
			while (*p && *p != '\n')
				p++;
		} else if (c == '/' && p[1] == '*') {
			p += 2;
			while (*p && !(*p == '*' && p[1] == '/'))
				p++;
			if (*p)
				p += 2;
			put_blank(&o);
		} else if (c == '\'') {
			p = skip_quoted(p, false);
			put_const(&o);
		} else if ((c == 'E' || c == 'e' || c == 'B' || c == 'b' || c == 'X' || c == 'x' ||
			    c == 'N' || c == 'n') && p[1] == '\'' && (p == in || !ident_char(p[-1]))) {
			p = skip_quoted(p + 1, c == 'E' || c == 'e');
			put_const(&o);
		} else if (c == '"') { /* a quoted identifier: kept */
			put(&o, *p++);
			while (*p && !(*p == '"' && p[1] != '"')) {
				if (*p == '"')
					put(&o, *p++);
				put(&o, *p++);
			}
			if (*p)
				put(&o, *p++);
		} else if (c == '$' && (p == in || !ident_char(p[-1])) && !isdigit((unsigned char)p[1])) {
			/* $tag$ ... $tag$ (a dollar-quoted string), the tag possibly empty */
			const char *t = p + 1;
			while (*t && (isalnum((unsigned char)*t) || *t == '_'))
				t++;
			if (*t != '$') {
				put(&o, *p++);
				continue;
			}
			size_t tag = (size_t)(t - p) + 1; /* "$tag$" */
			const char *end = t + 1;
			while (*end && strncmp(end, p, tag) != 0)
				end++;
			p = *end ? end + tag : end;
			put_const(&o);
		} else if ((isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)p[1]))) &&
			   (p == in || !ident_char(p[-1]))) {
			while (isalnum((unsigned char)*p) || *p == '.' || *p == '_' ||
			       ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E')))
				p++;
			put_const(&o);
		} else {
			put(&o, *p++);
		}
	}
	while (o.len && o.buf[o.len - 1] == ' ')
		o.len--;
	o.buf[o.len] = '\0';
}
