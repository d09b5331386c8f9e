/* main.c — the command line: parse arguments, then drive recipe → plan → session → verdict →
 * report, and map the outcome to the exit codes of the DESIGN contract.
 *
 * Owns: argument parsing, the subcommands (run, list, show, lint, doctor, approve, verify) and
 * their dispatch, the order of the run (production policy, plan, pre-flight, session, verdict,
 * report, audit line), printing errors (one line, "diagnose: ...") and choosing the exit code.
 * Must not: contain probe, symptom or formatting logic; those live in their own files.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval.h"
#include "audit.h"
#include "catalog.h"
#include "doctor.h"
#include "kernel.h"
#include "outfile.h"
#include "plan.h"
#include "preflight.h"
#include "recipe.h"
#include "report.h"
#include "session.h"
#include "source.h"
#include "sha256.h"
#include "verdict.h"

struct cli {
	const char *symptom;
	int pid;
	double duration_s;
	bool dry_run, json, production, verbose, force;
	const char *output, *folded, *recipes_dir;
	const char *lock, *by; /* approve / verify: --lock FILE, --by NAME */
	const char *params[32]; /* --param NAME=VALUE for the recipe's own parameters */
	size_t n_params;
};

static void usage(FILE *out)
{
	fputs("usage: diagnose SYMPTOM [--pid PID] [--duration SECONDS] [--param KEY=VALUE]...\n"
	      "                        [--dry-run] [--json] [--output FILE] [--folded FILE] [--force]\n"
	      "                        [--recipes DIR] [--production] [--verbose]\n"
	      "       diagnose list | show SYMPTOM | lint [PATH...] | doctor\n"
	      "       diagnose approve RECIPE... [--by NAME] [--lock FILE] | verify [--lock FILE]\n"
	      "       diagnose --help | --version\n"
	      "SYMPTOM is a recipe name (diagnose list) or a path to a recipe file.\n"
	      "exit: 0 ok/info, 1 runtime failure, 2 usage or invalid recipe, 3 refused,\n"
	      "      4 worst verdict warning, 5 worst verdict critical\n",
	      out);
}

static int fail(const struct diag_err *err)
{
	fprintf(stderr, "diagnose: %s\n", err->msg);
	return err->code ? err->code : DIAG_EXIT_RUNTIME;
}

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "diagnose: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	fputs("try 'diagnose --help'\n", stderr);
	return DIAG_EXIT_USAGE;
}

static int parse_pid(const char *s, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_duration(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v > 86400)
		return -1;
	*out = v;
	return 0;
}

/* --param KEY=VALUE: pid and duration are built in; the rest are the recipe's typed parameters. */
static int apply_param(struct cli *c, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq)
		return usage_error("--param expects KEY=VALUE", kv);
	size_t klen = (size_t)(eq - kv);
	if (klen == 3 && strncmp(kv, "pid", 3) == 0)
		return parse_pid(eq + 1, &c->pid) ? usage_error("--param pid: not a pid", eq + 1) : 0;
	if (klen == 8 && strncmp(kv, "duration", 8) == 0)
		return parse_duration(eq + 1, &c->duration_s)
			       ? usage_error("--param duration: not a positive number of seconds", eq + 1)
			       : 0;
	if (c->n_params == ARRAY_LEN(c->params))
		return usage_error("too many --param", kv);
	c->params[c->n_params++] = kv; /* checked against the recipe's parameters by the plan */
	return 0;
}

/* ---- run ---------------------------------------------------------------------------------- */

static struct value *run_info(const struct plan *plan, const struct session_out *s)
{
	struct value *run = value_obj();
	value_set_str(run, "recipe", plan->recipe->name);
	value_set_num(run, "duration_s", s->duration_s);
	value_set_str(run, "stop_reason", stop_reason_name(s->stop_reason));
	value_set_int(run, "ncpus", plan->ncpus);
	if (plan->target_pid > 0) {
		struct value *t = value_obj_set(run, "target", value_obj());
		value_set_int(t, "pid", plan->target_pid);
		value_set_str(t, "comm", plan->target_comm);
		value_set_str(t, "exe", plan->target_exe);
	}
	return run;
}

