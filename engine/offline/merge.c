/* merge.c — many hosts' reports as one fleet view (see merge.h).
 * Must not: interpret a probe's results beyond shared shapes, or judge a host.
 */
#include "offline/merge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "common/util.h"
#include "verdict/verdict.h"

static const char *host_of(const struct value *r, const char *file)
{
	const char *h = value_get_str(value_get(r, "host"), "name");
	return h && *h ? h : file;
}

static const char *recipe_of(const struct value *r)
{
	const char *n = value_get_str(value_get(r, "recipe"), "name");
	return n ? n : "?";
}

static enum severity sev_of(const struct value *v)
{
	int ok = 0;
	const char *s = value_get_str(v, "severity");
	enum severity e = s ? severity_parse(s, &ok) : SEV_OK;
	return ok ? e : SEV_OK;
}

/* ---- groups: per recipe and id (a verdict's or a ruled-out hypothesis's), the hosts --------- */

/* The group of (recipe, id) in groups, made when missing: {recipe, id, [worst,] count, hosts};
 * worst (NULL: none) is the severity a new verdict group starts from. */
static struct value *find_group(struct value *groups, const char *recipe, const char *id, const char *worst)
{
	for (size_t i = 0; i < groups->arr.len; i++) {
		struct value *g = groups->arr.items[i];
		if (!strcmp(value_get_str(g, "recipe"), recipe) && !strcmp(value_get_str(g, "id"), id))
			return g;
	}
	struct value *g = value_arr_push(groups, value_obj());
	value_set_str(g, "recipe", recipe);
	value_set_str(g, "id", id);
	if (worst)
		value_set_str(g, "worst", worst);
	value_set_int(g, "count", 0);
	value_obj_set(g, "hosts", value_arr());
	return g;
}

/* Most hosts first, then by recipe and id. */
static int by_count(const void *a, const void *b)
{
	const struct value *x = *(struct value *const *)a, *y = *(struct value *const *)b;
	double cx = value_get_num(x, "count", 0), cy = value_get_num(y, "count", 0);
	if (cx != cy)
		return cx < cy ? 1 : -1;
	int c = strcmp(value_get_str(x, "recipe"), value_get_str(y, "recipe"));
	return c ? c : strcmp(value_get_str(x, "id"), value_get_str(y, "id"));
}

/* ---- verdicts across hosts --------------------------------------------------------------------- */

static int by_worst_then_count(const void *a, const void *b)
{
	const struct value *x = *(struct value *const *)a, *y = *(struct value *const *)b;
	int ok;
	enum severity sx = severity_parse(value_get_str(x, "worst"), &ok);
	enum severity sy = severity_parse(value_get_str(y, "worst"), &ok);
	if (sx != sy)
		return sx < sy ? 1 : -1;
	return by_count(a, b);
}

/* ---- ruled out across hosts: per recipe and hypothesis id, the hosts that checked it fine ----- */

/* One host's ruled-out ids, each counted once for it (a snippet may repeat an id); reports
 * recorded before ruled_out existed have none. */
static void add_ruled_out(struct value *groups, const struct value *report, const char *recipe,
			  const char *host)
{
	const struct value *items = value_get(report, "ruled_out");
	for (size_t k = 0; items && items->type == V_ARR && k < items->arr.len; k++) {
		const char *id = value_get_str(items->arr.items[k], "id");
		if (!id)
			continue;
		struct value *g = find_group(groups, recipe, id, NULL);
		struct value *hosts = (struct value *)value_get(g, "hosts");
		if (hosts->arr.len && !strcmp(hosts->arr.items[hosts->arr.len - 1]->s, host))
			continue; /* this host's own repeat: hosts are added one report at a time */
		value_arr_push(hosts, value_str(host));
		value_set_int(g, "count", (int64_t)hosts->arr.len);
	}
}


/* ---- outliers: numbers at the top of a probe's results, and p99 of its log2 buckets ---------- */

struct figure {
	char *recipe, *probe, *name;
	size_t n, cap;
	double *values;
	const char **hosts;
};

struct figures {
	struct figure *v;
	size_t n, cap;
};

