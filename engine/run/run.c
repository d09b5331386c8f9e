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
#include "run/run.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "trust/approval.h"
#include "trust/audit.h"
#include "run/chain_plan.h"
#include "report/flamegraph.h"
#include "kernel/kernel.h"
#include "report/outfile.h"
#include "plan/plan.h"
#include "report/pprof.h"
#include "common/privilege.h"
#include "plan/preflight.h"
#include "recipe/recipe.h"
#include "recipe/recipe_find.h"
#include "report/report.h"
#include "session/session.h"
#include "common/sha256.h"
#include "recipe/source.h"
#include "target/tfile.h"
#include "verdict/verdict.h"
#include "session/watchdog.h"

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
	/* probes the governor stopped over budget, or whose stacks it dropped: how far into the
	 * window (diag.partial notes them); probes the run went on without, the target lacking what
	 * they need */
	struct value *stopped = NULL, *dropped = NULL, *na = NULL, *unloaded = NULL;
	for (size_t i = 0; s->probes && i < s->probes->arr.len; i++) {
		const struct value *info = s->probes->arr.items[i];
		if (value_get_str(info, "not_applicable")) { /* run.not_applicable[id]: why (lib/diag.lua) */
			if (!na)
				na = value_obj_set(run, "not_applicable", value_obj());
			value_set_str(na, value_get_str(info, "id"), value_get_str(info, "not_applicable"));
		}
		if (value_get_str(info, "load_error")) { /* run.load_errors[id]: why it did not load here */
			if (!unloaded)
				unloaded = value_obj_set(run, "load_errors", value_obj());
			value_set_str(unloaded, value_get_str(info, "id"), value_get_str(info, "load_error"));
		}
		if (value_get(info, "stacks_dropped_at_s")) {
			if (!dropped)
				dropped = value_obj_set(run, "stacks_dropped", value_obj());
			struct value *d = value_obj_set(dropped, value_get_str(info, "id"), value_obj());
			value_set_num(d, "at_s", value_get_num(info, "stacks_dropped_at_s", 0));
		}
		if (!value_get(info, "stopped_at_s"))
			continue;
		if (!stopped)
			stopped = value_obj_set(run, "stopped", value_obj());
		struct value *st = value_obj_set(stopped, value_get_str(info, "id"), value_obj());
		value_set_num(st, "at_s", value_get_num(info, "stopped_at_s", 0));
		value_set_bool(st, "scaled", value_get(info, "scaled_to_window") != NULL);
	}
	struct value *t = plan_target_value(plan);
	if (t)
		value_obj_set(run, "target", t);
	return run;
}

/* Dry run: the verifier sees every program, and (measure) the pre-flight runs as a real run's
 * would, with the probes' programs counting only; nothing collects. */
