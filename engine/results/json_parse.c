/* json_parse.c — strict, bounded JSON reader. Contract and rules: json_parse.h.
 * Must not: print, read past len, or grow the C stack past max_depth levels.
 *
 * Numbers go through strtod in the C locale (diagnose never calls setlocale). Objects are built
 * directly (value_obj_set is linear per key) and checked for duplicate keys once, by sorting.
 */
#include "json_parse.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const unsigned char *s;
	size_t len, pos;
	size_t depth, max_depth;
	size_t nodes, max_nodes;
	bool raw_bytes;
	struct diag_err *err;
	bool failed;
};

static struct value *fail_at(struct parser *p, size_t at, const char *what)
{
	if (!p->failed)
		diag_fail(p->err, DIAG_EXIT_USAGE, "at byte %zu: %s", at, what);
	p->failed = true;
	return NULL;
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static bool count_node(struct parser *p)
{
	if (p->max_nodes && p->nodes >= p->max_nodes) {
		char what[80];
		snprintf(what, sizeof(what), "more than %zu values", p->max_nodes);
		fail_at(p, p->pos, what);
		return false;
	}
	p->nodes++;
	return true;
}

/* Describes the byte at pos for a message: "'x'", "byte 0x1f" or "end of input". */
static const char *found(struct parser *p, char *buf, size_t len)
{
	if (p->pos >= p->len)
		return "end of input";
	unsigned char c = p->s[p->pos];
	if (c > 0x20 && c < 0x7f)
		snprintf(buf, len, "'%c'", c);
	else
		snprintf(buf, len, "byte 0x%02x", c);
	return buf;
}

static struct value *unexpected(struct parser *p, const char *expected)
{
	char what[96], b[16];
	snprintf(what, sizeof(what), "expected %s, found %s", expected, found(p, b, sizeof(b)));
	return fail_at(p, p->pos, what);
}

/* ---- literals and numbers ------------------------------------------------------------------ */

static struct value *literal(struct parser *p, const char *word, struct value *(*make)(void))
{
	size_t n = strlen(word);
	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return unexpected(p, "a value");
	p->pos += n;
	return make();
}

static struct value *make_true(void) { return value_bool(true); }
static struct value *make_false(void) { return value_bool(false); }

static bool is_digit(struct parser *p)
{
	return p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9';
}

static struct value *number(struct parser *p)
{
	size_t start = p->pos;
	bool neg = false, integral = true;

	if (p->s[p->pos] == '-') {
		neg = true;
		p->pos++;
	}
	if (!is_digit(p))
		return unexpected(p, "a digit");
	if (p->s[p->pos] == '0') {
		p->pos++;
		if (is_digit(p))
			return fail_at(p, p->pos - 1, "leading zero in a number");
	} else {
		while (is_digit(p))
			p->pos++;
	}
	if (p->pos < p->len && p->s[p->pos] == '.') {
		integral = false;
		p->pos++;
		if (!is_digit(p))
			return unexpected(p, "a digit after '.'");
		while (is_digit(p))
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		integral = false;
		p->pos++;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (!is_digit(p))
			return unexpected(p, "a digit in the exponent");
		while (is_digit(p))
			p->pos++;
	}

	if (integral) {
		/* Accumulate as a negative number, so INT64_MIN fits. */
		int64_t acc = 0;
		bool fits = true;
		for (size_t i = start + neg; i < p->pos && fits; i++) {
			int d = p->s[i] - '0';
			if (acc < (INT64_MIN + d) / 10)
				fits = false;
			else
				acc = acc * 10 - d;
		}
		if (fits && (neg || acc != INT64_MIN))
			return value_int(neg ? acc : -acc);
	}

