/* recipe.c — a recipe as data (recipe.h): its parameters' values checked, its names, its
 * free-form entries looked up, and freeing it. Reading one from a file is load.c's.
 * Must not: print, keep global state, or read a file.
 */
#include "recipe/recipe.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static bool matches(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return true;
}

bool recipe_name_ok(const char *s)
{
	return s && strlen(s) <= RECIPE_NAME_MAX && matches(s, "-");
}

/* ---- parameters --------------------------------------------------------------------------------- */

/* Decimal, as every number of a recipe and of the command line (util.h). */
static bool parse_int64(const char *s, int64_t *out)
{
	return decimal_int(s, out);
}

const char *recipe_param_check(const struct recipe_param *p, const char *value)
{
	int64_t v, lo, hi;
	switch (p->type) {
	case PARAM_INTEGER:
	case PARAM_DURATION:
	case PARAM_PID:
		if (!parse_int64(value, &v))
			return p->type == PARAM_DURATION ? "expected whole seconds" : "expected an integer";
		if ((p->type != PARAM_INTEGER && v < 1) || (p->min && parse_int64(p->min, &lo) && v < lo))
			return "below the allowed minimum";
		if (p->max && parse_int64(p->max, &hi) && v > hi)
			return "above the allowed maximum";
		return NULL;
	case PARAM_SYMBOL: {
		const char *colon = strrchr(value, ':');
		if (value[0] != '/' || !colon || colon == value || !colon[1])
			return "expected /absolute/path/to/binary:symbol";
		return NULL;
	}
	case PARAM_STRING:
		return strlen(value) > 256 ? "longer than 256 characters" : NULL;
	}
	return "unknown type";
}

const struct recipe_param *recipe_param_find(const struct recipe *r, const char *name)
{
	for (unsigned i = 0; i < r->n_params; i++)
		if (!strcmp(r->params[i].name, name))
			return &r->params[i];
	return NULL;
}

const char *recipe_param_ref(const char *value, char *buf, size_t len)
{
	size_t n = value ? strlen(value) : 0;
	if (n < 4 || value[0] != '$' || value[1] != '{' || value[n - 1] != '}' || n - 3 >= len)
		return NULL;
	memcpy(buf, value + 2, n - 3);
	buf[n - 3] = '\0';
	return buf;
}

static void free_kv(struct recipe_kv *kv, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

void recipe_free(struct recipe *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->n_probes; i++) {
		struct recipe_probe *p = &r->probes[i];
		free(p->id);
		free(p->kind);
		free(p->filters.pid);
		free(p->filters.tid);
		free(p->filters.comm);
		free(p->filters.cgroup);
		free(p->filters.device);
		free(p->filters.local_port);
		free(p->filters.remote_port);
		free(p->filters.remote_addr);
		for (unsigned a = 0; a < p->n_attach; a++)
			free(p->attach[a]);
		free(p->attach);
		free_kv(p->options, p->n_options);
	}
	free(r->probes);
	free_kv(r->thresholds, r->n_thresholds);
	for (unsigned i = 0; i < r->n_params; i++) {
		free(r->params[i].name);
		free(r->params[i].dflt);
		free(r->params[i].min);
		free(r->params[i].max);
		free(r->params[i].description);
	}
	free(r->params);
	for (unsigned i = 0; i < r->n_next; i++) {
		free(r->next[i].verdict);
		free(r->next[i].recipe);
		for (unsigned k = 0; k < r->next[i].n_params; k++)
			free(r->next[i].params[k]);
		free(r->next[i].params);
	}
	free(r->next);
	free(r->path);
	free(r->name);
	free(r->symptom);
	free(r->summary);
	free(r->description);
	free(r->lua);
	free(r);
}

const struct recipe_kv *recipe_kv_find(const struct recipe_kv *kv, unsigned n, const char *key)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key))
			return &kv[i];
	return NULL;
}
