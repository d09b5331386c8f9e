/* json_parse.c — the strict, bounded JSON reader of json_parse.h, on Debian's jansson.
 *
 * jansson reads the grammar, escapes, surrogate pairs, UTF-8, numbers and duplicate keys, in
 * strict mode: JSON_REJECT_DUPLICATES, neither JSON_ALLOW_NUL nor JSON_DISABLE_EOF_CHECK, and
 * JSON_DECODE_ANY (a top-level scalar is a JSON text).
 * Owns: what jansson cannot be asked for, done by the feed that hands it the caller's text
 * (json_load_callback) in the same single pass (walked again only to place an error): the
 * runtime caps on depth and on values (jansson's only bound is a compile-time depth,
 * JSON_PARSER_MAX_DEPTH, and it has no cap on values: the feed ends where a cap is passed, so
 * jansson never builds more than the caps allow); integers past int64_t read as doubles (jansson
 * refuses them: each is handed over with ".0" after it); and raw_bytes (jansson refuses bytes
 * that are not UTF-8: each such byte in a string is handed over as U+FFFF then U+0100 + the
 * byte, a U+FFFF of the text as two U+FFFF, and turned back in the tree). Then jansson's tree
 * into struct value (freed as it is converted), and the one-line error "at byte N: what", N
 * counted in the caller's text.
 * Must not: print, read past len, read JSON grammar itself (jansson's), copy the caller's text,
 * or recurse past max_depth.
 */
#include "common/json_parse.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

_Static_assert(JSON_DEFAULT_MAX_DEPTH < JSON_PARSER_MAX_DEPTH,
	       "jansson's own depth bound is below ours");

#define JANSSON_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)
#define RAW_MARK "\\uffff" /* U+FFFF, a noncharacter: the first of a raw_bytes pair */
#define RAW_MARK_UTF8 "\xef\xbf\xbf"

/* What `consumed` bytes of the caller's text from `from` become for jansson: their first `copy`
 * bytes as they are, then `extra` (an escape, or ".0"). */
struct piece {
	size_t from, copy, consumed;
	char extra[2 * sizeof(RAW_MARK)];
	size_t extra_len;
};

struct feed {
	const unsigned char *s;
	size_t len, pos; /* the caller's text; the next byte not yet in a piece */
	bool raw_bytes, in_string;
	size_t max_depth, max_nodes, depth, nodes;
	size_t pending_string; /* start of the last string, not yet known to be a key or a value */
	size_t stop_at;        /* where a cap was passed (SIZE_MAX: not passed) */
	char why[80];          /* which cap */
	struct piece cur;      /* the piece being handed to jansson */
	size_t cur_off;        /* how much of it has been */
};

static void feed_init(struct feed *f, const char *text, size_t len, const struct json_limits *lim)
{
	size_t depth = lim && lim->max_depth ? lim->max_depth : JSON_DEFAULT_MAX_DEPTH;
	*f = (struct feed){
		.s = (const unsigned char *)text,
		.len = text ? len : 0,
		.raw_bytes = lim && lim->raw_bytes,
		.max_depth = depth < JSON_PARSER_MAX_DEPTH ? depth : JSON_PARSER_MAX_DEPTH - 1,
		.max_nodes = lim ? lim->max_nodes : 0,
		.pending_string = SIZE_MAX,
		.stop_at = SIZE_MAX,
	};
}

/* ---- the caps ------------------------------------------------------------------------------ */

static bool passed(const struct feed *f)
{
	return f->stop_at != SIZE_MAX;
}

static void count_value(struct feed *f, size_t at)
{
	if (passed(f))
		return;
	if (f->max_nodes && f->nodes >= f->max_nodes) {
		f->stop_at = at;
		snprintf(f->why, sizeof(f->why), "more than %zu values", f->max_nodes);
		return;
	}
	f->nodes++;
}

/* The string before the next byte that is not blank was a value unless that byte is ':'. */
static void settle_string(struct feed *f, unsigned char next)
{
	if (f->pending_string != SIZE_MAX && next != ':')
		count_value(f, f->pending_string);
	f->pending_string = SIZE_MAX;
}

static void open_container(struct feed *f, size_t at)
{
	count_value(f, at);
	if (passed(f))
		return;
	if (f->depth >= f->max_depth) {
		f->stop_at = at;
		snprintf(f->why, sizeof(f->why), "nested deeper than %zu levels", f->max_depth);
		return;
	}
	f->depth++;
}

/* ---- the pieces ---------------------------------------------------------------------------- */

#define PIECE_MAX 4096 /* the feed reads this far ahead of jansson at most (but for one run) */