	size_t n = p->pos - start;
	char small[64];
	char *tok = n < sizeof(small) ? small : xmalloc(n + 1);
	memcpy(tok, p->s + start, n);
	tok[n] = '\0';
	double d = strtod(tok, NULL); /* underflow to 0 or a subnormal is fine */
	if (tok != small)
		free(tok);
	if (!isfinite(d))
		return fail_at(p, start, "number out of range");
	return value_num(d);
}

/* ---- strings ------------------------------------------------------------------------------- */

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reads the 4 hex digits of a \u escape whose backslash is at p->pos. Returns -1 on error. */
static long read_u(struct parser *p)
{
	long cp = 0;
	for (size_t i = 2; i < 6; i++) {
		int h = p->pos + i < p->len ? hexval(p->s[p->pos + i]) : -1;
		if (h < 0) {
			fail_at(p, p->pos, "\\u must be followed by 4 hex digits");
			return -1;
		}
		cp = cp * 16 + h;
	}
	p->pos += 6;
	return cp;
}

static size_t put_utf8(char *out, long cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Length of the valid UTF-8 sequence at s (n bytes available): 2..4, or 0 when it is not one
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t need = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		    : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	if (!need || need > n)
		return 0;
	for (size_t i = 1; i < need; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return need;
}

/* The string whose opening quote is at p->pos, decoded into a malloc'ed C string. */
static char *string(struct parser *p)
{
	size_t open = p->pos++;
	/* The decoded text is never longer than the quoted text: find the end first. */
	size_t end = p->pos;
	while (end < p->len && p->s[end] != '"')
		end += p->s[end] == '\\' ? 2 : 1;
	if (end >= p->len) {
		fail_at(p, open, "unterminated string");
		return NULL;
	}
	char *out = xmalloc(end - p->pos + 1);
	size_t n = 0;

	while (p->s[p->pos] != '"') {
		unsigned char c = p->s[p->pos];
		if (c < 0x20) {
			fail_at(p, p->pos, "control character in a string (must be escaped)");
			goto bad;
		}
		if (c >= 0x80) {
			size_t k = utf8_seq(p->s + p->pos, p->len - p->pos);
			if (!k) {
				if (!p->raw_bytes) {
					fail_at(p, p->pos, "invalid UTF-8 in a string");
					goto bad;
				}
				k = 1;
			}
			memcpy(out + n, p->s + p->pos, k);
			n += k;
			p->pos += k;
			continue;
		}
		if (c != '\\') {
			out[n++] = (char)c;
			p->pos++;
			continue;
		}
		unsigned char e = p->s[p->pos + 1]; /* in bounds: the end quote is further on */
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *m = e ? strchr(from, e) : NULL;
		if (m) {
			out[n++] = to[m - from];
			p->pos += 2;
			continue;
		}
		if (e != 'u') {
			fail_at(p, p->pos, "invalid escape (expected one of "
				"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
			goto bad;
		}
		size_t at = p->pos;
		long cp = read_u(p);
		if (cp < 0)
			goto bad;
		if (cp >= 0xdc00 && cp <= 0xdfff) {
			fail_at(p, at, "lone low surrogate in a \\u escape");
			goto bad;
		}
		if (cp >= 0xd800 && cp <= 0xdbff) {
			if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
				fail_at(p, at, "lone high surrogate in a \\u escape (a low one must follow)");
				goto bad;
			}
			long lo = read_u(p);
			if (lo < 0)
				goto bad;
			if (lo < 0xdc00 || lo > 0xdfff) {
				fail_at(p, at, "high surrogate not followed by a low surrogate");
				goto bad;
			}
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (cp == 0) {
			fail_at(p, at, "\\u0000 is not allowed (strings cannot hold NUL)");
			goto bad;
		}
		n += put_utf8(out + n, cp);
	}
	p->pos++;
	out[n] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* ---- containers ---------------------------------------------------------------------------- */

static struct value *parse_value(struct parser *p);

static bool enter(struct parser *p)
{
	if (p->depth >= p->max_depth) {
		char what[80];
		snprintf(what, sizeof(what), "nested deeper than %zu levels", p->max_depth);
		fail_at(p, p->pos, what);
		return false;
	}
	p->depth++;
	p->pos++; /* the bracket */
	return true;
}

static struct value *array(struct parser *p)
{
	if (!enter(p))
		return NULL;
	struct value *arr = value_arr();
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == ']') {
		p->pos++;
		p->depth--;
		return arr;
	}
	for (;;) {
		struct value *item = parse_value(p);
		if (!item)
			goto bad;
		value_arr_push(arr, item);
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == ']') {
			p->pos++;
			p->depth--;
			return arr;
		}
		unexpected(p, "',' or ']'");
		goto bad;
	}
bad:
	value_free(arr);
	return NULL;
}

struct keyref {
	const char *key;
	size_t at;
};

static int keyref_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* Duplicate keys, found by sorting (n log n, whatever the keys). Returns false on one. */
static bool keys_unique(struct parser *p, const struct value *obj, const size_t *offsets)
{
	size_t n = obj->obj.len;
	if (n < 2)
		return true;
	struct keyref *r = xmalloc(n * sizeof(*r));
	for (size_t i = 0; i < n; i++)
		r[i] = (struct keyref){ obj->obj.keys[i], offsets[i] };
	qsort(r, n, sizeof(*r), keyref_cmp);
	bool ok = true;
	for (size_t i = 1; i < n && ok; i++) {
		if (strcmp(r[i - 1].key, r[i].key) == 0) {
			fail_at(p, r[i].at, "duplicate key in an object");
			ok = false;
		}
	}
	free(r);
	return ok;
}

static void obj_append(struct value *obj, size_t **offsets, char *key, size_t at, struct value *val)
{
	if (obj->obj.len == obj->obj.cap) {
		obj->obj.cap = obj->obj.cap ? obj->obj.cap * 2 : 8;
		obj->obj.keys = xrealloc(obj->obj.keys, obj->obj.cap * sizeof(char *));
		obj->obj.vals = xrealloc(obj->obj.vals, obj->obj.cap * sizeof(struct value *));
		*offsets = xrealloc(*offsets, obj->obj.cap * sizeof(size_t));
	}
	(*offsets)[obj->obj.len] = at;
	obj->obj.keys[obj->obj.len] = key;
	obj->obj.vals[obj->obj.len] = val;
	obj->obj.len++;
}

static struct value *object(struct parser *p)
{
	if (!enter(p))
		return NULL;
	struct value *obj = value_obj();
	size_t *offsets = NULL;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == '}') {
		p->pos++;
		p->depth--;
		return obj;
	}
	for (;;) {
		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != '"') {
			unexpected(p, "a string key");
			goto bad;
		}
		size_t at = p->pos;
		char *key = string(p);
		if (!key)
			goto bad;
		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != ':') {
			free(key);
			unexpected(p, "':'");
			goto bad;
		}
		p->pos++;
		struct value *val = parse_value(p);
		if (!val) {
			free(key);
			goto bad;
		}
		obj_append(obj, &offsets, key, at, val);
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == '}') {
			p->pos++;
			p->depth--;
			if (!keys_unique(p, obj, offsets))
				goto bad;
			free(offsets);
			return obj;
		}
		unexpected(p, "',' or '}'");
		goto bad;
	}