static void figure_add(struct figures *f, const char *recipe, const char *probe, const char *name,
		       const char *host, double value)
{
	size_t i;
	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].recipe, recipe) && !strcmp(f->v[i].probe, probe) &&
		    !strcmp(f->v[i].name, name))
			break;
	if (i == f->n) {
		if (f->n == f->cap)
			f->v = xrealloc(f->v, (f->cap = f->cap ? f->cap * 2 : 32) * sizeof(*f->v));
		f->v[f->n++] = (struct figure){ xstrdup(recipe), xstrdup(probe), xstrdup(name), 0, 0, NULL, NULL };
	}
	struct figure *g = &f->v[i];
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 8;
		g->values = xrealloc(g->values, g->cap * sizeof(*g->values));
		g->hosts = xrealloc(g->hosts, g->cap * sizeof(*g->hosts));
	}
	g->values[g->n] = value;
	g->hosts[g->n++] = host;
}

static double p99_of(const struct value *buckets)
{
	double total = 0, before = 0;
	for (size_t i = 0; i < buckets->arr.len; i++)
		total += value_get_num(buckets->arr.items[i], "count", 0);
	if (total <= 0)
		return NAN;
	double r = 0.99 * total;
	for (size_t i = 0; i < buckets->arr.len; i++) {
		const struct value *b = buckets->arr.items[i];
		double c = value_get_num(b, "count", 0);
		if (c > 0 && before + c >= r)
			return value_get_num(b, "lo", 0) +
			       (value_get_num(b, "hi", 0) - value_get_num(b, "lo", 0)) * (r - before) / c;
		before += c;
	}
	return value_get_num(buckets->arr.items[buckets->arr.len - 1], "hi", 0);
}

