/* shape.c — results against their kind's declaration (see shape.h).
 * Must not: touch the kernel, print, or know any kind.
 */
#include "plan/shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static const char *const type_names[] = {
	[RT_INTEGER] = "integer", [RT_NUMBER] = "number", [RT_STRING] = "string",
	[RT_BOOLEAN] = "boolean", [RT_ARRAY] = "array",   [RT_OBJECT] = "object",
};

const char *shape_type_name(enum result_type t)
{
	return (unsigned)t < ARRAY_LEN(type_names) ? type_names[t] : "?";
}

static const char *value_type_name(const struct value *v)
{
	switch (v->type) {
	case V_NULL: return "null";
	case V_BOOL: return "boolean";
	case V_INT: return "integer";
	case V_NUM: return "number";
	case V_STR: return "string";
	case V_ARR: return "array";
	case V_OBJ: return "object";
	}
	return "?";
}

static bool type_ok(enum result_type t, const struct value *v)
{
	switch (t) {
	case RT_INTEGER: return v->type == V_INT;
	case RT_NUMBER: return v->type == V_NUM || v->type == V_INT;
	case RT_STRING: return v->type == V_STR;
	case RT_BOOLEAN: return v->type == V_BOOL;
	case RT_ARRAY: return v->type == V_ARR;
	case RT_OBJECT: return v->type == V_OBJ;
	}
	return false;
}

const struct result_field *shape_find(const struct result_field *fields, size_t n,
				      const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(fields[i].path, path) == 0)
			return &fields[i];
	return NULL;
}

struct walk {
	const struct result_field *fields;
	size_t n;
	const char *id, *kind;
	char *msg;
	size_t len;
};

static int mismatch(const struct walk *w, const char *actual, const char *what)
{
	snprintf(w->msg, w->len, "probe %s (%s): results%s%s: %s", w->id, w->kind,
		 actual[0] && actual[0] != '[' ? "." : "", actual, what);
	return -1;
}

/* The name of a required field whose parent is the node at norm, or NULL. */
static const char *child_of(const struct result_field *f, const char *norm)
{
	size_t n = strlen(norm);
	const char *rest = f->path;
	if (n) {
		if (strncmp(f->path, norm, n) != 0 || f->path[n] != '.')
			return NULL;
		rest = f->path + n + 1;
	}
	if (strchr(rest, '.') || strchr(rest, '[') || strcmp(rest, "*") == 0)
		return NULL;
	return rest;
}

/* norm: the node's path as declared ("" for the root); actual: as it is in the tree. */
static int check_node(const struct walk *w, const struct value *v, const char *norm,
		      const char *actual)
{
	if (norm[0]) {
		const struct result_field *decl = shape_find(w->fields, w->n, norm);
		if (!type_ok(decl->type, v)) {
			char what[96];
			snprintf(what, sizeof(what), "expected %s, got %s", shape_type_name(decl->type),
				 value_type_name(v));
			return mismatch(w, actual, what);
		}
	} else if (v->type != V_OBJ) {
		char what[96];
		snprintf(what, sizeof(what), "expected object, got %s", value_type_name(v));
		return mismatch(w, actual, what);
	}
	int rc = 0;
	if (v->type == V_OBJ) {
		for (size_t i = 0; i < v->obj.len && rc == 0; i++) {
			const char *key = v->obj.keys[i];
			char *child = norm[0] ? xasprintf("%s.%s", norm, key) : xstrdup(key);
			char *where = actual[0] ? xasprintf("%s.%s", actual, key) : xstrdup(key);
			if (!shape_find(w->fields, w->n, child)) {
				free(child);
				child = norm[0] ? xasprintf("%s.*", norm) : xstrdup("*");
			}
			if (!shape_find(w->fields, w->n, child))
				rc = mismatch(w, where, "undeclared field");
			else
				rc = check_node(w, v->obj.vals[i], child, where);
			free(child);
			free(where);
		}
		for (size_t i = 0; i < w->n && rc == 0; i++) {
			const char *name = child_of(&w->fields[i], norm);
			if (name && !w->fields[i].optional && !value_get(v, name)) {
				char *where = actual[0] ? xasprintf("%s.%s", actual, name) : xstrdup(name);
				rc = mismatch(w, where, "missing");
				free(where);
			}
		}
	} else if (v->type == V_ARR && v->arr.len) {
		char *items = xasprintf("%s[]", norm);
		bool declared = shape_find(w->fields, w->n, items) != NULL;
		for (size_t i = 0; i < v->arr.len && rc == 0; i++) {
			char *where = xasprintf("%s[%zu]", actual, i);
			rc = declared ? check_node(w, v->arr.items[i], items, where)
				      : mismatch(w, where, "undeclared field");
			free(where);
		}
		free(items);
	}
	return rc;
}

int shape_check_fields(const struct result_field *fields, size_t n, const char *probe_id,
		       const char *kind_name, const struct value *results, char *msg, size_t len)
{
	struct walk w = { .fields = fields, .n = n, .id = probe_id, .kind = kind_name, .msg = msg,
			  .len = len };
	if (len)
		msg[0] = '\0';
	return check_node(&w, results, "", "");
}

int shape_check(const struct probe_kind *kind, const char *probe_id, const struct value *results,
		char *msg, size_t len)
{
	return shape_check_fields(kind->results, kind->n_results, probe_id, kind->name, results, msg,
				  len);
}
