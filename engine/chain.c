/* chain.c — `diagnose RECIPE --follow`: the recipe, then the recipe its worst verdict names
 * (`next` = { recipe, params }), in the same invocation and on the same target, within the
 * first recipe's budgets.max_chain_depth and max_chain_duration_s. Contract: chain.h.
 *
 * Owns: picking each follow-up (the first verdict, worst first, of severity warning or critical
 * that carries `next`), the bounds (depth and total time, both from the chain's first recipe),
 * the chain's report — text: each stage's report under a heading, then the chain stage by stage
 * with its exit code, stop reason, worst verdict and what it followed; JSON: `chain` with each
 * stage's full report —, --output for it, and the chain's exit code (the last stage's).
 * Must not: run a stage any other way than run_recipe does (each stage is one run: its own
 * policy, approval in production, budgets, audit start and end records), follow a recipe path
 * (names only: a verdict cannot make it run a file), or hold stages' reports past its return.
 */
#include "chain.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "report.h"
#include "run.h"
#include "util.h"
#include "value.h"

/* The first verdict (worst first) of severity warning or critical that names a follow-up. */
static const struct value *pick_next(const struct value *report)
{
	const struct value *vs = value_get(report, "verdicts");
	for (size_t i = 0; vs && vs->type == V_ARR && i < vs->arr.len; i++) {
		const struct value *v = vs->arr.items[i];
		const char *sev = value_get_str(v, "severity");
		if (!sev || (strcmp(sev, "warning") != 0 && strcmp(sev, "critical") != 0))
			break;
		const struct value *n = value_get(v, "next");
		if (n && value_get_str(n, "recipe"))
			return v;
	}
	return NULL;
}

/* --param NAME=VALUE strings for the follow-up, from next.params (owned by *out_params). */
static size_t next_params(const struct value *next, char ***out)
{
	const struct value *p = value_get(next, "params");
	size_t n = p && p->type == V_OBJ ? p->obj.len : 0;
	*out = n ? xcalloc(n, sizeof(char *)) : NULL;
	for (size_t i = 0; i < n; i++)
		(*out)[i] = xasprintf("%s=%s", p->obj.keys[i],
				      p->obj.vals[i]->type == V_STR ? p->obj.vals[i]->s : "");
	return n;
}

static void free_params(char **params, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(params[i]);
	free(params);
}

/* One stage's summary in the chain (its report moved in, when it has one). */
static struct value *stage_value(unsigned index, const char *recipe, int code,
				 struct run_capture *cap, double wall_s)
{
	struct value *st = value_obj();
	value_set_int(st, "stage", index);
	value_set_str(st, "recipe", recipe);
	value_set_int(st, "exit_code", code);
	value_set_num(st, "wall_s", wall_s);
	if (cap->report) {
		const char *stop = value_get_str(cap->report, "stop_reason");
		value_set_str(st, "stop_reason", stop ? stop : "?");
		const struct value *vs = value_get(cap->report, "verdicts");
		if (vs && vs->type == V_ARR && vs->arr.len) {
			struct value *w = value_obj_set(st, "worst", value_obj());
			value_set_str(w, "id", value_get_str(vs->arr.items[0], "id"));
			value_set_str(w, "severity", value_get_str(vs->arr.items[0], "severity"));
			value_set_str(w, "title", value_get_str(vs->arr.items[0], "title"));
		}
	} else {
		value_set_str(st, "stop_reason", code == DIAG_EXIT_REFUSED ? "refused" : "failed");
	}
	if (cap->err.msg[0])
		value_set_str(st, "error", cap->err.msg);
	if (cap->report) {
		value_obj_set(st, "report", cap->report);
		cap->report = NULL;
	}
	return st;
}

/* Bytes a recipe author or the target may have put in a name, printed safely. */
static void put_safe(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : "?"); *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
}

static void write_text(const struct value *chain, FILE *out)
{
	const struct value *stages = value_get(chain, "stages");
	size_t n = stages ? stages->arr.len : 0;
	for (size_t i = 0; i < n; i++) {
		const struct value *st = stages->arr.items[i];
		fprintf(out, "%s=== stage %zu of %zu: ", i ? "\n" : "", i + 1, n);
		put_safe(out, value_get_str(st, "recipe"));
		fputs(" ===\n", out);
		const struct value *rep = value_get(st, "report");
		if (rep)
			report_write_text(rep, out);
		else {
			fputs("(no report: ", out);
			put_safe(out, value_get_str(st, "error"));
			fputs(")\n", out);
		}
	}
	fprintf(out, "\nChain (--follow: at most %.0f recipe(s) after the first, %.0f s in all): %zu stage(s), %.1f s\n",
		value_get_num(chain, "max_depth", 0), value_get_num(chain, "max_duration_s", 0), n,
		value_get_num(chain, "wall_s", 0));
	for (size_t i = 0; i < n; i++) {
		const struct value *st = stages->arr.items[i];
		fprintf(out, "  %zu. ", i + 1);
		put_safe(out, value_get_str(st, "recipe"));
		fprintf(out, "  exit %.0f, stop: ", value_get_num(st, "exit_code", 0));
		put_safe(out, value_get_str(st, "stop_reason"));
		const struct value *w = value_get(st, "worst");
		if (w) {
			fputs(", worst: ", out);
			put_safe(out, value_get_str(w, "severity"));
			fputc(' ', out);
			put_safe(out, value_get_str(w, "id"));
		}
		const struct value *f = value_get(st, "followed");
		if (f) {
			fputs(" → follows ", out);
			put_safe(out, value_get_str(f, "verdict"));
			fputs(": ", out);
			put_safe(out, value_get_str(f, "recipe"));
		}
		if (value_get_str(st, "error")) {
			fputs("\n     error: ", out);
			put_safe(out, value_get_str(st, "error"));
		}
		fputc('\n', out);
	}
	fputs("  ended: ", out);
	put_safe(out, value_get_str(chain, "ended"));
	fputc('\n', out);
}