static int dry_run(const struct plan *plan, struct target *target, struct tfile_reader *files,
		   bool measure, struct value **summary, struct diag_err *pf_err, struct diag_err *err)
{
	struct value *loaded, *preflight;
	if (session_dry_run(plan, target, files, measure ? preflight_window_ms(plan) : 0, &loaded,
			    &preflight, pf_err, err))
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

static int write_outputs(const struct run_options *c, const struct run_capture *cap,
			 struct outputs *o, const struct value *report, const struct value *results)
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
		if (cap && cap->stacks_if_any) {
			outfile_discard(o->folded);
			outfile_discard(o->svg);
			outfile_discard(o->pprof);
			o->folded = o->svg = o->pprof = NULL;
		} else if (c->stacks_probe)
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

/* Production's trust root (and a run's with capabilities but not root: mode says which): the
 * policy's recipes_dir, else the installed recipes. --recipes may only name the same directory;
 * $DIAGNOSE_RECIPES and ./recipes are not searched. The directory and every one above it must be
 * root's alone. */
static int trusted_recipe_path(const struct run_options *c, const struct policy *pol, const char *mode,
			       char *out, size_t len, struct diag_err *err)
{
	char installed[PATH_MAX], real[PATH_MAX], asked[PATH_MAX];
	recipe_installed_dir(installed, sizeof(installed));
	const char *root = pol->recipes_dir ? pol->recipes_dir : installed;
	if (!realpath(root, real))
		return diag_fail(err, DIAG_EXIT_REFUSED, "%s: recipes directory %s (%s): %s", mode,
				 root, pol->recipes_dir ? "the policy's recipes_dir" : "the installed recipes",
				 strerror(errno));
	if (c->recipes_dir && !(realpath(c->recipes_dir, asked) && strcmp(asked, real) == 0))
		return diag_fail(err, DIAG_EXIT_REFUSED,
				 "%s runs recipes only from %s (%s), not from --recipes %s", mode, real,
				 pol->recipes_dir ? "the policy's recipes_dir" : "the installed recipes",
				 c->recipes_dir);
	if (source_check_trusted_dir(real, err))
		return diag_wrap(err, "%s", mode);
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

/* One run, from the first check to the end record: what its stages hand each other. */
struct run {
	const struct run_options *c;
	struct run_capture *cap; /* a chain's or watch's stage: what goes back (NULL: none) */
	struct diag_err err;  /* why the run failed or was refused */
	struct diag_err aerr; /* the audit trail's and the approval's messages */
	struct policy pol;
	struct audit au;
	struct audit_event ev; /* the start and end records */
	bool production, adhoc, trusted;
	char sha[SHA256_HEX_LEN], run_id[33], path[PATH_MAX], real_path[PATH_MAX];
	char unapproved[sizeof(((struct diag_err *)0)->msg)];
	struct bundle b;
	struct outputs outs;
	struct session_out s;
	struct diag_err verr; /* the verdict's error, when its Lua failed */
	struct tfile_reader *files; /* the target's files, for the plan and the session */
	struct verdict_input vin; /* the verdict child's sources, thresholds and limits */
	struct verdict_child verdict; /* started as the window opens (start_verdict); pid -1: not */
	struct verdict_answer answer;
	struct value *report, *info, *summary;
	sigset_t old_mask;
	uint64_t started_ns; /* run_start: the phases' origin */
};

/* Production mode (--production, DIAGNOSE_MODE, or a policy file the command line cannot
 * override): approved recipes only, from the trust root, with an audit trail that must be
 * writable. A policy that cannot be read fails closed. */
static int open_trail(struct run *r)
{
	int pol_rc = policy_load(&r->pol, &r->err);
	r->production = r->c->production || r->pol.production || pol_rc;
	bool audit_ok = audit_open(&r->au, &r->pol, r->production, &r->aerr) == 0;
	if (r->au.env_ignored)
		fprintf(stderr, "diagnose: warning: $DIAGNOSE_AUDIT_FILE (%.200s) ignored: in production mode "
			"the audit files are the policy's (audit_file)\n", r->au.env_ignored);
	if (pol_rc)
		return -1;
	if (!audit_ok && r->production) {
		r->err = r->aerr;
		return diag_wrap(&r->err, "production mode refuses to run without its audit trail");
	}
	if (!audit_ok)
		fprintf(stderr, "diagnose: warning: %s\n", r->aerr.msg);
	return 0;
}

/* Read once: the recipe, its snippet and the libraries are hashed, checked against the lock,
 * parsed and run from the same bytes. */
static int load_recipe(struct run *r)
{
	const struct run_options *c = r->c;
	r->adhoc = approval_is_adhoc(c->symptom);
	/* A user given capabilities, not root's trust (privilege.h): the trust root's recipes only,
	 * as production takes them, whether or not they are approved. */
	bool user = privilege_on_behalf_of_user();
	if (user && r->adhoc)
		return diag_fail(&r->err, DIAG_EXIT_REFUSED, "with capabilities but not root, diagnose "
				 "runs the installed recipes by name only, not the file %s "
				 "(docs/production.md#running-with-capabilities)", c->symptom);
	if (r->production && !c->dry_run && r->adhoc)
		return diag_fail(&r->err, DIAG_EXIT_REFUSED, "production mode runs approved recipes by "
				 "name only, not the file %s: put it in the recipes directory and get it "
				 "approved with `diagnose approve NAME` in a pull request", c->symptom);
	r->trusted = (r->production || user) && !r->adhoc;
	const char *mode = r->production ? "production mode" : "capability mode (capabilities, not root)";
	if (r->trusted ? trusted_recipe_path(c, &r->pol, mode, r->path, sizeof(r->path), &r->err)
		       : recipe_resolve(c->symptom, c->recipes_dir, r->path, sizeof(r->path), &r->err))
		return -1;
	/* one reader of the target's files for the plan and the session: its helpers' zygote is
	 * made once, before the run maps anything of its own (tfile.h) */
	r->files = tfile_reader_new();
	struct plan_args args = { .pid = c->pid, .sel = c->target, .duration_s = c->duration_s,
				  .check_target = true, .params = c->params, .n_params = c->n_params,
				  .files = r->files };
	if (bundle_load(r->path, r->trusted, &args, &r->b, &r->err))
		return -1;
	if (r->cap) {
		r->cap->max_chain_depth = r->b.recipe->budgets.max_chain_depth;
		r->cap->max_chain_duration_s = r->b.recipe->budgets.max_chain_duration_s;
	}
	memcpy(r->sha, r->b.src.recipe.sha256, sizeof(r->sha));
	r->ev.recipe_name = r->b.recipe->name;
	r->ev.recipe_path = realpath(r->path, r->real_path) ? r->real_path : r->path;
	r->ev.sources = &r->b.src;
	r->ev.plan = r->b.plan;
	return 0;
}

/* In production a recipe that is not approved does not run; its dry run is allowed, and says
 * that a real run would be refused. */
static int check_approved(struct run *r)
{
	const struct run_options *c = r->c;
	r->ev.approved = !r->adhoc && approval_check(&r->b, r->trusted, &r->aerr) == 0;
	if (!r->production || r->ev.approved)
		return 0;
	if (!c->dry_run) {
		r->err = r->aerr;
		return -1;
	}
	if (r->adhoc)
		snprintf(r->aerr.msg, sizeof(r->aerr.msg), "%s is a file, not an approved recipe",
			 c->symptom);
	fprintf(stderr, "diagnose: dry run allowed; a real run would be refused: %s\n", r->aerr.msg);
	snprintf(r->unapproved, sizeof(r->unapproved), "%s", r->aerr.msg);
	r->ev.reason = r->unapproved;
	return 0;
}

/* A chain's first stage: the chain it could take is checked before anything runs, and in
 * production every recipe in it must be approved (the dry run only says which are not). */
static int check_chain(struct run *r)
{
	struct run_capture *cap = r->cap;
	if (!cap)
		return 0;
	cap->next_decl = chain_decl_value(r->b.recipe);
	if (!cap->plan_chain)
		return 0;
	char dir[PATH_MAX];
	const char *slash = strrchr(r->path, '/');
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == r->path ? 1 : (int)(slash - r->path), r->path);
	else
		snprintf(dir, sizeof(dir), ".");
	return chain_plan(r->b.recipe, dir, r->trusted, r->production, r->c->dry_run, &cap->chain,
			  &r->err);
}

/* What the plan asks of the command line, the snippet and the kernel, before anything loads. */
static int check_runnable(struct run *r)
{
	const struct run_options *c = r->c;
	const struct plan *plan = r->b.plan;
	if (check_stacks_probe(c, plan, &r->err))
		return -1;
	if (c->max_duration_s > 0 && plan->duration_s > c->max_duration_s)
		return diag_fail(&r->err, DIAG_EXIT_REFUSED, "%s: %.3g s is over the %.3g s left of "
				 "the chain's max_chain_duration_s", r->b.recipe->name, plan->duration_s,
				 c->max_duration_s);
	/* A snippet or library that cannot compile would only fail after the collection: say so now. */
	if (verdict_check_sources(&r->b.src, &r->err) || kernel_check_btf(&r->err))
		return -1;
	return !c->dry_run && open_outputs(c, &r->outs, &r->err) ? -1 : 0;
}

/* What is about to load is on record before it loads (not for a dry run). */
static int record_start(struct run *r)
{
	if (r->c->dry_run)
		return 0;
	r->ev.action = "start";
	int arc = audit_write(&r->au, &r->ev, &r->aerr);
	r->ev.action = "run";
	if (arc && r->production) {
		r->err = r->aerr;
		return diag_wrap(&r->err, "production mode refuses to run without its audit trail");
	}
	if (arc)
		fprintf(stderr, "diagnose: warning: %s\n", r->aerr.msg);
	return 0;
}

/* tracefs, libbpf's verbosity, and in production the BPF run-time statistics the live governor
 * measures with (they need CAP_SYS_ADMIN): a production run does not go without its CPU budget
 * enforced. */
static int prepare_kernel(struct run *r)
{
	bool tracefs_mounted;
	if (kernel_ensure_tracefs(&tracefs_mounted, &r->err))
		return -1;
	kernel_set_libbpf_verbose(r->c->verbose);
	if (r->production && !r->c->dry_run && !kernel_bpf_stats_available())
		return diag_fail(&r->err, DIAG_EXIT_REFUSED,
				 "production mode cannot enforce max_cpu_pct: BPF run-time statistics are "
				 "not available (they need CAP_SYS_ADMIN); refusing");
	return 0;
}

/* Everything a run must pass before it collects, in order; -1 with r->err set at the first that
 * fails or refuses. */
static int gate(struct run *r)
{
	return open_trail(r) || load_recipe(r) || check_approved(r) || check_chain(r) ||
	       check_runnable(r) || record_start(r) || prepare_kernel(r) ? -1 : 0;
}

/* A dry run reports its verdict on the budget with the plan instead of stopping at it; in
 * production, a dry run of a recipe that is not approved attaches nothing at all (the verifier
 * still sees every program). *code: the dry run's exit code. */
static int dry_run_report(struct run *r, int *code)
{
	const struct run_options *c = r->c;
	struct diag_err pf_err = { 0 };
	bool measure = !(r->production && !r->ev.approved);
	if (dry_run(r->b.plan, r->b.plan->target, r->files, measure, &r->summary, &pf_err, &r->err))
		return -1;
	bool pf_ok = pf_err.msg[0] == 0;
	if (r->ev.reason) /* production, not approved: a real run would be refused */
		value_set_str(r->summary, "refused", r->ev.reason);
	if (r->cap && r->cap->chain) /* --follow: the chain it could take */
		value_obj_set(r->summary, "chain", value_copy(r->cap->chain));
	struct report_input in = { .plan = r->b.plan, .recipe_sha256 = r->sha,
				   .plan_summary = r->summary };
	r->report = report_build(&in);
	if (c->json)
		report_write_json(r->report, stdout);
	else {
		report_write_text(r->report, stdout);
		report_write_plan_text(r->summary, stdout);
	}
	if (!pf_ok && pf_err.code == DIAG_EXIT_REFUSED)
		fprintf(stderr, "diagnose: a real run would be refused: %s\n", pf_err.msg);
	else if (!pf_ok)
		report_put_error(pf_err.msg);
	*code = pf_ok ? DIAG_EXIT_OK : pf_err.code ? pf_err.code : DIAG_EXIT_RUNTIME;
	return 0;
}

/* Probes sampled 1 in N (degrade: sample) are said in the report's notes. */
static void note_degraded(struct run *r)
{
	const struct plan *plan = r->b.plan;
	const struct preflight_rate *rates = r->s.rates;
	for (unsigned i = 0; i < plan->n_probes; i++)
		if (rates[i].degraded)
			value_arr_push(r->s.notes, value_str_take(xasprintf(
				"%s: %.0f events/s in the pre-flight is over max_events_per_s (%llu): counted 1 in "
				"%llu at random (degrade: sample); its counts are estimates", plan->probes[i].rp->id,
				rates[i].events_per_s, (unsigned long long)r->b.recipe->budgets.max_events_per_s,
				(unsigned long long)rates[i].sample_every)));
}

/* The exit code of a run that collected: a verdict that could not run or a target that exited
 * before any data is a runtime error, else the worst verdict's severity. */
static int exit_code_of(const struct run *r, bool lua_ok)
{
	if (!lua_ok) {
		report_put_error(r->verr.msg);
		return DIAG_EXIT_RUNTIME;
	}
	if (r->s.stop_reason == STOP_TARGET_EXITED && r->s.events == 0) {
		fprintf(stderr, "diagnose: process %d exited before any data was collected\n",
			r->b.plan->target_pid);
		return DIAG_EXIT_RUNTIME;
	}
	switch (verdicts_worst(r->answer.verdicts)) {
	case SEV_CRITICAL: return DIAG_EXIT_CRITICAL;
	case SEV_WARNING: return DIAG_EXIT_WARNING;
	default: return DIAG_EXIT_OK;
	}
}

/* The session's at_window: the verdict child starts as the collection window opens, so that its
 * fork, sandbox and compilation overlap the collection (verdict.h). One that cannot start (its
 * pid then -1) is tried again after the window, and that error is the one the report gives. */
static void start_verdict(void *arg)
{
	struct run *r = arg;
	struct diag_err err = { 0 };
	verdict_start(&r->vin, &r->verdict, &err);
}

/* The collection (its budget pre-flight is the first preflight_ms of it, session.c), then the
 * verdicts, the report and the output files. *code: the run's exit code. */
static int run_session(struct run *r, int *code)
{
	const struct run_options *c = r->c;
	const struct plan *plan = r->b.plan;
	struct abandoned_run abandoned = { &r->au, &r->ev, &r->outs };
	r->vin = (struct verdict_input){ .lua = &r->b.src.lua, .libs = r->b.src.libs,
					 .n_libs = r->b.src.n_libs, .thresholds = plan->thresholds };
	r->verdict = VERDICT_CHILD_NONE;
	struct session_opts so = { .progress = isatty(STDERR_FILENO) && !c->verbose,
				   .label = r->b.recipe->name, .preflight_ms = preflight_window_ms(plan),
				   .watchdog = watchdog_start(audit_abandoned, &abandoned),
				   .files = r->files, .target = r->b.plan->target,
				   .at_window = start_verdict, .at_window_arg = r };
	double start_s = (double)(mono_ns() - r->started_ns) / 1e9;
	int srun = session_run(plan, &so, &r->s, &r->err);
	watchdog_stop(so.watchdog);
	if (srun) {
		verdict_cancel(&r->verdict);
		return -1;
	}
	note_degraded(r);
	r->info = run_info(plan, &r->s);
	uint64_t verdict_ns = mono_ns();
	bool lua_ok = (r->verdict.pid > 0 || verdict_start(&r->vin, &r->verdict, &r->verr) == 0) &&
		      verdict_finish(&r->verdict, r->s.results, r->info, &r->answer, &r->verr) == 0;
	struct report_input in = { .plan = plan, .recipe_sha256 = r->sha, .session = &r->s,
				   .start_s = start_s, .verdict_s = (double)(mono_ns() - verdict_ns) / 1e9,
				   .verdicts = r->answer.verdicts,
				   .verdict_error = lua_ok ? NULL : r->verr.msg,
				   .sections = r->answer.report, .ruled_out = r->answer.ruled_out,
				   .metrics = r->answer.metrics,
				   .preflight = r->s.preflight, .run = r->info,
				   .thresholds = plan->thresholds };
	r->report = report_build(&in);
	if ((!r->cap || r->cap->write_outputs) &&
	    write_outputs(c, r->cap, &r->outs, r->report, r->s.results))
		*code = DIAG_EXIT_RUNTIME;
	else
		*code = exit_code_of(r, lua_ok);
	if (!lua_ok)
		r->ev.reason = r->verr.msg;
	if (!lua_ok && r->cap)
		r->cap->err = r->verr;
	return 0;
}

/* A run that failed or was refused: said on stderr, handed to a chain, on record. */
static int failed(struct run *r)
{
	int code = fail(&r->err);
	if (r->cap)
		r->cap->err = r->err;
	r->ev.action = code == DIAG_EXIT_REFUSED ? "refused" : "failed";
	r->ev.reason = r->err.msg;
	return code;
}

static void run_start(struct run *r, const struct run_options *c, struct run_capture *cap)
{
	r->c = c;
	r->cap = cap;
	r->started_ns = mono_ns();
	hold_signals(&r->old_mask);
	make_run_id(r->run_id);
	r->ev = (struct audit_event){ .action = c->dry_run ? "dry-run" : "run", .symptom = c->symptom,
				      .recipe_sha256 = r->sha, .pid = c->pid,
				      .duration_s = c->duration_s, .run_id = r->run_id };
}

/* The end record (every outcome is audited), what the run holds freed, and a late stop signal
 * taken. Returns the run's exit code. */
static int run_end(struct run *r, int code)
{
	const struct run_options *c = r->c;
	r->ev.exit_code = code;
	r->ev.report = r->report;
	if (audit_write(&r->au, &r->ev, &r->aerr)) {
		report_put_error(r->aerr.msg);
		if (r->production && code != DIAG_EXIT_REFUSED)
			code = DIAG_EXIT_RUNTIME;
	}
	discard_outputs(&r->outs); /* what was not written (a failed run) is not left behind empty */
	if (r->cap && !c->dry_run) { /* a chain's stage: the report goes back to chain.c */
		r->cap->report = r->report;
		r->report = NULL;
	}
	audit_close(&r->au);
	policy_free(&r->pol);
	value_free(r->summary);
	value_free(r->report);
	value_free(r->info);
	verdict_answer_free(&r->answer);
	session_out_free(&r->s);
	bundle_free(&r->b);
	tfile_reader_free(r->files);
	/* A stop signal held since the collection ended (while the verdicts ran or the report was
	 * written; one during the collection stopped it, stop_reason "signal") has nothing left to
	 * stop: the run finished with what it had and keeps its documented exit code. Taken here, so
	 * that restoring the mask does not kill the process (143 is no exit code of ours); a chain
	 * starts no further stage. */
	int late = stop_signals_take();
	if (late) {
		fprintf(stderr, "diagnose: SIG%s arrived after the collection: the run finished with what "
			"it had\n", sigabbrev_np(late) ? sigabbrev_np(late) : "?");
		if (r->cap)
			r->cap->signal = late;
	}
	fflush(NULL);
	sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
	return code;
}

int run_recipe(const struct run_options *c, struct run_capture *cap)
{
	struct diag_err err = { 0 };
	/* Without the privileges nothing else matters, and nothing could be recorded anyway. */
	if (privilege_now() == PRIV_SETUID) {
		diag_fail(&err, DIAG_EXIT_REFUSED, "diagnose is set-user-ID root: it runs as root (sudo) "
			  "or with capabilities, never with root's credentials on another user's behalf");
		return fail(&err);
	}
	if (kernel_check_privileges(&err))
		return fail(&err);
	struct run r = { 0 };
	int code = DIAG_EXIT_RUNTIME;
	run_start(&r, c, cap);
	if (gate(&r) || (c->dry_run ? dry_run_report(&r, &code) : run_session(&r, &code)))
		code = failed(&r);
	return run_end(&r, code);
}
