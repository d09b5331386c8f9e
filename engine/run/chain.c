/* chain.c — `diagnose RECIPE --follow`: the recipe, then the recipe its worst verdict names
 * (declared in the recipe's `next:`, or the verdict's own `next` = { recipe, params }), in the
 * same invocation and on the same target, within the first recipe's budgets.max_chain_depth and
 * max_chain_duration_s. Contract: chain.h.
 *
 * Owns: picking each follow-up (the first verdict, worst first, of severity warning or critical
 * with one; ${verdict.KEY} parameters from the verdict), the bounds (depth and total time, both
 * from the chain's first recipe), the chain's report — text: each stage's report under a heading, then the chain stage by stage
 * with its exit code, stop reason, worst verdict and what it followed; JSON: `chain` with each
 * stage's full report —, --output for it, and the chain's exit code (the last stage's).
 * Must not: run a stage any other way than run_recipe does (each stage is one run: its own
 * policy, approval in production, budgets, audit start and end records), follow a recipe path
 * (names only: a verdict cannot make it run a file), or hold stages' reports past its return.
 * The declared chain, walked without running anything, is chain_plan.c's.
 */
#include "run/chain.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/chain_plan.h"
#include "report/outfile.h"
#include "report/report.h"
#include "run/run.h"
#include "common/util.h"
#include "common/value.h"

/* Text a recipe author or the target may have put in (names, a stage's error naming a symbol),
 * printed as the text report prints such text (report_put_text); NULL as "?". */
static void put_safe(FILE *out, const char *s)
{
	report_put_text(out, s ? s : "?");
}

/* What to run after a stage: the first verdict (worst first) of severity warning or critical
 * with a follow-up — when the stage's recipe declares `next:`, one declared for its id (and only
 * those), else its own `next`. The parameters as --param NAME=VALUE strings, ${verdict.KEY}
 * taken from the verdict's next.params. */
struct pick {
	const struct value *verdict; /* NULL: nothing to follow */
	const char *recipe;
	char **params;
	size_t n_params;
	char *why_not; /* set when the follow-up cannot be built (a missing ${verdict.KEY}) */
	const char *needs_pid; /* a declared follow-up passed over: it cannot take the chain's target */
};

/* The chain's target: none (host-wide), --pid, or a set of processes (--comm, ...). */
enum chain_target { CHAIN_HOST, CHAIN_PID, CHAIN_SET };

/* Whether the declared chain (chain_plan's rows) says recipe cannot run on the chain's target:
 * it needs --pid and the chain is host-wide, or it takes one process and the chain has a set. */
static bool cannot_take(const struct value *rows, const char *recipe, enum chain_target t)
{
	for (size_t i = 0; rows && rows->type == V_ARR && i < rows->arr.len; i++)
		if (!strcmp(value_get_str(rows->arr.items[i], "recipe"), recipe)) {
			const struct value *pid = value_get(rows->arr.items[i], "needs_pid");
			const struct value *sets = value_get(rows->arr.items[i], "takes_sets");
			if (t == CHAIN_HOST)
				return pid && pid->type == V_BOOL && pid->b;
			return t == CHAIN_SET && !(sets && sets->type == V_BOOL && sets->b);
		}
	return false;
}

/* A declared follow-up that cannot take the chain's target is passed over (the next verdict
 * may name one that can). */
