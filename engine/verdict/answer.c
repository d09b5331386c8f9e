/* answer.c — what a verdict snippet must return, checked.
 *
 * Owns: the contract of a verdict (id, severity, title, evidence, next_steps, optional next =
 * {recipe, params}), of the report (sections with a string kind), of ruled_out (what was checked
 * and found fine: {id, text} items, kept in order), of metrics (the run's key figures, {name,
 * value, help}: what `diagnose watch` exports), the one-line errors naming the field that is
 * wrong, severities by name, and the order of verdicts (worst first, stable).
 * Must not: touch Lua (it sees struct value only), print, or interpret results.
 */
#include "verdict/answer.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>


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

/* One ruled-out item: { id = "cpu-throttling", text = "not throttled: 0 ms of 5.0 s" }, rebuilt
 * with exactly those two keys (any other is an error: a misspelt key would hide the text). */
static struct value *check_ruled_out_item(const struct value *it, size_t i, const char *chunk,
					  struct diag_err *err)
{
	char what[128];
	if (it->type != V_OBJ) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: ruled_out[%zu]: expected a table { id =, text = }, "
			  "got a %s", chunk, i, type_word(it));
		return NULL;
	}
	for (size_t k = 0; k < it->obj.len; k++)
		if (strcmp(it->obj.keys[k], "id") != 0 && strcmp(it->obj.keys[k], "text") != 0) {
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: ruled_out[%zu]: unknown key \"%.40s\" "
				  "(expected id, text)", chunk, i, it->obj.keys[k]);
			return NULL;
		}
	static const char *const fields[] = { "id", "text" };
	for (size_t f = 0; f < ARRAY_LEN(fields); f++) {
		const struct value *v = value_get(it, fields[f]);
		const char *why = !v ? "missing" : v->type != V_STR ? NULL : !v->s[0] ? "empty" : "";
		if (!why) {
			snprintf(what, sizeof(what), "expected a string, got a %s", type_word(v));
			why = what;
		}
		if (why[0]) {
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: ruled_out[%zu].%s: %s", chunk, i, fields[f], why);
			return NULL;
		}
	}
	const char *id = value_get_str(it, "id"), *text = value_get_str(it, "text");
	if (!name_ok(id, 64, true)) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: ruled_out[%zu].id: \"%.40s\" is not an id "
			  "([a-z0-9-]+, at most 64)", chunk, i, id);
		return NULL;
	}
	if (strchr(text, '\n')) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: ruled_out[%zu].text: must be one line (it holds a "
			  "newline)", chunk, i);
		return NULL;
	}
	struct value *out = value_obj();
	value_set_str(out, "id", id);
	value_set_str(out, "text", text);
	return out;
}

/* The verdicts, checked, rebuilt and sorted worst first; NULL and err when one is wrong. */
static struct value *check_verdicts(const char *chunk, const struct value *raw, struct diag_err *err)
{
	if (raw->type != V_ARR) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdicts: expected an array of verdicts", chunk);
		return NULL;
	}
	struct value *out = value_arr();
	for (size_t i = 0; i < raw->arr.len; i++) {
		struct value *v = check_verdict(raw->arr.items[i], i + 1, chunk, err);
		if (!v) {
			value_free(out);
			return NULL;
		}
		value_arr_push(out, v);
	}
	sort_worst_first(out);
	return out;
}

/* The report's sections as given (NULL: none), each a table with a string kind. */
static int check_report(const char *chunk, const struct value *rep, struct diag_err *err)
{
	if (rep->type != V_ARR)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: report: expected an array of sections", chunk);
	for (size_t i = 0; i < rep->arr.len; i++)
		if (!value_get_str(rep->arr.items[i], "kind"))
			return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: report[%zu].kind: missing (a section "
					 "is a table with a string kind)", chunk, i + 1);
	return 0;
}

/* An optional list of the answer (NULL raw: empty), each item checked and rebuilt by check, in
 * the snippet's order; NULL and err at the first wrong one. */
typedef struct value *item_check_fn(const struct value *it, size_t i, const char *chunk,
				    struct diag_err *err);

static struct value *check_list(const char *chunk, const char *field, const char *shape,
				const struct value *raw, item_check_fn *check, struct diag_err *err)
{
	struct value *out = value_arr();
	if (!raw)
		return out;
	if (raw->type != V_ARR) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: %s: expected an array of %s, got a %s", chunk, field,
			  shape, raw->type == V_OBJ ? "table with named fields" : type_word(raw));
		value_free(out);
		return NULL;
	}
	for (size_t i = 0; i < raw->arr.len; i++) {
		struct value *it = check(raw->arr.items[i], i + 1, chunk, err);
		if (!it) {
			value_free(out);
			return NULL;
		}
		value_arr_push(out, it);
	}
	return out;
}

