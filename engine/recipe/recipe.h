/* recipe.h — a symptom recipe (recipes/NAME.yaml) as data: what schemas/recipe.md describes.
 *
 * Owns: struct recipe and what it holds (probes, their filters and free-form options, budgets,
 * typed parameters and the "${NAME}" references to them, thresholds, `next:`), a parameter's value
 * checked against its type and bounds, the one rule of a recipe name, and freeing a recipe.
 * Reading one from its file is load.h's (a libyaml document, the fixed schema, the rules); where
 * recipes are found is recipe_find.h's.
 * Must not: know which probe kinds exist or what their options mean (plan.c checks that against the
 * catalog), run anything, or print.
 */
#ifndef DIAG_RECIPE_H
#define DIAG_RECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

/* One entry of a free-form scalar mapping (probe options, thresholds). Values stay text; the
 * consumer (plan.c, verdict.c) types them. line is 1-based, 0 when unknown. */
struct recipe_kv {
	char *key;
	char *value;
	unsigned line;
};

/* In-kernel filters a probe may be given, as written (NULL when not set; any may be a
 * "${NAME}" parameter). engine/plan/filters.c resolves them and checks the probe kind honours them. */
struct recipe_filters {
	char *pid;    /* "target" (the --pid of the run, all its threads) or a number */
	char *tid;
	char *comm;
	char *cgroup; /* "target" or a path in the cgroup v2 hierarchy */
	char *device; /* a block device name */
	char *local_port, *remote_port, *remote_addr;
};

/* `when:` of a probe in a `target: optional-pid` recipe: always (the default), only in runs with a
 * target (--pid), or only in host-wide runs (without --pid). */
enum recipe_when { RECIPE_WHEN_ALWAYS = 0, RECIPE_WHEN_TARGET = 1, RECIPE_WHEN_HOST = 2 };

struct recipe_probe {
	char *id;   /* unique within the recipe; key of its results */
	char *kind; /* probe kind from the catalog */
	uint8_t when; /* enum recipe_when */
	struct recipe_filters filters;
	char **attach; /* preferred attach variants, in order; may be empty */
	unsigned n_attach;
	struct recipe_kv *options;
	unsigned n_options;
	unsigned line; /* line of the probe's entry */
};

/* A typed parameter the user may set with --param NAME=VALUE; recipe values refer to it as
 * "${NAME}" (a whole option value, threshold or filter). pid and duration are built in. */
enum param_type { PARAM_INTEGER, PARAM_STRING, PARAM_SYMBOL, PARAM_PID, PARAM_DURATION };

struct recipe_param {
	char *name;
	enum param_type type;
	char *dflt;        /* NULL: the parameter is required */
	char *min, *max;   /* integer/duration bounds as text (checked strictly); NULL when open */
	char *description; /* may be NULL */
};

/* budgets.max_chain_depth: at most this many recipes after the first (--follow) */
#define CHAIN_DEPTH_MAX 4

struct recipe_budgets {
	uint32_t max_duration_s;
	uint32_t max_sample_hz;
	uint64_t max_events_per_s; /* 0 = no limit declared */
	double max_cpu_pct;
	uint64_t max_map_bytes;
	bool degrade_sample; /* `degrade: sample`: over max_events_per_s, sample 1-in-N instead of refusing */
	uint32_t preflight_ms; /* pre-flight window; 0 = the default, 250 ms */
	/* --follow (chain.c): how many recipes may run after this one (0: none, the recipe does not
	 * chain) and the longest the whole chain may take, this run included (needed when depth > 0) */
	uint32_t max_chain_depth;
	uint32_t max_chain_duration_s;
};

/* `next:` — a declared follow-up (--follow, chain.c): when the chain's pick is a verdict with this
 * id, run this recipe with these parameters ("NAME=VALUE"; VALUE may be ${verdict.KEY}: the
 * verdict's next.params.KEY at run time). */
struct recipe_next {
	char *verdict;
	char *recipe;
	char **params;
	unsigned n_params;
};

enum recipe_target {
	RECIPE_TARGET_NONE = 0,
	RECIPE_TARGET_PID = 1,                 /* "pid": one process, --pid required */
	RECIPE_TARGET_PID_OPTIONAL = 2,        /* "optional-pid": --pid, or the whole host */
	RECIPE_TARGET_PROCESSES = 3,           /* "processes": --pid, --comm, --cgroup, --unit or
						* --container required */
	RECIPE_TARGET_PROCESSES_OPTIONAL = 4,  /* "optional-processes": those, or the whole host */
};
/* What a recipe's `target:` accepts. */
static inline bool recipe_target_required(uint8_t t)
{
	return t == RECIPE_TARGET_PID || t == RECIPE_TARGET_PROCESSES;
}
static inline bool recipe_target_sets(uint8_t t)
{
	return t == RECIPE_TARGET_PROCESSES || t == RECIPE_TARGET_PROCESSES_OPTIONAL;
}
static inline bool recipe_target_optional(uint8_t t)
{
	return t == RECIPE_TARGET_PID_OPTIONAL || t == RECIPE_TARGET_PROCESSES_OPTIONAL;
}

struct recipe {
	char *path;        /* as given to recipe_load */
	char *name;        /* e.g. "high-cpu" */
	char *symptom;     /* short symptom phrase */
	char *summary;     /* one line */
	char *description; /* may be NULL */
	char *lua;         /* Lua file, as written in the recipe (relative to the lua dir) */
	/* `target:` — RECIPE_TARGET_NONE: takes no target; PID: needs --pid; PID_OPTIONAL: the
	 * target with --pid, the whole host without it (filters naming "target" are then dropped);
	 * PROCESSES(_OPTIONAL): the same, and a set of processes is a target too (--comm, ...) */
	uint8_t target;
	uint32_t duration_s;  /* default collection time */
	struct recipe_budgets budgets;
	struct recipe_probe *probes;
	unsigned n_probes;
	struct recipe_kv *thresholds;
	unsigned n_thresholds;
	struct recipe_param *params;
	unsigned n_params;
	struct recipe_next *next; /* `next:`, may be empty */
	unsigned n_next;
};

/* A recipe read from a file: load.h. Frees r and everything it holds (NULL: nothing). */
void recipe_free(struct recipe *r);

/* Checks VALUE against a parameter's type and bounds: NULL when fine, else what is wrong
 * (static text). */
const char *recipe_param_check(const struct recipe_param *p, const char *value);
const struct recipe_param *recipe_param_find(const struct recipe *r, const char *name);
/* "${NAME}" → NAME (written into buf), else NULL. */
const char *recipe_param_ref(const char *value, char *buf, size_t len);

/* Looks up a free-form entry; NULL when absent. */
const struct recipe_kv *recipe_kv_find(const struct recipe_kv *kv, unsigned n, const char *key);

/* A recipe name: [a-z0-9-]+, at most RECIPE_NAME_MAX characters — never a path. The one rule
 * for the recipe's `name:`, the approvals lock's [recipe NAME] and a name read from a report. */
#define RECIPE_NAME_MAX 64
bool recipe_name_ok(const char *s);

#endif