static struct value *plan_summary(const struct plan *plan, const struct value *loaded)
{
	struct value *sum = value_obj();
	value_set_num(sum, "duration_s", plan->duration_s);
	value_set_int(sum, "map_bytes", (int64_t)plan->map_bytes);
	struct value *probes = value_obj_set(sum, "probes", value_arr());
	for (unsigned i = 0; i < plan->n_probes; i++) {
		const struct plan_probe *pp = &plan->probes[i];
		struct value *v = value_arr_push(probes, value_obj());
		value_set_str(v, "id", pp->rp->id);
		value_set_str(v, "kind", pp->kind->name);
		const struct value *l = value_get(loaded, pp->rp->id);
		if (value_get_str(l, "variant"))
			value_set_str(v, "variant", value_get_str(l, "variant"));
		if (value_get_str(l, "note"))
			value_set_str(v, "note", value_get_str(l, "note"));
		struct value *vs = value_obj_set(v, "variants", value_arr());
		for (const char *const *var = pp->cfg.variants; *var; var++)
			value_arr_push(vs, value_str(*var));
		if (pp->cfg.target_pid)
			value_set_int(v, "filter_pid", pp->cfg.target_pid);
		struct value *opts = value_obj_set(v, "options", value_obj());
		for (size_t o = 0; o < pp->kind->n_options; o++) {
			if (pp->kind->options[o].type == OPT_STRING)
				value_set_str(opts, pp->kind->options[o].name, pp->cfg.str[o] ? pp->cfg.str[o] : "");
			else
				value_set_int(opts, pp->kind->options[o].name, (int64_t)pp->cfg.opt[o]);
		}
		value_set_int(v, "map_bytes", (int64_t)pp->map_bytes);
	}
	return sum;
}

/* Dry run: everything but attaching — the verifier sees every program. */
static int dry_run(const struct plan *plan, struct value **summary, struct diag_err *err)
{
	struct value *loaded;
	if (session_load_only(plan, &loaded, err))
		return -1;
	*summary = plan_summary(plan, loaded);
	value_free(loaded);
	return 0;
}

/* The files asked for, created before anything loads: "exists" is said up front, not after the
 * collection. */
struct outputs {
	struct outfile *json, *folded;
};

static int open_outputs(const struct cli *c, struct outputs *o, struct diag_err *err)
{
	memset(o, 0, sizeof(*o));
	if (c->output && !(o->json = outfile_create("--output", c->output, c->force, err)))
		return -1;
	if (c->folded && !(o->folded = outfile_create("--folded", c->folded, c->force, err))) {
		outfile_discard(o->json);
		o->json = NULL;
		return -1;
	}
	return 0;
}

static void discard_outputs(struct outputs *o)
{
	outfile_discard(o->json);
	outfile_discard(o->folded);
	memset(o, 0, sizeof(*o));
}

static int write_outputs(const struct cli *c, struct outputs *o, const struct value *report,
			 const struct value *results)
{
	struct diag_err err = { 0 };
	int rc = 0;
	if (c->json)
		report_write_json(report, stdout);
	else
		report_write_text(report, stdout);
	if (o->folded) {
		report_write_folded(results, outfile_stream(o->folded));
		if (outfile_close(o->folded, &err)) {
			fprintf(stderr, "diagnose: %s\n", err.msg);
			rc = -1;
		}
		o->folded = NULL;
	}
	if (o->json) {
		report_write_json(report, outfile_stream(o->json));
		if (outfile_close(o->json, &err)) {
			fprintf(stderr, "diagnose: %s\n", err.msg);
			rc = -1;
		}
		o->json = NULL;
	}
	return rc;
}

/* Production's trust root: the policy's recipes_dir, else the installed recipes. --recipes may
 * only name the same directory; $DIAGNOSE_RECIPES and ./recipes are not searched. The directory
 * and every one above it must be root's alone. */
