/* load.c — one recipe file read into struct recipe (schemas/recipe.md); contract: load.h.
 *
 * Owns: the load in its order — the file's one libyaml pass into a checked document
 * (document.c), duplicate keys refused, the fixed schema applied (schema.c), strict number text,
 * entry lines and the free-form `options`/`thresholds` — then the semantic rules, including typed
 * parameters and that every "${NAME}" names one. Finding recipes is recipe_find.c's.
 * Must not: print, keep global state, or know which probe kinds or options exist (plan.c does).
 * Every error is one line, "PATH:LINE: FIELD: message", with DIAG_EXIT_USAGE.
 */
#include "recipe/load.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/util.h"
#include "recipe/document.h"
#include "recipe/schema.h"

#define RECIPE_MAX_BYTES (1u << 20) /* recipes are a few KiB; refuse anything absurd */
#define DURATION_MAX_S 3600

/* ---- the document: duplicate keys, free-form maps -------------------------------------------- */

struct keyref {
	const char *key;
	unsigned idx; /* position in the file's order */
};

static int cmp_keyref(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The first entry (in file order) whose key repeats an earlier one, or -1. Sorts k: n log n. */
static long find_dup(struct keyref *k, unsigned n)
{
	long dup = -1;
	qsort(k, n, sizeof(*k), cmp_keyref);
	for (unsigned i = 1; i < n; i++)
		if (!strcmp(k[i - 1].key, k[i].key) && (dup < 0 || k[i].idx < (unsigned)dup))
			dup = k[i].idx;
	return dup;
}

static const char *key_text(struct loader *L, const yaml_node_pair_t *pair)
{
	const char *k = doc_scalar(yaml_document_get_node(&L->doc, pair->key));
	return k ? k : "";
}

/* Duplicate keys, in every mapping (the free-form maps would keep both, and the line lookups
 * assume one occurrence). Runs before the schema. Depth is bounded by doc_read. */
static int check_duplicates(struct loader *L, yaml_node_t *node, char *path, size_t len)
{
	size_t o = strlen(path);
	int rc = 0;
	if (node->type == YAML_SEQUENCE_NODE) {
		unsigned i = 0;
		for (yaml_node_item_t *it = node->data.sequence.items.start;
		     !rc && it < node->data.sequence.items.top; it++, i++) {
			snprintf(path + o, len - o, "[%u]", i);
			rc = check_duplicates(L, yaml_document_get_node(&L->doc, *it), path, len);
		}
	} else if (node->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *pairs = node->data.mapping.pairs.start;
		unsigned n = (unsigned)(node->data.mapping.pairs.top - pairs);
		struct keyref *k = xcalloc(n, sizeof(*k));
		for (unsigned i = 0; i < n; i++) /* keys are scalars: doc_read refused the others */
			k[i] = (struct keyref){ key_text(L, &pairs[i]), i };
		long d = find_dup(k, n);
		free(k);
		for (unsigned i = 0; !rc && i < n; i++) {
			snprintf(path + o, len - o, "%s%s", o ? "." : "", key_text(L, &pairs[i]));
			if ((long)i == d)
				rc = doc_fail_line(L, doc_line(yaml_document_get_node(&L->doc, pairs[i].key)),
						   path, "duplicate key");
			else
				rc = check_duplicates(L, yaml_document_get_node(&L->doc, pairs[i].value),
						      path, len);
		}
	}
	path[o] = '\0';
	return rc;
}

/* Reads a free-form mapping of scalars (probe options, thresholds). */
static int read_kv(struct loader *L, yaml_node_t *parent, const char *key, const char *path,
		   struct recipe_kv **out, unsigned *n_out)
{
	yaml_node_t *k = NULL, *m = doc_map_get(L, parent, key, &k);
	char q[64];
	if (!m)
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return doc_fail_line(L, doc_line(k), path, "expected a mapping, got %s",
				     doc_describe(m, q, sizeof(q)));
	size_t n = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
	struct recipe_kv *kv = xcalloc(n ? n : 1, sizeof(*kv));
	*out = kv;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		yaml_node_t *kn = yaml_document_get_node(&L->doc, p->key);
		yaml_node_t *vn = yaml_document_get_node(&L->doc, p->value);
		if (!kn->data.scalar.length)
			return doc_fail_line(L, doc_line(kn), path, "empty key");
		if (!doc_scalar(vn))
			return doc_fail_line(L, doc_line(kn), NULL, "%s.%s: expected a scalar value, got %s",
					     path, doc_scalar(kn), doc_describe(vn, q, sizeof(q)));
		if (!vn->data.scalar.length && vn->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			return doc_fail_line(L, doc_line(kn), NULL, "%s.%s: missing value", path,
					     doc_scalar(kn));
		kv[*n_out] = (struct recipe_kv){ .key = xstrdup(doc_scalar(kn)),
						 .value = xstrdup(doc_scalar(vn)),
						 .line = doc_line(kn) };
		++*n_out;
	}
	return 0;
}


/* ---- semantic rules ---------------------------------------------------------------------------- */

static bool blank(const char *s)
{
	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

/* A positive decimal that fits a pid_t. */
static bool is_pid(const char *s)
{
	return doc_digits(s) && s[0] != '0' && strlen(s) <= 10 && strtoull(s, NULL, 10) <= INT32_MAX;
}

static bool chars_ok(const char *s, size_t n, const char *extra)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || strchr(extra, s[i])))
			return false;
	return true;
}

