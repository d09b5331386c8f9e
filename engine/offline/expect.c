/* expect.c — the .expect file of a recorded incident, read and compared (see expect.h).
 * Must not: run anything, read the report, or print.
 */
#include "offline/expect.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe/source.h"
#include "verdict/verdict.h"

/* ---- reading -------------------------------------------------------------------------------- */

struct parser {
	const char *path;
	unsigned line;
	struct diag_err *err;
	struct expectations *e;
	bool have_exit;
};

static int perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *p, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return diag_fail(p->err, DIAG_EXIT_USAGE, "%s:%u: %s", p->path, p->line, what);
}

static bool blank(char c) { return c == ' ' || c == '\t'; }

/* The next word of *s (NUL-terminated in place), *s moved past it and the blanks after; NULL at
 * the end of the line. */
static char *next_word(char **s)
{
	char *w = *s;
	if (!*w)
		return NULL;
	char *end = w;
	while (*end && !blank(*end))
		end++;
	char *next = end;
	while (blank(*next))
		next++;
	*end = '\0';
	*s = next;
	return w;
}

static bool id_ok(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > EXPECT_MAX_ID)
		return false;
	for (size_t i = 0; i < n; i++)
		if (id[i] <= 0x20 || id[i] >= 0x7f)
			return false;
	return true;
}

/* An ID word of a statement: present and well-formed. */
static const char *want_id(struct parser *p, char **rest, const char *keyword)
{
	const char *id = next_word(rest);
	if (!id) {
		perr(p, "%s: missing ID", keyword);
		return NULL;
	}
	if (!id_ok(id)) {
		perr(p, "%s: \"%.40s\" is not an id (1 to %d printable characters, no blanks)", keyword,
		     id, EXPECT_MAX_ID);
		return NULL;
	}
	return id;
}

static int no_more(struct parser *p, char *rest, const char *keyword, const char *takes)
{
	if (*rest)
		return perr(p, "%s takes %s; unexpected \"%.40s\"", keyword, takes, rest);
	return 0;
}

static int parse_exit(struct parser *p, char *rest)
{
	const char *n = next_word(&rest);
	uint64_t v;
	if (p->have_exit)
		return perr(p, "a second exit line (one is expected)");
	if (!n || !decimal_uint(n, 255, &v))
		return perr(p, "exit: expected a number from 0 to 255, got \"%.40s\"", n ? n : "");
	if (no_more(p, rest, "exit", "one number"))
		return -1;
	p->e->exit_code = (int)v;
	p->have_exit = true;
	return 0;
}

static int parse_verdict(struct parser *p, char *rest)
{
	const char *id = want_id(p, &rest, "verdict");
	if (!id)
		return -1;
	const char *sev = next_word(&rest);
	int ok = 0;
	if (sev)
		severity_parse(sev, &ok);
	if (!ok)
		return perr(p, "verdict %s: expected a severity (ok, info, warning or critical), got "
			    "\"%.40s\"", id, sev ? sev : "");
	if (no_more(p, rest, "verdict", "ID SEVERITY"))
		return -1;
	struct expectations *e = p->e;
	e->verdicts = xrealloc(e->verdicts, (e->n_verdicts + 1) * sizeof(*e->verdicts));
	e->verdicts[e->n_verdicts++] = (struct expect_verdict){ xstrdup(id), xstrdup(sev) };
	return 0;
}

static int parse_ruled_out(struct parser *p, char *rest)
{
	const char *id = want_id(p, &rest, "ruled_out");
	if (!id || no_more(p, rest, "ruled_out", "one ID"))
		return -1;
	struct expectations *e = p->e;
	e->ruled_out = xrealloc(e->ruled_out, (e->n_ruled_out + 1) * sizeof(*e->ruled_out));
	e->ruled_out[e->n_ruled_out++] = xstrdup(id);
	return 0;
}

static int parse_contains(struct parser *p, char *rest)
{
	const char *id = want_id(p, &rest, "evidence-contains");
	if (!id)
		return -1;
	if (!*rest)
		return perr(p, "evidence-contains %s: missing TEXT (the rest of the line)", id);
	struct expectations *e = p->e;
	e->contains = xrealloc(e->contains, (e->n_contains + 1) * sizeof(*e->contains));
	e->contains[e->n_contains++] = (struct expect_contains){ xstrdup(id), xstrdup(rest) };
	return 0;
}

