/* recorded_verdicts.h — what the Lua verdict tests share (tests/unit/test_*_lua.c): fixtures
 * recorded from live reports (tests/unit/fixtures/SYMPTOM/NAME.json, made by record.py: results,
 * run, and the verdict ids the run gave), a recipe's snippet run in this process on them after the
 * shape check (recorded_shape.h), and lookups in the verdicts it returns.
 * Must not: know any symptom's verdicts (the tests do).
 */
#ifndef DIAG_TEST_RECORDED_VERDICTS_H
#define DIAG_TEST_RECORDED_VERDICTS_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "json_parse.h"
#include "recorded_shape.h"
#include "source.h"
#include "verdict.h"

/* rel under $DIAG_SRCDIR (default "."); caller frees. */
static inline char *recorded_src(const char *rel)
{
	const char *root = getenv("DIAG_SRCDIR");
	return xasprintf("%s/%s", root ? root : ".", rel);
}

/* tests/unit/fixtures/SYMPTOM/NAME.json, parsed (caller frees); a failure when unreadable. */
static inline struct value *recorded_fixture(const char *symptom, const char *name)
{
	char *rel = xasprintf("tests/unit/fixtures/%s/%s.json", symptom, name);
	char *path = recorded_src(rel);
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

/* lua/RECIPE.lua with lua/lib/diag.lua, run on the fixture's results and run with thresholds
 * (NULL: none, the snippet's defaults), after checking the results against recipes/RECIPE.yaml's
 * probe kinds; returns the verdicts (caller frees). need_sections: the snippet must also return
 * report sections. */
static inline struct value *recorded_verdicts(const char *recipe, const struct value *fixture,
					      const struct value *thresholds, bool need_sections)
{
	struct source_file lua, lib;
	struct diag_err err;
	char *lua_rel = xasprintf("lua/%s.lua", recipe), *yaml_rel = xasprintf("recipes/%s.yaml", recipe);
	char *lua_path = recorded_src(lua_rel), *lib_path = recorded_src("lua/lib/diag.lua");
	if (source_read(lua_path, false, 0, &lua, &err) || source_read(lib_path, false, 0, &lib, &err))
		fail_msg("%s", err.msg);
	struct value *own = thresholds ? NULL : value_obj();
	struct verdict_answer answer;
	struct verdict_input in = { .lua = &lua, .libs = &lib, .n_libs = 1,
				    .results = value_get(fixture, "results"),
				    .thresholds = thresholds ? thresholds : own,
				    .run = value_get(fixture, "run") };
	assert_recorded_shape(yaml_rel, in.results);
	if (verdict_run_inprocess(&in, &answer, &err))
		fail_msg("%s: %s", lua_rel, err.msg);
	if (need_sections && answer.report->arr.len == 0)
		fail_msg("%s: no report sections", lua_rel);
	struct value *verdicts = answer.verdicts;
	answer.verdicts = NULL;
	verdict_answer_free(&answer);
	value_free(own);
	source_free(&lua);
	source_free(&lib);
	free(lua_path);
	free(lib_path);
	free(lua_rel);
	free(yaml_rel);
	return verdicts;
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

/* The fixture's recorded verdict ids, in order, are what the recipe's snippet gives on it. */
static inline void assert_recorded_verdicts(const char *recipe, const char *symptom, const char *name)
{
	struct value *fx = recorded_fixture(symptom, name);
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
