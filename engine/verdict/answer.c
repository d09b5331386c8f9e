/* answer.c — what a verdict snippet must return, checked.
 *
 * Owns: the contract of a verdict (id, severity, title, evidence, next_steps, optional next =
 * {recipe, params}), of the report (sections with a string kind), the one-line errors naming the
 * field that is wrong, severities by name, and the order of verdicts (worst first, stable).
 * Must not: touch Lua (it sees struct value only), print, or interpret results.
 */
#include "answer.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "verdict.h"

/* ---- checking the answer ---------------------------------------------------------------- */

static const char *type_word(const struct value *v)
{
	switch (v->type) {
	case V_NULL: return "nil";
	case V_BOOL: return "boolean";
	case V_INT:
	case V_NUM: return "number";
	case V_STR: return "string";
	default: return "table";
	}
}

static int field_fail(struct diag_err *err, const char *chunk, size_t i, const char *field,
		      const char *what)
{
	return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts[%zu].%s: %s", chunk, i, field, what);
}

static int check_string(const struct value *vd, const char *field, size_t i, const char *chunk,
			struct diag_err *err)
{
	const struct value *v = value_get(vd, field);
	char what[64];
	if (!v)
		return field_fail(err, chunk, i, field, "missing");
	if (v->type != V_STR) {
		snprintf(what, sizeof(what), "expected a string, got a %s", type_word(v));
		return field_fail(err, chunk, i, field, what);
	}
	if (!v->s[0])
		return field_fail(err, chunk, i, field, "empty");
	return 0;
}

static int check_strings(const struct value *vd, const char *field, size_t i, const char *chunk,
			 struct diag_err *err)
{
	const struct value *v = value_get(vd, field);
	char what[96];
	if (!v)
		return field_fail(err, chunk, i, field, "missing (use {} for none)");
	if (v->type != V_ARR) {
		snprintf(what, sizeof(what), "expected an array of strings, got a %s", type_word(v));
		return field_fail(err, chunk, i, field, what);
	}
	for (size_t k = 0; k < v->arr.len; k++) {
		if (v->arr.items[k]->type != V_STR) {
			snprintf(what, sizeof(what), "item %zu: expected a string, got a %s", k + 1,
				 type_word(v->arr.items[k]));
			return field_fail(err, chunk, i, field, what);
		}
	}
	return 0;
}

static bool name_ok(const char *s, size_t max, bool dash)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (size_t k = 0; k < n; k++)
		if (!((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= '0' && s[k] <= '9') ||
		      s[k] == (dash ? '-' : '_')))
			return false;
	return true;
}

/* The optional follow-up a verdict names: next = { recipe = "latency", params = { k = "v" } }
 * (recipe a name, params the recipe's own parameters as strings or numbers; an empty table for
 * none). Rebuilt with params as strings; chain.c runs it under --follow. */
static struct value *check_next(const struct value *n, size_t i, const char *chunk,
				struct diag_err *err)
{
	char what[160];
	if (n->type != V_OBJ) {
		snprintf(what, sizeof(what), "expected a table { recipe =, params = }, got a %s", type_word(n));
		field_fail(err, chunk, i, "next", what);
		return NULL;
	}
	for (size_t k = 0; k < n->obj.len; k++)
		if (strcmp(n->obj.keys[k], "recipe") != 0 && strcmp(n->obj.keys[k], "params") != 0) {
			snprintf(what, sizeof(what), "unknown key \"%.40s\" (expected recipe, params)",
				 n->obj.keys[k]);
			field_fail(err, chunk, i, "next", what);
			return NULL;
		}
	const char *recipe = value_get_str(n, "recipe");
	if (!recipe || !name_ok(recipe, 64, true)) {
		field_fail(err, chunk, i, "next.recipe", "expected a recipe name ([a-z0-9-]+, at most 64)");
		return NULL;
	}
	struct value *out = value_obj();
	value_set_str(out, "recipe", recipe);
	struct value *params = value_obj_set(out, "params", value_obj());
	const struct value *p = value_get(n, "params");
	if (p && !(p->type == V_ARR && p->arr.len == 0)) {
		if (p->type != V_OBJ) {
			snprintf(what, sizeof(what), "expected a table of NAME = value, got a %s", type_word(p));
			field_fail(err, chunk, i, "next.params", what);
			value_free(out);
			return NULL;
		}
		for (size_t k = 0; k < p->obj.len; k++) {
			const char *key = p->obj.keys[k];
			const struct value *pv = p->obj.vals[k];
			if (!name_ok(key, 64, false)) {
				field_fail(err, chunk, i, "next.params", "a key is not a parameter name ([a-z0-9_]+)");
				value_free(out);
				return NULL;
			}
			if (pv->type == V_STR && pv->s[0])
				value_set_str(params, key, pv->s);
			else if (pv->type == V_INT)
				value_obj_set(params, key, value_str_take(xasprintf("%lld", (long long)pv->i)));
			else if (pv->type == V_NUM && pv->n >= -9e15 && pv->n <= 9e15 &&
				 pv->n == (double)(long long)pv->n)
				value_obj_set(params, key, value_str_take(xasprintf("%lld", (long long)pv->n)));
			else {
				snprintf(what, sizeof(what), "%.64s: expected a non-empty string or an integer", key);
				field_fail(err, chunk, i, "next.params", what);
				value_free(out);
				return NULL;
			}
		}
	}
	return out;
}

