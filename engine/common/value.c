/* value.c — the result tree and its JSON writer. See value.h.
 * Must not: interpret keys, or print anywhere but the FILE it is given.
 */
#include "common/value.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static struct value *value_new(enum value_type type)
{
	struct value *v = xcalloc(1, sizeof(*v));
	v->type = type;
	return v;
}

struct value *value_null(void) { return value_new(V_NULL); }

struct value *value_bool(bool b)
{
	struct value *v = value_new(V_BOOL);
	v->b = b;
	return v;
}

struct value *value_int(int64_t i)
{
	struct value *v = value_new(V_INT);
	v->i = i;
	return v;
}

struct value *value_num(double n)
{
	struct value *v = value_new(V_NUM);
	v->n = n;
	return v;
}

struct value *value_str(const char *s)
{
	struct value *v = value_new(V_STR);
	v->s = xstrdup(s ? s : "");
	return v;
}

struct value *value_strn(const char *s, size_t len)
{
	struct value *v = value_new(V_STR);
	v->s = xmalloc(len + 1);
	memcpy(v->s, s, len);
	v->s[len] = '\0';
	return v;
}

struct value *value_str_take(char *s)
{
	struct value *v = value_new(V_STR);
	v->s = s;
	return v;
}

struct value *value_arr(void) { return value_new(V_ARR); }
struct value *value_obj(void) { return value_new(V_OBJ); }

void value_free(struct value *v)
{
	if (!v)
		return;
	switch (v->type) {
	case V_STR:
		free(v->s);
		break;
	case V_ARR:
		for (size_t i = 0; i < v->arr.len; i++)
			value_free(v->arr.items[i]);
		free(v->arr.items);
		break;
	case V_OBJ:
		for (size_t i = 0; i < v->obj.len; i++) {
			free(v->obj.keys[i]);
			value_free(v->obj.vals[i]);
		}
		free(v->obj.keys);
		free(v->obj.vals);
		break;
	default:
		break;
	}
	free(v);
}

struct value *value_copy(const struct value *v)
{
	if (!v)
		return NULL;
	switch (v->type) {
	case V_NULL: return value_null();
	case V_BOOL: return value_bool(v->b);
	case V_INT: return value_int(v->i);
	case V_NUM: return value_num(v->n);
	case V_STR: return value_str(v->s);
	case V_ARR: {
		struct value *c = value_arr();
		for (size_t i = 0; i < v->arr.len; i++)
			value_arr_push(c, value_copy(v->arr.items[i]));
		return c;
	}
	case V_OBJ: {
		struct value *c = value_obj();
		for (size_t i = 0; i < v->obj.len; i++)
			value_obj_set(c, v->obj.keys[i], value_copy(v->obj.vals[i]));
		return c;
	}
	}
	return value_null();
}

struct value *value_obj_set(struct value *obj, const char *key, struct value *child)
{
	for (size_t i = 0; i < obj->obj.len; i++) {
		if (strcmp(obj->obj.keys[i], key) == 0) {
			value_free(obj->obj.vals[i]);
			obj->obj.vals[i] = child;
			return child;
		}
	}
	if (obj->obj.len == obj->obj.cap) {
		obj->obj.cap = obj->obj.cap ? obj->obj.cap * 2 : 8;
		obj->obj.keys = xrealloc(obj->obj.keys, obj->obj.cap * sizeof(char *));
		obj->obj.vals = xrealloc(obj->obj.vals, obj->obj.cap * sizeof(struct value *));
	}
	obj->obj.keys[obj->obj.len] = xstrdup(key);
	obj->obj.vals[obj->obj.len] = child;
	obj->obj.len++;
	return child;
}

struct value *value_arr_push(struct value *arr, struct value *child)
{
	if (arr->arr.len == arr->arr.cap) {
		arr->arr.cap = arr->arr.cap ? arr->arr.cap * 2 : 8;
		arr->arr.items = xrealloc(arr->arr.items, arr->arr.cap * sizeof(struct value *));
	}
	arr->arr.items[arr->arr.len++] = child;
	return child;
}

void value_set_int(struct value *obj, const char *key, int64_t i) { value_obj_set(obj, key, value_int(i)); }
void value_set_num(struct value *obj, const char *key, double n) { value_obj_set(obj, key, value_num(n)); }
void value_set_str(struct value *obj, const char *key, const char *s) { value_obj_set(obj, key, value_str(s)); }
void value_set_bool(struct value *obj, const char *key, bool b) { value_obj_set(obj, key, value_bool(b)); }

