/* recorded_verdicts.h — what the Lua verdict tests share (tests/unit/test_*_lua.c): trimmed
 * incidents, recorded reports cut down (tests/fixtures/trimmed/RECIPE/NAME.json, written by
 * `tests/fixtures/record.sh --trim`: results, run, and the verdict ids the run gave), a recipe
 * loaded as a real run loads it (its YAML thresholds, the libraries of lua/lib/) and its snippet
 * run in this process on them after the shape check (recorded_shape.h), and lookups in the
 * verdicts and ruled-out items it returns.
 * Must not: know any symptom's verdicts (the tests do).
 */
#ifndef DIAG_TEST_RECORDED_VERDICTS_H
#define DIAG_TEST_RECORDED_VERDICTS_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/json_parse.h"
#include "plan/plan.h"
#include "recorded_shape.h"
#include "recipe/source.h"
#include "verdict/verdict.h"

/* rel under $DIAG_SRCDIR (default "."); caller frees. */
static inline char *srcdir_path(const char *rel)
{
	const char *root = getenv("DIAG_SRCDIR");
	return xasprintf("%s/%s", root ? root : ".", rel);
}

/* The trimmed incident tests/fixtures/trimmed/RECIPE/NAME.json, parsed (caller frees); a failure
 * when unreadable. */
static inline struct value *trimmed_incident(const char *recipe, const char *name)
{
	char *rel = xasprintf("tests/fixtures/trimmed/%s/%s.json", recipe, name);
	char *path = srcdir_path(rel);
	size_t len;
	char *text = read_file(path, &len);
	if (!text)
		fail_msg("cannot read %s", path);
	struct diag_err err;
	struct value *v = json_parse(text, len, NULL, &err);
	if (!v)
		fail_msg("%s: %s", path, err.msg);
	free(text);
	free(path);
	free(rel);
	return v;
}

/* What a snippet answered: its verdicts and report sections, the hypotheses it ruled out
 * ({id, text} items) and its key figures ({name, value, help}), each owned by the caller. */
struct recorded_answer {
	struct value *verdicts, *report, *ruled_out, *metrics;
};

static inline void recorded_answer_free(struct recorded_answer *a)
{
	value_free(a->verdicts);
	value_free(a->report);
	value_free(a->ruled_out);
	value_free(a->metrics);
	memset(a, 0, sizeof(*a));
}

/* recipes/RECIPE.yaml as a real run loads it (bundle_load: the recipe through the recipe loader,
 * its snippet and the libraries of lua/lib/ in name order, planned without a target), its snippet
 * run on the trimmed incident's results and run, after checking the results against the recipe's
 * probe kinds, with the recipe's thresholds as the plan hands them to the Lua — overrides (NULL:
 * none) set over them. need_sections: the snippet must also return report sections. */
static inline struct recorded_answer recorded_answer(const char *recipe,
						      const struct value *incident,
						      const struct value *overrides, bool need_sections)
{
	struct bundle b;
	struct diag_err err = { 0 };
	char *yaml_rel = xasprintf("recipes/%s.yaml", recipe), *yaml_path = srcdir_path(yaml_rel);
	struct plan_args args = { .check_target = false };
	if (bundle_load(yaml_path, false, &args, &b, &err))
		fail_msg("%s", err.msg);
	struct value *th = value_copy(b.plan->thresholds);
	for (size_t i = 0; overrides && i < overrides->obj.len; i++)
		value_obj_set(th, overrides->obj.keys[i], value_copy(overrides->obj.vals[i]));
	struct verdict_input in = { .lua = &b.src.lua, .libs = b.src.libs, .n_libs = b.src.n_libs,
				    .results = value_get(incident, "results"), .thresholds = th,
				    .run = value_get(incident, "run") };
	assert_recorded_shape(yaml_rel, in.results);
	struct verdict_answer answer;
	if (verdict_run_inprocess(&in, &answer, &err))
		fail_msg("%s: %s", b.src.lua.path, err.msg);
	struct recorded_answer a = { .verdicts = answer.verdicts, .report = answer.report,
				     .ruled_out = answer.ruled_out, .metrics = answer.metrics };
	if (need_sections && a.report->arr.len == 0)
		fail_msg("%s: no report sections", b.src.lua.path);
	value_free(th);
	bundle_free(&b);
	free(yaml_path);
	free(yaml_rel);
	return a;
}