/* One verdict, checked and rebuilt with its keys in contract order. */
static struct value *check_verdict(const struct value *vd, size_t i, const char *chunk,
				   struct diag_err *err)
{
	if (vd->type != V_OBJ) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts[%zu]: expected a table with id, "
			  "severity, title, evidence, next_steps; got a %s", chunk, i, type_word(vd));
		return NULL;
	}
	if (check_string(vd, "id", i, chunk, err) || check_string(vd, "severity", i, chunk, err))
		return NULL;
	int ok;
	severity_parse(value_get_str(vd, "severity"), &ok);
	if (!ok) {
		char what[96];
		snprintf(what, sizeof(what), "\"%.40s\" is not one of ok|info|warning|critical",
			 value_get_str(vd, "severity"));
		field_fail(err, chunk, i, "severity", what);
		return NULL;
	}
	if (check_string(vd, "title", i, chunk, err) || check_strings(vd, "evidence", i, chunk, err) ||
	    check_strings(vd, "next_steps", i, chunk, err))
		return NULL;

	static const char *const keys[] = { "id", "severity", "title", "evidence", "next_steps" };
	struct value *out = value_obj();
	for (size_t k = 0; k < ARRAY_LEN(keys); k++)
		value_obj_set(out, keys[k], value_copy(value_get(vd, keys[k])));
	const struct value *next = value_get(vd, "next");
	if (next && next->type != V_NULL) {
		struct value *n = check_next(next, i, chunk, err);
		if (!n) {
			value_free(out);
			return NULL;
		}
		value_obj_set(out, "next", n);
	}
	return out;
}

static enum severity verdict_sev(const struct value *v)
{
	int ok;
	enum severity s = severity_parse(value_get_str(v, "severity"), &ok);
	return ok ? s : SEV_OK;
}

/* Stable insertion sort, worst first: a snippet's order is kept within one severity. */
static void sort_worst_first(struct value *arr)
{
	for (size_t i = 1; i < arr->arr.len; i++) {
		struct value *v = arr->arr.items[i];
		enum severity s = verdict_sev(v);
		size_t j = i;
		for (; j > 0 && verdict_sev(arr->arr.items[j - 1]) < s; j--)
			arr->arr.items[j] = arr->arr.items[j - 1];
		arr->arr.items[j] = v;
	}
}

/* Checks the answer as converted (takes ownership of raw verdicts and report; report NULL when
 * the snippet gave none) and builds the final one. Run by the child on what Lua returned, and
 * again by the parent on what the child sent. */
int answer_check(const char *chunk, struct value *raw, struct value *rep,
		 struct value **verdicts, struct value **report, struct diag_err *err)
{
	struct value *out = NULL;
	if (raw->type != V_ARR) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts: expected an array of verdicts", chunk);
		goto fail;
	}
	out = value_arr();
	for (size_t i = 0; i < raw->arr.len; i++) {
		struct value *v = check_verdict(raw->arr.items[i], i + 1, chunk, err);
		if (!v)
			goto fail;
		value_arr_push(out, v);
	}
	sort_worst_first(out);

	if (!rep)
		rep = value_arr();
	if (rep->type != V_ARR) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: report: expected an array of sections", chunk);
		goto fail;
	}
	for (size_t i = 0; i < rep->arr.len; i++) {
		if (!value_get_str(rep->arr.items[i], "kind")) {
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: report[%zu].kind: missing (a section is a "
				  "table with a string kind)", chunk, i + 1);
			goto fail;
		}
	}
	value_free(raw);
	*verdicts = out;
	*report = rep;
	return 0;
fail:
	value_free(raw);
	value_free(out);
	value_free(rep);
	return -1;
}


static const char *const sev_names[] = { "ok", "info", "warning", "critical" };

enum severity severity_parse(const char *s, int *ok)
{
	for (size_t i = 0; s && i < ARRAY_LEN(sev_names); i++) {
		if (strcmp(s, sev_names[i]) == 0) {
			if (ok)
				*ok = 1;
			return (enum severity)i;
		}
	}
	if (ok)
		*ok = 0;
	return SEV_OK;
}

const char *severity_name(enum severity s)
{
	return (unsigned)s < ARRAY_LEN(sev_names) ? sev_names[s] : "?";
}

enum severity verdicts_worst(const struct value *verdicts)
{
	enum severity worst = SEV_OK;
	if (!verdicts || verdicts->type != V_ARR)
		return worst;
	for (size_t i = 0; i < verdicts->arr.len; i++)
		if (verdict_sev(verdicts->arr.items[i]) > worst)
			worst = verdict_sev(verdicts->arr.items[i]);
	return worst;
}