/* A metric's name: [a-z][a-z0-9_]*, at most 64, ending in its unit as Prometheus names do. */
static const char *const METRIC_UNITS[] = { "_seconds", "_bytes", "_ratio", "_per_second", "_total" };

static bool metric_name_ok(const char *s)
{
	if (!s || !(s[0] >= 'a' && s[0] <= 'z') || !name_ok(s, 64, false) || strstr(s, "__") ||
	    strncmp(s, "watch_", 6) == 0) /* diagnose_watch_*: watch's own metrics */
		return false;
	size_t n = strlen(s);
	for (size_t i = 0; i < ARRAY_LEN(METRIC_UNITS); i++) {
		size_t u = strlen(METRIC_UNITS[i]);
		if (n > u && strcmp(s + n - u, METRIC_UNITS[i]) == 0)
			return true;
	}
	return false;
}

/* One metric: { name = "runq_latency_p99_seconds", value = 0.0021, help = "..." }, rebuilt with
 * exactly those keys. */
static struct value *check_metric(const struct value *it, size_t i, const char *chunk, struct diag_err *err)
{
	if (it->type != V_OBJ) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: metrics[%zu]: expected a table { name =, value =, "
			  "help = }, got a %s", chunk, i, type_word(it));
		return NULL;
	}
	for (size_t k = 0; k < it->obj.len; k++)
		if (strcmp(it->obj.keys[k], "name") && strcmp(it->obj.keys[k], "value") &&
		    strcmp(it->obj.keys[k], "help")) {
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: metrics[%zu]: unknown key \"%.40s\" (expected "
				  "name, value, help)", chunk, i, it->obj.keys[k]);
			return NULL;
		}
	const char *name = value_get_str(it, "name"), *help = value_get_str(it, "help");
	const struct value *v = value_get(it, "value");
	if (!metric_name_ok(name)) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: metrics[%zu].name: \"%.40s\" is not a metric name "
			  "([a-z][a-z0-9_]*, at most 64, ending in _seconds, _bytes, _ratio, _per_second or "
			  "_total; not watch_*)", chunk, i, name ? name : "");
		return NULL;
	}
	if (!v || (v->type != V_INT && v->type != V_NUM) || (v->type == V_NUM && !isfinite(v->n))) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: metrics[%zu].value: expected a finite number, got %s",
			  chunk, i, v ? type_word(v) : "nothing");
		return NULL;
	}
	if (!help || !help[0] || strchr(help, '\n') || strlen(help) > 300) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: metrics[%zu].help: expected one line of text (at "
			  "most 300 bytes)", chunk, i);
		return NULL;
	}
	struct value *out = value_obj();
	value_set_str(out, "name", name);
	value_set_num(out, "value", v->type == V_INT ? (double)v->i : v->n);
	value_set_str(out, "help", help);
	return out;
}

/* The metrics, checked, in the snippet's order; a name twice is an error (NULL raw: none). */
static struct value *check_metrics(const char *chunk, const struct value *raw, struct diag_err *err)
{
	struct value *out = check_list(chunk, "metrics", "{ name =, value =, help = }", raw, check_metric, err);
	for (size_t i = 0; out && i < out->arr.len; i++)
		for (size_t k = 0; k < i; k++) {
			const char *name = value_get_str(out->arr.items[i], "name");
			if (!strcmp(value_get_str(out->arr.items[k], "name"), name)) {
				diag_fail(err, DIAG_EXIT_RUNTIME, "%s: metrics[%zu].name: \"%s\" given twice",
					  chunk, i + 1, name);
				value_free(out);
				return NULL;
			}
		}
	return out;
}

int answer_check(const char *chunk, struct verdict_answer *raw, struct verdict_answer *out,
		 struct diag_err *err)
{
	*out = (struct verdict_answer){ 0 };
	struct value *verdicts = check_verdicts(chunk, raw->verdicts, err);
	struct value *ruled_out = verdicts ? check_list(chunk, "ruled_out", "{ id =, text = }", raw->ruled_out,
							 check_ruled_out_item, err) : NULL;
	struct value *metrics = ruled_out ? check_metrics(chunk, raw->metrics, err) : NULL;
	struct value *report = raw->report ? raw->report : value_arr();
	raw->report = NULL;
	if (!verdicts || !ruled_out || !metrics || check_report(chunk, report, err)) {
		value_free(verdicts);
		value_free(ruled_out);
		value_free(metrics);
		value_free(report);
		verdict_answer_free(raw);
		return -1;
	}
	verdict_answer_free(raw);
	*out = (struct verdict_answer){ verdicts, report, ruled_out, metrics };
	return 0;
}

void verdict_answer_free(struct verdict_answer *a)
{
	value_free(a->verdicts);
	value_free(a->report);
	value_free(a->ruled_out);
	value_free(a->metrics);
	*a = (struct verdict_answer){ 0 };
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