/* `next:`: declared follow-ups. Their recipes and parameter types are checked against the
 * follow-up recipes by lint and when the chain runs (chain.c): here, the form only. */
static int check_next(struct loader *L, const struct recipe *r)
{
	char path[96], q[64];
	if (r->n_next && !r->budgets.max_chain_depth)
		return doc_fail_path(L, "next", "follow-ups declared but budgets.max_chain_depth is 0: "
				     "they could never run");
	for (unsigned i = 0; i < r->n_next; i++) {
		const struct recipe_next *n = &r->next[i];
		snprintf(path, sizeof(path), "next[%u].verdict", i);
		if (!chars_ok(n->verdict, strlen(n->verdict), "-_"))
			return doc_fail_path(L, path, "expected a verdict id ([a-z0-9_-]+), got %s",
					     recipe_quote(q, sizeof(q), n->verdict));
		for (unsigned k = 0; k < i; k++)
			if (!strcmp(r->next[k].verdict, n->verdict))
				return doc_fail_path(L, path, "verdict %s has a follow-up already (next[%u])",
						     recipe_quote(q, sizeof(q), n->verdict), k);
		snprintf(path, sizeof(path), "next[%u].recipe", i);
		if (!chars_ok(n->recipe, strlen(n->recipe), "-"))
			return doc_fail_path(L, path, "expected a recipe name ([a-z0-9-]+, never a path), got %s",
					     recipe_quote(q, sizeof(q), n->recipe));
		for (unsigned k = 0; k < n->n_params; k++) {
			const char *p = n->params[k], *eq = strchr(p, '=');
			snprintf(path, sizeof(path), "next[%u].params[%u]", i, k);
			if (!eq || !chars_ok(p, (size_t)(eq - p), "_") || !eq[1])
				return doc_fail_path(L, path, "expected NAME=VALUE (NAME [a-z0-9_]+), got %s",
						     recipe_quote(q, sizeof(q), p));
			if ((eq - p == 3 && !strncmp(p, "pid", 3)) || (eq - p == 8 && !strncmp(p, "duration", 8)))
				return doc_fail_path(L, path, "%.*s: a chain keeps its target, and each stage its own "
						     "duration", (int)(eq - p), p);
			const char *ref = strstr(eq + 1, "${");
			if (ref && (strncmp(ref, "${verdict.", 10) || !strchr(ref, '}') ||
				    !chars_ok(ref + 10, (size_t)(strchr(ref, '}') - ref - 10), "_") ||
				    ref != eq + 1 || strchr(ref, '}')[1]))
				return doc_fail_path(L, path, "a value is literal text or exactly ${verdict.KEY} "
						     "(the verdict's next.params.KEY), got %s", recipe_quote(q, sizeof(q), eq + 1));
		}
	}
	return 0;
}

