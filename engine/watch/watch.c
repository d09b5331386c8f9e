/* watch.c — `diagnose watch`: runs on a schedule, within a budget, with follow-ups, history and
 * metrics. Contract: watch.h.
 * Owns the event loop (signals, the metrics endpoint, the run in progress) and the decisions:
 * when a run starts, which follow-up runs, what a run cost. Must not collect or judge: each run is
 * run_recipe in a child process, its report written into its ring directory. Must not write a log
 * line but through say() (what a target or a recipe controls shown by the rule every output
 * shares).
 *
 * Why one file (~1,000 lines): the budget, the metrics, the child runs and the loop share the watch's
 * state (the run in progress, the history ring, what the runs have cost so far), which only the
 * loop changes; each is its own section below. */
#include "watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/chain.h"
#include "watch/httpd.h"
#include "common/json_parse.h"
#include "report/outfile.h"
#include "watch/prom.h"
#include "report/report.h"
#include "watch/ring.h"
#include "common/value.h"
#include "verdict/verdict.h"

#define SUMMARY_NAME "summary.json"
#define SUMMARY_MAX ((size_t)1 << 20)
#define MAX_RECIPES 16   /* recipes watch has run (the scheduled one and its follow-ups) */
#define MAX_LEDGER 4096  /* runs remembered for the budget window */
#define MAX_FOLLOWED 64  /* verdicts whose follow-up time is remembered */

/* A verdict's severity as a rank (verdict.h's enum: ok 0 .. critical 3), -1 when it is none. */
static int severity_rank(const char *s)
{
	int ok;
	enum severity sev = severity_parse(s, &ok);
	return ok ? (int)sev : -1;
}

void watch_options_default(struct watch_options *o)
{
	o->recipe = "triage";
	o->every_s = 60;
	o->state_dir = "/var/lib/diagnose/watch";
	o->max_cpu_pct = 1;
	o->budget_window_s = 3600;
	o->follow_at = 2;
	o->follow_every_s = 600;
	o->keep = 100;
	o->keep_bytes = (uint64_t)256 << 20;
	o->listen = "127.0.0.1:9464";
}

double watch_parse_interval(const char *s)
{
	double v, mult = 1;
	char num[32];
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n >= sizeof(num))
		return -1;
	memcpy(num, s, n + 1);
	if (num[n - 1] == 's' || num[n - 1] == 'm' || num[n - 1] == 'h') {
		mult = num[n - 1] == 'h' ? 3600 : num[n - 1] == 'm' ? 60 : 1;
		num[n - 1] = '\0';
	}
	if (!decimal_number(num, false, &v) || !(v > 0) || v * mult > 86400)
		return -1;
	return v * mult;
}

bool watch_parse_bytes(const char *s, uint64_t *out)
{
	char num[32];
	size_t n = s ? strlen(s) : 0;
	uint64_t mult = 1, v;
	if (n == 0 || n >= sizeof(num))
		return false;
	memcpy(num, s, n + 1);
	const char *units = "KMG";
	const char *u = strchr(units, num[n - 1]);
	if (u && num[n - 1]) {
		mult = (uint64_t)1 << (10 * (u - units + 1));
		num[n - 1] = '\0';
	}
	if (!decimal_uint(num, UINT64_MAX / mult, &v) || v == 0)
		return false;
	*out = v * mult;
	return true;
}

/* What watch knows of one recipe it has run. */
struct recipe_stats {
	char name[64];
	uint64_t runs[5];       /* by outcome: ok, warning, critical, failed, refused */
	double last_cost_s;     /* CPU + BPF of its last run */
	double costs[4];        /* of its last 4 runs: the dearest is the next one's expected cost */
	unsigned n_costs;
	double last_wall_s;
	int64_t last_time;
	bool ran;
	struct value *verdicts; /* the last completed run's [{id, severity}] */
	struct value *metrics;  /* and its key figures [{name, value, help}] (the recipe's Lua) */
};

enum outcome { OUT_OK, OUT_WARNING, OUT_CRITICAL, OUT_FAILED, OUT_REFUSED };
static const char *const OUTCOMES[] = { "ok", "warning", "critical", "failed", "refused" };

struct ledger_row {
	uint64_t end_ns;
	double cost_s;
};

struct followed {
	char key[132]; /* recipe/verdict */
	uint64_t at_ns;
};

/* A run in progress: its child, its ring slot, and what started it. */
struct child {
	pid_t pid;
	int slotfd;
	struct ring_entry entry;
	uint64_t start_ns;
	bool scheduled;
	uint64_t term_ns, kill_ns; /* when watch, stopping, sent it SIGTERM, SIGKILL (0: not yet) */
};

/* A follow-up waiting to start as soon as the run before it has ended. */
struct pending {
	bool set;
	char recipe[64];
	char verdict[64];
	uint64_t from_seq;
	char **params;
	size_t n_params;
};