/* The n bytes at f->pos go to jansson as they are. */
static void copy(struct feed *f, struct piece *p, size_t n)
{
	p->copy += n;
	p->consumed += n;
	f->pos += n;
}

/* The n bytes at f->pos go to jansson as text; the piece ends there. */
static void replace(struct feed *f, struct piece *p, size_t n, const char *text)
{
	p->consumed += n;
	p->extra_len = (size_t)snprintf(p->extra, sizeof(p->extra), "%s", text);
	f->pos += n;
}

/* Length of the well-formed UTF-8 character at s (n bytes left), 0 if there is none. */
static size_t utf8_len_within(const unsigned char *s, size_t n)
{
	char four[5] = { 0 };
	memcpy(four, s, n < 4 ? n : 4);
	return utf8_char_len(four);
}

static bool plain_in_string(const struct feed *f, unsigned char c)
{
	return c != '"' && c != '\\' && (c < 0x80 || !f->raw_bytes);
}

/* Inside a string: a run of plain bytes, an escape, the closing quote, or (raw_bytes) a
 * character that is not ASCII. */
static void string_step(struct feed *f, struct piece *p)
{
	const unsigned char *s = f->s + f->pos;
	size_t left = f->len - f->pos;
	if (s[0] == '"') {
		f->in_string = false;
		copy(f, p, 1);
	} else if (s[0] == '\\') {
		if (f->raw_bytes && left >= 6 && strncasecmp((const char *)s, RAW_MARK, 6) == 0)
			replace(f, p, 6, RAW_MARK RAW_MARK);
		else
			copy(f, p, left >= 2 ? 2 : 1); /* jansson checks the escape */
	} else if (!plain_in_string(f, s[0])) {
		size_t k = utf8_len_within(s, left);
		char escape[sizeof(p->extra)];
		snprintf(escape, sizeof(escape), RAW_MARK "\\u%04x", 0x100u + s[0]);
		if (k == 3 && memcmp(s, RAW_MARK_UTF8, 3) == 0)
			replace(f, p, 3, RAW_MARK RAW_MARK);
		else if (k)
			copy(f, p, k);
		else
			replace(f, p, 1, escape);
	} else {
		size_t i = 1;
		while (i < left && plain_in_string(f, s[i]))
			i++;
		copy(f, p, i);
	}
}

static bool is_blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_token_byte(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '-' || c == '+' || c == '.';
}