static void pick_next(const struct value *report, const struct value *decl, const struct value *rows,
		      enum chain_target target, bool critical_only, struct pick *p)
{
	memset(p, 0, sizeof(*p));
	const struct value *vs = value_get(report, "verdicts");
	bool declared = decl && decl->type == V_ARR && decl->arr.len;
	for (size_t i = 0; vs && vs->type == V_ARR && i < vs->arr.len; i++) {
		const struct value *v = vs->arr.items[i];
		const char *sev = value_get_str(v, "severity"), *id = value_get_str(v, "id");
		if (!sev || ((critical_only || strcmp(sev, "warning") != 0) && strcmp(sev, "critical") != 0))
			return;
		const struct value *own = value_get(v, "next");
		const struct value *given = value_get(own, "params");
		if (!declared) {
			if (!own || !value_get_str(own, "recipe"))
				continue;
			p->verdict = v;
			p->recipe = value_get_str(own, "recipe");
			size_t n = given && given->type == V_OBJ ? given->obj.len : 0;
			p->params = n ? xcalloc(n, sizeof(char *)) : NULL;
			for (size_t k = 0; k < n; k++)
				if (given->obj.vals[k]->type == V_STR)
					p->params[p->n_params++] = xasprintf("%s=%s", given->obj.keys[k],
									     given->obj.vals[k]->s);
			return;
		}
		for (size_t d = 0; d < decl->arr.len; d++) {
			const struct value *e = decl->arr.items[d];
			if (!id || strcmp(value_get_str(e, "verdict"), id) != 0)
				continue;
			if (cannot_take(rows, value_get_str(e, "recipe"), target)) {
				if (!p->needs_pid)
					p->needs_pid = value_get_str(e, "recipe");
				break;
			}
			p->verdict = v;
			p->recipe = value_get_str(e, "recipe");
			const struct value *ps = value_get(e, "params");
			size_t n = ps ? ps->arr.len : 0;
			p->params = n ? xcalloc(n, sizeof(char *)) : NULL;
			for (size_t k = 0; k < n; k++) {
				const char *text = ps->arr.items[k]->s, *eq = strchr(text, '=');
				if (strncmp(eq + 1, "${verdict.", 10) != 0) {
					p->params[p->n_params++] = xstrdup(text);
					continue;
				}
				char key[80];
				snprintf(key, sizeof(key), "%.*s", (int)(strlen(eq + 11) - 1), eq + 11);
				const char *val = value_get_str(given, key);
				if (!val) {
					p->why_not = xasprintf("verdict %s gives no next.params.%s for %s's %.*s",
							       id, key, p->recipe, (int)(eq - text), text);
					return;
				}
				p->params[p->n_params++] = xasprintf("%.*s=%s", (int)(eq - text), text, val);
			}
			return;
		}
	}
}

static void free_params(char **params, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(params[i]);
	free(params);
}

