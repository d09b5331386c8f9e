/* plan.c — from recipe + command line to a checked plan (see plan.h).
 * Must not: touch BPF or the kernel beyond reading /proc for the target.
 */
#include "plan/plan.h"

#include "common/privilege.h"
#include "recipe/load.h"
#include "target/tfile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Decimal, as recipes write numbers (util.h): "010" is not octal 8, "0x63" is refused. */
static int parse_uint(const char *s, uint64_t *out)
{
	return decimal_uint(s, UINT64_MAX, out) ? 0 : -1;
}

static int parse_bool(const char *s, uint64_t *out)
{
	if (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on") || !strcmp(s, "1"))
		*out = 1;
	else if (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off") || !strcmp(s, "0"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* The text a recipe value stands for: "${NAME}" is the parameter's resolved value. */
static const char *param_value(const struct plan *p, const char *text)
{
	char name[64];
	if (!recipe_param_ref(text, name, sizeof(name)))
		return text;
	const char *v = value_get_str(p->params, name);
	return v ? v : text;
}

static int resolve_params(struct plan *p, const struct plan_args *a, struct diag_err *err)
{
	const struct recipe *r = p->recipe;
	p->params = value_obj();
	value_set_str(p->params, "pid", "");
	value_set_str(p->params, "duration", "");
	for (size_t i = 0; i < a->n_params; i++) {
		const char *kv = a->params[i], *eq = strchr(kv, '=');
		char name[64];
		if (!eq || (size_t)(eq - kv) >= sizeof(name))
			return diag_fail(err, DIAG_EXIT_USAGE, "--param %s: expected NAME=VALUE", kv);
		snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
		const struct recipe_param *rp = recipe_param_find(r, name);
		if (!rp) {
			char known[256] = "pid, duration";
			for (unsigned k = 0; k < r->n_params; k++)
				snprintf(known + strlen(known), sizeof(known) - strlen(known), ", %s",
					 r->params[k].name);
			return diag_fail(err, DIAG_EXIT_USAGE, "--param %s: recipe %s has no parameter %s (known: %s)",
					 kv, r->name, name, known);
		}
		const char *why = recipe_param_check(rp, eq + 1);
		if (why) {
			char bounds[80] = "";
			if (rp->min || rp->max)
				snprintf(bounds, sizeof(bounds), " (allowed: %s..%s)", rp->min ? rp->min : "",
					 rp->max ? rp->max : "");
			return diag_fail(err, DIAG_EXIT_USAGE, "--param %s: %s%s", kv, why, bounds);
		}
		value_set_str(p->params, name, eq + 1);
	}
	for (unsigned k = 0; k < r->n_params; k++) {
		const struct recipe_param *rp = &r->params[k];
		if (value_get(p->params, rp->name))
			continue;
		if (!rp->dflt)
			return diag_fail(err, DIAG_EXIT_USAGE, "recipe %s needs --param %s=VALUE%s%s",
					 r->name, rp->name, rp->description ? ": " : "",
					 rp->description ? rp->description : "");
		value_set_str(p->params, rp->name, rp->dflt);
	}
	return 0;
}

/* Per-CPU maps are allocated for every possible CPU, not only the online ones. */
static int possible_cpus(int online)
{
	int n = cpu_list_read("/sys/devices/system/cpu/possible", NULL);
	return n > online ? n : online;
}

static int resolve_options(const struct plan *plan, struct plan_probe *pp, struct diag_err *err)
{
	const struct recipe *r = plan->recipe;
	int ncpus = plan->possible_cpus;
	const struct probe_kind *k = pp->kind;
	const struct recipe_probe *rp = pp->rp;

	for (size_t i = 0; i < k->n_options; i++) {
		pp->cfg.opt[i] = k->options[i].dflt;
		pp->cfg.str[i] = k->options[i].dflt_str;
	}
	for (unsigned i = 0; i < rp->n_options; i++) {
		const struct recipe_kv *kv = &rp->options[i];
		const char *text = param_value(plan, kv->value);
		int idx = catalog_option_index(k, kv->key);
		if (idx < 0)
			return diag_fail(err, DIAG_EXIT_USAGE, "%s:%u: probes.%s.options.%s: probe kind %s has no such option",
					 r->path, kv->line, rp->id, kv->key, k->name);
		const struct option_spec *o = &k->options[idx];
		uint64_t v;
		if (o->type == OPT_STRING) {
			const char *why = o->check ? o->check(text) : NULL;
			if (why)
				return diag_fail(err, DIAG_EXIT_USAGE, "%s:%u: probes.%s.options.%s: \"%s\": %s",
						 r->path, kv->line, rp->id, kv->key, text, why);
			pp->cfg.str[idx] = text;
			continue;
		}
		if (o->type == OPT_BOOL ? parse_bool(text, &v) : parse_uint(text, &v))
			return diag_fail(err, DIAG_EXIT_USAGE, "%s:%u: probes.%s.options.%s: expected %s, got \"%s\"",
					 r->path, kv->line, rp->id, kv->key,
					 o->type == OPT_BOOL ? "true or false" : "an unsigned integer", text);
		if (o->type == OPT_UINT && (v < o->min || v > o->max))
			return diag_fail(err, DIAG_EXIT_USAGE, "%s:%u: probes.%s.options.%s: %" PRIu64
					 " is outside %" PRIu64 "..%" PRIu64,
					 r->path, kv->line, rp->id, kv->key, v, o->min, o->max);
		pp->cfg.opt[idx] = v;
	}
	for (size_t i = 0; i < k->n_options; i++) {
		const struct option_spec *o = &k->options[i];
		if (o->type == OPT_STRING && !pp->cfg.str[i])
			return diag_fail(err, DIAG_EXIT_USAGE, "%s:%u: probes.%s.options.%s: required by probe kind %s",
					 r->path, rp->line, rp->id, o->name, k->name);
		if (o->role == OPT_ROLE_SAMPLE_HZ)
			pp->sample_hz = pp->cfg.opt[i];
		if (o->role == OPT_ROLE_MAP_ENTRIES)
			pp->map_bytes += pp->cfg.opt[i] * o->bytes_per_entry * (o->per_cpu ? (uint64_t)ncpus : 1);
	}
	return 0;
}

static int resolve_variants(const struct recipe *r, struct plan_probe *pp, struct diag_err *err)
{
	const struct recipe_probe *rp = pp->rp;
	size_t n = 0;
	if (rp->n_attach == 0) {
		for (const char *const *v = pp->kind->variants; *v && n < ARRAY_LEN(pp->variants) - 1; v++)
			pp->variants[n++] = *v;
	}
	for (unsigned i = 0; i < rp->n_attach && n < ARRAY_LEN(pp->variants) - 1; i++) {
		const char *const *v = pp->kind->variants;
		while (*v && strcmp(*v, rp->attach[i]) != 0)
			v++;
		if (!*v)
			return diag_fail(err, DIAG_EXIT_USAGE, "%s:%u: probes.%s.attach: %s has no attach variant \"%s\"",
					 r->path, rp->line, rp->id, pp->kind->name, rp->attach[i]);
		pp->variants[n++] = *v;
	}
	pp->variants[n] = NULL;
	pp->cfg.variants = pp->variants;
	return 0;
}

/* A probe's filters as written, parameters substituted. */
static struct filter_text filter_text_of(const struct plan *plan, const struct recipe_filters *f)
{
#define TEXT(field) (f->field ? param_value(plan, f->field) : NULL)
	struct filter_text text = { TEXT(pid), TEXT(tid), TEXT(comm), TEXT(cgroup), TEXT(device),
				    TEXT(local_port), TEXT(remote_port), TEXT(remote_addr) };
#undef TEXT
	/* `target: optional-pid` run without --pid: filters on the target fall away (whole host) */
	if (recipe_target_optional(plan->recipe->target) && plan->target_pid <= 0 && !plan->target) {
		if (text.pid && !strcmp(text.pid, "target"))
			text.pid = NULL;
		if (text.cgroup && !strcmp(text.cgroup, "target"))
			text.cgroup = NULL;
	}
	return text;
}

static int resolve_filters(const struct plan *plan, const struct plan_args *a, struct plan_probe *pp,
			   struct diag_err *err)
{
	struct filter_text text = filter_text_of(plan, &pp->rp->filters);
	/* lint and show check the filters' form only: names resolve on the machine that runs it.
	 * A set of processes resolves "target" through its first process, then filters on the set. */
	int pid = plan->target ? target_first_pid(plan->target) : a->pid;
	if (filters_resolve(&text, pp->kind->filters, pid, a->check_target, &pp->cfg.filter, err))
		return diag_wrap(err, "%s:%u: probes.%s (%s)", plan->recipe->path, pp->rp->line,
				 pp->rp->id, pp->kind->name);
	const struct target *t = plan->target;
	if (t && text.pid && !strcmp(text.pid, "target")) {
		pp->cfg.filter.pid = 0;
		pp->cfg.filter.pid_set = true;
		pp->cfg.filter.target = t;
	}
	if (t && text.cgroup && !strcmp(text.cgroup, "target")) {
		/* the set already says which tasks: a cgroup id matches one directory exactly, not
		 * the descendants a selection covers, nor the cgroups of a --comm set's processes */
		pp->cfg.filter.cgroup_id = 0;
		pp->cfg.filter.cgroup_path[0] = '\0';
	}
	return 0;
}

/* A probe's `when:` against the run: with a target (--pid or a set of processes) or host-wide. */
static bool probe_runs(const struct recipe_probe *rp, bool has_target)
{
	return rp->when == RECIPE_WHEN_ALWAYS || (rp->when == RECIPE_WHEN_TARGET) == has_target;
}

/* How process pid was started, cmdline[0], into p->target_started_as when it says more than
 * its executable does (a symlink's name: redis-server for /usr/bin/redis-check-rdb); "" when it
 * is the exe's path, its base name, empty, or unread. Read through files (tfile.h: the target's
 * memory, whose lock a hostile target can hold, is read by a helper we wait for only so long;
 * NULL: a reader of its own). */
static void read_started_as(struct plan *p, int pid, struct tfile_reader *files)
{
	struct tfile_reader *r = files ? files : tfile_reader_new();
	struct diag_err ignore;
	size_t len = 0;
	tfile_reader_set_deadline(r, mono_ns() + TFILE_WAIT_NS);
	char *cmd = tfile_read_proc(r, pid, "cmdline", sizeof(p->target_started_as), &len, &ignore);
	tfile_reader_set_deadline(r, 0);
	if (!files)
		tfile_reader_free(r);
	p->target_started_as[0] = '\0';
	if (!cmd)
		return;
	const char *slash = strrchr(p->target_exe, '/');
	const char *base = slash ? slash + 1 : p->target_exe;
	if (cmd[0] && strcmp(cmd, p->target_exe) && (strchr(cmd, '/') || strcmp(cmd, base)))
		snprintf(p->target_started_as, sizeof(p->target_started_as), "%s", cmd);
	free(cmd);
}

static int check_target(struct plan *p, int pid, struct tfile_reader *files, struct diag_err *err)
{
	char path[64];
	if (pid <= 0)
		return diag_fail(err, DIAG_EXIT_USAGE, "recipe %s needs a target process: --pid PID%s",
				 p->recipe->name, recipe_target_sets(p->recipe->target)
				 ? " (or --comm NAME, --cgroup PATH, --unit NAME, --container ID)" : "");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	char *comm = read_file(path, NULL);
	if (!comm)
		return diag_fail(err, DIAG_EXIT_USAGE, "no process with pid %d", pid);
	if (privilege_on_behalf_of_user() && !privilege_can_ptrace(pid)) {
		free(comm);
		return diag_fail(err, DIAG_EXIT_REFUSED, "process %d: uid %u could not ptrace it: with "
				 "capabilities but not root, diagnose takes only such processes "
				 "(docs/production.md#running-with-capabilities)", pid, (unsigned)getuid());
	}
	comm[strcspn(comm, "\n")] = '\0';
	snprintf(p->target_comm, sizeof(p->target_comm), "%s", comm);
	free(comm);
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	ssize_t n = readlink(path, p->target_exe, sizeof(p->target_exe) - 1);
	p->target_exe[n > 0 ? n : 0] = '\0';
	if (n <= 0) /* a kernel thread has no executable */
		snprintf(p->target_exe, sizeof(p->target_exe), "[%s]", p->target_comm);
	else
		read_started_as(p, pid, files);
	p->target_pid = pid;
	return 0;
}

/* --comm / --cgroup / --unit / --container: resolved and scanned once; the names shown are the
 * first process's. */
static int check_target_set(struct plan *p, const struct target_sel *sel, struct tfile_reader *files,
			    struct diag_err *err)
{
	if (!recipe_target_sets(p->recipe->target))
		return diag_fail(err, DIAG_EXIT_USAGE, "recipe %s takes %s, not %s (its probes follow one "
				 "process: `target: %s`)", p->recipe->name,
				 p->recipe->target == RECIPE_TARGET_NONE ? "no target" : "--pid",
				 target_kind_flag(sel->kind), p->recipe->target == RECIPE_TARGET_NONE ? "none"
				 : p->recipe->target == RECIPE_TARGET_PID ? "pid" : "optional-pid");
	if (target_resolve(sel, &p->target, err))
		return -1;
	if (check_target(p, target_first_pid(p->target), files, err))
		return -1;
	p->target_pid = 0;
	return 0;
}

static struct value *thresholds_value(const struct plan *p)
{
	const struct recipe *r = p->recipe;
	struct value *t = value_obj();
	for (unsigned i = 0; i < r->n_thresholds; i++) {
		const struct recipe_kv *kv = &r->thresholds[i];
		const char *text = param_value(p, kv->value);
		double d;
		if (decimal_number(text, true, &d)) /* a number as recipes write them, else text */
			value_set_num(t, kv->key, d);
		else
			value_set_str(t, kv->key, text);
	}
	return t;
}

int plan_build(const struct recipe *r, const struct plan_args *a, struct plan **out,
	       struct diag_err *err)
{
	struct plan *p = xcalloc(1, sizeof(*p));
	p->recipe = r;
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	p->ncpus = ncpus > 0 ? (int)ncpus : 1;
	p->possible_cpus = possible_cpus(p->ncpus);
	p->duration_s = a->duration_s > 0 ? a->duration_s : r->duration_s;

	if (!(p->duration_s > 0) || p->duration_s > r->budgets.max_duration_s) {
		diag_fail(err, a->duration_s > 0 ? DIAG_EXIT_REFUSED : DIAG_EXIT_USAGE,
			  "duration %.3g s is outside the recipe's budget (0 < duration <= max_duration_s = %u)",
			  p->duration_s, r->budgets.max_duration_s);
		goto fail;
	}
	bool set = a->sel.kind != TARGET_NONE && a->sel.kind != TARGET_PID;
	if (set && a->pid) {
		diag_fail(err, DIAG_EXIT_USAGE, "--pid and %s: give one target", target_kind_flag(a->sel.kind));
		goto fail;
	}
	if (a->check_target && set && check_target_set(p, &a->sel, a->files, err))
		goto fail;
	if (a->check_target && !set && !a->pid && privilege_on_behalf_of_user() && !privilege_ptrace_any()) {
		diag_fail(err, DIAG_EXIT_REFUSED, "with capabilities but not root, a run needs a target "
			  "the caller could ptrace (--pid, --comm, --cgroup, --unit, --container): a run of "
			  "the whole host needs root or CAP_SYS_PTRACE "
			  "(docs/production.md#running-with-capabilities)");
		goto fail;
	}
	if (a->check_target && !set && (recipe_target_required(r->target) || a->pid) &&
	    check_target(p, a->pid, a->files, err))
		goto fail;
	if (a->pid && r->target == RECIPE_TARGET_NONE) {
		diag_fail(err, DIAG_EXIT_USAGE, "recipe %s takes no --pid", r->name);
		goto fail;
	}
	if (resolve_params(p, a, err))
		goto fail;
	char text[32];
	snprintf(text, sizeof(text), "%d", p->target_pid);
	value_set_str(p->params, "pid", p->target_pid > 0 ? text : "");
	snprintf(text, sizeof(text), "%g", p->duration_s);
	value_set_str(p->params, "duration", text);

	p->probes = xcalloc(r->n_probes, sizeof(*p->probes));
	p->n_probes = 0;
	for (unsigned i = 0; i < r->n_probes; i++) {
		if (a->check_target && !probe_runs(&r->probes[i], p->target_pid > 0 || p->target))
			continue; /* `when:` leaves it out of this run (lint and show keep every probe) */
		struct plan_probe *pp = &p->probes[p->n_probes++];
		pp->rp = &r->probes[i];
		pp->cfg.id = pp->rp->id;
		pp->cfg.window_s = p->duration_s;
		pp->kind = catalog_find(pp->rp->kind);
		if (!pp->kind) {
			size_t n;
			const struct probe_kind *const *all = catalog_all(&n);
			char known[256] = "";
			for (size_t k = 0; k < n; k++)
				snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
					 k ? ", " : "", all[k]->name);
			diag_fail(err, DIAG_EXIT_USAGE, "%s:%u: probes.%s.kind: unknown probe kind \"%s\" (known: %s)",
				  r->path, pp->rp->line, pp->rp->id, pp->rp->kind, known);
			goto fail;
		}
		if (resolve_options(p, pp, err) || resolve_variants(r, pp, err) ||
		    resolve_filters(p, a, pp, err))
			goto fail;
		if (pp->sample_hz > r->budgets.max_sample_hz) {
			diag_fail(err, DIAG_EXIT_REFUSED, "%s:%u: probes.%s: sampling at %" PRIu64
				  " Hz is over the budget max_sample_hz = %u", r->path, pp->rp->line,
				  pp->rp->id, pp->sample_hz, r->budgets.max_sample_hz);
			goto fail;
		}
		p->map_bytes += pp->map_bytes;
	}
	if (p->map_bytes > r->budgets.max_map_bytes) {
		diag_fail(err, DIAG_EXIT_REFUSED, "%s: maps need %" PRIu64 " bytes, over the budget max_map_bytes = %" PRIu64,
			  r->path, p->map_bytes, r->budgets.max_map_bytes);
		goto fail;
	}
	p->thresholds = thresholds_value(p);
	*out = p;
	return 0;
fail:
	plan_free(p);
	return -1;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	value_free(p->thresholds);
	value_free(p->params);
	free(p->probes);
	target_free(p->target);
	free(p);
}

struct value *plan_target_value(const struct plan *plan)
{
	struct value *t;
	if (plan->target_pid > 0) {
		t = value_obj();
		value_set_int(t, "pid", plan->target_pid);
	} else if (plan->target) {
		t = target_to_value(plan->target);
	} else {
		return NULL;
	}
	value_set_str(t, "comm", plan->target_comm);
	value_set_str(t, "exe", plan->target_exe);
	if (plan->target_started_as[0])
		value_set_str(t, "started_as", plan->target_started_as);
	return t;
}

/* ---- a recipe read once, parsed and planned from the same bytes ---------------------------- */

int bundle_load(const char *recipe_path, bool trusted, const struct plan_args *args,
		struct bundle *b, struct diag_err *err)
{
	memset(b, 0, sizeof(*b));
	if (sources_read_recipe(&b->src, recipe_path, trusted, err))
		goto fail;
	if (recipe_load_buffer(b->src.recipe.path, b->src.recipe.data, b->src.recipe.len, &b->recipe, err))
		goto fail;
	if (sources_read_lua(&b->src, b->recipe->lua, trusted, err)) {
		if (err && err->code == DIAG_EXIT_USAGE)
			diag_wrap(err, "%s: lua", recipe_path);
		goto fail;
	}
	if (args && plan_build(b->recipe, args, &b->plan, err))
		goto fail;
	return 0;
fail:
	bundle_free(b);
	return -1;
}

void bundle_free(struct bundle *b)
{
	if (!b)
		return;
	plan_free(b->plan);
	recipe_free(b->recipe);
	sources_free(&b->src);
	memset(b, 0, sizeof(*b));
}

/* ---- the plan as a value: what `show` and the dry run print ------------------------------- */

struct value *plan_to_value(const struct plan *plan, const struct value *loaded)
{
	struct value *sum = value_obj();
	value_set_num(sum, "duration_s", plan->duration_s);
	if (plan->target)
		value_obj_set(sum, "target", target_to_value(plan->target));
	value_set_int(sum, "map_bytes", (int64_t)plan->map_bytes);
	struct value *probes = value_obj_set(sum, "probes", value_arr());
	for (unsigned i = 0; i < plan->n_probes; i++) {
		const struct plan_probe *pp = &plan->probes[i];
		struct value *v = value_arr_push(probes, value_obj());
		value_set_str(v, "id", pp->rp->id);
		value_set_str(v, "kind", pp->kind->name);
		if (pp->rp->when != RECIPE_WHEN_ALWAYS)
			value_set_str(v, "when", pp->rp->when == RECIPE_WHEN_TARGET ? "target" : "host");
		const struct value *l = value_get(loaded, pp->rp->id);
		if (value_get_str(l, "variant"))
			value_set_str(v, "variant", value_get_str(l, "variant"));
		if (value_get_str(l, "note"))
			value_set_str(v, "note", value_get_str(l, "note"));
		struct value *vs = value_obj_set(v, "variants", value_arr());
		for (const char *const *var = pp->cfg.variants; *var; var++)
			value_arr_push(vs, value_str(*var));
		if (pp->cfg.filter.pid)
			value_set_int(v, "filter_pid", pp->cfg.filter.pid);
		if (pp->cfg.filter.pid_set)
			value_set_int(v, "filter_processes", (int64_t)plan->target->n_alive);
		struct filter_text text = filter_text_of(plan, &pp->rp->filters);
		filters_to_value(&text, &pp->cfg.filter, v);
		struct value *opts = value_obj_set(v, "options", value_obj());
		for (size_t o = 0; o < pp->kind->n_options; o++) {
			if (pp->kind->options[o].type == OPT_STRING)
				value_set_str(opts, pp->kind->options[o].name, pp->cfg.str[o] ? pp->cfg.str[o] : "");
			else
				value_set_int(opts, pp->kind->options[o].name, (int64_t)pp->cfg.opt[o]);
		}
		value_set_int(v, "map_bytes", (int64_t)pp->map_bytes);
	}
	const struct recipe_budgets *rb = &plan->recipe->budgets;
	struct value *b = value_obj_set(sum, "budgets", value_obj());
	value_set_int(b, "max_duration_s", rb->max_duration_s);
	value_set_int(b, "max_sample_hz", rb->max_sample_hz);
	value_set_int(b, "max_events_per_s", (int64_t)rb->max_events_per_s);
	value_set_num(b, "max_cpu_pct", rb->max_cpu_pct);
	value_set_int(b, "max_map_bytes", (int64_t)rb->max_map_bytes);
	value_set_str(b, "degrade", rb->degrade_sample ? "sample" : "refuse");
	if (rb->max_chain_depth) { /* --follow's bounds (chain.c) */
		value_set_int(b, "max_chain_depth", rb->max_chain_depth);
		value_set_int(b, "max_chain_duration_s", rb->max_chain_duration_s);
	}
	return sum;
}