/* Whether the n bytes at s are an integer (-?[0-9]+) too big for int64_t. */
static bool is_integer_past_int64(const unsigned char *s, size_t n)
{
	bool neg = n && s[0] == '-';
	size_t digits = n - neg;
	if (digits < 19)
		return false;
	for (size_t i = neg; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return digits > 19 ||
	       memcmp(s + neg, neg ? "9223372036854775808" : "9223372036854775807", 19) > 0;
}

/* A bare token (a number, true, false, null, or what jansson will refuse); an integer past
 * int64_t gets ".0" after it, which ends the piece. */
static void token_step(struct feed *f, struct piece *p)
{
	size_t n = 0;
	while (f->pos + n < f->len && is_token_byte(f->s[f->pos + n]))
		n++;
	count_value(f, f->pos);
	if (passed(f))
		return;
	bool past = is_integer_past_int64(f->s + f->pos, n);
	copy(f, p, n);
	if (past)
		replace(f, p, 0, ".0");
}

/* Outside strings: blanks, a string's opening quote, a token, or one other byte. */
static void outside_step(struct feed *f, struct piece *p)
{
	unsigned char c = f->s[f->pos];
	if (is_blank(c)) {
		copy(f, p, 1);
		return;
	}
	settle_string(f, c);
	if (passed(f))
		return;
	if (c == '"') {
		f->pending_string = f->pos;
		f->in_string = true;
	} else if (is_token_byte(c)) {
		token_step(f, p);
		return;
	} else if (c == '[' || c == '{') {
		open_container(f, f->pos);
		if (passed(f))
			return;
	} else if ((c == ']' || c == '}') && f->depth) {
		f->depth--;
	}
	copy(f, p, 1);
}

/* The next piece: bytes as they are up to PIECE_MAX (or the end of a run), then maybe an extra.
 * False when there is nothing more for jansson: the end of the text, or a cap passed. */
static bool next_piece(struct feed *f, struct piece *p)
{
	*p = (struct piece){ .from = f->pos };
	size_t soft_end = f->len - f->pos > PIECE_MAX ? f->pos + PIECE_MAX : f->len;
	while (f->pos < soft_end && !p->extra_len && !passed(f)) {
		if (f->in_string)
			string_step(f, p);
		else
			outside_step(f, p);
	}
	if (f->pos >= f->len && !passed(f))
		settle_string(f, 0);
	return p->consumed > 0 || p->extra_len > 0;
}

static size_t piece_len(const struct piece *p)
{
	return p->copy + p->extra_len;
}

/* jansson's json_load_callback_t: the next bytes of the edited text. */
static size_t feed_jansson(void *buffer, size_t size, void *data)
{
	struct feed *f = data;
	char *out = buffer;
	size_t n = 0;
	while (n < size) {
		if (f->cur_off == piece_len(&f->cur)) {
			struct piece next;
			if (!next_piece(f, &next))
				break;
			f->cur = next;
			f->cur_off = 0;
		}
		const struct piece *p = &f->cur;
		if (f->cur_off < p->copy) {
			size_t k = p->copy - f->cur_off < size - n ? p->copy - f->cur_off : size - n;
			memcpy(out + n, f->s + p->from + f->cur_off, k);
			n += k;
			f->cur_off += k;
		} else {
			out[n++] = p->extra[f->cur_off++ - p->copy];
		}
	}
	return n;
}

/* Where byte pos of the text handed to jansson came from in the caller's: walks the pieces
 * again (only when there is an error to place). */
static size_t caller_position(const struct feed *like, size_t pos)
{
	struct feed f = *like;
	f.pos = 0, f.in_string = false, f.depth = f.nodes = 0;
	f.pending_string = f.stop_at = SIZE_MAX;
	struct piece p;
	for (size_t out = 0; next_piece(&f, &p); out += piece_len(&p)) {
		if (pos < out + p.copy)
			return p.from + (pos - out);
		if (pos < out + piece_len(&p))
			return p.from + p.copy;
	}
	return f.pos;
}

/* The values that start before byte `at` (what a text refused there has spent of a budget). */
static size_t values_before(const struct feed *like, size_t at)
{
	struct feed f = *like;
	f.pos = 0, f.in_string = false, f.depth = f.nodes = 0;
	f.pending_string = f.stop_at = SIZE_MAX;
	f.len = at < f.len ? at : f.len;
	struct piece p;
	while (next_piece(&f, &p))
		;
	return f.nodes;
}

/* ---- errors -------------------------------------------------------------------------------- */

/* Copies n bytes of s to out (size > 0), each byte that is not printable ASCII as '?'. */
static void printable(char *out, size_t size, const char *s, size_t n)
{
	size_t k = 0;
	for (; k < n && k + 1 < size; k++) {
		unsigned char c = (unsigned char)s[k];
		out[k] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	out[k] = '\0';
}

/* jansson's message is "what near 'token'", "what near end of file" or "what": copies the what
 * (printable) and returns the token's length (0 when it quotes none). */
static size_t jansson_what(const json_error_t *je, char *out, size_t size)
{
	const char *near = strstr(je->text, " near '");
	size_t len = strlen(je->text);
	if (!near || je->text[len - 1] != '\'') {
		printable(out, size, je->text, len);
		return 0;
	}
	printable(out, size, je->text, (size_t)(near - je->text));
	return strlen(near + 7) - 1;
}

/* Fills err with jansson's error, at the byte of the caller's text where jansson saw its
 * problem: the start of the token it quotes (jansson's position is just after it), shown as the
 * caller's bytes; for bytes that are not UTF-8, the byte itself. A NUL byte outside strings,
 * which jansson shows as "end of file", is named as the byte it is. Returns that position. */
static size_t jansson_error(const struct feed *f, const json_error_t *je, struct diag_err *err)
{
	char what[sizeof(je->text)], token[sizeof(je->text)] = "";
	size_t token_len = jansson_what(je, what, sizeof(what));
	size_t pos = je->position > 0 ? (size_t)je->position : 0;
	char *eof = strstr(what, " near end of file");
	if (token_len && token_len <= pos) {
		size_t from = caller_position(f, pos - token_len), to = caller_position(f, pos);
		printable(token, sizeof(token), (const char *)f->s + from, to - from);
		if (json_error_code(je) != json_error_invalid_utf8)
			pos -= token_len;
	} else if (eof && pos >= 1 && caller_position(f, pos - 1) < f->len &&
		   f->s[caller_position(f, pos - 1)] == '\0') {
		*eof = '\0';
		pos--;
	}
	size_t at = caller_position(f, pos);
	if (token[0])
		diag_fail(err, DIAG_EXIT_USAGE, "at byte %zu: %s near '%s'", at, what, token);
	else
		diag_fail(err, DIAG_EXIT_USAGE, "at byte %zu: %s%s", at, what,
			  eof && !eof[0] ? " near byte 0x00" : "");
	return at;
}

/* ---- jansson's tree into struct value ------------------------------------------------------ */

/* A jansson string as a C string: with raw_bytes, each U+FFFF pair turned back into what the
 * text had (one byte that is not UTF-8, or U+FFFF). */
static char *string_of(const char *s, size_t len, bool raw_bytes)
{
	char *out = xmalloc(len + 1);
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		const unsigned char *u = (const unsigned char *)s + i;
		if (raw_bytes && len - i >= 5 && memcmp(u, RAW_MARK_UTF8, 3) == 0) {
			if (len - i >= 6 && memcmp(u + 3, RAW_MARK_UTF8, 3) == 0) {
				memcpy(out + n, RAW_MARK_UTF8, 3);
				n += 3;
				i += 5;
				continue;
			}
			if ((u[3] == 0xc6 || u[3] == 0xc7) && (u[4] & 0xc0) == 0x80) {
				out[n++] = (char)(((u[3] & 0x1f) << 6 | (u[4] & 0x3f)) - 0x100);
				i += 4;
				continue;
			}
		}
		out[n++] = s[i];
	}
	out[n] = '\0';
	return out;
}

static struct value *value_of(json_t *j, bool raw_bytes);

/* Each child leaves jansson's tree once converted (null in its place), so the two trees are
 * never both whole in memory. */
static struct value *object_of(json_t *j, bool raw_bytes)
{
	struct value *obj = value_obj();
	size_t n = json_object_size(j);
	if (!n)
		return obj;
	/* Filled directly: value_obj_set looks each key up, quadratic in the keys, and jansson has
	 * refused duplicates already. */
	obj->obj.keys = xmalloc(n * sizeof(char *));
	obj->obj.vals = xmalloc(n * sizeof(struct value *));
	obj->obj.cap = n;
	for (void *it = json_object_iter(j); it; it = json_object_iter_next(j, it)) {
		const char *key = json_object_iter_key(it);
		obj->obj.keys[obj->obj.len] = string_of(key, strlen(key), raw_bytes);
		obj->obj.vals[obj->obj.len] = value_of(json_object_iter_value(it), raw_bytes);
		obj->obj.len++;
		json_object_iter_set_new(j, it, json_null());
	}
	return obj;
}

static struct value *array_of(json_t *j, bool raw_bytes)
{
	struct value *arr = value_arr();
	size_t n = json_array_size(j);
	if (!n)
		return arr;
	arr->arr.items = xmalloc(n * sizeof(struct value *));
	arr->arr.cap = n;
	for (size_t i = 0; i < n; i++) {
		arr->arr.items[arr->arr.len++] = value_of(json_array_get(j, i), raw_bytes);
		json_array_set_new(j, i, json_null());
	}
	return arr;
}

/* Recursion: no deeper than the feed let jansson go (max_depth). */
static struct value *value_of(json_t *j, bool raw_bytes)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return object_of(j, raw_bytes);
	case JSON_ARRAY: return array_of(j, raw_bytes);
	case JSON_STRING:
		return value_str_take(string_of(json_string_value(j), json_string_length(j), raw_bytes));
	case JSON_INTEGER: return value_int(json_integer_value(j));
	case JSON_REAL: return value_num(json_real_value(j));
	case JSON_TRUE: return value_bool(true);
	case JSON_FALSE: return value_bool(false);
	default: return value_null();
	}
}

