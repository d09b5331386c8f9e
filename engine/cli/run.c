/* run.c — one run of a recipe, stage by stage: production policy and trust root → recipe, Lua
 * and libraries read once → plan → approval → start record → pre-flight → session → verdict →
 * report and output files → end record. Contract: run.h.
 *
 * Owns: the order of the stages, what each hands the next, signals held for the whole run, the
 * audit records, the exit code of a run, and what a run prints (the report on stdout, one-line
 * errors and warnings on stderr).
 * Must not: parse the command line (main.c), or know what a probe, a recipe field or a verdict
 * means: each stage's module does.
 */
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "approval.h"
#include "audit.h"
#include "chain.h"
#include "flamegraph.h"
#include "kernel.h"
#include "outfile.h"
#include "plan.h"
#include "pprof.h"
#include "preflight.h"
#include "recipe.h"
#include "recipe_find.h"
#include "report.h"
#include "session.h"
#include "sha256.h"
#include "source.h"
#include "verdict.h"
#include "watchdog.h"

static int fail(const struct diag_err *err)
{
	report_put_error(err->msg);
	return err->code ? err->code : DIAG_EXIT_RUNTIME;
}

static struct value *run_info(const struct plan *plan, const struct session_out *s)
{
	struct value *run = value_obj();
	value_set_str(run, "recipe", plan->recipe->name);
	value_set_num(run, "duration_s", s->duration_s);
	value_set_str(run, "stop_reason", stop_reason_name(s->stop_reason));
	value_set_int(run, "ncpus", plan->ncpus);
	struct value *t = plan_target_value(plan);
	if (t)
		value_obj_set(run, "target", t);
	return run;
}

/* Dry run: the verifier sees every program, and (measure) the pre-flight runs as a real run's
 * would, with the probes' programs counting only; nothing collects. */
static int dry_run(const struct plan *plan, bool measure, struct value **summary,
		   struct diag_err *pf_err, struct diag_err *err)
{
	struct value *loaded, *preflight;
	if (session_dry_run(plan, measure ? preflight_window_ms(plan) : 0, &loaded, &preflight, pf_err, err))
		return -1;
	*summary = plan_to_value(plan, loaded);
	value_free(loaded);
	if (!measure)
		value_set_str(*summary, "preflight", "not measured: in production a dry run of a recipe "
			      "that is not approved attaches nothing");
	else if (preflight)
		value_obj_set(*summary, "preflight", preflight);
	if (pf_err->msg[0])
		value_set_str(*summary, pf_err->code == DIAG_EXIT_REFUSED ? "refused" : "preflight_error",
			      pf_err->msg);
	return 0;
}

/* The files asked for, created before anything loads: "exists" is said up front, not after the
 * collection. */
struct outputs {
	struct outfile *json, *folded, *svg, *pprof;
};

static void discard_outputs(struct outputs *o);

static int open_outputs(const struct run_options *c, struct outputs *o, struct diag_err *err)
{
	memset(o, 0, sizeof(*o));
	if ((c->output && !(o->json = outfile_create("--output", c->output, c->force, err))) ||
	    (c->folded && !(o->folded = outfile_create("--folded", c->folded, c->force, err))) ||
	    (c->flamegraph && !(o->svg = outfile_create("--flamegraph", c->flamegraph, c->force, err))) ||
	    (c->pprof && !(o->pprof = outfile_create("--pprof", c->pprof, c->force, err)))) {
		discard_outputs(o);
		return -1;
	}
	return 0;
}

/* --stacks-probe names a probe of the recipe whose kind records stacks: said before anything
 * loads, not discovered as an empty file after the collection. */
static int check_stacks_probe(const struct run_options *c, const struct plan *plan,
			      struct diag_err *err)
{
	if (!c->stacks_probe)
		return 0;
	for (unsigned i = 0; i < plan->n_probes; i++) {
		const struct plan_probe *pp = &plan->probes[i];
		if (strcmp(pp->rp->id, c->stacks_probe) != 0)
			continue;
		if (!pp->kind->stack_unit)
			return diag_fail(err, DIAG_EXIT_USAGE,
					 "--stacks-probe %s: probe %s (%s) records no stacks", c->stacks_probe,
					 c->stacks_probe, pp->kind->name);
		return 0;
	}
	return diag_fail(err, DIAG_EXIT_USAGE, "--stacks-probe %s: recipe %s has no probe %s",
			 c->stacks_probe, plan->recipe->name, c->stacks_probe);
}