/* One line (NUL-terminated, trailing blanks cut): a statement, a comment or nothing. */
static int parse_line(struct parser *p, char *s)
{
	while (blank(*s))
		s++;
	if (!*s || *s == '#')
		return 0;
	const char *keyword = next_word(&s);
	if (!strcmp(keyword, "exit"))
		return parse_exit(p, s);
	if (!strcmp(keyword, "verdict"))
		return parse_verdict(p, s);
	if (!strcmp(keyword, "ruled_out"))
		return parse_ruled_out(p, s);
	if (!strcmp(keyword, "evidence-contains"))
		return parse_contains(p, s);
	return perr(p, "unknown statement \"%.40s\" (expected exit, verdict, ruled_out or "
		    "evidence-contains)", keyword);
}

/* The bytes of one line [start, end) are text: no control character but a tab. */
static int check_bytes(struct parser *p, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return perr(p, "a control character (byte 0x%02x) at column %zu", c, i + 1);
	}
	return 0;
}

int expect_parse(const char *path, const char *text, size_t len, struct expectations *out,
		 struct diag_err *err)
{
	*out = (struct expectations){ .exit_code = -1 };
	struct parser p = { .path = path, .err = err, .e = out };
	if (len > EXPECT_MAX_BYTES)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: over %u bytes", path, EXPECT_MAX_BYTES);
	char line[EXPECT_MAX_LINE + 1];
	size_t pos = 0;
	while (pos < len) {
		p.line++;
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		if (n > EXPECT_MAX_LINE) {
			perr(&p, "line longer than %d bytes", EXPECT_MAX_LINE);
			goto fail;
		}
		if (check_bytes(&p, text + pos, n))
			goto fail;
		memcpy(line, text + pos, n);
		while (n && blank(line[n - 1]))
			n--;
		line[n] = '\0';
		if (parse_line(&p, line))
			goto fail;
		pos += (nl ? (size_t)(nl - (text + pos)) + 1 : len - pos);
	}
	if (!p.have_exit) {
		diag_fail(err, DIAG_EXIT_USAGE, "%s: no exit line (exit N: the exit code the replay "
			  "gives)", path);
		goto fail;
	}
	return 0;
fail:
	expect_free(out);
	return -1;
}

int expect_read(const char *path, struct expectations *out, struct diag_err *err)
{
	struct source_file f;
	*out = (struct expectations){ .exit_code = -1 };
	if (source_read(path, false, EXPECT_MAX_BYTES, &f, err))
		return -1;
	int rc = expect_parse(path, f.data, f.len, out, err);
	source_free(&f);
	return rc;
}

void expect_free(struct expectations *e)
{
	for (size_t i = 0; i < e->n_verdicts; i++) {
		free(e->verdicts[i].id);
		free(e->verdicts[i].severity);
	}
	for (size_t i = 0; i < e->n_ruled_out; i++)
		free(e->ruled_out[i]);
	for (size_t i = 0; i < e->n_contains; i++) {
		free(e->contains[i].id);
		free(e->contains[i].text);
	}
	free(e->verdicts);
	free(e->ruled_out);
	free(e->contains);
	*e = (struct expectations){ .exit_code = -1 };
}

/* ---- comparing ---------------------------------------------------------------------------- */

static void say(struct value *diffs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct value *diffs, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	value_arr_push(diffs, s ? value_str_take(s) : value_str("(out of memory)"));
}

/* "verdict ID SEVERITY" for each verdict the replay gave, as the .expect file writes it. */
static char **given_verdicts(const struct value *vs, size_t *n)
{
	*n = vs && vs->type == V_ARR ? vs->arr.len : 0;
	char **out = xcalloc(*n ? *n : 1, sizeof(*out));
	for (size_t i = 0; i < *n; i++) {
		const char *id = value_get_str(vs->arr.items[i], "id");
		const char *sev = value_get_str(vs->arr.items[i], "severity");
		out[i] = xasprintf("verdict %s %s", id ? id : "?", sev ? sev : "?");
	}
	return out;
}

#define DIFF_MAX 256 /* verdicts compared line by line; past that, both lists as they are */

/* The two lists as a diff, by their longest common subsequence: "  " both, "- " expected only,
 * "+ " given only (where both differ, the expected line first). */