int chain_run(const struct run_options *opts)
{
	struct diag_err err = { 0 };
	if (opts->dry_run) {
		fprintf(stderr, "diagnose: --follow runs a chain; a dry run covers one recipe (drop "
			"--follow, and dry-run the follow-up by its name)\n");
		return DIAG_EXIT_USAGE;
	}
	if (opts->folded || opts->flamegraph || opts->pprof || opts->stacks_probe) {
		fprintf(stderr, "diagnose: --folded, --flamegraph, --pprof and --stacks-probe show one "
			"recipe's stacks: run the stage you want them of without --follow\n");
		return DIAG_EXIT_USAGE;
	}
	struct outfile *json_out = NULL;
	if (opts->output && !(json_out = outfile_create("--output", opts->output, opts->force, &err))) {
		fprintf(stderr, "diagnose: %s\n", err.msg);
		return err.code ? err.code : DIAG_EXIT_USAGE;
	}
	/* Ctrl-C between two stages must not kill the chain before its report: held for the whole
	 * chain (each stage's session reads them, and stops early). */
	sigset_t mask, old;
	stop_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, &old);

	struct value *chain = value_obj();
	struct value *stages = value_obj_set(chain, "stages", value_arr());
	uint64_t t0 = mono_ns();
	uint32_t max_depth = 0, max_s = 0;
	const char *ended = NULL;
	char *ended_own = NULL;
	struct run_options so = *opts;
	so.follow = false;
	so.output = NULL;
	so.force = false;
	char **params = NULL;
	size_t n_params = 0;
	char recipe[80];
	snprintf(recipe, sizeof(recipe), "%s", opts->symptom);
	int code = DIAG_EXIT_RUNTIME;

	for (unsigned stage = 1;; stage++) {
		struct run_capture cap = { 0 };
		so.capture = &cap;
		uint64_t s0 = mono_ns();
		code = run_recipe(&so);
		if (stage == 1) {
			max_depth = cap.max_chain_depth;
			max_s = cap.max_chain_duration_s;
		}
		struct value *st = value_arr_push(stages, stage_value(stage, recipe, code, &cap,
								     (double)(mono_ns() - s0) / 1e9));
		value_free(cap.report);
		free_params(params, n_params);
		params = NULL;
		n_params = 0;
		const struct value *rep = value_get(st, "report");
		if (!rep || (code != DIAG_EXIT_OK && code != DIAG_EXIT_WARNING && code != DIAG_EXIT_CRITICAL)) {
			ended = ended_own = xasprintf("stage %u (%s) did not complete: exit %d", stage, recipe, code);
			break;
		}
		const char *stop = value_get_str(rep, "stop_reason");
		if (stop && strcmp(stop, "duration") != 0) {
			ended = ended_own = xasprintf("stage %u stopped early (%s): nothing more runs", stage, stop);
			break;
		}
		const struct value *v = pick_next(rep);
		if (!v) {
			ended = "no warning or critical verdict names a follow-up";
			break;
		}
		const struct value *next = value_get(v, "next");
		const char *nrecipe = value_get_str(next, "recipe");
		struct value *f = value_obj_set(st, "followed", value_obj());
		value_set_str(f, "verdict", value_get_str(v, "id"));
		value_set_str(f, "recipe", nrecipe);
		value_obj_set(f, "params", value_copy(value_get(next, "params")));
		if (stage > max_depth) {
			value_set_bool(f, "ran", false);
			ended = ended_own = max_depth
				? xasprintf("max_chain_depth (%" PRIu32 ") reached: %s not run", max_depth, nrecipe)
				: xasprintf("%s declares no budgets.max_chain_depth: it does not chain; %s not run",
					    opts->symptom, nrecipe);
			break;
		}
		double left = max_s - (double)(mono_ns() - t0) / 1e9;
		if (left < 1) {
			value_set_bool(f, "ran", false);
			ended = ended_own = xasprintf("max_chain_duration_s (%" PRIu32 " s) used up: %s not run",
						      max_s, nrecipe);
			break;
		}
		value_set_bool(f, "ran", true);
		snprintf(recipe, sizeof(recipe), "%s", nrecipe);
		n_params = next_params(next, &params);
		so.symptom = recipe;
		so.duration_s = 0; /* the follow-up's own duration_s */
		so.params = (const char *const *)params;
		so.n_params = n_params;
		so.max_duration_s = left;
	}
	free_params(params, n_params);
	value_set_int(chain, "max_depth", max_depth);
	value_set_int(chain, "max_duration_s", max_s);
	value_set_num(chain, "wall_s", (double)(mono_ns() - t0) / 1e9);
	value_set_str(chain, "ended", ended ? ended : "?");
	value_set_int(chain, "exit_code", code);
	free(ended_own);

	struct value *doc = value_obj();
	value_obj_set(doc, "chain", chain);
	if (opts->json)
		report_write_json(doc, stdout);
	else
		write_text(chain, stdout);
	if (json_out) {
		report_write_json(doc, outfile_stream(json_out));
		if (outfile_close(json_out, &err)) {
			fprintf(stderr, "diagnose: %s\n", err.msg);
			code = DIAG_EXIT_RUNTIME;
		}
	}
	value_free(doc);
	fflush(NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}
