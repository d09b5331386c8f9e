/* main.c — the command line: parse arguments and dispatch to the subcommands.
 *
 * Owns: argument parsing, the small subcommands (list, show, lint, doctor, approve, verify),
 * printing their errors (one line, "diagnose: ...") and their exit codes. A run
 * (`diagnose SYMPTOM`) is run.c's: main only hands it the options.
 * Must not: contain the stages of a run, or probe, symptom or formatting logic.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust/approval.h"
#include "trust/audit.h"
#include "plan/catalog.h"
#include "run/chain.h"
#include "run/chain_plan.h"
#include "offline/diff.h"
#include "cli/doctor.h"
#include "kernel/kernel.h"
#include "offline/merge.h"
#include "report/outfile.h"
#include "plan/plan.h"
#include "plan/preflight.h"
#include "recipe/load.h"
#include "recipe/recipe.h"
#include "recipe/recipe_find.h"
#include "report/report.h"
#include "offline/incidents.h"
#include "offline/replay.h"
#include "run/run.h"
#include "session/session.h"
#include "plan/shape.h"
#include "cli/show_usdt.h"
#include "recipe/source.h"
#include "common/sha256.h"
#include "verdict/verdict.h"
#include "watch/watch.h"

struct cli {
	struct run_options run;  /* a run, and what show/list/approve/verify share with it */
	const char *lock, *by;   /* approve / verify: --lock FILE, --by NAME */
	const char *params[32];  /* --param NAME=VALUE for the recipe's own parameters */
	const char *lua;         /* replay: --lua FILE */
	const char *dir;         /* test: --dir DIR */
	const char *usdt;        /* show: --usdt BINARY */
	const char *thresholds[32]; /* replay: --threshold NAME=VALUE */
	size_t n_thresholds;
	struct watch_options watch; /* watch: its options (run: copied from run above) */
	const char *watch_flag;     /* the first watch-only flag given, for other commands' errors */
};

static void usage(FILE *out)
{
	fputs("usage: diagnose SYMPTOM [--pid PID | --comm NAME | --cgroup PATH | --unit NAME\n"
	      "                        | --container ID] [--duration SECONDS] [--param KEY=VALUE]...\n"
	      "                        [--dry-run] [--json] [--output FILE] [--folded FILE]\n"
	      "                        [--flamegraph FILE.svg] [--pprof FILE.pb.gz]\n"
	      "                        [--stacks-probe ID] [--force] [--follow]\n"
	      "                        [--recipes DIR] [--production] [--verbose]\n"
	      "       diagnose list | show SYMPTOM | lint [PATH...] | doctor\n"
	      "       diagnose show --usdt BINARY [--pid PID] [--json]\n"
	      "       diagnose approve RECIPE... [--by NAME] [--lock FILE] | verify [--lock FILE]\n"
	      "       diagnose replay REPORT.json [--lua FILE] [--threshold NAME=VALUE]... [--json]\n"
	      "       diagnose diff BEFORE.json AFTER.json [--json] [--flamegraph FILE.svg]\n"
	      "                     [--stacks-probe ID] [--force]\n"
	      "       diagnose merge REPORT.json... [--json]\n"
	      "       diagnose test [RECIPE...] [--dir DIR]\n"
	      "       diagnose watch [--pid PID | --comm NAME | ...] [--recipe NAME] [--every 60s]\n"
	      "                      [--state-dir DIR] [--max-cpu-pct 1] [--budget-window 1h]\n"
	      "                      [--follow-at warning|critical|never] [--follow-every 10m]\n"
	      "                      [--keep N] [--keep-bytes 256M] [--listen ADDR:PORT|none]\n"
	      "                      [--textfile FILE.prom] [--runs N]\n"
	      "       diagnose --help | --version\n"
	      "SYMPTOM is a recipe name (diagnose list) or a path to a recipe file.\n"
	      "exit: 0 ok/info, 1 runtime failure, 2 usage or invalid recipe, 3 refused,\n"
	      "      4 worst verdict warning, 5 worst verdict critical\n",
	      out);
}

static int fail(const struct diag_err *err)
{
	report_put_error(err->msg);
	return err->code ? err->code : DIAG_EXIT_RUNTIME;
}

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "diagnose: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	fputs("try 'diagnose --help'\n", stderr);
	return DIAG_EXIT_USAGE;
}

/* Numbers are written as in recipes (util.h decimal_*): no hex, sign, blank or leading zero. */
#define NOT_A_PID "not a pid (a positive decimal number)"
#define NOT_A_DURATION "not a positive number of seconds (decimal, such as 5 or 2.5)"