static void diff_lines(struct value *diffs, char **want, size_t nw, char **got, size_t ng)
{
	if (nw > DIFF_MAX || ng > DIFF_MAX) {
		for (size_t i = 0; i < nw; i++)
			say(diffs, "- %s", want[i]);
		for (size_t i = 0; i < ng; i++)
			say(diffs, "+ %s", got[i]);
		return;
	}
	/* lcs[i][j]: the longest common subsequence of want[i..] and got[j..] */
	size_t cols = ng + 1;
	unsigned *lcs = xcalloc((nw + 1) * cols, sizeof(*lcs));
	for (size_t i = nw; i-- > 0;)
		for (size_t j = ng; j-- > 0;)
			lcs[i * cols + j] = !strcmp(want[i], got[j])
						    ? lcs[(i + 1) * cols + j + 1] + 1
						    : lcs[(i + 1) * cols + j] > lcs[i * cols + j + 1]
							      ? lcs[(i + 1) * cols + j]
							      : lcs[i * cols + j + 1];
	size_t i = 0, j = 0;
	while (i < nw || j < ng) {
		if (i < nw && j < ng && !strcmp(want[i], got[j])) {
			say(diffs, "  %s", want[i++]);
			j++;
		} else if (i < nw && (j == ng || lcs[(i + 1) * cols + j] >= lcs[i * cols + j + 1])) {
			say(diffs, "- %s", want[i++]);
		} else {
			say(diffs, "+ %s", got[j++]);
		}
	}
	free(lcs);
}

static void check_verdicts(struct value *diffs, const struct expectations *e, const struct value *vs)
{
	size_t ng;
	char **got = given_verdicts(vs, &ng);
	char **want = xcalloc(e->n_verdicts ? e->n_verdicts : 1, sizeof(*want));
	bool same = ng == e->n_verdicts;
	for (size_t i = 0; i < e->n_verdicts; i++) {
		want[i] = xasprintf("verdict %s %s", e->verdicts[i].id, e->verdicts[i].severity);
		same = same && !strcmp(want[i], got[i]);
	}
	if (!same) {
		say(diffs, "verdicts differ (- expected, + given):");
		diff_lines(diffs, want, e->n_verdicts, got, ng);
	}
	for (size_t i = 0; i < e->n_verdicts; i++)
		free(want[i]);
	for (size_t i = 0; i < ng; i++)
		free(got[i]);
	free(want);
	free(got);
}

static const struct value *item_by_id(const struct value *arr, const char *id)
{
	for (size_t i = 0; arr && arr->type == V_ARR && i < arr->arr.len; i++) {
		const char *x = value_get_str(arr->arr.items[i], "id");
		if (x && !strcmp(x, id))
			return arr->arr.items[i];
	}
	return NULL;
}

/* The ids of the replay's ruled_out, at most 10, for a message. */
static void ids_of(const struct value *arr, char *buf, size_t len)
{
	size_t n = arr && arr->type == V_ARR ? arr->arr.len : 0;
	snprintf(buf, len, "%s", n ? "" : "nothing");
	for (size_t i = 0; i < n && i < 10; i++) {
		const char *id = value_get_str(arr->arr.items[i], "id");
		size_t used = strlen(buf);
		snprintf(buf + used, len - used, "%s%.64s", i ? ", " : "", id ? id : "?");
	}
	if (n > 10)
		snprintf(buf + strlen(buf), len - strlen(buf), " and %zu more", n - 10);
}

static void check_ruled_out(struct value *diffs, const struct expectations *e, const struct value *ro)
{
	char ids[1024];
	for (size_t i = 0; i < e->n_ruled_out; i++) {
		if (item_by_id(ro, e->ruled_out[i]))
			continue;
		ids_of(ro, ids, sizeof(ids));
		say(diffs, "ruled_out %s: not ruled out (the replay ruled out %s)", e->ruled_out[i], ids);
	}
}

static bool has_text(const struct value *v, const char *text)
{
	const char *title = value_get_str(v, "title");
	if (title && strstr(title, text))
		return true;
	const struct value *ev = value_get(v, "evidence");
	for (size_t i = 0; ev && ev->type == V_ARR && i < ev->arr.len; i++)
		if (ev->arr.items[i]->type == V_STR && strstr(ev->arr.items[i]->s, text))
			return true;
	return false;
}

static void check_contains(struct value *diffs, const struct expectations *e, const struct value *vs)
{
	for (size_t i = 0; i < e->n_contains; i++) {
		const struct expect_contains *c = &e->contains[i];
		const struct value *v = item_by_id(vs, c->id);
		if (!v)
			say(diffs, "evidence-contains %s %s: no verdict %s", c->id, c->text, c->id);
		else if (!has_text(v, c->text))
			say(diffs, "evidence-contains %s %s: not in the verdict's title or evidence", c->id,
			    c->text);
	}
}

struct value *expect_compare(const struct expectations *e, int exit_code,
			     const struct value *report, const char *error)
{
	struct value *diffs = value_arr();
	if (error)
		say(diffs, "the replay failed: %s", error);
	if (exit_code != e->exit_code)
		say(diffs, "exit: expected %d, got %d", e->exit_code, exit_code);
	const struct value *vs = value_get(report, "verdicts");
	check_verdicts(diffs, e, vs);
	check_ruled_out(diffs, e, value_get(report, "ruled_out"));
	check_contains(diffs, e, vs);
	return diffs;
}