struct value *chain_pick(const struct value *report, const struct run_capture *cap,
			 const struct run_options *opts, bool critical_only)
{
	enum chain_target ct = opts->pid > 0 ? CHAIN_PID
			       : opts->target.kind != TARGET_NONE ? CHAIN_SET : CHAIN_HOST;
	struct pick pk;
	pick_next(report, cap->next_decl, cap->chain, ct, critical_only, &pk);
	if (!pk.verdict && !pk.why_not)
		return NULL;
	struct value *f = value_obj();
	if (pk.verdict) {
		value_set_str(f, "verdict", value_get_str(pk.verdict, "id"));
		value_set_str(f, "recipe", pk.recipe);
		struct value *ps = value_obj_set(f, "params", value_arr());
		for (size_t k = 0; k < pk.n_params; k++)
			value_arr_push(ps, value_str(pk.params[k]));
	}
	if (pk.why_not)
		value_set_str(f, "why_not", pk.why_not);
	free(pk.why_not);
	free_params(pk.params, pk.n_params);
	return f;
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

/* --dry-run --follow: the first recipe's dry run (run.c prints it, with the declared chain in its
 * plan: `plan.chain` in JSON), then the chain as text. */
static int chain_dry_run(const struct run_options *opts)
{
	struct run_options so = *opts;
	struct run_capture cap = { .plan_chain = true };
	so.follow = false;
	int code = run_recipe(&so, &cap);
	if (!opts->json && (code == DIAG_EXIT_OK || code == DIAG_EXIT_REFUSED) && cap.chain)
		chain_plan_text(cap.chain, stdout);
	value_free(cap.chain);
	value_free(cap.next_decl);
	value_free(cap.report);
	return code;
}

int chain_run(const struct run_options *opts)
{
	struct diag_err err = { 0 };
	if (opts->folded || opts->flamegraph || opts->pprof || opts->stacks_probe) {
		fprintf(stderr, "diagnose: --folded, --flamegraph, --pprof and --stacks-probe show one "
			"recipe's stacks: run the stage you want them of without --follow\n");
		return DIAG_EXIT_USAGE;
	}
	if (opts->dry_run)
		return chain_dry_run(opts);
	struct outfile *json_out = NULL;
	if (opts->output && !(json_out = outfile_create("--output", opts->output, opts->force, &err))) {
		report_put_error(err.msg);
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
		struct run_capture cap = { .plan_chain = stage == 1 };
		uint64_t s0 = mono_ns();
		code = run_recipe(&so, &cap);
		if (stage == 1) {
			max_depth = cap.max_chain_depth;
			max_s = cap.max_chain_duration_s;
			if (cap.chain)
				value_obj_set(chain, "declared", cap.chain);
			cap.chain = NULL;
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
			value_free(cap.next_decl);
			break;
		}
		const char *stop = value_get_str(rep, "stop_reason");
		if (stop && strcmp(stop, "duration") != 0) {
			ended = ended_own = xasprintf("stage %u stopped early (%s): nothing more runs", stage, stop);
			value_free(cap.next_decl);
			break;
		}
		/* a stop signal after the stage's collection (its verdicts, its report) or between two
		 * stages: the stage finished, no other starts */
		int late = cap.signal ? cap.signal : stop_signals_take();
		if (late) {
			ended = ended_own = xasprintf("SIG%s arrived after stage %u's collection: nothing more "
						      "runs", sigabbrev_np(late) ? sigabbrev_np(late) : "?",
						      stage);
			value_free(cap.next_decl);
			break;
		}
		struct pick pk;
		enum chain_target ct = opts->pid > 0 ? CHAIN_PID
				       : opts->target.kind != TARGET_NONE ? CHAIN_SET : CHAIN_HOST;
		pick_next(rep, cap.next_decl, value_get(chain, "declared"), ct, false, &pk);
		if (!pk.verdict) {
			if (pk.needs_pid && ct == CHAIN_SET)
				ended = ended_own = xasprintf("the follow-up (%s) takes one process (--pid), not a "
							      "set: the chain does not run it", pk.needs_pid);
			else if (pk.needs_pid)
				ended = ended_own = xasprintf("the follow-up (%s) needs --pid: a host-wide chain "
							      "does not run it", pk.needs_pid);
			else
				ended = cap.next_decl && cap.next_decl->arr.len
					? "no warning or critical verdict has a follow-up declared in next:"
					: "no warning or critical verdict names a follow-up";
			value_free(cap.next_decl);
			break;
		}
		char nrecipe[80];
		snprintf(nrecipe, sizeof(nrecipe), "%s", pk.recipe);
		value_free(cap.next_decl); /* pk.recipe may point into it */
		struct value *f = value_obj_set(st, "followed", value_obj());
		value_set_str(f, "verdict", value_get_str(pk.verdict, "id"));
		value_set_str(f, "recipe", nrecipe);
		struct value *fp = value_obj_set(f, "params", value_arr());
		for (size_t k = 0; k < pk.n_params; k++)
			value_arr_push(fp, value_str(pk.params[k]));
		params = pk.params;
		n_params = pk.n_params;
		if (pk.why_not) {
			value_set_bool(f, "ran", false);
			ended = ended_own = pk.why_not;
			break;
		}
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
			report_put_error(err.msg);
			code = DIAG_EXIT_RUNTIME;
		}
	}
	value_free(doc);
	fflush(NULL);
	stop_signals_take(); /* the chain has ended: a signal now has nothing left to stop */
	sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}