static void figures_of(struct figures *f, const struct value *report, const char *host)
{
	const struct value *res = value_get(report, "results");
	const char *recipe = recipe_of(report);
	for (size_t p = 0; res && res->type == V_OBJ && p < res->obj.len; p++) {
		const struct value *pr = res->obj.vals[p];
		if (pr->type != V_OBJ)
			continue;
		for (size_t k = 0; k < pr->obj.len; k++) {
			const struct value *v = pr->obj.vals[k];
			if (v->type == V_INT || v->type == V_NUM)
				figure_add(f, recipe, res->obj.keys[p], pr->obj.keys[k], host,
					   v->type == V_INT ? (double)v->i : v->n);
		}
		const struct value *b = value_get(pr, "buckets");
		if (b && b->type == V_ARR && b->arr.len) {
			double p99 = p99_of(b);
			if (!isnan(p99))
				figure_add(f, recipe, res->obj.keys[p], "p99", host, p99);
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int by_ratio(const void *a, const void *b)
{
	double x = value_get_num(*(struct value *const *)a, "ratio", 0);
	double y = value_get_num(*(struct value *const *)b, "ratio", 0);
	return x < y ? 1 : x > y ? -1 : 0;
}

static struct value *outliers(struct figures *f, double ratio)
{
	struct value *out = value_arr();
	for (size_t i = 0; i < f->n; i++) {
		struct figure *g = &f->v[i];
		if (g->n >= 3) {
			double *sorted = xmalloc(g->n * sizeof(*sorted));
			memcpy(sorted, g->values, g->n * sizeof(*sorted));
			qsort(sorted, g->n, sizeof(*sorted), cmp_double);
			double median = g->n % 2 ? sorted[g->n / 2] : (sorted[g->n / 2 - 1] + sorted[g->n / 2]) / 2;
			free(sorted);
			for (size_t h = 0; median > 0 && h < g->n; h++) {
				if (g->values[h] < median * ratio)
					continue;
				struct value *o = value_arr_push(out, value_obj());
				value_set_str(o, "host", g->hosts[h]);
				value_set_str(o, "recipe", g->recipe);
				value_set_str(o, "probe", g->probe);
				value_set_str(o, "figure", g->name);
				value_set_num(o, "value", g->values[h]);
				value_set_num(o, "median", median);
				value_set_num(o, "ratio", round(g->values[h] / median * 10) / 10);
			}
		}
		free(g->recipe);
		free(g->probe);
		free(g->name);
		free(g->values);
		free(g->hosts);
	}
	free(f->v);
	if (out->arr.len > 1) /* items is NULL while empty: qsort must not see it */
		qsort(out->arr.items, out->arr.len, sizeof(*out->arr.items), by_ratio);
	return out;
}

struct value *merge_reports(const struct value *const *reports, const char *const *names, size_t n,
			    double outlier_ratio)
{
	struct value *m = value_obj();
	struct value *hosts = value_obj_set(m, "hosts", value_arr());
	struct value *groups = value_obj_set(m, "verdicts", value_arr());
	struct value *ruled = value_obj_set(m, "ruled_out", value_arr());
	struct figures figs = { 0 };
	for (size_t i = 0; i < n; i++) {
		const struct value *r = reports[i], *vs = value_get(r, "verdicts");
		const char *host = host_of(r, names[i]), *recipe = recipe_of(r);
		char *twice = NULL;
		/* two reports of one host (two runs, or a test fleet on one machine): told apart by file */
		for (size_t k = 0; k < hosts->arr.len && !twice; k++)
			if (!strcmp(value_get_str(hosts->arr.items[k], "host"), host))
				twice = xasprintf("%s (%s)", host, names[i]);
		struct value *h = value_arr_push(hosts, value_obj());
		value_set_str(h, "host", twice ? twice : host);
		free(twice);
		host = value_get_str(h, "host"); /* lives as long as the result */
		value_set_str(h, "file", names[i]);
		value_set_str(h, "recipe", recipe);
		struct value *ids = value_obj_set(h, "verdicts", value_arr());
		enum severity worst = SEV_OK;
		for (size_t k = 0; vs && vs->type == V_ARR && k < vs->arr.len; k++) {
			const struct value *v = vs->arr.items[k];
			const char *id = value_get_str(v, "id");
			if (!id)
				continue;
			enum severity s = sev_of(v);
			worst = s > worst ? s : worst;
			value_arr_push(ids, value_str(id));
			struct value *g = find_group(groups, recipe, id, "ok");
			int ok;
			if (s > severity_parse(value_get_str(g, "worst"), &ok) || !value_get_str(g, "title")) {
				value_set_str(g, "worst", severity_name(s));
				value_set_str(g, "title", value_get_str(v, "title") ? value_get_str(v, "title") : "");
			}
			value_set_int(g, "count", (int64_t)value_get_num(g, "count", 0) + 1);
			value_arr_push((struct value *)value_get(g, "hosts"), value_str(host));
		}
		value_set_str(h, "worst", severity_name(worst));
		value_set_int(h, "exit", worst == SEV_CRITICAL ? DIAG_EXIT_CRITICAL
				       : worst == SEV_WARNING ? DIAG_EXIT_WARNING : DIAG_EXIT_OK);
		add_ruled_out(ruled, r, recipe, host);
		figures_of(&figs, r, host);
	}
	if (groups->arr.len > 1)
		qsort(groups->arr.items, groups->arr.len, sizeof(*groups->arr.items), by_worst_then_count);
	if (ruled->arr.len > 1)
		qsort(ruled->arr.items, ruled->arr.len, sizeof(*ruled->arr.items), by_count);
	value_obj_set(m, "outliers", outliers(&figs, outlier_ratio));
	return m;
}

/* ---- text --------------------------------------------------------------------------------- */

/* A group's hosts, escaped: the first 20, then how many more. */
static void put_hosts(FILE *out, const struct value *hosts)
{
	for (size_t h = 0; h < hosts->arr.len && h < 20; h++) {
		fputs(h ? ", " : "", out);
		report_put_text(out, hosts->arr.items[h]->s);
	}
	if (hosts->arr.len > 20)
		fprintf(out, " and %zu more", hosts->arr.len - 20);
}

void merge_write_text(const struct value *m, FILE *out)
{
	const struct value *hosts = value_get(m, "hosts"), *groups = value_get(m, "verdicts");
	fprintf(out, "diagnose merge — %zu report%s\n\nVerdicts across hosts (worst first)\n",
		hosts->arr.len, hosts->arr.len == 1 ? "" : "s");
	for (size_t i = 0; i < groups->arr.len; i++) {
		const struct value *g = groups->arr.items[i], *hs = value_get(g, "hosts");
		char sev[16];
		snprintf(sev, sizeof(sev), "%s", value_get_str(g, "worst"));
		for (char *c = sev; *c; c++)
			*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
		fprintf(out, "  %-9s %3.0f/%zu  %s/%s: ", sev, value_get_num(g, "count", 0), hosts->arr.len,
			value_get_str(g, "recipe"), value_get_str(g, "id"));
		report_put_text(out, value_get_str(g, "title"));
		fputs("\n            on ", out);
		put_hosts(out, hs);
		fputc('\n', out);
	}
	const struct value *ruled = value_get(m, "ruled_out");
	if (ruled && ruled->arr.len)
		fputs("\nChecked and ruled out across hosts (most hosts first)\n", out);
	for (size_t i = 0; ruled && i < ruled->arr.len; i++) {
		const struct value *g = ruled->arr.items[i], *hs = value_get(g, "hosts");
		fprintf(out, "  %3.0f/%zu  ", value_get_num(g, "count", 0), hosts->arr.len);
		report_put_text(out, value_get_str(g, "recipe"));
		fputc('/', out);
		report_put_text(out, value_get_str(g, "id"));
		fputs(" on ", out);
		put_hosts(out, hs);
		fputc('\n', out);
	}
	const struct value *outl = value_get(m, "outliers");
	if (outl->arr.len)
		fputs("\nOutliers (a host's figure against the fleet's median)\n", out);
	for (size_t i = 0; i < outl->arr.len && i < 20; i++) {
		const struct value *o = outl->arr.items[i];
		fputs("  ", out);
		report_put_text(out, value_get_str(o, "host"));
		fprintf(out, ": %s %s.%s = %.4g, %.1f× the median %.4g\n", value_get_str(o, "recipe"),
			value_get_str(o, "probe"), value_get_str(o, "figure"), value_get_num(o, "value", 0),
			value_get_num(o, "ratio", 0), value_get_num(o, "median", 0));
	}
	fputs("\nHosts\n", out);
	for (size_t i = 0; i < hosts->arr.len; i++) {
		const struct value *h = hosts->arr.items[i], *ids = value_get(h, "verdicts");
		fputs("  ", out);
		report_put_text(out, value_get_str(h, "host"));
		fprintf(out, "  %s  worst %s:", value_get_str(h, "recipe"), value_get_str(h, "worst"));
		for (size_t k = 0; k < ids->arr.len; k++) {
			fputc(' ', out);
			report_put_text(out, ids->arr.items[k]->s);
		}
		fputc('\n', out);
	}
}

int merge_read(const char *const *paths, size_t n, size_t max_bytes, size_t max_values,
	       struct value **reports, struct diag_err *err)
{
	struct report_budget b = { max_bytes, max_values, NULL };
	for (size_t i = 0; i < n; i++) {
		if ((reports[i] = report_read_within(paths[i], &b, err)))
			continue;
		if (b.over && !strcmp(b.over, "bytes"))
			diag_fail(err, DIAG_EXIT_USAGE, "merge: the reports together are over %zu bytes of "
				  "JSON (merge's limit for all its inputs, not each file); reached in %s",
				  max_bytes, paths[i]);
		else if (b.over)
			diag_fail(err, DIAG_EXIT_USAGE, "merge: the reports together hold more than %zu "
				  "values (merge's limit for all its inputs, not each file); reached in %s",
				  max_values, paths[i]);
		for (size_t k = 0; k < i; k++) {
			value_free(reports[k]);
			reports[k] = NULL;
		}
		return -1;
	}
	return 0;
}

int merge_run(const char *const *paths, size_t n, bool json)
{
	struct diag_err err = { 0 };
	struct value **reports = xcalloc(n ? n : 1, sizeof(*reports));
	int code = DIAG_EXIT_OK;
	if (merge_read(paths, n, MERGE_MAX_BYTES, MERGE_MAX_VALUES, reports, &err)) {
		report_put_error(err.msg);
		code = err.code ? err.code : DIAG_EXIT_USAGE;
	}
	if (code == DIAG_EXIT_OK) {
		struct value *m = merge_reports((const struct value *const *)reports, paths, n, 10.0);
		if (json) {
			value_write_json(m, stdout, 2);
			fputc('\n', stdout);
		} else {
			merge_write_text(m, stdout);
		}
		value_free(m);
	}
	for (size_t i = 0; i < n; i++)
		value_free(reports[i]);
	free(reports);
	return code;
}