static int production_recipe_path(const struct cli *c, const struct policy *pol, char *out,
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
 * (session.c) and stops early, every later phase finishes, and the audit trail is complete. */
static void hold_signals(sigset_t *old)
{
	sigset_t mask;
	stop_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, old);
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

static int cmd_run(const struct cli *c)
{
	struct diag_err err = { 0 };
	struct bundle b = { 0 };
	struct session_out s = { 0 };
	struct value *verdicts = NULL, *sections = NULL, *report = NULL, *run = NULL, *summary = NULL;
	struct value *preflight = NULL;
	struct preflight_rate *rates = NULL;
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
	struct plan_args args = { .pid = c->pid, .duration_s = c->duration_s, .check_target = true,
				  .params = c->params, .n_params = c->n_params };
	if (bundle_load(path, trusted, &args, &b, &err))
		goto failed;
	struct plan *plan = b.plan; /* the pre-flight may set a probe's sampling */
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
	/* A snippet or library that cannot compile would only fail after the collection: say so now. */
	for (size_t i = 0; i <= b.src.n_libs; i++)
		if (verdict_check_syntax(i < b.src.n_libs ? &b.src.libs[i] : &b.src.lua, &err))
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

	/* Measured budget check, before the real programs exist. A dry run reports its verdict on
	 * the budget with the plan instead of stopping at it; in production, a dry run of a recipe
	 * that is not approved attaches nothing at all (the verifier still sees every program). */
	rates = xcalloc(plan->n_probes, sizeof(*rates));
	struct diag_err pf_err = { 0 };
	bool measure = !(c->dry_run && production && !ev.approved);
	bool pf_ok = !measure || preflight_run(plan, b.recipe->budgets.preflight_ms ? b.recipe->budgets.preflight_ms
										       : 250,
					       rates, &preflight, &pf_err) == 0;
	if (!pf_ok && !c->dry_run) {
		err = pf_err;
		goto failed;
	}

	if (c->dry_run) {
		if (dry_run(plan, &summary, &err))
			goto failed;
		if (measure)
			value_obj_set(summary, "preflight", value_copy(preflight));
		else
			value_set_str(summary, "preflight", "not measured: in production a dry run of a recipe "
				      "that is not approved attaches nothing");
		if (!pf_ok)
			value_set_str(summary, pf_err.code == DIAG_EXIT_REFUSED ? "refused" : "preflight_error",
				      pf_err.msg);
		struct report_input in = { .plan = plan, .recipe_sha256 = sha, .plan_summary = summary };
		report = report_build(&in);
		if (c->json)
			report_write_json(report, stdout);
		else {
			report_write_text(report, stdout);
			value_write_json(summary, stdout, 2);
			fputc('\n', stdout);
		}
		if (!pf_ok && pf_err.code == DIAG_EXIT_REFUSED)
			fprintf(stderr, "diagnose: a real run would be refused: %s\n", pf_err.msg);
		else if (!pf_ok)
			fprintf(stderr, "diagnose: %s\n", pf_err.msg);
		code = pf_ok ? DIAG_EXIT_OK : pf_err.code ? pf_err.code : DIAG_EXIT_RUNTIME;
		goto out;
	}

	struct session_opts so = { .progress = isatty(STDERR_FILENO) && !c->verbose, .label = b.recipe->name };
	if (session_run(plan, &so, &s, &err))
		goto failed;

	for (unsigned i = 0; i < plan->n_probes; i++)
		if (rates[i].sample_every > 1)
			value_arr_push(s.notes, value_str_take(xasprintf(
				"%s: %.0f events/s in the pre-flight is over max_events_per_s (%llu): counted 1 in "
				"%llu at random (degrade: sample); its counts are estimates", plan->probes[i].rp->id,
				rates[i].events_per_s, (unsigned long long)b.recipe->budgets.max_events_per_s,
				(unsigned long long)rates[i].sample_every)));
	run = run_info(plan, &s);
	struct verdict_input vin = { .lua = &b.src.lua, .libs = b.src.libs, .n_libs = b.src.n_libs,
				     .results = s.results, .thresholds = plan->thresholds, .run = run };
	struct diag_err verr = { 0 };
	bool lua_ok = verdict_run(&vin, &verdicts, &sections, &verr) == 0;
	struct report_input in = { .plan = plan, .recipe_sha256 = sha, .session = &s,
				   .verdicts = verdicts, .verdict_error = lua_ok ? NULL : verr.msg,
				   .sections = sections, .preflight = preflight };
	report = report_build(&in);
	if (write_outputs(c, &outs, report, s.results))
		code = DIAG_EXIT_RUNTIME;
	else if (!lua_ok) {
		fprintf(stderr, "diagnose: %s\n", verr.msg);
		code = DIAG_EXIT_RUNTIME;
	} else if (s.stop_reason == STOP_TARGET_EXITED && s.events == 0) {
		fprintf(stderr, "diagnose: process %d exited before any data was collected\n", plan->target_pid);
		code = DIAG_EXIT_RUNTIME;
	} else {
		switch (verdicts_worst(verdicts)) {
		case SEV_CRITICAL: code = DIAG_EXIT_CRITICAL; break;
		case SEV_WARNING: code = DIAG_EXIT_WARNING; break;
		default: code = DIAG_EXIT_OK; break;
		}
	}
	if (!lua_ok)
		ev.reason = verr.msg;
	goto out;
failed:
	code = fail(&err);
	ev.action = code == DIAG_EXIT_REFUSED ? "refused" : "failed";
	ev.reason = err.msg;
out:
	ev.exit_code = code;
	ev.report = report;
	if (audit_write(&au, &ev, &aerr)) {
		fprintf(stderr, "diagnose: %s\n", aerr.msg);
		if (production && code != DIAG_EXIT_REFUSED)
			code = DIAG_EXIT_RUNTIME;
	}
	discard_outputs(&outs); /* what was not written (a failed run) is not left behind empty */
	audit_close(&au);
	policy_free(&pol);
	value_free(summary);
	value_free(preflight);
	free(rates);
	value_free(report);
	value_free(run);
	value_free(verdicts);
	value_free(sections);
	session_out_free(&s);
	bundle_free(&b);
	fflush(NULL);
	/* The end record is written: a signal held since the start may now act. */
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	return code;
}

/* ---- list / show / lint --------------------------------------------------------------------- */

static int cmd_list(const struct cli *c)
{
	char dir[PATH_MAX];
	if (recipe_dir_find(c->recipes_dir, dir, sizeof(dir))) {
		fputs("diagnose: no recipes directory found (--recipes DIR, $DIAGNOSE_RECIPES, ./recipes)\n", stderr);
		return DIAG_EXIT_USAGE;
	}
	size_t n;
	char **names = recipe_list_names(dir, &n);
	int code = DIAG_EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		struct recipe *r;
		struct diag_err err;
		char *path = xasprintf("%s/%s.yaml", dir, names[i]);
		int rc = recipe_load(path, &r, &err);
		free(path);
		if (rc == 0) {
			char approval[256];
			approval_status(r->path, approval, sizeof(approval));
			printf("%-16s %s\n%-16s   %s\n%-16s   approval: %s\n", r->name, r->summary, "",
			       r->symptom, "", approval);
			recipe_free(r);
		} else {
			printf("%-16s INVALID: %s\n", names[i], err.msg);
			code = DIAG_EXIT_USAGE;
		}
		free(names[i]);
	}
	free(names);
	return code;
}