static int parse_pid(const char *s, int *out)
{
	uint64_t v;
	if (!decimal_uint(s, INT_MAX, &v) || v == 0)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_duration(const char *s, double *out)
{
	double v;
	if (!decimal_number(s, false, &v) || !(v > 0) || v > 86400)
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
		return parse_pid(eq + 1, &c->run.pid) ? usage_error("--param pid: " NOT_A_PID, eq + 1) : 0;
	if (klen == 8 && strncmp(kv, "duration", 8) == 0)
		return parse_duration(eq + 1, &c->run.duration_s)
			       ? usage_error("--param duration: " NOT_A_DURATION, eq + 1)
			       : 0;
	if (c->run.n_params == ARRAY_LEN(c->params))
		return usage_error("too many --param", kv);
	c->params[c->run.n_params++] = kv; /* checked against the recipe's parameters by the plan */
	c->run.params = c->params;
	return 0;
}

/* watch's own options (engine/watch/watch.h); past main's own option numbers */
enum { OPT_W_RECIPE = 400, OPT_W_EVERY, OPT_W_STATE, OPT_W_CPU, OPT_W_WINDOW, OPT_W_FOLLOW_AT,
       OPT_W_FOLLOW_EVERY, OPT_W_KEEP, OPT_W_KEEP_BYTES, OPT_W_LISTEN, OPT_W_TEXTFILE, OPT_W_RUNS };

static int watch_flag(struct cli *c, int opt, const char *arg)
{
	struct watch_options *w = &c->watch;
	uint64_t n;
	double d;
	if (!c->watch_flag)
		c->watch_flag = arg;
	switch (opt) {
	case OPT_W_RECIPE: w->recipe = arg; return 0;
	case OPT_W_EVERY:
		return (w->every_s = watch_parse_interval(arg)) > 0 ? 0
			: usage_error("--every: not an interval (90, 90s, 5m, 1h; at most a day)", arg);
	case OPT_W_STATE: w->state_dir = arg; return 0;
	case OPT_W_CPU:
		if (!decimal_number(arg, false, &d) || !(d > 0) || d > 100)
			return usage_error("--max-cpu-pct: not a percentage of one CPU above 0, at most 100", arg);
		w->max_cpu_pct = d;
		return 0;
	case OPT_W_WINDOW:
		return (w->budget_window_s = watch_parse_interval(arg)) > 0 ? 0
			: usage_error("--budget-window: not an interval (90s, 5m, 1h; at most a day)", arg);
	case OPT_W_FOLLOW_AT:
		if (!strcmp(arg, "warning") || !strcmp(arg, "critical") || !strcmp(arg, "never")) {
			w->follow_at = !strcmp(arg, "warning") ? 2 : !strcmp(arg, "critical") ? 3 : 0;
			return 0;
		}
		return usage_error("--follow-at: warning, critical or never", arg);
	case OPT_W_FOLLOW_EVERY:
		return (w->follow_every_s = watch_parse_interval(arg)) > 0 ? 0
			: usage_error("--follow-every: not an interval (30s, 10m, 1h)", arg);
	case OPT_W_KEEP:
		if (!decimal_uint(arg, 100000, &n) || n == 0)
			return usage_error("--keep: not a number of runs (1 to 100000)", arg);
		w->keep = (size_t)n;
		return 0;
	case OPT_W_KEEP_BYTES:
		return watch_parse_bytes(arg, &w->keep_bytes) ? 0
			: usage_error("--keep-bytes: not a size (1048576, 64K, 256M, 2G)", arg);
	case OPT_W_LISTEN: w->listen = arg; return 0;
	case OPT_W_TEXTFILE: w->textfile = arg; return 0;
	case OPT_W_RUNS:
		if (!decimal_uint(arg, UINT32_MAX, &n) || n == 0)
			return usage_error("--runs: not a positive number of runs", arg);
		w->max_runs = n;
		return 0;
	}
	return 0;
}

/* ---- list / show / lint --------------------------------------------------------------------- */

static int cmd_list(const struct cli *c)
{
	char dir[PATH_MAX];
	if (recipe_dir_find(c->run.recipes_dir, dir, sizeof(dir))) {
		char none[1024];
		if (c->run.recipes_dir)
			snprintf(none, sizeof(none), "--recipes %s is not a directory", c->run.recipes_dir);
		else
			recipe_dir_none(none, sizeof(none));
		fprintf(stderr, "diagnose: %s\n", none);
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

/* A kind's declared result fields (catalog.h), one line each: path, type, unit, meaning. */
static void print_result_fields(const struct probe_kind *kind)
{
	int width = 0;
	for (size_t i = 0; i < kind->n_results; i++)
		if ((int)strlen(kind->results[i].path) > width)
			width = (int)strlen(kind->results[i].path);
	printf("      results (path, type, unit, meaning):\n");
	for (size_t i = 0; i < kind->n_results; i++) {
		const struct result_field *f = &kind->results[i];
		printf("        %-*s  %-7s  %-11s  %s%s\n", width, f->path, shape_type_name(f->type),
		       f->unit ? f->unit : "-", f->optional ? "(optional) " : "", f->meaning);
	}
}

static int cmd_show(const struct cli *c)
{
	struct diag_err err;
	struct bundle b;
	char path[PATH_MAX];
	struct plan_args args = { .pid = 0, .duration_s = c->run.duration_s, .check_target = false,
				  .params = c->run.params, .n_params = c->run.n_params };
	if (recipe_resolve(c->run.symptom, c->run.recipes_dir, path, sizeof(path), &err) ||
	    bundle_load(path, false, &args, &b, &err))
		return fail(&err);
	const struct recipe *r = b.recipe;
	struct plan *plan = b.plan; /* the pre-flight may set a probe's sampling */
	printf("%s — %s\n  %s\n  file: %s\n  lua:  %s\n", r->name, r->summary, r->symptom, r->path,
	       b.src.lua.path);
	for (size_t i = 0; i < b.src.n_libs; i++)
		printf("  lib:  %s\n", b.src.libs[i].path);
	static const char *const targets[] = {
		[RECIPE_TARGET_NONE] = "none",
		[RECIPE_TARGET_PID] = "--pid required",
		[RECIPE_TARGET_PID_OPTIONAL] = "--pid, or the whole host without it",
		[RECIPE_TARGET_PROCESSES] = "--pid, --comm, --cgroup, --unit or --container required",
		[RECIPE_TARGET_PROCESSES_OPTIONAL] = "--pid, --comm, --cgroup, --unit or --container, "
						     "or the whole host without one",
	};
	printf("  target: %s; duration %.3g s (max %u s)\n", r->target < ARRAY_LEN(targets) ? targets[r->target] : "?",
	       plan->duration_s, r->budgets.max_duration_s);
	printf("  budgets: sampling <= %u Hz, BPF CPU <= %.2f%%, maps <= %llu bytes (this plan: %llu)\n",
	       r->budgets.max_sample_hz, r->budgets.max_cpu_pct,
	       (unsigned long long)r->budgets.max_map_bytes, (unsigned long long)plan->map_bytes);
	if (r->budgets.max_chain_depth)
		printf("  --follow: at most %u recipe(s) after this one, %u s for the whole chain\n",
		       r->budgets.max_chain_depth, r->budgets.max_chain_duration_s);
	for (unsigned i = 0; i < r->n_next; i++) {
		printf("    on verdict %s: %s", r->next[i].verdict, r->next[i].recipe);
		for (unsigned k = 0; k < r->next[i].n_params; k++)
			printf(" --param %s", r->next[i].params[k]);
		putchar('\n');
	}
	/* The same value the dry run prints as JSON, here as text. */
	struct value *pv = plan_to_value(plan, NULL);
	const struct value *probes = value_get(pv, "probes");
	for (size_t i = 0; probes && i < probes->arr.len; i++) {
		const struct value *v = probes->arr.items[i];
		const struct probe_kind *kind = catalog_find(value_get_str(v, "kind"));
		printf("  probe %-10s %-14s %s\n", value_get_str(v, "id"), kind->name, kind->summary);
		if (value_get_str(v, "when"))
			printf("      when: %s\n", !strcmp(value_get_str(v, "when"), "target")
						 ? "only with --pid" : "only host-wide (without --pid)");
		printf("      attach: ");
		const struct value *vs = value_get(v, "variants");
		for (size_t k = 0; vs && k < vs->arr.len; k++)
			printf("%s%s", k ? " > " : "", vs->arr.items[k]->s);
		const struct value *fs = value_get(v, "filters");
		for (size_t f = 0; fs && f < fs->obj.len; f++) {
			const char *key = fs->obj.keys[f], *text = fs->obj.vals[f]->s;
			bool whole = strcmp(key, "pid") == 0 && strcmp(text, "target") == 0;
			printf("; filter: %s = %s", key, whole ? "the target (all threads)" : text);
		}
		printf("\n      filters it honours:");
		for (unsigned bit = 1; bit & FILTER_ALL; bit <<= 1)
			if (kind->filters & bit)
				printf(" %s", filter_name((enum filter_bit)bit));
		putchar('\n');
		const struct value *opts = value_get(v, "options");
		for (size_t o = 0; opts && o < opts->obj.len; o++) {
			const struct value *ov = opts->obj.vals[o];
			int k = catalog_option_index(kind, opts->obj.keys[o]);
			printf("      %s = ", opts->obj.keys[o]);
			if (ov->type == V_STR)
				printf("%s", ov->s);
			else
				printf("%lld", (long long)ov->i);
			printf("  (%s)\n", k >= 0 ? kind->options[k].help : "");
		}
		printf("      map memory: %lld bytes\n", (long long)value_get_num(v, "map_bytes", 0));
		print_result_fields(kind);
	}
	value_free(pv);
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
	/* what only this machine's files can tell (a USDT probe missing from a binary named here) */
	for (unsigned i = 0; plan && i < plan->n_probes; i++) {
		const struct plan_probe *pp = &plan->probes[i];
		if (pp->kind->lint && pp->kind->lint(&pp->cfg, pp->kind, &err)) {
			printf("%s:%u: probes.%s.options: %s\n", path, pp->rp->line, pp->rp->id, err.msg);
			problems++;
		}
	}
	/* next: the follow-ups exist beside it, their parameters typed, no cycle within the depth */
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	struct value *chain = NULL;
	if (chain_plan(r, dir, false, false, false, &chain, &err)) {
		printf("%s\n", err.msg);
		problems++;
	}
	value_free(chain);
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
		if (recipe_resolve(argv[i], c->run.recipes_dir, path, sizeof(path), &err))
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
	else if (recipe_dir_find(c->run.recipes_dir, dir, sizeof(dir)) == 0)
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
	enum { OPT_DRY = 256, OPT_JSON, OPT_OUTPUT, OPT_FOLDED, OPT_STACKS_PROBE, OPT_FLAMEGRAPH, OPT_PPROF, OPT_RECIPES, OPT_PROD,
	       OPT_PARAM, OPT_VERSION, OPT_LOCK, OPT_BY, OPT_FORCE, OPT_LUA, OPT_THRESHOLD,
	       OPT_COMM, OPT_CGROUP, OPT_UNIT, OPT_CONTAINER, OPT_FOLLOW, OPT_DIR, OPT_USDT };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "comm", required_argument, NULL, OPT_COMM },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "unit", required_argument, NULL, OPT_UNIT },
		{ "container", required_argument, NULL, OPT_CONTAINER },
		{ "duration", required_argument, NULL, 'd' },
		{ "param", required_argument, NULL, OPT_PARAM },
		{ "dry-run", no_argument, NULL, OPT_DRY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "folded", required_argument, NULL, OPT_FOLDED },
		{ "flamegraph", required_argument, NULL, OPT_FLAMEGRAPH },
		{ "pprof", required_argument, NULL, OPT_PPROF },
		{ "stacks-probe", required_argument, NULL, OPT_STACKS_PROBE },
		{ "folded-probe", required_argument, NULL, OPT_STACKS_PROBE }, /* its first name */
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "follow", no_argument, NULL, OPT_FOLLOW },
		{ "recipes", required_argument, NULL, OPT_RECIPES },
		{ "production", no_argument, NULL, OPT_PROD },
		{ "lock", required_argument, NULL, OPT_LOCK },
		{ "by", required_argument, NULL, OPT_BY },
		{ "lua", required_argument, NULL, OPT_LUA },
		{ "threshold", required_argument, NULL, OPT_THRESHOLD },
		{ "thresholds", required_argument, NULL, OPT_THRESHOLD },
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "usdt", required_argument, NULL, OPT_USDT },
		{ "recipe", required_argument, NULL, OPT_W_RECIPE },
		{ "every", required_argument, NULL, OPT_W_EVERY },
		{ "state-dir", required_argument, NULL, OPT_W_STATE },
		{ "max-cpu-pct", required_argument, NULL, OPT_W_CPU },
		{ "budget-window", required_argument, NULL, OPT_W_WINDOW },
		{ "follow-at", required_argument, NULL, OPT_W_FOLLOW_AT },
		{ "follow-every", required_argument, NULL, OPT_W_FOLLOW_EVERY },
		{ "keep", required_argument, NULL, OPT_W_KEEP },
		{ "keep-bytes", required_argument, NULL, OPT_W_KEEP_BYTES },
		{ "listen", required_argument, NULL, OPT_W_LISTEN },
		{ "textfile", required_argument, NULL, OPT_W_TEXTFILE },
		{ "runs", required_argument, NULL, OPT_W_RUNS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	struct cli c = { 0 };
	int opt;
	watch_options_default(&c.watch);

	/* A closed stdout or stderr (`diagnose ... | head`) must not kill the run before its outputs
	 * and audit record are written: writes fail with EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	/* No network, ever: libdw fetches debug files from the debuginfod servers these name (and
	 * caches them under $HOME). Nothing here calls what does (engine/symbolize/unwind.c gives libdwfl its
	 * own callbacks); the environment loses them too, for any library that would. */
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_CACHE_PATH");
	/* Descriptors as many as allowed: a target's files, their images and the BPF objects of a
	 * recipe with many probes must not run into the soft limit of 1024. */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	const char *mode = getenv("DIAGNOSE_MODE");
	if (mode && strcmp(mode, "production") == 0)
		c.run.production = true;
	/* Options may come before or after the subcommand, as in `diagnose high-cpu --pid 1`. */
	while ((opt = getopt_long(argc, argv, "p:d:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_pid(optarg, &c.run.pid))
				return usage_error("--pid: " NOT_A_PID, optarg);
			break;
		case OPT_COMM: case OPT_CGROUP: case OPT_UNIT: case OPT_CONTAINER: {
			enum target_kind k = opt == OPT_COMM ? TARGET_COMM : opt == OPT_CGROUP ? TARGET_CGROUP
					     : opt == OPT_UNIT ? TARGET_UNIT : TARGET_CONTAINER;
			if (c.run.target.kind != TARGET_NONE && c.run.target.kind != k)
				return usage_error("give one target: --pid, --comm, --cgroup, --unit or --container",
						   target_kind_flag(k));
			c.run.target = (struct target_sel){ k, optarg };
			break;
		}
		case 'd':
			if (parse_duration(optarg, &c.run.duration_s))
				return usage_error("--duration: " NOT_A_DURATION, optarg);
			break;
		case OPT_PARAM:
			if (apply_param(&c, optarg))
				return DIAG_EXIT_USAGE;
			break;
		case OPT_DRY: c.run.dry_run = true; break;
		case OPT_JSON: c.run.json = true; break;
		case OPT_OUTPUT: c.run.output = optarg; break;
		case OPT_FOLDED: c.run.folded = optarg; break;
		case OPT_FLAMEGRAPH: c.run.flamegraph = optarg; break;
		case OPT_PPROF: c.run.pprof = optarg; break;
		case OPT_STACKS_PROBE: c.run.stacks_probe = optarg; break;
		case OPT_FORCE: c.run.force = true; break;
		case OPT_FOLLOW: c.run.follow = true; break;
		case OPT_RECIPES: c.run.recipes_dir = optarg; break;
		case OPT_PROD: c.run.production = true; break;
		case OPT_LOCK: c.lock = optarg; break;
		case OPT_BY: c.by = optarg; break;
		case OPT_LUA: c.lua = optarg; break;
		case OPT_DIR: c.dir = optarg; break;
		case OPT_USDT: c.usdt = optarg; break;
		case OPT_THRESHOLD:
			if (c.n_thresholds == sizeof(c.thresholds) / sizeof(c.thresholds[0]))
				return usage_error("--threshold: too many", optarg);
			c.thresholds[c.n_thresholds++] = optarg;
			break;
		case OPT_W_RECIPE: case OPT_W_EVERY: case OPT_W_STATE: case OPT_W_CPU: case OPT_W_WINDOW:
		case OPT_W_FOLLOW_AT: case OPT_W_FOLLOW_EVERY: case OPT_W_KEEP: case OPT_W_KEEP_BYTES:
		case OPT_W_LISTEN: case OPT_W_TEXTFILE: case OPT_W_RUNS:
			if (watch_flag(&c, opt, optarg))
				return DIAG_EXIT_USAGE;
			break;
		case 'v': c.run.verbose = true; break;
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
	if (c.watch_flag && strcmp(cmd, "watch") != 0)
		return usage_error("an option of watch", c.watch_flag);
	if (strcmp(cmd, "watch") == 0) {
		if (optind + 1 < argc)
			return usage_error("watch takes no SYMPTOM (--recipe NAME)", argv[optind + 1]);
		if (c.run.dry_run || c.run.json || c.run.output || c.run.folded || c.run.flamegraph ||
		    c.run.pprof || c.run.stacks_probe || c.run.follow || c.run.force)
			return usage_error("watch writes each run's reports into --state-dir and follows "
					   "on its own (--follow-at): --dry-run, --json, --output, --folded, "
					   "--flamegraph, --pprof, --stacks-probe, --follow and --force are "
					   "options of a single run", NULL);
		c.watch.run = c.run;
		return watch_run(&c.watch);
	}
	if (strcmp(cmd, "list") == 0)
		return cmd_list(&c);
	if (strcmp(cmd, "doctor") == 0)
		return doctor_run(stdout, c.run.recipes_dir);
	if (strcmp(cmd, "lint") == 0)
		return cmd_lint(argc - optind - 1, argv + optind + 1);
	if (strcmp(cmd, "approve") == 0)
		return cmd_approve(&c, argc - optind - 1, argv + optind + 1);
	if (strcmp(cmd, "verify") == 0) {
		if (optind + 1 < argc)
			return usage_error("verify takes no arguments (--lock FILE)", argv[optind + 1]);
		return cmd_verify(&c);
	}
	if (strcmp(cmd, "merge") == 0) {
		if (optind + 1 >= argc)
			return usage_error("merge needs REPORT.json...", NULL);
		return merge_run((const char *const *)argv + optind + 1, (size_t)(argc - optind - 1),
				 c.run.json);
	}
	if (strcmp(cmd, "diff") == 0) {
		if (optind + 3 != argc)
			return usage_error("diff needs BEFORE.json AFTER.json", optind + 3 < argc ? argv[optind + 3] : NULL);
		if (c.run.stacks_probe && !c.run.flamegraph)
			return usage_error("--stacks-probe needs --flamegraph", c.run.stacks_probe);
		struct diff_options dop = { .before = argv[optind + 1], .after = argv[optind + 2],
					    .json = c.run.json, .flamegraph = c.run.flamegraph,
					    .stacks_probe = c.run.stacks_probe, .force = c.run.force };
		return diff_run(&dop);
	}
	if (strcmp(cmd, "replay") == 0) {
		if (optind + 2 != argc)
			return usage_error("replay needs one REPORT.json", optind + 2 < argc ? argv[optind + 2] : NULL);
		struct replay_options ro = { .report_path = argv[optind + 1], .lua_path = c.lua,
					     .recipes_dir = c.run.recipes_dir, .thresholds = c.thresholds,
					     .n_thresholds = c.n_thresholds, .json = c.run.json };
		return replay_run(&ro);
	}
	if (c.lua || c.n_thresholds)
		return usage_error("--lua and --threshold are options of replay", c.lua ? c.lua : c.thresholds[0]);
	if (strcmp(cmd, "test") == 0) {
		struct incidents_options io = { .dir = c.dir, .recipes_dir = c.run.recipes_dir,
						.recipes = (const char *const *)argv + optind + 1,
						.n_recipes = (size_t)(argc - optind - 1) };
		return incidents_test(&io);
	}
	if (c.dir)
		return usage_error("--dir is an option of test", c.dir);
	if (c.usdt && strcmp(cmd, "show") != 0)
		return usage_error("--usdt is an option of show", c.usdt);
	if (strcmp(cmd, "show") == 0 && c.usdt) {
		if (optind + 1 < argc)
			return usage_error("show --usdt BINARY takes no SYMPTOM", argv[optind + 1]);
		struct diag_err err;
		return show_usdt(c.usdt, c.run.pid, c.run.json, &err) ? fail(&err) : DIAG_EXIT_OK;
	}
	if (strcmp(cmd, "show") == 0) {
		if (optind + 1 >= argc)
			return usage_error("show needs a SYMPTOM", NULL);
		c.run.symptom = argv[optind + 1];
		return cmd_show(&c);
	}
	if (optind + 1 < argc)
		return usage_error("unexpected argument", argv[optind + 1]);
	if (c.run.stacks_probe && !c.run.folded && !c.run.flamegraph && !c.run.pprof)
		return usage_error("--stacks-probe needs --folded, --flamegraph or --pprof",
				   c.run.stacks_probe);
	c.run.symptom = cmd;
	return c.run.follow ? chain_run(&c.run) : run_recipe(&c.run, NULL);
}