/* ---- the reader ---------------------------------------------------------------------------- */

struct value *json_parse(const char *text, size_t len, const struct json_limits *lim,
			 struct diag_err *err)
{
	struct feed f;
	feed_init(&f, text, len, lim);
	if (f.len > INT_MAX) { /* jansson's error positions are ints */
		diag_fail(err, DIAG_EXIT_USAGE, "at byte 0: over the %d bytes a JSON text may have", INT_MAX);
		if (lim && lim->nodes_used)
			*lim->nodes_used = 0;
		return NULL;
	}
	json_error_t je;
	json_t *j = json_load_callback(feed_jansson, &f, JANSSON_FLAGS, &je);
	struct diag_err jansson_err = { 0 };
	size_t at = j ? SIZE_MAX : jansson_error(&f, &je, &jansson_err), used = f.nodes;
	struct value *v = NULL;
	if (j && !passed(&f)) {
		v = value_of(j, f.raw_bytes);
	} else if (!j && (!passed(&f) || at < f.stop_at)) {
		if (err)
			*err = jansson_err;
		used = values_before(&f, at);
	} else {
		diag_fail(err, DIAG_EXIT_USAGE, "at byte %zu: %s", f.stop_at, f.why);
	}
	json_decref(j);
	if (lim && lim->nodes_used)
		*lim->nodes_used = used;
	return v;
}