static int cmd_show(const struct cli *c)
{
	struct diag_err err;
	struct bundle b;
	char path[PATH_MAX];
	struct plan_args args = { .pid = 0, .duration_s = c->duration_s, .check_target = false,
				  .params = c->params, .n_params = c->n_params };
	if (recipe_resolve(c->symptom, c->recipes_dir, path, sizeof(path), &err) ||
	    bundle_load(path, false, &args, &b, &err))
		return fail(&err);
	const struct recipe *r = b.recipe;
	struct plan *plan = b.plan; /* the pre-flight may set a probe's sampling */
	printf("%s — %s\n  %s\n  file: %s\n  lua:  %s\n", r->name, r->summary, r->symptom, r->path,
	       b.src.lua.path);
	for (size_t i = 0; i < b.src.n_libs; i++)
		printf("  lib:  %s\n", b.src.libs[i].path);
	printf("  target: %s; duration %.3g s (max %u s)\n", r->target_required ? "--pid required" : "none",
	       plan->duration_s, r->budgets.max_duration_s);
	printf("  budgets: sampling <= %u Hz, BPF CPU <= %.2f%%, maps <= %llu bytes (this plan: %llu)\n",
	       r->budgets.max_sample_hz, r->budgets.max_cpu_pct,
	       (unsigned long long)r->budgets.max_map_bytes, (unsigned long long)plan->map_bytes);
	for (unsigned i = 0; i < plan->n_probes; i++) {
		const struct plan_probe *pp = &plan->probes[i];
		printf("  probe %-10s %-14s %s\n", pp->rp->id, pp->kind->name, pp->kind->summary);
		printf("      attach: ");
		for (const char *const *v = pp->cfg.variants; *v; v++)
			printf("%s%s", v == pp->cfg.variants ? "" : " > ", *v);
		printf("%s\n", pp->rp->filters.pid ? (strcmp(pp->rp->filters.pid, "target") == 0
							   ? "; filter: pid = --pid (all threads)"
							   : "; filter: pid")
						   : "");
		for (size_t o = 0; o < pp->kind->n_options; o++) {
			if (pp->kind->options[o].type == OPT_STRING)
				printf("      %s = %s  (%s)\n", pp->kind->options[o].name,
				       pp->cfg.str[o] ? pp->cfg.str[o] : "", pp->kind->options[o].help);
			else
				printf("      %s = %llu  (%s)\n", pp->kind->options[o].name,
				       (unsigned long long)pp->cfg.opt[o], pp->kind->options[o].help);
		}
	}
	for (unsigned i = 0; i < r->n_params; i++) {
		static const char *const types[] = { "integer", "string", "symbol", "pid", "duration" };
		const struct recipe_param *rp = &r->params[i];
		printf("  param %s (%s%s%s%s%s) = %s%s%s\n", rp->name, types[rp->type],
		       rp->min || rp->max ? " " : "", rp->min ? rp->min : "", rp->min || rp->max ? ".." : "",
		       rp->max ? rp->max : "", value_get_str(plan->params, rp->name),
		       rp->description ? "  " : "", rp->description ? rp->description : "");
	}
	if (r->n_thresholds)
		printf("  thresholds:");
	for (unsigned i = 0; i < r->n_thresholds; i++)
		printf(" %s=%s", r->thresholds[i].key, r->thresholds[i].value);
	if (r->n_thresholds)
		putchar('\n');
	bundle_free(&b);
	return DIAG_EXIT_OK;
}