static int check_params(struct loader *L, const struct recipe *r)
{
	char path[64], q[64];
	for (unsigned i = 0; i < r->n_params; i++) {
		const struct recipe_param *p = &r->params[i];
		int64_t lo, hi;
#define AT(field) (snprintf(path, sizeof(path), "params[%u].%s", i, field), path)
		if (!chars_ok(p->name, strlen(p->name), "_"))
			return doc_fail_path(L, AT("name"), "must match [a-z0-9_]+, got %s",
					     recipe_quote(q, sizeof(q), p->name));
		if (!strcmp(p->name, "pid") || !strcmp(p->name, "duration"))
			return doc_fail_path(L, AT("name"), "%s is built in (--pid, --duration)", p->name);
		if (recipe_param_find(r, p->name) != p)
			return doc_fail_path(L, AT("name"), "duplicate parameter %s", recipe_quote(q, sizeof(q), p->name));
		if (p->min && !decimal_int(p->min, &lo))
			return doc_fail_path(L, AT("min"), "expected an integer, got %s", recipe_quote(q, sizeof(q), p->min));
		if (p->max && !decimal_int(p->max, &hi))
			return doc_fail_path(L, AT("max"), "expected an integer, got %s", recipe_quote(q, sizeof(q), p->max));
		if ((p->min || p->max) && (p->type == PARAM_STRING || p->type == PARAM_SYMBOL))
			return doc_fail_path(L, AT("min"), "only integer, pid and duration parameters have bounds");
		if (p->min && p->max && lo > hi)
			return doc_fail_path(L, AT("max"), "%s is below min %s", p->max, p->min);
		const char *why = p->dflt ? recipe_param_check(p, p->dflt) : NULL;
		if (why)
			return doc_fail_path(L, AT("default"), "%s: %s", recipe_quote(q, sizeof(q), p->dflt), why);
#undef AT
	}
	return 0;
}

/* Every "${NAME}" in options, thresholds and filters names a declared parameter. */
static int check_ref(struct loader *L, const struct recipe *r, const char *value, unsigned line,
		     const char *path)
{
	char name[64];
	if (!recipe_param_ref(value, name, sizeof(name)) || recipe_param_find(r, name) ||
	    !strcmp(name, "pid") || !strcmp(name, "duration"))
		return 0;
	return doc_fail_line(L, line, path, "refers to ${%s}, which is not a declared parameter", name);
}

static int check_refs(struct loader *L, const struct recipe *r)
{
	char path[160];
	for (unsigned i = 0; i < r->n_probes; i++) {
		const struct recipe_probe *p = &r->probes[i];
		for (unsigned k = 0; k < p->n_options; k++) {
			snprintf(path, sizeof(path), "probes[%u].options.%s", i, p->options[k].key);
			if (check_ref(L, r, p->options[k].value, p->options[k].line, path))
				return -1;
		}
		snprintf(path, sizeof(path), "probes[%u].filters", i);
		const struct recipe_filters *f = &p->filters;
		const char *const texts[] = { f->pid, f->tid, f->comm, f->cgroup, f->device,
					      f->local_port, f->remote_port, f->remote_addr };
		for (size_t t = 0; t < ARRAY_LEN(texts); t++)
			if (check_ref(L, r, texts[t], p->line, path))
				return -1;
	}
	for (unsigned k = 0; k < r->n_thresholds; k++) {
		snprintf(path, sizeof(path), "thresholds.%s", r->thresholds[k].key);
		if (check_ref(L, r, r->thresholds[k].value, r->thresholds[k].line, path))
			return -1;
	}
	return 0;
}