/* The verdicts only (caller frees). */
static inline struct value *recorded_verdicts(const char *recipe, const struct value *incident,
					      const struct value *overrides, bool need_sections)
{
	struct recorded_answer a = recorded_answer(recipe, incident, overrides, need_sections);
	struct value *v = a.verdicts;
	a.verdicts = NULL;
	recorded_answer_free(&a);
	return v;
}

/* A probe's results in a trimmed incident (NULL when it has none), to change in place before
 * the snippet runs on them. */
static inline struct value *incident_results(struct value *incident, const char *probe)
{
	return (struct value *)value_get(value_get(incident, "results"), probe);
}

/* obj without its member key (a probe that gave no results, a field it leaves out): the others
 * keep their order. A failure when there is no such member. */
static inline void value_obj_drop(struct value *obj, const char *key)
{
	for (size_t i = 0; i < obj->obj.len; i++) {
		if (strcmp(obj->obj.keys[i], key))
			continue;
		free(obj->obj.keys[i]);
		value_free(obj->obj.vals[i]);
		memmove(&obj->obj.keys[i], &obj->obj.keys[i + 1], (obj->obj.len - i - 1) * sizeof(char *));
		memmove(&obj->obj.vals[i], &obj->obj.vals[i + 1], (obj->obj.len - i - 1) * sizeof(struct value *));
		obj->obj.len--;
		return;
	}
	fail_msg("no member %s", key);
}

/* The ruled-out item with this id in an answer, or NULL. */
static inline const struct value *ruled_out_find(const struct recorded_answer *a, const char *id)
{
	for (size_t i = 0; a->ruled_out && a->ruled_out->type == V_ARR && i < a->ruled_out->arr.len; i++) {
		const char *got = value_get_str(a->ruled_out->arr.items[i], "id");
		if (got && !strcmp(got, id))
			return a->ruled_out->arr.items[i];
	}
	return NULL;
}

/* The i-th verdict, or a failure. */
static inline const struct value *verdict_at(const struct value *verdicts, size_t i)
{
	if (!verdicts || verdicts->type != V_ARR || i >= verdicts->arr.len)
		fail_msg("no verdict %zu", i);
	return verdicts->arr.items[i];
}

/* The first verdict with this id, or NULL. */
static inline const struct value *verdict_find(const struct value *verdicts, const char *id)
{
	for (size_t i = 0; verdicts && verdicts->type == V_ARR && i < verdicts->arr.len; i++)
		if (!strcmp(value_get_str(verdicts->arr.items[i], "id"), id))
			return verdicts->arr.items[i];
	return NULL;
}

/* Some evidence line of verdict v contains text. */
static inline bool verdict_evidence_has(const struct value *v, const char *text)
{
	const struct value *ev = value_get(v, "evidence");
	for (size_t i = 0; ev && ev->type == V_ARR && i < ev->arr.len; i++)
		if (ev->arr.items[i]->type == V_STR && strstr(ev->arr.items[i]->s, text))
			return true;
	return false;
}

/* Whether one of a verdict's next steps contains text. */
static inline bool verdict_step_has(const struct value *v, const char *text)
{
	const struct value *st = value_get(v, "next_steps");
	for (size_t i = 0; st && st->type == V_ARR && i < st->arr.len; i++)
		if (st->arr.items[i]->type == V_STR && strstr(st->arr.items[i]->s, text))
			return true;
	return false;
}

/* The trimmed incident's recorded verdict ids, in order, are what the recipe's snippet gives on
 * it. */
static inline void assert_recorded_verdicts(const char *recipe, const char *name)
{
	struct value *fx = trimmed_incident(recipe, name);
	struct value *v = recorded_verdicts(recipe, fx, NULL, false);
	const struct value *want = value_get(fx, "verdicts");
	if (v->arr.len != want->arr.len)
		fail_msg("%s: %zu verdicts, recorded %zu (first: %s)", name, v->arr.len, want->arr.len,
			 v->arr.len ? value_get_str(verdict_at(v, 0), "title") : "none");
	for (size_t i = 0; i < want->arr.len; i++)
		if (strcmp(value_get_str(verdict_at(v, i), "id"), want->arr.items[i]->s))
			fail_msg("%s: verdict %zu is %s, recorded %s", name, i,
				 value_get_str(verdict_at(v, i), "id"), want->arr.items[i]->s);
	value_free(v);
	value_free(fx);
}

#endif