/* One recipe: the schema first (nothing else can be checked without it), then the plan against
 * the catalog and budgets, and the Lua snippet and libraries, each reported on its own line. */
static int lint_file(const char *path)
{
	struct diag_err err = { 0 };
	struct recipe_sources src;
	struct recipe *r = NULL;
	struct plan *plan = NULL;
	int problems = 0;
	if (sources_read_recipe(&src, path, false, &err) ||
	    recipe_load_buffer(src.recipe.path, src.recipe.data, src.recipe.len, &r, &err)) {
		printf("%s\n", err.msg);
		sources_free(&src);
		return 1;
	}
	struct plan_args args = { .check_target = false };
	if (plan_build(r, &args, &plan, &err)) {
		printf("%s\n", err.msg);
		problems++;
	}
	if (sources_read_lua(&src, r->lua, false, &err)) {
		printf("%s: lua: %s\n", path, err.msg);
		problems++;
	} else {
		for (size_t i = 0; i <= src.n_libs; i++)
			if (verdict_check_syntax(i < src.n_libs ? &src.libs[i] : &src.lua, &err)) {
				printf("%s: lua: %s\n", path, err.msg);
				problems++;
			}
	}
	plan_free(plan);
	recipe_free(r);
	sources_free(&src);
	return problems;
}

static int cmd_lint(int argc, char **argv)
{
	int problems = 0, files = 0;
	char *dflt[] = { (char *)"recipes" };
	if (argc == 0) {
		argc = 1;
		argv = dflt;
	}
	for (int i = 0; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			printf("%s: %s\n", argv[i], strerror(errno));
			problems++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			problems += lint_file(argv[i]);
			files++;
			continue;
		}
		size_t n;
		char **names = recipe_list_names(argv[i], &n);
		for (size_t k = 0; k < n; k++) {
			char *path = xasprintf("%s/%s.yaml", argv[i], names[k]);
			problems += lint_file(path);
			free(path);
			files++;
			free(names[k]);
		}
		free(names);
	}
	fprintf(stderr, "lint: %d recipe%s, %d problem%s\n", files, files == 1 ? "" : "s", problems,
		problems == 1 ? "" : "s");
	return problems ? DIAG_EXIT_USAGE : DIAG_EXIT_OK;
}

/* ---- approve / verify ---------------------------------------------------------------------- */