static int check_probe(struct loader *L, const struct recipe *r, unsigned i)
{
	const struct recipe_probe *p = &r->probes[i];
	const struct recipe_filters *f = &p->filters;
	char path[64], q[64];
#define AT(field) (snprintf(path, sizeof(path), "probes[%u].%s", i, field), path)
	if (!chars_ok(p->id, strlen(p->id), "_-"))
		return doc_fail_path(L, AT("id"), "must match [a-z0-9_-]+, got %s",
				     recipe_quote(q, sizeof(q), p->id));
	if (blank(p->kind))
		return doc_fail_path(L, AT("kind"), "must not be blank");
	char ref[64];
	if (f->pid && strcmp(f->pid, "target") && !is_pid(f->pid) &&
	    !recipe_param_ref(f->pid, ref, sizeof(ref)))
		return doc_fail_path(L, AT("filters.pid"),
				     "expected \"target\" or a positive integer, got %s",
				     recipe_quote(q, sizeof(q), f->pid));
	if (f->pid && !strcmp(f->pid, "target") && r->target == RECIPE_TARGET_NONE)
		return doc_fail_path(L, AT("filters.pid"),
				     "\"target\" needs `target: pid` or `target: optional-pid` at the top level");
	if (p->when != RECIPE_WHEN_ALWAYS && r->target != RECIPE_TARGET_PID_OPTIONAL)
		return doc_fail_path(L, AT("when"),
				     "\"target\" and \"host\" need `target: optional-pid` at the top level "
				     "(only its runs may have a target or not)");
	if (f->tid && !is_pid(f->tid))
		return doc_fail_path(L, AT("filters.tid"), "expected a positive integer, got %s",
				     recipe_quote(q, sizeof(q), f->tid));
	for (unsigned a = 0; a < p->n_attach; a++)
		if (blank(p->attach[a])) {
			snprintf(path, sizeof(path), "probes[%u].attach[%u]", i, a);
			return doc_fail_path(L, path, "must not be blank");
		}
#undef AT
	return 0;
}

static int check_recipe(struct loader *L, const struct recipe *r)
{
	char q[64];
	if (!recipe_name_ok(r->name))
		return doc_fail_path(L, "name", "must match [a-z0-9-]+, got %s",
				     recipe_quote(q, sizeof(q), r->name));
	if (blank(r->symptom))
		return doc_fail_path(L, "symptom", "must not be blank");
	if (blank(r->summary))
		return doc_fail_path(L, "summary", "must not be blank");
	size_t n = strlen(r->lua);
	if (n < 5 || strcmp(r->lua + n - 4, ".lua"))
		return doc_fail_path(L, "lua", "must name a .lua file, got %s", recipe_quote(q, sizeof(q), r->lua));
	if (r->lua[0] == '/' || !strncmp(r->lua, "../", 3) || strstr(r->lua, "/../"))
		return doc_fail_path(L, "lua", "must be a relative path inside the lua directory, got %s",
				     recipe_quote(q, sizeof(q), r->lua));
	const struct recipe_budgets *b = &r->budgets;
	if (b->max_duration_s < 1 || b->max_duration_s > DURATION_MAX_S)
		return doc_fail_path(L, "budgets.max_duration_s", "%" PRIu32 " is out of range (1..%u)",
				     b->max_duration_s, DURATION_MAX_S);
	if (r->duration_s < 1 || r->duration_s > DURATION_MAX_S)
		return doc_fail_path(L, "duration_s", "%" PRIu32 " is out of range (1..%u)", r->duration_s,
				     DURATION_MAX_S);
	if (r->duration_s > b->max_duration_s)
		return doc_fail_path(L, "duration_s",
				     "%" PRIu32 " exceeds budgets.max_duration_s (%" PRIu32 ")",
				     r->duration_s, b->max_duration_s);
	if (!(b->max_cpu_pct > 0 && b->max_cpu_pct <= 100))
		return doc_fail_path(L, "budgets.max_cpu_pct", "%g is out of range (0 < x <= 100)",
				     b->max_cpu_pct);
	if (!b->max_map_bytes)
		return doc_fail_path(L, "budgets.max_map_bytes", "must be at least 1");
	if (b->preflight_ms && (b->preflight_ms < 10 || b->preflight_ms > 5000))
		return doc_fail_path(L, "budgets.preflight_ms", "%" PRIu32 " is out of range (10..5000)",
				     b->preflight_ms);
	if (b->max_chain_depth > CHAIN_DEPTH_MAX)
		return doc_fail_path(L, "budgets.max_chain_depth", "%" PRIu32 " is out of range (0..%u)",
				     b->max_chain_depth, CHAIN_DEPTH_MAX);
	if (b->max_chain_duration_s > DURATION_MAX_S)
		return doc_fail_path(L, "budgets.max_chain_duration_s", "%" PRIu32 " is out of range (1..%u)",
				     b->max_chain_duration_s, DURATION_MAX_S);
	if (b->max_chain_depth && b->max_chain_duration_s < r->duration_s)
		return doc_fail_path(L, "budgets.max_chain_duration_s",
				     b->max_chain_duration_s ? "%" PRIu32 " is shorter than duration_s: a chain "
				     "could not even run this recipe" : "%" PRIu32 ": required when max_chain_depth "
				     "is set (the whole chain's time, this run included)", b->max_chain_duration_s);

	if (check_next(L, r))
		return -1;

	if (check_params(L, r) || check_refs(L, r))
		return -1;
	struct keyref ids[PROBES_MAX];
	for (unsigned i = 0; i < r->n_probes; i++) {
		if (check_probe(L, r, i))
			return -1;
		ids[i] = (struct keyref){ r->probes[i].id, i };
	}
	long d = find_dup(ids, r->n_probes);
	if (d >= 0) {
		char path[32];
		snprintf(path, sizeof(path), "probes[%ld].id", d);
		return doc_fail_path(L, path, "duplicate probe id %s",
				     recipe_quote(q, sizeof(q), r->probes[d].id));
	}
	return 0;
}