bad:
	free(offsets);
	value_free(obj);
	return NULL;
}

static struct value *parse_value(struct parser *p)
{
	skip_ws(p);
	if (p->pos >= p->len)
		return unexpected(p, "a value");
	if (!count_node(p))
		return NULL;
	switch (p->s[p->pos]) {
	case '{': return object(p);
	case '[': return array(p);
	case '"': {
		char *s = string(p);
		return s ? value_str_take(s) : NULL;
	}
	case 't': return literal(p, "true", make_true);
	case 'f': return literal(p, "false", make_false);
	case 'n': return literal(p, "null", value_null);
	default:
		if (p->s[p->pos] == '-' || (p->s[p->pos] >= '0' && p->s[p->pos] <= '9'))
			return number(p);
		return unexpected(p, "a value");
	}
}

struct value *json_parse(const char *text, size_t len, const struct json_limits *lim,
			 struct diag_err *err)
{
	struct parser p = {
		.s = (const unsigned char *)text, .len = text ? len : 0, .err = err,
		.max_depth = lim && lim->max_depth ? lim->max_depth : JSON_DEFAULT_MAX_DEPTH,
		.max_nodes = lim ? lim->max_nodes : 0, .raw_bytes = lim && lim->raw_bytes,
	};
	struct value *v = parse_value(&p);
	if (lim && lim->nodes_used)
		*lim->nodes_used = p.nodes;
	if (!v)
		return NULL;
	skip_ws(&p);
	if (p.pos < p.len) {
		value_free(v);
		return unexpected(&p, "end of input after the value");
	}
	return v;
}
