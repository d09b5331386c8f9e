/* report.c — the JSON report: assembling its tree from a run, writing it, and reading one back
 * (replay, diff, merge). The text report is text.c, folded stacks folded.c (see report.h).
 * Must not: know any probe's or symptom's meaning; it assembles generic shapes. Must not write a
 * string of the report raw: any of them may carry text the target controls (comm, exe, symbol
 * names, through Lua into verdicts and sections); the JSON writer escapes them
 * (json_write_string, value.c).
 */
#include "report/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/json_parse.h"
#include "recipe/source.h"

struct value *report_build(const struct report_input *in)
{
	const struct plan *plan = in->plan;
	const struct session_out *s = in->session;
	struct value *r = value_obj();

	value_set_str(r, "tool", "diagnose");
	value_set_str(r, "version", DIAG_VERSION);
	struct value *rec = value_obj_set(r, "recipe", value_obj());
	value_set_str(rec, "name", plan->recipe->name);
	value_set_str(rec, "path", plan->recipe->path);
	value_set_str(rec, "sha256", in->recipe_sha256 ? in->recipe_sha256 : "");
	struct value *target = plan_target_value(plan);
	value_obj_set(r, "target", target ? target : value_null());
	if (plan->params)
		value_obj_set(r, "params", value_copy(plan->params));
	struct utsname uts;
	if (uname(&uts) == 0) /* which host: a fleet's reports are merged (diagnose merge) */
		value_set_str(value_obj_set(r, "host", value_obj()), "name", uts.nodename);
	value_set_str(r, "started_at", s ? s->started_at : "");
	value_set_num(r, "duration_s", s ? round(s->duration_s * 1000) / 1000 : 0);
	value_set_str(r, "stop_reason", s ? stop_reason_name(s->stop_reason) : "dry-run");
	struct value *o = value_obj_set(r, "overhead", value_obj());
	if (s && s->bpf_cpu_pct >= 0) {
		value_set_num(o, "bpf_cpu_pct", round(s->bpf_cpu_pct * 1000) / 1000);
		value_set_num(o, "bpf_cpu_s", round(s->bpf_cpu_s * 1e6) / 1e6);
	} else {
		value_obj_set(o, "bpf_cpu_pct", value_null());
	}
	if (s && s->cost) /* what the server paid: BPF, traps and slow paths, diagnose's own CPU */
		value_obj_set(o, "server", value_copy(s->cost));
	if (s) { /* where the run's wall time went, each phase in seconds (the report's own writing
		  * and the audit's end record come after) */
		struct value *ph = value_obj_set(o, "phases_s", value_obj());
		const double figures[] = { in->start_s, s->phases.load_s, s->phases.attach_s, s->phases.window_s,
					   s->phases.detach_s, s->phases.results_s, in->verdict_s };
		static const char *const names[] = { "start", "load", "attach", "window", "detach", "results",
						     "verdicts" };
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			value_set_num(ph, names[i], round(figures[i] * 1e4) / 1e4);
	}
	value_set_int(o, "events", s ? (int64_t)s->events : 0);
	value_set_int(o, "dropped", s ? (int64_t)s->dropped : 0);
	if (in->preflight)
		value_obj_set(o, "preflight", value_copy(in->preflight));
	value_obj_set(r, "verdicts", in->verdicts ? value_copy(in->verdicts) : value_arr());
	if (in->verdict_error)
		value_set_str(r, "verdict_error", in->verdict_error);
	value_obj_set(r, "ruled_out", in->ruled_out ? value_copy(in->ruled_out) : value_arr());
	value_obj_set(r, "metrics", in->metrics ? value_copy(in->metrics) : value_arr());
	value_obj_set(r, "results", s && s->results ? value_copy(s->results) : value_obj());
	/* what the verdicts were computed from, besides the results: replay runs the Lua on it */
	if (in->run)
		value_obj_set(r, "run", value_copy(in->run));
	if (in->thresholds)
		value_obj_set(r, "thresholds", value_copy(in->thresholds));
	value_obj_set(r, "sections", in->sections ? value_copy(in->sections) : value_arr());
	if (s) {
		value_obj_set(r, "probes", value_copy(s->probes));
		value_obj_set(r, "notes", value_copy(s->notes));
	}
	if (in->plan_summary)
		value_obj_set(r, "plan", value_copy(in->plan_summary));
	return r;
}

void report_write_json(const struct value *report, FILE *out)
{
	value_write_json(report, out, 2);
	fputc('\n', out);
}

#define REPORT_MAX_BYTES (256u << 20)
#define REPORT_MAX_VALUES (50u * 1000 * 1000)

struct value *report_read(const char *path, struct diag_err *err)
{
	struct report_budget b = { REPORT_MAX_BYTES, REPORT_MAX_VALUES, NULL };
	return report_read_within(path, &b, err);
}

struct value *report_read_within(const char *path, struct report_budget *b, struct diag_err *err)
{
	struct source_file f = { 0 };
	b->over = NULL;
	if (source_read(path, false, REPORT_MAX_BYTES, &f, err))
		return NULL;
	if (f.len > b->bytes_left) {
		source_free(&f);
		b->over = "bytes";
		diag_fail(err, DIAG_EXIT_USAGE, "%s: over the bytes left to read", path);
		return NULL;
	}
	b->bytes_left -= f.len;
	size_t cap = b->values_left < REPORT_MAX_VALUES ? b->values_left : REPORT_MAX_VALUES, used = 0;
	struct json_limits lim = { .max_nodes = cap ? cap : 1, .nodes_used = &used };
	struct value *r = cap ? json_parse(f.data, f.len, &lim, err) : NULL;
	source_free(&f);
	if (!r && (!cap || (used >= cap && cap < REPORT_MAX_VALUES))) {
		b->over = "values";
		diag_fail(err, DIAG_EXIT_USAGE, "%s: over the values left to read", path);
		return NULL;
	}
	b->values_left -= used;
	if (!r) {
		diag_wrap(err, "%s", path);
		return NULL;
	}
	const char *tool = value_get_str(r, "tool");
	const struct value *res = value_get(r, "results"), *rec = value_get(r, "recipe");
	if (r->type != V_OBJ || !tool || strcmp(tool, "diagnose") || !res || res->type != V_OBJ ||
	    !rec || rec->type != V_OBJ) {
		value_free(r);
		diag_fail(err, DIAG_EXIT_USAGE, "%s: not a diagnose JSON report (tool, recipe and results "
			  "are needed)", path);
		return NULL;
	}
	return r;
}