static void discard_outputs(struct outputs *o)
{
	outfile_discard(o->json);
	outfile_discard(o->folded);
	outfile_discard(o->svg);
	outfile_discard(o->pprof);
	memset(o, 0, sizeof(*o));
}

/* Completes one output file; says why it could not. */
static int close_output(struct outfile **of)
{
	struct diag_err err = { 0 };
	int rc = outfile_close(*of, &err);
	*of = NULL;
	if (rc)
		report_put_error(err.msg);
	return rc;
}

static int write_outputs(const struct run_options *c, struct outputs *o, const struct value *report,
			 const struct value *results)
{
	struct diag_err err = { 0 };
	int rc = 0;
	if (c->json)
		report_write_json(report, stdout);
	else
		report_write_text(report, stdout);
	/* The stack outputs show one probe's stacks, one unit; no stacks still leaves each file asked
	 * for (folded: empty; SVG and pprof: valid, saying so / without samples). */
	const char *probe_id = NULL;
	const struct value *probe_res = report_stack_probe(results, c->stacks_probe, &probe_id);
	if (!probe_res && (o->folded || o->svg || o->pprof)) {
		if (c->stacks_probe)
			fprintf(stderr, "diagnose: warning: --stacks-probe %s: probe %s has no stacks in its "
				"results (see the report's notes); the stack outputs are empty\n",
				c->stacks_probe, c->stacks_probe);
		else
			fprintf(stderr, "diagnose: warning: no probe's results carry stacks; the stack "
				"outputs are empty\n");
	}
	if (o->folded) {
		report_write_folded(results, c->stacks_probe, outfile_stream(o->folded));
		rc |= close_output(&o->folded);
	}
	const char *recipe = value_get_str(value_get(report, "recipe"), "name");
	char *title = probe_id ? xasprintf("%s, probe %s", recipe ? recipe : "?", probe_id)
			       : xstrdup(recipe ? recipe : "");
	if (o->svg) {
		flamegraph_write(probe_res, title, outfile_stream(o->svg));
		rc |= close_output(&o->svg);
	}
	if (o->pprof) {
		char *comment = xasprintf("diagnose %s", title);
		struct pprof_info info = { .comment = comment,
					   .started_at = value_get_str(report, "started_at"),
					   .duration_s = value_get_num(report, "duration_s", 0),
					   .user_file = value_get_str(value_get(report, "target"), "exe") };
		if (pprof_write(probe_res, &info, outfile_stream(o->pprof), &err) < 0) {
			fprintf(stderr, "diagnose: --pprof %s: %s\n", c->pprof, err.msg);
			outfile_discard(o->pprof);
			o->pprof = NULL;
			rc = -1;
		} else {
			rc |= close_output(&o->pprof);
		}
		free(comment);
	}
	free(title);
	if (o->json) {
		report_write_json(report, outfile_stream(o->json));
		if (outfile_close(o->json, &err)) {
			report_put_error(err.msg);
			rc = -1;
		}
		o->json = NULL;
	}
	return rc;
}

/* Production's trust root: the policy's recipes_dir, else the installed recipes. --recipes may
 * only name the same directory; $DIAGNOSE_RECIPES and ./recipes are not searched. The directory
 * and every one above it must be root's alone. */
static int production_recipe_path(const struct run_options *c, const struct policy *pol, char *out,
				  size_t len, struct diag_err *err)
{
	char installed[PATH_MAX], real[PATH_MAX], asked[PATH_MAX];
	recipe_installed_dir(installed, sizeof(installed));
	const char *root = pol->recipes_dir ? pol->recipes_dir : installed;
	if (!realpath(root, real))
		return diag_fail(err, DIAG_EXIT_REFUSED, "production mode: recipes directory %s (%s): %s",
				 root, pol->recipes_dir ? "the policy's recipes_dir" : "the installed recipes",
				 strerror(errno));
	if (c->recipes_dir && !(realpath(c->recipes_dir, asked) && strcmp(asked, real) == 0))
		return diag_fail(err, DIAG_EXIT_REFUSED,
				 "production mode runs recipes only from %s (%s), not from --recipes %s", real,
				 pol->recipes_dir ? "the policy's recipes_dir" : "the installed recipes",
				 c->recipes_dir);
	if (source_check_trusted_dir(real, err))
		return diag_wrap(err, "production mode");
	return recipe_resolve(c->symptom, real, out, len, err);
}

/* Signals that end a run are held from the start to the end record: the collection reads them
 * (session.c) and stops early, every later phase finishes, and the audit trail is complete; one
 * that arrives after the collection is taken at the end (stop_signals_take), never left to kill
 * the process when the mask is restored. */