static int cmd_approve(const struct cli *c, int argc, char **argv)
{
	if (argc == 0)
		return usage_error("approve needs at least one RECIPE (name or path)", NULL);
	char uid[32];
	snprintf(uid, sizeof(uid), "uid %u", (unsigned)getuid());
	const char *by = c->by;
	if (!by && !((by = getenv("SUDO_USER")) && *by) && !((by = getenv("USER")) && *by))
		by = uid;
	for (const char *p = by; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			return usage_error("--by: control characters", NULL);
	if (!*by || *by == ' ' || by[strlen(by) - 1] == ' ' || strlen(by) > 128)
		return usage_error("--by: empty, padded or longer than 128 characters", by);
	char **paths = xcalloc((size_t)argc, sizeof(char *));
	struct diag_err err = { 0 };
	int code = DIAG_EXIT_OK;
	for (int i = 0; i < argc && code == DIAG_EXIT_OK; i++) {
		char path[PATH_MAX];
		if (recipe_resolve(argv[i], c->recipes_dir, path, sizeof(path), &err))
			code = fail(&err);
		else
			paths[i] = xstrdup(path);
	}
	if (code == DIAG_EXIT_OK && approval_approve(paths, (size_t)argc, c->lock, by, stdout, &err))
		code = fail(&err);
	for (int i = 0; i < argc; i++)
		free(paths[i]);
	free(paths);
	return code;
}

static int cmd_verify(const struct cli *c)
{
	char path[PATH_MAX + 32], dir[PATH_MAX];
	struct diag_err err = { 0 };
	if (c->lock)
		snprintf(path, sizeof(path), "%s", c->lock);
	else if (recipe_dir_find(c->recipes_dir, dir, sizeof(dir)) == 0)
		snprintf(path, sizeof(path), "%s/%s", dir, APPROVAL_LOCK_NAME);
	else
		return usage_error("no recipes directory found (--lock FILE, --recipes DIR, "
				   "$DIAGNOSE_RECIPES, ./recipes)", NULL);
	int bad = approval_verify(path, stdout, &err);
	if (bad < 0)
		return fail(&err);
	return bad ? DIAG_EXIT_REFUSED : DIAG_EXIT_OK;
}

int main(int argc, char **argv)
{
	enum { OPT_DRY = 256, OPT_JSON, OPT_OUTPUT, OPT_FOLDED, OPT_RECIPES, OPT_PROD, OPT_PARAM, OPT_VERSION,
	       OPT_LOCK, OPT_BY, OPT_FORCE };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "param", required_argument, NULL, OPT_PARAM },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "folded", required_argument, NULL, OPT_FOLDED },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "recipes", required_argument, NULL, OPT_RECIPES },
		{ "production", no_argument, NULL, OPT_PROD },
		{ "lock", required_argument, NULL, OPT_LOCK },
		{ "by", required_argument, NULL, OPT_BY },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	struct cli c = { 0 };
	int opt;

	/* A closed stdout or stderr (`diagnose ... | head`) must not kill the run before its outputs
	 * and audit record are written: writes fail with EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	const char *mode = getenv("DIAGNOSE_MODE");
	if (mode && strcmp(mode, "production") == 0)
		c.production = true;
	/* Options may come before or after the subcommand, as in `diagnose high-cpu --pid 1`. */
	while ((opt = getopt_long(argc, argv, "p:d:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_pid(optarg, &c.pid))
				return usage_error("--pid: not a pid", optarg);
			break;
		case 'd':
			if (parse_duration(optarg, &c.duration_s))
				return usage_error("--duration: not a positive number of seconds", optarg);
			break;
		case OPT_PARAM:
			if (apply_param(&c, optarg))
				return DIAG_EXIT_USAGE;
			break;
		case OPT_DRY: c.dry_run = true; break;
		case OPT_JSON: c.json = true; break;
		case OPT_OUTPUT: c.output = optarg; break;
		case OPT_FOLDED: c.folded = optarg; break;
		case OPT_FORCE: c.force = true; break;
		case OPT_RECIPES: c.recipes_dir = optarg; break;
		case OPT_PROD: c.production = true; break;
		case OPT_LOCK: c.lock = optarg; break;
		case OPT_BY: c.by = optarg; break;
		case 'v': c.verbose = true; break;
		case 'h': usage(stdout); return DIAG_EXIT_OK;
		case OPT_VERSION: printf("diagnose %s\n", DIAG_VERSION); return DIAG_EXIT_OK;
		default: usage(stderr); return DIAG_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return DIAG_EXIT_USAGE;
	}
	const char *cmd = argv[optind];
	if (strcmp(cmd, "list") == 0)
		return cmd_list(&c);
	if (strcmp(cmd, "doctor") == 0)
		return doctor_run(stdout);
	if (strcmp(cmd, "lint") == 0)
		return cmd_lint(argc - optind - 1, argv + optind + 1);
	if (strcmp(cmd, "approve") == 0)
		return cmd_approve(&c, argc - optind - 1, argv + optind + 1);
	if (strcmp(cmd, "verify") == 0) {
		if (optind + 1 < argc)
			return usage_error("verify takes no arguments (--lock FILE)", argv[optind + 1]);
		return cmd_verify(&c);
	}
	if (strcmp(cmd, "show") == 0) {
		if (optind + 1 >= argc)
			return usage_error("show needs a SYMPTOM", NULL);
		c.symptom = argv[optind + 1];
		return cmd_show(&c);
	}
	if (optind + 1 < argc)
		return usage_error("unexpected argument", argv[optind + 1]);
	c.symptom = cmd;
	return cmd_run(&c);
}