struct watch {
	const struct watch_options *o;
	struct ring ring;
	struct httpd http;
	int sigfd;
	sigset_t old_mask;
	char target_label[300];
	struct recipe_stats recipes[MAX_RECIPES];
	size_t n_recipes;
	struct ledger_row ledger[MAX_LEDGER];
	size_t n_ledger;
	struct followed followed[MAX_FOLLOWED];
	size_t n_followed;
	struct child child;
	struct pending pending;
	uint64_t scheduled_runs;
	uint64_t skipped_budget, skipped_disk, skipped_rate;
	uint64_t follow_ups;
	double cpu_s_total, bpf_s_total;
	double endpoint_s_total; /* the metrics endpoint's CPU, outside the budget */
	struct rusage self_last;
	bool stopping;
	int first_code; /* the exit code of the first scheduled run, -1 before it */
};

static struct recipe_stats *stats_of(struct watch *w, const char *name)
{
	for (size_t i = 0; i < w->n_recipes; i++)
		if (!strcmp(w->recipes[i].name, name))
			return &w->recipes[i];
	if (w->n_recipes == MAX_RECIPES)
		return &w->recipes[MAX_RECIPES - 1]; /* follow-ups of follow-ups: never this many */
	struct recipe_stats *s = &w->recipes[w->n_recipes++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

/* A line of watch's log (its stderr): the whole line through the rule every output shares
 * (report_put_text: each byte that is not UTF-8 or is a control as "\xNN"), for most lines quote
 * what a target or a recipe controls — the target's name, verdict ids and follow-ups from a
 * recipe's Lua, a run's last line of errors, paths. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	char *line = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	report_put_text(stderr, n >= 0 ? line : fmt);
	fputc('\n', stderr);
	if (n >= 0)
		free(line);
}

/* ---- the budget ------------------------------------------------------------------------------ */

static void ledger_add(struct watch *w, double cost_s)
{
	if (w->n_ledger == MAX_LEDGER) {
		memmove(w->ledger, w->ledger + 1, (MAX_LEDGER - 1) * sizeof(w->ledger[0]));
		w->n_ledger--;
	}
	w->ledger[w->n_ledger++] = (struct ledger_row){ mono_ns(), cost_s };
}

/* watch's own CPU since the last look (its loop, the textfile, the runs it forks) goes on the
 * ledger too; the metrics endpoint's (httpd_cpu_ns: serving, the bodies built) does not — scrapes,
 * and whoever else connects, are no run's cost and must not use up the budget runs need — and is
 * counted apart (diagnose_watch_cpu_seconds_total{kind="endpoint"}). */
static void ledger_self(struct watch *w)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return;
	double now = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	double was = w->self_last.ru_utime.tv_sec + w->self_last.ru_stime.tv_sec +
		     (w->self_last.ru_utime.tv_usec + w->self_last.ru_stime.tv_usec) / 1e6;
	double endpoint = (double)httpd_cpu_ns(&w->http) / 1e9;
	double own = (now - was) - (endpoint - w->endpoint_s_total);
	w->self_last = ru;
	w->endpoint_s_total = endpoint;
	if (own > 0) {
		ledger_add(w, own);
		w->cpu_s_total += own;
	}
}

static double budget_s(const struct watch *w)
{
	return w->o->max_cpu_pct / 100.0 * w->o->budget_window_s;
}

static double spent_s(const struct watch *w)
{
	uint64_t now = mono_ns(), span = (uint64_t)(w->o->budget_window_s * 1e9);
	double sum = 0;
	for (size_t i = 0; i < w->n_ledger; i++)
		if (now - w->ledger[i].end_ns < span)
			sum += w->ledger[i].cost_s;
	return sum;
}

/* Whether a run of recipe fits what is left of the budget: the dearest of its last runs expected,
 * with a quarter more for the spread (a recipe never run yet: its first run is what measures it,
 * if anything is left). */
static bool budget_allows(struct watch *w, const char *recipe)
{
	ledger_self(w);
	const struct recipe_stats *s = stats_of(w, recipe);
	double expect = 0;
	for (unsigned i = 0; i < s->n_costs && i < 4; i++)
		expect = s->costs[i] > expect ? s->costs[i] : expect;
	double spent = spent_s(w);
	return spent < budget_s(w) && spent + 1.25 * expect <= budget_s(w);
}

/* ---- metrics ---------------------------------------------------------------------------------- */

/* A recipe's last figure of that name, NULL when it gave none. */
static const struct value *metric_named(const struct recipe_stats *rs, const char *name)
{
	const struct value *ms = rs->metrics;
	for (size_t q = 0; ms && ms->type == V_ARR && q < ms->arr.len; q++) {
		const char *n = value_get_str(ms->arr.items[q], "name");
		if (n && !strcmp(n, name))
			return ms->arr.items[q];
	}
	return NULL;
}

/* The key figures the recipes' Lua declared (a.metric), one family per name — diagnose_NAME,
 * its help the first recipe's — with a sample per recipe that gave it in its last completed run. */
static void write_recipe_metrics(struct watch *w, FILE *out)
{
	for (size_t i = 0; i < w->n_recipes; i++) {
		const struct value *ms = w->recipes[i].metrics;
		for (size_t k = 0; ms && ms->type == V_ARR && k < ms->arr.len; k++) {
			const char *name = value_get_str(ms->arr.items[k], "name");
			bool earlier = false; /* its family was written with an earlier recipe's */
			for (size_t j = 0; name && j < i && !earlier; j++)
				earlier = metric_named(&w->recipes[j], name) != NULL;
			char full[96];
			snprintf(full, sizeof(full), "diagnose_%s", name ? name : "");
			if (!name || earlier || !prom_metric_name_ok(full))
				continue;
			prom_family(out, full, "gauge", value_get_str(ms->arr.items[k], "help"));
			for (size_t j = i; j < w->n_recipes; j++) {
				const struct value *m = metric_named(&w->recipes[j], name);
				const char *l[] = { "recipe", w->recipes[j].name, "target", w->target_label };
				if (m)
					prom_sample(out, full, l, 2, value_get_num(m, "value", 0));
			}
		}
	}
}

/* A gauge with a sample per recipe that has run: one figure of its last run. */
enum last_run_figure { LAST_TIME, LAST_WALL, LAST_COST };

static void write_last_run_gauge(const struct watch *w, FILE *out, const char *name, const char *help,
				 enum last_run_figure fig)
{
	prom_family(out, name, "gauge", help);
	for (size_t i = 0; i < w->n_recipes; i++) {
		const struct recipe_stats *rs = &w->recipes[i];
		if (!rs->ran)
			continue;
		const char *l[] = { "recipe", rs->name };
		prom_sample(out, name, l, 1, fig == LAST_TIME ? (double)rs->last_time
					     : fig == LAST_WALL ? rs->last_wall_s : rs->last_cost_s);
	}
}

static void write_metrics(struct watch *w, FILE *out)
{
	const char *t = w->target_label;
	prom_family(out, "diagnose_verdict", "gauge",
		    "A verdict of the last completed run of a recipe (1 while it stands); severity: info, "
		    "warning or critical");
	for (size_t i = 0; i < w->n_recipes; i++) {
		const struct value *vs = w->recipes[i].verdicts;
		for (size_t k = 0; vs && k < vs->arr.len; k++) {
			const char *sev = value_get_str(vs->arr.items[k], "severity");
			if (severity_rank(sev) < 1)
				continue;
			const char *l[] = { "recipe", w->recipes[i].name, "verdict",
					    value_get_str(vs->arr.items[k], "id"), "severity", sev, "target", t };
			prom_sample(out, "diagnose_verdict", l, 4, 1);
		}
	}
	prom_family(out, "diagnose_worst_severity", "gauge",
		    "The worst verdict of a recipe's last completed run: 0 ok, 1 info, 2 warning, 3 critical");
	for (size_t i = 0; i < w->n_recipes; i++) {
		const struct value *vs = w->recipes[i].verdicts;
		if (!vs)
			continue;
		int worst = 0;
		for (size_t k = 0; k < vs->arr.len; k++) {
			int r = severity_rank(value_get_str(vs->arr.items[k], "severity"));
			worst = r > worst ? r : worst;
		}
		const char *l[] = { "recipe", w->recipes[i].name, "target", t };
		prom_sample(out, "diagnose_worst_severity", l, 2, worst);
	}
	write_recipe_metrics(w, out);
	prom_family(out, "diagnose_watch_runs_total", "counter",
		    "Runs ended, by recipe and outcome (ok, warning, critical, failed, refused)");
	for (size_t i = 0; i < w->n_recipes; i++)
		for (int k = 0; k < 5; k++) {
			const char *l[] = { "recipe", w->recipes[i].name, "outcome", OUTCOMES[k] };
			prom_sample(out, "diagnose_watch_runs_total", l, 2, (double)w->recipes[i].runs[k]);
		}
	prom_family(out, "diagnose_watch_runs_skipped_total", "counter",
		    "Runs not started: budget (the CPU budget would be exceeded), disk (the state "
		    "directory's file system is nearly full), rate_limited (a follow-up already ran for "
		    "that verdict within --follow-every)");
	const char *rb[] = { "reason", "budget" }, *rd[] = { "reason", "disk" }, *rr[] = { "reason", "rate_limited" };
	prom_sample(out, "diagnose_watch_runs_skipped_total", rb, 1, (double)w->skipped_budget);
	prom_sample(out, "diagnose_watch_runs_skipped_total", rd, 1, (double)w->skipped_disk);
	prom_sample(out, "diagnose_watch_runs_skipped_total", rr, 1, (double)w->skipped_rate);
	prom_family(out, "diagnose_watch_follow_ups_total", "counter", "Follow-up runs started on a verdict");
	prom_sample(out, "diagnose_watch_follow_ups_total", NULL, 0, (double)w->follow_ups);
	prom_family(out, "diagnose_watch_cpu_seconds_total", "counter",
		    "CPU diagnose spent: user_space (the runs' processes and watch itself, user and "
		    "system time) and bpf (its BPF programs' run time), both within the budget; endpoint "
		    "(serving this endpoint, outside the budget)");
	const char *ku[] = { "kind", "user_space" }, *kb[] = { "kind", "bpf" },
		   *ke[] = { "kind", "endpoint" };
	prom_sample(out, "diagnose_watch_cpu_seconds_total", ku, 1, w->cpu_s_total);
	prom_sample(out, "diagnose_watch_cpu_seconds_total", kb, 1, w->bpf_s_total);
	prom_sample(out, "diagnose_watch_cpu_seconds_total", ke, 1, w->endpoint_s_total);
	prom_family(out, "diagnose_watch_budget_ratio", "gauge",
		    "CPU spent over the budget window, as a share of the budget (1: the budget is used up)");
	prom_sample(out, "diagnose_watch_budget_ratio", NULL, 0, budget_s(w) > 0 ? spent_s(w) / budget_s(w) : 0);
	write_last_run_gauge(w, out, "diagnose_watch_last_run_timestamp_seconds",
			     "When a recipe's last run started (seconds since the epoch)", LAST_TIME);
	write_last_run_gauge(w, out, "diagnose_watch_last_run_duration_seconds",
			     "A recipe's last run, start to end (wall time)", LAST_WALL);
	write_last_run_gauge(w, out, "diagnose_watch_last_run_cost_seconds",
			     "A recipe's last run's CPU (its process's user and system time plus its BPF "
			     "programs')", LAST_COST);
	prom_family(out, "diagnose_watch_history_runs", "gauge", "Runs kept in the state directory");
	prom_sample(out, "diagnose_watch_history_runs", NULL, 0, (double)w->ring.n);
	uint64_t bytes = 0;
	for (size_t i = 0; i < w->ring.n; i++)
		bytes += w->ring.entries[i].bytes;
	prom_family(out, "diagnose_watch_history_bytes", "gauge", "Bytes of the runs kept in the state directory");
	prom_sample(out, "diagnose_watch_history_bytes", NULL, 0, (double)bytes);
}

static void metrics_body(void *ctx, char **body, size_t *len)
{
	struct watch *w = ctx;
	ledger_self(w);
	FILE *f = open_memstream(body, len);
	if (!f) {
		*body = NULL;
		*len = 0;
		return;
	}
	write_metrics(w, f);
	fclose(f);
}

static void write_textfile(struct watch *w)
{
	if (!w->o->textfile)
		return;
	struct diag_err err = { 0 };
	struct outfile *of = outfile_create("--textfile", w->o->textfile, true, &err);
	if (of) {
		write_metrics(w, outfile_stream(of));
		outfile_close(of, &err);
	}
	if (err.msg[0])
		say("diagnose watch: %s", err.msg);
}

/* ---- one run, in a child process ------------------------------------------------------------ */

static int open_in(int dirfd, const char *name)
{
	return openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* What the parent reads of a run: its verdicts, cost and follow-up, small. */
static void write_summary(int slotfd, int code, const struct value *report, struct value *follow)
{
	struct value *s = value_obj();
	value_set_int(s, "exit_code", code);
	if (report) {
		const char *stop = value_get_str(report, "stop_reason");
		value_set_str(s, "stop_reason", stop ? stop : "?");
		const struct value *o = value_get(report, "overhead");
		value_set_num(s, "bpf_cpu_s", value_get_num(o, "bpf_cpu_s", 0));
		const struct value *m = value_get(report, "metrics");
		if (m && m->type == V_ARR)
			value_obj_set(s, "metrics", value_copy(m));
		struct value *vs = value_obj_set(s, "verdicts", value_arr());
		const struct value *rv = value_get(report, "verdicts");
		for (size_t i = 0; rv && rv->type == V_ARR && i < rv->arr.len; i++) {
			struct value *x = value_arr_push(vs, value_obj());
			value_set_str(x, "id", value_get_str(rv->arr.items[i], "id"));
			value_set_str(x, "severity", value_get_str(rv->arr.items[i], "severity"));
		}
	}
	if (follow)
		value_obj_set(s, "follow", follow);
	int fd = open_in(slotfd, SUMMARY_NAME);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f) {
		value_write_json(s, f, 0);
		fclose(f);
	}
	value_free(s);
}

/* The child: one run_recipe, its text report on stdout → report.txt, its errors → stderr.txt,
 * its JSON report → report.json, then the summary. Never returns. */
static void child_main(struct watch *w, int slotfd, const char *recipe, char **params, size_t n_params,
		       bool scheduled)
{
	sigprocmask(SIG_SETMASK, &w->old_mask, NULL);
	signal(SIGHUP, SIG_IGN); /* watch's own: reload, not a stop */
	close(w->sigfd);
	httpd_close(&w->http);
	ring_close(&w->ring); /* the run has its own slot's descriptor; the history is not its */
	/* the state directory is watch's own (checked: this user's, no one else may write), not the
	 * sudo user's: the output files go there with root's rights */
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	int out = open_in(slotfd, "report.txt"), errf = open_in(slotfd, "stderr.txt");
	if (out < 0 || errf < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(errf, STDERR_FILENO) < 0)
		_exit(DIAG_EXIT_RUNTIME);
	close(out);
	close(errf);
	char json_path[64], folded_path[64], pprof_path[64];
	snprintf(json_path, sizeof(json_path), "/proc/self/fd/%d/report.json", slotfd);
	snprintf(folded_path, sizeof(folded_path), "/proc/self/fd/%d/stacks.folded", slotfd);
	snprintf(pprof_path, sizeof(pprof_path), "/proc/self/fd/%d/profile.pb.gz", slotfd);
	struct run_options ro = w->o->run;
	ro.symptom = recipe;
	ro.output = json_path;
	ro.folded = folded_path; /* when a probe recorded stacks (stacks_if_any) */
	ro.pprof = pprof_path;
	ro.json = ro.dry_run = ro.force = ro.follow = false;
	ro.flamegraph = ro.stacks_probe = NULL;
	if (!scheduled) {
		ro.params = (const char *const *)params;
		ro.n_params = n_params;
		ro.duration_s = 0;
	}
	struct run_capture cap = { .plan_chain = scheduled, .write_outputs = true, .stacks_if_any = true };
	int code = run_recipe(&ro, &cap);
	struct value *follow = NULL;
	if (cap.report && scheduled && w->o->follow_at)
		follow = chain_pick(cap.report, &cap, &ro, w->o->follow_at >= 3);
	write_summary(slotfd, code, cap.report, follow);
	fflush(NULL);
	_exit(code);
}

static void free_pending(struct pending *p)
{
	for (size_t i = 0; i < p->n_params; i++)
		free(p->params[i]);
	free(p->params);
	memset(p, 0, sizeof(*p));
}

static int start_run(struct watch *w, const char *recipe, bool scheduled)
{
	struct diag_err err = { 0 };
	struct child *c = &w->child;
	memset(c, 0, sizeof(*c));
	int slotfd = ring_begin(&w->ring, recipe, &c->entry, &err);
	if (slotfd < 0) {
		say("diagnose watch: %s", err.msg);
		return -1;
	}
	if (!scheduled) {
		c->entry.followed = w->pending.from_seq;
		snprintf(c->entry.follow_verdict, sizeof(c->entry.follow_verdict), "%s", w->pending.verdict);
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		say("diagnose watch: fork: %s", strerror(errno));
		close(slotfd);
		ring_abandon(&w->ring, &c->entry);
		return -1;
	}
	if (pid == 0)
		child_main(w, slotfd, recipe, w->pending.params, w->pending.n_params, scheduled);
	c->pid = pid;
	c->slotfd = slotfd;
	c->start_ns = mono_ns();
	c->scheduled = scheduled;
	return 0;
}

static struct value *read_summary(int slotfd)
{
	int fd = openat(slotfd, SUMMARY_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = xmalloc(SUMMARY_MAX);
	ssize_t n = read(fd, buf, SUMMARY_MAX);
	close(fd);
	struct diag_err err;
	struct value *v = n > 0 && (size_t)n < SUMMARY_MAX ? json_parse(buf, (size_t)n, NULL, &err) : NULL;
	free(buf);
	return v;
}

/* The last line a failed or refused run wrote on its stderr (why it failed), at most len - 1
 * bytes of it as they are (say() shows them safely); "" when it wrote none. */
static void last_line_of(int slotfd, const char *name, char *out, size_t len)
{
	out[0] = '\0';
	int fd = openat(slotfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096];
	struct stat st;
	off_t from = fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(buf) ? st.st_size - (off_t)sizeof(buf) : 0;
	ssize_t n = pread(fd, buf, sizeof(buf), from);
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n <= 0)
		return;
	ssize_t start = n;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	size_t k = 0;
	for (ssize_t i = start; i < n && k + 1 < len; i++)
		out[k++] = buf[i] ? buf[i] : '?';
	out[k] = '\0';
}

/* Whether the follow-up of this verdict ran within --follow-every; records it when not. */
static bool rate_limited(struct watch *w, const char *recipe, const char *verdict)
{
	char key[132];
	snprintf(key, sizeof(key), "%s/%s", recipe, verdict);
	uint64_t now = mono_ns(), span = (uint64_t)(w->o->follow_every_s * 1e9);
	for (size_t i = 0; i < w->n_followed; i++)
		if (!strcmp(w->followed[i].key, key)) {
			if (now - w->followed[i].at_ns < span)
				return true;
			w->followed[i].at_ns = now;
			return false;
		}
	if (w->n_followed == MAX_FOLLOWED) {
		memmove(w->followed, w->followed + 1, (MAX_FOLLOWED - 1) * sizeof(w->followed[0]));
		w->n_followed--;
	}
	snprintf(w->followed[w->n_followed].key, sizeof(w->followed[0].key), "%s", key);
	w->followed[w->n_followed++].at_ns = now;
	return false;
}

static void log_time(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
}

/* The child has ended: its cost on the ledger, its verdicts kept for the metrics, its directory
 * in the ring, and its follow-up queued. */
static void finish_run(struct watch *w, int status, const struct rusage *ru)
{
	struct child *c = &w->child;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : DIAG_EXIT_RUNTIME;
	double wall = (double)(mono_ns() - c->start_ns) / 1e9;
	double cpu = ru->ru_utime.tv_sec + ru->ru_stime.tv_sec + (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
	struct value *sum = read_summary(c->slotfd);
	double bpf = sum ? value_get_num(sum, "bpf_cpu_s", 0) : 0;
	ledger_add(w, cpu + bpf);
	w->cpu_s_total += cpu;
	w->bpf_s_total += bpf;
	struct recipe_stats *s = stats_of(w, c->entry.recipe);
	s->ran = true;
	s->last_cost_s = cpu + bpf;
	s->costs[s->n_costs++ % 4] = cpu + bpf;
	s->last_wall_s = wall;
	s->last_time = c->entry.time;
	enum outcome oc = code == DIAG_EXIT_CRITICAL ? OUT_CRITICAL : code == DIAG_EXIT_WARNING ? OUT_WARNING
			  : code == DIAG_EXIT_OK ? OUT_OK : code == DIAG_EXIT_REFUSED ? OUT_REFUSED : OUT_FAILED;
	s->runs[oc]++;
	const struct value *vs = value_get(sum, "verdicts");
	if (vs && (oc == OUT_OK || oc == OUT_WARNING || oc == OUT_CRITICAL)) {
		value_free(s->verdicts);
		s->verdicts = value_copy(vs);
		value_free(s->metrics);
		s->metrics = value_get(sum, "metrics") ? value_copy(value_get(sum, "metrics")) : NULL;
	}
	c->entry.exit_code = code;
	if (vs && vs->type == V_ARR && vs->arr.len) {
		snprintf(c->entry.worst_severity, sizeof(c->entry.worst_severity), "%s",
			 value_get_str(vs->arr.items[0], "severity") ? value_get_str(vs->arr.items[0], "severity") : "");
		snprintf(c->entry.worst_id, sizeof(c->entry.worst_id), "%s",
			 value_get_str(vs->arr.items[0], "id") ? value_get_str(vs->arr.items[0], "id") : "");
	}
	char why[256] = "";
	if (code == DIAG_EXIT_RUNTIME || code == DIAG_EXIT_USAGE || code == DIAG_EXIT_REFUSED)
		last_line_of(c->slotfd, "stderr.txt", why, sizeof(why));
	close(c->slotfd);
	struct diag_err err = { 0 };
	if (ring_commit(&w->ring, &c->entry, &err))
		say("diagnose watch: %s", err.msg);
	char when[32];
	log_time(when, sizeof(when));
	say("%s %s #%llu: exit %d, %s%s%s, %.1f s, CPU %.3f s (BPF %.3f s) -> %s/%s", when,
	    c->entry.recipe, (unsigned long long)c->entry.seq, code,
	    c->entry.worst_severity[0] ? c->entry.worst_severity : "no verdict",
	    c->entry.worst_id[0] ? " " : "", c->entry.worst_id, wall, cpu + bpf, bpf, w->ring.path,
	    c->entry.dir);
	if (why[0])
		say("%s %s #%llu: %s", when, c->entry.recipe, (unsigned long long)c->entry.seq, why);
	if (c->scheduled && w->first_code < 0)
		w->first_code = code;
	const struct value *f = value_get(sum, "follow");
	const char *frecipe = value_get_str(f, "recipe"), *fverdict = value_get_str(f, "verdict");
	if (c->scheduled && !w->stopping && frecipe && fverdict) {
		if (value_get_str(f, "why_not"))
			say("%s %s #%llu: follow-up of %s not run: %s", when, c->entry.recipe,
			    (unsigned long long)c->entry.seq, fverdict, value_get_str(f, "why_not"));
		else if (rate_limited(w, c->entry.recipe, fverdict)) {
			w->skipped_rate++;
			say("%s %s #%llu: follow-up %s of %s not run: it ran less than %.0f s ago "
			    "(--follow-every)",
			    when, c->entry.recipe, (unsigned long long)c->entry.seq, frecipe,
			    fverdict, w->o->follow_every_s);
		} else {
			struct pending *p = &w->pending;
			free_pending(p);
			p->set = true;
			snprintf(p->recipe, sizeof(p->recipe), "%s", frecipe);
			snprintf(p->verdict, sizeof(p->verdict), "%s", fverdict);
			p->from_seq = c->entry.seq;
			const struct value *ps = value_get(f, "params");
			p->n_params = ps && ps->type == V_ARR ? ps->arr.len : 0;
			p->params = p->n_params ? xcalloc(p->n_params, sizeof(char *)) : NULL;
			for (size_t i = 0; i < p->n_params; i++)
				p->params[i] = xstrdup(ps->arr.items[i]->type == V_STR ? ps->arr.items[i]->s : "");
		}
	}
	value_free(sum);
	memset(c, 0, sizeof(*c));
	write_textfile(w);
}

/* The selection as a label: its kind and text, never a pid (bounded cardinality). */
static void make_target_label(struct watch *w)
{
	const struct run_options *r = &w->o->run;
	if (r->pid > 0) {
		char path[64], comm[64] = "?";
		snprintf(path, sizeof(path), "/proc/%d/comm", r->pid);
		size_t len = 0;
		char *text = read_file(path, &len);
		if (text) { /* the comm is any 15 bytes (a newline too), then the newline procfs adds */
			snprintf(comm, sizeof(comm), "%.*s",
				 (int)(len && text[len - 1] == '\n' ? len - 1 : len), text);
			free(text);
		}
		snprintf(w->target_label, sizeof(w->target_label), "process:%s", comm);
	} else if (r->target.kind != TARGET_NONE) {
		snprintf(w->target_label, sizeof(w->target_label), "%s:%s", target_kind_flag(r->target.kind) + 2,
			 r->target.text);
	} else {
		snprintf(w->target_label, sizeof(w->target_label), "host");
	}
}

/* ---- the loop -------------------------------------------------------------------------------- */

static void take_signals(struct watch *w, uint64_t *next_due)
{
	struct signalfd_siginfo si;
	while (read(w->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			int status;
			struct rusage ru;
			if (w->child.pid && wait4(w->child.pid, &status, WNOHANG, &ru) == w->child.pid)
				finish_run(w, status, &ru);
		} else if (si.ssi_signo == SIGHUP) {
			*next_due = mono_ns();
			w->n_followed = 0;
			say("diagnose watch: SIGHUP: running %s now; follow-up limits cleared "
			    "(recipes, approvals and policy are read by every run)",
			    w->o->recipe);
		} else {
			if (!w->stopping)
				say("diagnose watch: SIG%s: stopping%s",
				    sigabbrev_np((int)si.ssi_signo) ? sigabbrev_np((int)si.ssi_signo) : "?",
				    w->child.pid ? " (the run in progress ends early, its report kept)"
						 : "");
			w->stopping = true;
		}
	}
	/* a child whose SIGCHLD merged with another's */
	int status;
	struct rusage ru;
	if (w->child.pid && wait4(w->child.pid, &status, WNOHANG, &ru) == w->child.pid)
		finish_run(w, status, &ru);
}

static void maybe_start(struct watch *w, uint64_t *next_due)
{
	if (w->child.pid || w->stopping)
		return;
	if (w->pending.set) {
		char recipe[64];
		snprintf(recipe, sizeof(recipe), "%s", w->pending.recipe);
		if (!budget_allows(w, recipe)) {
			w->skipped_budget++;
			say("diagnose watch: follow-up %s of %s skipped: over the CPU budget "
			    "(%.3f of %.3f s in %.0f s)",
			    recipe, w->pending.verdict, spent_s(w), budget_s(w), w->o->budget_window_s);
		} else if (!ring_has_room(&w->ring)) {
			w->skipped_disk++;
		} else if (start_run(w, recipe, false) == 0) {
			w->follow_ups++;
		}
		free_pending(&w->pending);
		return;
	}
	if (w->o->max_runs && w->scheduled_runs >= w->o->max_runs) { /* --runs done, follow-ups too */
		w->stopping = true;
		return;
	}
	uint64_t now = mono_ns();
	if (now < *next_due)
		return;
	uint64_t every = (uint64_t)(w->o->every_s * 1e9);
	*next_due += every;
	if (*next_due <= now) /* a run longer than the interval: the next one after it, not a burst */
		*next_due = now + every;
	w->scheduled_runs++;
	if (!budget_allows(w, w->o->recipe)) {
		w->skipped_budget++;
		say("diagnose watch: %s skipped: over the CPU budget (%.3f of %.3f s in %.0f s)",
		    w->o->recipe, spent_s(w), budget_s(w), w->o->budget_window_s);
		write_textfile(w);
		return;
	}
	if (!ring_has_room(&w->ring)) {
		w->skipped_disk++;
		say("diagnose watch: %s skipped: the file system of %s is nearly full",
		    w->o->recipe, w->ring.path);
		write_textfile(w);
		return;
	}
	start_run(w, w->o->recipe, true);
}

enum watch_stop_step watch_stop_step(uint64_t term_ns, uint64_t kill_ns, uint64_t now_ns)
{
	if (!term_ns)
		return WATCH_STOP_TERM;
	if (!kill_ns)
		return now_ns - term_ns >= WATCH_STOP_GRACE_S * 1000000000ull ? WATCH_STOP_KILL
									      : WATCH_STOP_WAIT;
	return now_ns - kill_ns >= WATCH_KILL_WAIT_S * 1000000000ull ? WATCH_STOP_LEAVE : WATCH_STOP_WAIT;
}

/* A process's state as /proc/PID/stat gives it (the letter after the command's closing
 * parenthesis), '?' when unreadable. */
static char proc_state(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	char *text = read_file(path, NULL), state = '?';
	const char *paren = text ? strrchr(text, ')') : NULL;
	if (paren && paren[1] == ' ' && paren[2])
		state = paren[2];
	free(text);
	return state;
}

/* Stopping with a run that has not ended: SIGTERM (it ends its collection early and writes its
 * report), SIGKILL after WATCH_STOP_GRACE_S, and a run still not reaped WATCH_KILL_WAIT_S after
 * that (stuck in the kernel: state D) is left behind, said, so that watch itself ends: -1 then. */
static int stop_child(struct watch *w)
{
	struct child *c = &w->child;
	uint64_t now = mono_ns();
	switch (watch_stop_step(c->term_ns, c->kill_ns, now)) {
	case WATCH_STOP_TERM:
		kill(c->pid, SIGTERM);
		c->term_ns = now;
		return 0;
	case WATCH_STOP_KILL:
		say("diagnose watch: %s #%llu (pid %d) has not ended %d s after SIGTERM: SIGKILL",
		    c->entry.recipe, (unsigned long long)c->entry.seq, (int)c->pid, WATCH_STOP_GRACE_S);
		kill(c->pid, SIGKILL);
		c->kill_ns = now;
		return 0;
	case WATCH_STOP_LEAVE: {
		char state = proc_state(c->pid);
		say("diagnose watch: %s #%llu (pid %d, state %c%s) has not ended %d s after SIGKILL: left "
		    "behind (it ends when the kernel lets it; its run directory is removed at the next "
		    "start)",
		    c->entry.recipe, (unsigned long long)c->entry.seq, (int)c->pid, state,
		    state == 'D' ? ": waiting in the kernel, uninterruptibly" : "", WATCH_KILL_WAIT_S);
		close(c->slotfd);
		memset(c, 0, sizeof(*c));
		return -1;
	}
	case WATCH_STOP_WAIT: break;
	}
	return 0;
}

int watch_run(const struct watch_options *o)
{
	struct watch *w = xcalloc(1, sizeof(*w));
	struct diag_err err = { 0 };
	int code = DIAG_EXIT_OK;
	w->o = o;
	w->sigfd = -1;
	w->http.listen_fd = -1;
	w->first_code = -1;
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		w->http.conns[i].fd = -1;
	/* the endpoint's socket: systemd's when it passed one (bound before any user could take the
	 * port), else bound here; --listen none serves nothing either way */
	bool listen = o->listen && strcmp(o->listen, "none") != 0;
	int inherited = httpd_inherit(&w->http, metrics_body, w, &err);
	if (inherited > 0 && !listen)
		httpd_close(&w->http);
	if (inherited < 0 || ring_open(&w->ring, o->state_dir, o->keep, o->keep_bytes, &err) ||
	    (listen && inherited == 0 && httpd_open(&w->http, o->listen, metrics_body, w, &err))) {
		say("diagnose watch: %s", err.msg);
		code = err.code ? err.code : DIAG_EXIT_RUNTIME;
		goto out;
	}
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGQUIT);
	sigprocmask(SIG_BLOCK, &mask, &w->old_mask);
	w->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (w->sigfd < 0) {
		say("diagnose watch: signalfd: %s", strerror(errno));
		code = DIAG_EXIT_RUNTIME;
		goto restore;
	}
	make_target_label(w);
	getrusage(RUSAGE_SELF, &w->self_last);
	say("diagnose watch: %s every %.0f s on %s; budget %.3g%% of a CPU over %.0f s "
	    "(%.2f s); follow-ups at %s, once per verdict per %.0f s; history %s (%zu runs, %llu "
	    "bytes)%s%s%s%s",
	    o->recipe, o->every_s, w->target_label, o->max_cpu_pct, o->budget_window_s, budget_s(w),
	    o->follow_at == 3 ? "critical"
	    : o->follow_at    ? "warning"
			      : "never",
	    o->follow_every_s, o->state_dir, o->keep, (unsigned long long)o->keep_bytes,
	    w->http.listen_fd >= 0 ? "; metrics on http://" : "",
	    w->http.listen_fd >= 0 ? w->http.addr : "",
	    w->http.listen_fd < 0 ? ""
	    : inherited > 0       ? "/metrics (socket from systemd)"
				  : "/metrics",
	    o->textfile ? "; textfile written" : "");
	write_textfile(w);
	uint64_t next_due = mono_ns();
	for (;;) {
		maybe_start(w, &next_due);
		/* a first run that could not start at all will not start next time either */
		if (w->first_code == DIAG_EXIT_USAGE || w->first_code == DIAG_EXIT_REFUSED) {
			say("diagnose watch: the first run of %s exited %d (see %s/%s/stderr.txt): "
			    "stopping",
			    o->recipe, w->first_code, w->ring.path,
			    w->ring.n ? w->ring.entries[w->ring.n - 1].dir : "runs");
			code = w->first_code;
			w->stopping = true;
		}
		if (w->stopping && w->child.pid && stop_child(w) < 0)
			code = DIAG_EXIT_RUNTIME;
		if (w->stopping && !w->child.pid)
			break;
		struct pollfd fds[2 + HTTPD_MAX_CONNS];
		fds[0] = (struct pollfd){ .fd = w->sigfd, .events = POLLIN };
		size_t n = 1 + httpd_pollfds(&w->http, fds + 1);
		uint64_t now = mono_ns();
		int timeout = 1000;
		if (!w->child.pid && !w->pending.set && next_due > now && (next_due - now) / 1000000 < 1000)
			timeout = (int)((next_due - now) / 1000000) + 1;
		if (!w->child.pid && (w->pending.set || next_due <= now))
			timeout = 0;
		timeout = httpd_timeout_ms(&w->http, timeout);
		if (poll(fds, n, timeout) < 0 && errno != EINTR)
			break;
		if (fds[0].revents)
			take_signals(w, &next_due);
		httpd_service(&w->http, fds + 1, n - 1);
	}
	ledger_self(w);
	write_textfile(w);
	char endpoint[80] = "";
	if (w->http.listen_fd >= 0)
		snprintf(endpoint, sizeof(endpoint),
			 "; the metrics endpoint %.3f s more, outside the budget", w->endpoint_s_total);
	say("diagnose watch: stopped after %llu scheduled run(s), %llu follow-up(s), %llu "
	    "skipped over budget; CPU %.3f s (BPF %.3f s)%s",
	    (unsigned long long)w->scheduled_runs, (unsigned long long)w->follow_ups,
	    (unsigned long long)w->skipped_budget, w->cpu_s_total + w->bpf_s_total, w->bpf_s_total,
	    endpoint);
	close(w->sigfd);
restore:
	sigprocmask(SIG_SETMASK, &w->old_mask, NULL);
out:
	free_pending(&w->pending);
	for (size_t i = 0; i < w->n_recipes; i++) {
		value_free(w->recipes[i].verdicts);
		value_free(w->recipes[i].metrics);
	}
	httpd_close(&w->http);
	ring_close(&w->ring);
	free(w);
	return code;
}
