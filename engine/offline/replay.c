/* replay.c — Lua verdicts again on a recorded report (see replay.h).
 * Must not: load BPF, need root, change the recorded results, or open a file a report names.
 */
#include "offline/replay.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "recipe/recipe.h"
#include "recipe/recipe_find.h"
#include "report/report.h"
#include "recipe/source.h"
#include "common/util.h"
#include "common/value.h"
#include "verdict/verdict.h"

static int fail(const struct diag_err *err)
{
	report_put_error(err->msg);
	return err->code ? err->code : DIAG_EXIT_RUNTIME;
}

/* A report replay can use: one with a recipe name, from a run (a dry run recorded no results). */
static struct value *read_report(const char *path, struct diag_err *err)
{
	struct value *r = report_read(path, err);
	if (!r)
		return NULL;
	const char *stop = value_get_str(r, "stop_reason");
	if (!value_get_str(value_get(r, "recipe"), "name") || (stop && !strcmp(stop, "dry-run"))) {
		value_free(r);
		diag_fail(err, DIAG_EXIT_USAGE, "%s: %s", path, stop && !strcmp(stop, "dry-run")
			  ? "a dry run's report: it recorded no results" : "the report names no recipe");
		return NULL;
	}
	return r;
}

/* NAME=VALUE over thresholds, NAME one of the recipe's; VALUE a number where it reads as one. */
static int override_thresholds(struct value *t, const struct recipe *r, const char *const *kv,
			       size_t n, struct diag_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(kv[i], '=');
		if (!eq || eq == kv[i])
			return diag_fail(err, DIAG_EXIT_USAGE, "--threshold %s: expected NAME=VALUE", kv[i]);
		char name[128];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv[i]), kv[i]);
		bool known = false;
		for (unsigned k = 0; k < r->n_thresholds; k++)
			known |= !strcmp(r->thresholds[k].key, name);
		if (!known) {
			char names[1024] = "";
			for (unsigned k = 0; k < r->n_thresholds; k++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
					 k ? ", " : "", r->thresholds[k].key);
			return diag_fail(err, DIAG_EXIT_USAGE, "--threshold %s: recipe %s has no threshold "
					 "%s (it has: %s)", kv[i], r->name, name, names[0] ? names : "none");
		}
		double d;
		if (decimal_number(eq + 1, true, &d)) /* a number as recipes write them, else text */
			value_set_num(t, name, d);
		else
			value_set_str(t, name, eq + 1);
	}
	return 0;
}

/* What the Lua saw live: the report's "run", else rebuilt from its fields (older reports). */
static struct value *run_of(const struct value *report)
{
	const struct value *run = value_get(report, "run");
	if (run && run->type == V_OBJ)
		return value_copy(run);
	struct value *r = value_obj();
	value_set_str(r, "recipe", value_get_str(value_get(report, "recipe"), "name"));
	value_set_num(r, "duration_s", value_get_num(report, "duration_s", 0));
	const char *stop = value_get_str(report, "stop_reason");
	value_set_str(r, "stop_reason", stop ? stop : "duration");
	const struct value *t = value_get(report, "target");
	if (t && t->type == V_OBJ)
		value_obj_set(r, "target", value_copy(t));
	return r;
}

int replay_report(const struct replay_options *o, struct value **out, struct diag_err *err)
{
	struct bundle b = { 0 };
	struct source_file lua = { 0 };
	struct value *report = NULL, *thresholds = NULL, *run = NULL;
	struct verdict_answer answer = { 0 };
	int rc = -1;

	*out = NULL;
	if (!(report = read_report(o->report_path, err)))
		goto out;
	/* A report is data: it names a recipe, looked up as a name on the command line is (--recipes,
	 * the search path); a path in it is never opened. */
	const char *name = value_get_str(value_get(report, "recipe"), "name");
	if (!recipe_name_ok(name)) {
		diag_fail(err, DIAG_EXIT_USAGE, "%s: recipe.name \"%.64s\" is not a recipe name "
			  "([a-z0-9-]+): a report names its recipe, it does not give a file to run",
			  o->report_path, name);
		goto out;
	}
	char path[PATH_MAX];
	struct plan_args args = { .check_target = false };
	if (recipe_resolve(name, o->recipes_dir, path, sizeof(path), err) ||
	    bundle_load(path, false, &args, &b, err)) {
		diag_wrap(err, "%s: recipe %s", o->report_path, name);
		goto out;
	}
	if (o->lua_path && source_read(o->lua_path, false, 0, &lua, err))
		goto out;
	/* The recipe's thresholds, with the values the report recorded over them: a threshold the
	 * recipe gained after the report was written takes the recipe's value (the Lua has no
	 * defaults of its own). */
	thresholds = value_copy(b.plan->thresholds);
	const struct value *recorded = value_get(report, "thresholds");
	for (size_t i = 0; recorded && recorded->type == V_OBJ && i < recorded->obj.len; i++)
		value_obj_set(thresholds, recorded->obj.keys[i], value_copy(recorded->obj.vals[i]));
	if (override_thresholds(thresholds, b.recipe, o->thresholds, o->n_thresholds, err))
		goto out;
	run = run_of(report);

	struct verdict_input vin = { .lua = o->lua_path ? &lua : &b.src.lua, .libs = b.src.libs,
				     .n_libs = b.src.n_libs, .results = value_get(report, "results"),
				     .thresholds = thresholds, .run = run };
	if (verdict_run(&vin, &answer, err))
		goto out;
	/* A report recorded before ruled_out existed gets it now, as a live run would. */
	value_obj_set(report, "verdicts", answer.verdicts);
	value_obj_set(report, "ruled_out", answer.ruled_out);
	value_obj_set(report, "metrics", answer.metrics);
	value_obj_set(report, "sections", answer.report);
	answer = (struct verdict_answer){ 0 }; /* owned by the report now */
	value_obj_set(report, "thresholds", thresholds);
	thresholds = NULL;
	struct value *rp = value_obj_set(report, "replayed", value_obj());
	value_set_str(rp, "from", o->report_path);
	value_set_str(rp, "lua", vin.lua->path);
	value_set_str(rp, "recipe", path);
	*out = report;
	report = NULL;
	rc = 0;
out:
	value_free(report);
	value_free(thresholds);
	value_free(run);
	verdict_answer_free(&answer);
	source_free(&lua);
	bundle_free(&b);
	return rc;
}

int replay_exit_code(const struct value *verdicts)
{
	switch (verdicts_worst(verdicts)) {
	case SEV_CRITICAL: return DIAG_EXIT_CRITICAL;
	case SEV_WARNING: return DIAG_EXIT_WARNING;
	default: return DIAG_EXIT_OK;
	}
}

int replay_run(const struct replay_options *o)
{
	struct diag_err err = { 0 };
	struct value *report = NULL;
	int code;
	if (replay_report(o, &report, &err)) {
		code = fail(&err);
	} else {
		if (o->json)
			report_write_json(report, stdout);
		else
			report_write_text(report, stdout);
		code = replay_exit_code(value_get(report, "verdicts"));
	}
	value_free(report);
	fflush(NULL);
	return code;
}