static void hold_signals(sigset_t *old)
{
	sigset_t mask;
	stop_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, old);
}

/* The watchdog's last words (watchdog.h): the end record of a run it abandons. */
struct abandoned_run {
	struct audit *au;
	struct audit_event *ev;
	struct outputs *outs;
};

/* The watchdog's last words: the output files being made are removed (the run thread is stuck
 * far from them: they are written after the session), the end record is written. */
static void audit_abandoned(void *arg, const char *why)
{
	struct abandoned_run *a = arg;
	struct diag_err ignore;
	discard_outputs(a->outs);
	a->ev->action = "failed";
	a->ev->reason = why;
	a->ev->exit_code = DIAG_EXIT_RUNTIME;
	a->ev->report = NULL;
	audit_write(a->au, a->ev, &ignore);
}

static void make_run_id(char out[33])
{
	unsigned char raw[16];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		uint64_t t = mono_ns() ^ ((uint64_t)getpid() << 32);
		memcpy(raw, &t, sizeof(t));
		memcpy(raw + 8, &t, sizeof(t));
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

int run_recipe(const struct run_options *c)
{
	struct diag_err err = { 0 };
	struct bundle b = { 0 };
	struct session_out s = { 0 };
	struct verdict_answer answer = { 0 };
	struct value *report = NULL, *run = NULL, *summary = NULL;
	char sha[SHA256_HEX_LEN] = "", run_id[33], real_path[PATH_MAX];
	int code = DIAG_EXIT_RUNTIME;
	bool tracefs_mounted;
	sigset_t old_mask;
	struct outputs outs = { 0 };

	/* Without the privileges nothing else matters, and nothing could be recorded anyway. */
	if (kernel_check_privileges(&err))
		return fail(&err);
	hold_signals(&old_mask);
	make_run_id(run_id);
	/* Production mode (--production, DIAGNOSE_MODE, or a policy file the command line cannot
	 * override): approved recipes only, from the trust root, with an audit trail that must be
	 * writable. Every outcome is audited at `out`. A policy that cannot be read fails closed. */
	struct policy pol;
	struct audit au;
	struct diag_err aerr = { 0 };
	char unapproved[sizeof(aerr.msg)];
	struct audit_event ev = { .action = c->dry_run ? "dry-run" : "run", .symptom = c->symptom,
				  .recipe_sha256 = sha, .pid = c->pid, .duration_s = c->duration_s,
				  .run_id = run_id };
	int pol_rc = policy_load(&pol, &err);
	bool production = c->production || pol.production || pol_rc;
	bool audit_ok = audit_open(&au, &pol, production, &aerr) == 0;
	if (au.env_ignored)
		fprintf(stderr, "diagnose: warning: $DIAGNOSE_AUDIT_FILE (%.200s) ignored: in production mode "
			"the audit files are the policy's (audit_file)\n", au.env_ignored);
	if (pol_rc)
		goto failed;
	if (!audit_ok && production) {
		err = aerr;
		diag_wrap(&err, "production mode refuses to run without its audit trail");
		goto failed;
	}
	if (!audit_ok)
		fprintf(stderr, "diagnose: warning: %s\n", aerr.msg);
	bool adhoc = approval_is_adhoc(c->symptom);
	if (production && !c->dry_run && adhoc) {
		diag_fail(&err, DIAG_EXIT_REFUSED, "production mode runs approved recipes by name only, not "
			  "the file %s: put it in the recipes directory and get it approved with `diagnose "
			  "approve NAME` in a pull request", c->symptom);
		goto failed;
	}
	/* Read once: the recipe, its snippet and the libraries are hashed, checked against the lock,
	 * parsed and run from the same bytes. */
	char path[PATH_MAX];
	bool trusted = production && !adhoc;
	if (trusted ? production_recipe_path(c, &pol, path, sizeof(path), &err)
		    : recipe_resolve(c->symptom, c->recipes_dir, path, sizeof(path), &err))
		goto failed;
	struct plan_args args = { .pid = c->pid, .sel = c->target, .duration_s = c->duration_s,
				  .check_target = true, .params = c->params, .n_params = c->n_params };
	if (bundle_load(path, trusted, &args, &b, &err))
		goto failed;
	const struct plan *plan = b.plan;
	if (c->capture) {
		c->capture->max_chain_depth = b.recipe->budgets.max_chain_depth;
		c->capture->max_chain_duration_s = b.recipe->budgets.max_chain_duration_s;
	}
	memcpy(sha, b.src.recipe.sha256, sizeof(sha));
	ev.recipe_name = b.recipe->name;
	ev.recipe_path = realpath(path, real_path) ? real_path : path;
	ev.sources = &b.src;
	ev.plan = plan;
	ev.approved = !adhoc && approval_check(&b, trusted, &aerr) == 0;
	if (production && !ev.approved) {
		if (!c->dry_run) {
			err = aerr;
			goto failed;
		}
		if (adhoc)
			snprintf(aerr.msg, sizeof(aerr.msg), "%s is a file, not an approved recipe", c->symptom);
		fprintf(stderr, "diagnose: dry run allowed; a real run would be refused: %s\n", aerr.msg);
		snprintf(unapproved, sizeof(unapproved), "%s", aerr.msg);
		ev.reason = unapproved;
	}
	/* A chain's first stage: the chain it could take is checked before anything runs, and in
	 * production every recipe in it must be approved (the dry run only says which are not). */
	if (c->capture) {
		c->capture->next_decl = chain_decl_value(b.recipe);
		if (c->capture->plan_chain) {
			char dir[PATH_MAX];
			const char *slash = strrchr(path, '/');
			if (slash)
				snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
			else
				snprintf(dir, sizeof(dir), ".");
			if (chain_plan(b.recipe, dir, trusted, production, c->dry_run, &c->capture->chain, &err))
				goto failed;
		}
	}
	if (check_stacks_probe(c, plan, &err))
		goto failed;
	if (c->max_duration_s > 0 && plan->duration_s > c->max_duration_s) {
		diag_fail(&err, DIAG_EXIT_REFUSED, "%s: %.3g s is over the %.3g s left of the chain's "
			  "max_chain_duration_s", b.recipe->name, plan->duration_s, c->max_duration_s);
		goto failed;
	}
	/* A snippet or library that cannot compile would only fail after the collection: say so now. */
	if (verdict_check_sources(&b.src, &err))
		goto failed;
	if (kernel_check_btf(&err))
		goto failed;
	if (!c->dry_run && open_outputs(c, &outs, &err))
		goto failed;
	/* What is about to load is on record before it loads. */
	if (!c->dry_run) {
		ev.action = "start";
		int arc = audit_write(&au, &ev, &aerr);
		ev.action = "run";
		if (arc && production) {
			err = aerr;
			diag_wrap(&err, "production mode refuses to run without its audit trail");
			goto failed;
		}
		if (arc)
			fprintf(stderr, "diagnose: warning: %s\n", aerr.msg);
	}
	if (kernel_ensure_tracefs(&tracefs_mounted, &err))
		goto failed;
	kernel_set_libbpf_verbose(c->verbose);
	/* The live governor measures with BPF run-time statistics, which need CAP_SYS_ADMIN; a
	 * production run does not go without its CPU budget enforced. */
	if (production && !c->dry_run && !kernel_bpf_stats_available()) {
		diag_fail(&err, DIAG_EXIT_REFUSED,
			  "production mode cannot enforce max_cpu_pct: BPF run-time statistics are not "
			  "available (they need CAP_SYS_ADMIN); refusing");
		goto failed;
	}

	/* A dry run reports its verdict on the budget with the plan instead of stopping at it; in
	 * production, a dry run of a recipe that is not approved attaches nothing at all (the
	 * verifier still sees every program). */
	if (c->dry_run) {
		struct diag_err pf_err = { 0 };
		bool measure = !(production && !ev.approved);
		if (dry_run(plan, measure, &summary, &pf_err, &err))
			goto failed;
		bool pf_ok = pf_err.msg[0] == 0;
		if (ev.reason) /* production, not approved: a real run would be refused */
			value_set_str(summary, "refused", ev.reason);
		if (c->capture && c->capture->chain) /* --follow: the chain it could take */
			value_obj_set(summary, "chain", value_copy(c->capture->chain));
		struct report_input in = { .plan = plan, .recipe_sha256 = sha, .plan_summary = summary };
		report = report_build(&in);
		if (c->json)
			report_write_json(report, stdout);
		else {
			report_write_text(report, stdout);
			report_write_plan_text(summary, stdout);
		}
		if (!pf_ok && pf_err.code == DIAG_EXIT_REFUSED)
			fprintf(stderr, "diagnose: a real run would be refused: %s\n", pf_err.msg);
		else if (!pf_ok)
			report_put_error(pf_err.msg);
		code = pf_ok ? DIAG_EXIT_OK : pf_err.code ? pf_err.code : DIAG_EXIT_RUNTIME;
		goto out;
	}

	/* The budget pre-flight is the first preflight_ms of the collection (session.c). */
	struct abandoned_run abandoned = { &au, &ev, &outs };
	struct session_opts so = { .progress = isatty(STDERR_FILENO) && !c->verbose, .label = b.recipe->name,
				   .preflight_ms = preflight_window_ms(plan),
				   .watchdog = watchdog_start(audit_abandoned, &abandoned) };
	int srun = session_run(plan, &so, &s, &err);
	watchdog_stop(so.watchdog);
	if (srun)
		goto failed;

	const struct preflight_rate *rates = s.rates;
	for (unsigned i = 0; i < plan->n_probes; i++)
		if (rates[i].degraded)
			value_arr_push(s.notes, value_str_take(xasprintf(
				"%s: %.0f events/s in the pre-flight is over max_events_per_s (%llu): counted 1 in "
				"%llu at random (degrade: sample); its counts are estimates", plan->probes[i].rp->id,
				rates[i].events_per_s, (unsigned long long)b.recipe->budgets.max_events_per_s,
				(unsigned long long)rates[i].sample_every)));
	run = run_info(plan, &s);
	struct verdict_input vin = { .lua = &b.src.lua, .libs = b.src.libs, .n_libs = b.src.n_libs,
				     .results = s.results, .thresholds = plan->thresholds, .run = run };
	struct diag_err verr = { 0 };
	bool lua_ok = verdict_run(&vin, &answer, &verr) == 0;
	struct report_input in = { .plan = plan, .recipe_sha256 = sha, .session = &s,
				   .verdicts = answer.verdicts, .verdict_error = lua_ok ? NULL : verr.msg,
				   .sections = answer.report, .ruled_out = answer.ruled_out,
				   .preflight = s.preflight, .run = run,
				   .thresholds = plan->thresholds };
	report = report_build(&in);
	if (!c->capture && write_outputs(c, &outs, report, s.results))
		code = DIAG_EXIT_RUNTIME;
	else if (!lua_ok) {
		report_put_error(verr.msg);
		code = DIAG_EXIT_RUNTIME;
	} else if (s.stop_reason == STOP_TARGET_EXITED && s.events == 0) {
		fprintf(stderr, "diagnose: process %d exited before any data was collected\n", plan->target_pid);
		code = DIAG_EXIT_RUNTIME;
	} else {
		switch (verdicts_worst(answer.verdicts)) {
		case SEV_CRITICAL: code = DIAG_EXIT_CRITICAL; break;
		case SEV_WARNING: code = DIAG_EXIT_WARNING; break;
		default: code = DIAG_EXIT_OK; break;
		}
	}
	if (!lua_ok)
		ev.reason = verr.msg;
	if (!lua_ok && c->capture)
		c->capture->err = verr;
	goto out;
failed:
	code = fail(&err);
	if (c->capture)
		c->capture->err = err;
	ev.action = code == DIAG_EXIT_REFUSED ? "refused" : "failed";
	ev.reason = err.msg;
out:
	ev.exit_code = code;
	ev.report = report;
	if (audit_write(&au, &ev, &aerr)) {
		report_put_error(aerr.msg);
		if (production && code != DIAG_EXIT_REFUSED)
			code = DIAG_EXIT_RUNTIME;
	}
	discard_outputs(&outs); /* what was not written (a failed run) is not left behind empty */
	if (c->capture && !c->dry_run) { /* a chain's stage: the report goes back to chain.c */
		c->capture->report = report;
		report = NULL;
	}
	audit_close(&au);
	policy_free(&pol);
	value_free(summary);
	value_free(report);
	value_free(run);
	verdict_answer_free(&answer);
	session_out_free(&s);
	bundle_free(&b);
	/* A stop signal held since the collection ended (while the verdicts ran or the report was
	 * written; one during the collection stopped it, stop_reason "signal") has nothing left to
	 * stop: the run finished with what it had and keeps its documented exit code. Taken here, so
	 * that restoring the mask does not kill the process (143 is no exit code of ours); a chain
	 * starts no further stage. */
	int late = stop_signals_take();
	if (late) {
		fprintf(stderr, "diagnose: SIG%s arrived after the collection: the run finished with what "
			"it had\n", sigabbrev_np(late) ? sigabbrev_np(late) : "?");
		if (c->capture)
			c->capture->signal = late;
	}
	fflush(NULL);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	return code;
}