const struct value *value_get(const struct value *obj, const char *key)
{
	if (!obj || obj->type != V_OBJ)
		return NULL;
	for (size_t i = 0; i < obj->obj.len; i++)
		if (strcmp(obj->obj.keys[i], key) == 0)
			return obj->obj.vals[i];
	return NULL;
}

const char *value_get_str(const struct value *obj, const char *key)
{
	const struct value *v = value_get(obj, key);
	return v && v->type == V_STR ? v->s : NULL;
}

double value_get_num(const struct value *obj, const char *key, double dflt)
{
	const struct value *v = value_get(obj, key);
	if (!v)
		return dflt;
	if (v->type == V_INT)
		return (double)v->i;
	if (v->type == V_NUM)
		return v->n;
	return dflt;
}

/* raw: bytes that are not UTF-8 go out as they are (json_write_bytes), else as U+FFFD. */
static void write_string(FILE *out, const char *s, bool raw)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_char_len((const char *)p);
		if (n == 0) {
			if (raw && *p >= 0x80)
				fputc(*p, out);
			else
				fputs("\\ufffd", out); /* not UTF-8: one replacement character per byte */
			p++;
			continue;
		}
		if (n > 1 && utf8_char_unsafe((const char *)p, n)) { /* C1, bidi, U+2028/9, U+FFFE/F */
			fprintf(out, "\\u%04x", (unsigned)utf8_code_point((const char *)p, n));
		} else if (n > 1) {
			fwrite(p, 1, n, out);
		} else {
			switch (*p) {
			case '"': fputs("\\\"", out); break;
			case '\\': fputs("\\\\", out); break;
			case '\n': fputs("\\n", out); break;
			case '\r': fputs("\\r", out); break;
			case '\t': fputs("\\t", out); break;
			default:
				if (*p < 0x20 || *p == 0x7f)
					fprintf(out, "\\u%04x", *p);
				else
					fputc(*p, out);
			}
		}
		p += n;
	}
	fputc('"', out);
}

void json_write_string(FILE *out, const char *s)
{
	write_string(out, s, false);
}

void json_write_bytes(FILE *out, const char *s)
{
	write_string(out, s, true);
}

static void newline(FILE *out, int indent, int depth)
{
	if (indent < 0)
		return;
	fputc('\n', out);
	for (int i = 0; i < indent * depth; i++)
		fputc(' ', out);
}

static void write_json(const struct value *v, FILE *out, int indent, int depth)
{
	switch (v->type) {
	case V_NULL: fputs("null", out); break;
	case V_BOOL: fputs(v->b ? "true" : "false", out); break;
	case V_INT: fprintf(out, "%lld", (long long)v->i); break;
	case V_NUM:
		if (!isfinite(v->n))
			fputs("null", out);
		else if (fabs(v->n) < 1e15 && v->n == (double)(int64_t)v->n) /* range first: the cast is UB past 2^63 */
			fprintf(out, "%lld", (long long)v->n);
		else
			fprintf(out, "%.6g", v->n);
		break;
	case V_STR: json_write_string(out, v->s); break;
	case V_ARR:
		if (v->arr.len == 0) {
			fputs("[]", out);
			break;
		}
		fputc('[', out);
		for (size_t i = 0; i < v->arr.len; i++) {
			if (i)
				fputc(',', out);
			newline(out, indent, depth + 1);
			write_json(v->arr.items[i], out, indent, depth + 1);
		}
		newline(out, indent, depth);
		fputc(']', out);
		break;
	case V_OBJ:
		if (v->obj.len == 0) {
			fputs("{}", out);
			break;
		}
		fputc('{', out);
		for (size_t i = 0; i < v->obj.len; i++) {
			if (i)
				fputc(',', out);
			newline(out, indent, depth + 1);
			json_write_string(out, v->obj.keys[i]);
			fputs(indent < 0 ? ":" : ": ", out);
			write_json(v->obj.vals[i], out, indent, depth + 1);
		}
		newline(out, indent, depth);
		fputc('}', out);
		break;
	}
}

void value_write_json(const struct value *v, FILE *out, int indent)
{
	write_json(v, out, indent, 0);
}