/* After the schema: strict numbers, lines, free-form maps, then the semantic rules. */
static int read_document(struct loader *L, struct recipe *r)
{
	yaml_node_t *root = yaml_document_get_root_node(&L->doc), *k = NULL;
	char path[256] = "";
	if (schema_strict_numbers(L))
		return -1;
	yaml_node_t *probes = doc_map_get(L, root, "probes", &k);
	for (unsigned i = 0; probes && i < r->n_probes; i++) {
		yaml_node_t *item = yaml_document_get_node(&L->doc, probes->data.sequence.items.start[i]);
		struct recipe_probe *p = &r->probes[i];
		p->line = doc_line(item);
		snprintf(path, sizeof(path), "probes[%u].options", i);
		if (read_kv(L, item, "options", path, &p->options, &p->n_options))
			return -1;
	}
	if (read_kv(L, root, "thresholds", "thresholds", &r->thresholds, &r->n_thresholds))
		return -1;
	return check_recipe(L, r);
}

int recipe_load(const char *path, struct recipe **out, struct diag_err *err)
{
	size_t len = 0;
	*out = NULL;
	char *buf = read_file(path, &len);
	if (!buf)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: cannot read recipe: %s", path,
				 strerror(errno));
	int rc = recipe_load_buffer(path, buf, len, out, err);
	free(buf);
	return rc;
}

int recipe_load_buffer(const char *path, const char *buf, size_t len, struct recipe **out,
		       struct diag_err *err)
{
	struct loader L = { .path = path, .err = err };
	struct recipe *r = NULL;
	int rc = -1;

	*out = NULL;
	if (len > RECIPE_MAX_BYTES)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: too large for a recipe (%zu bytes, limit %u)",
				 path, len, RECIPE_MAX_BYTES);
	char where[256] = "";
	if (doc_read(&L, buf, len) ||
	    check_duplicates(&L, yaml_document_get_root_node(&L.doc), where, sizeof(where)) ||
	    schema_apply(&L, &r))
		goto out;
	r->path = xstrdup(path);
	if (read_document(&L, r))
		goto out;
	*out = r;
	r = NULL;
	rc = 0;
out:
	recipe_free(r);
	if (L.have_doc)
		yaml_document_delete(&L.doc);
	return rc;
}
