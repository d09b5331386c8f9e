/* plan.h — a recipe resolved for one run: target, duration, parameters (--param checked against
 * the recipe's declarations, "${NAME}" references substituted), probes from the catalog with
 * typed options, attach variants, map memory (per-CPU maps for every possible CPU), thresholds,
 * and the static budget checks; and the bundle: a recipe with its Lua read once (source.h).
 *
 * Owns: everything decided before the kernel is touched.
 * Must not: load or attach BPF, or print.
 */
#ifndef DIAG_PLAN_H
#define DIAG_PLAN_H

#include <limits.h>
#include <stdint.h>

#include "plan/catalog.h"
#include "recipe/recipe.h"
#include "recipe/source.h"
#include "target/target.h"
#include "common/value.h"

struct plan_probe {
	const struct recipe_probe *rp;
	const struct probe_kind *kind;
	struct probe_config cfg;
	const char *variants[8]; /* NULL-terminated; cfg.variants points here */
	uint64_t map_bytes;      /* static estimate of this probe's map memory */
	uint64_t sample_hz;      /* 0 when the probe does not sample */
};

struct plan {
	const struct recipe *recipe;
	int target_pid;           /* --pid; 0 when the run has no target or a set of processes */
	struct target *target;    /* --comm, --cgroup, --unit, --container (owned); else NULL */
	char target_comm[64];     /* the target's, or the first process of a set's */
	char target_exe[PATH_MAX];   /* /proc/PID/exe's target */
	char target_started_as[PATH_MAX]; /* cmdline[0] when it names more than exe does; else "" */
	double duration_s;
	int ncpus;                /* online CPUs */
	int possible_cpus;        /* what per-CPU maps are sized for */
	struct plan_probe *probes;
	unsigned n_probes;
	uint64_t map_bytes;       /* total over probes */
	struct value *thresholds; /* object: name -> number (or string) */
	struct value *params;     /* object: parameter name -> value as resolved (text) */
};

struct plan_args {
	int pid;           /* 0: none given */
	struct target_sel sel; /* a set of processes (TARGET_NONE: none) */
	double duration_s; /* 0: the recipe's default */
	bool check_target; /* false for lint/show: no process needed */
	const char *const *params; /* "NAME=VALUE" from --param (pid and duration excluded) */
	size_t n_params;
	struct tfile_reader *files; /* reads the target's files (tfile.h): the run's, which its
				     * session reads through after; NULL: one of its own */
};

/* Resolves and checks statically. Errors: DIAG_EXIT_USAGE for a bad recipe or argument (message
 * "FILE:LINE: field: ..."), DIAG_EXIT_REFUSED for a static budget exceeded. */
int plan_build(const struct recipe *r, const struct plan_args *args, struct plan **out,
	       struct diag_err *err);
void plan_free(struct plan *p);

/* The plan as a value (what `show` and the dry run print): duration, map memory, and per probe
 * its id, kind, variants (with the one chosen and its note from `loaded`, an object probe id ->
 * {variant, note}; may be NULL), pid filter, options and map memory. Caller frees. */
struct value *plan_to_value(const struct plan *plan, const struct value *loaded);

/* The run's target for reports, Lua and the audit trail: {pid, comm, exe} for --pid; for a set
 * of processes target_to_value's {selection, name, cgroup, processes [...]} with the first
 * process's comm and exe; NULL without a target. Caller frees. */
struct value *plan_target_value(const struct plan *plan);

/* A recipe file read once (source.h), parsed from those bytes, its Lua snippet and libraries read,
 * and — when args is not NULL — planned. trusted: production's ownership checks on every file.
 * Nothing after this reads the recipe or its Lua by path again. */
struct bundle {
	struct recipe_sources src;
	struct recipe *recipe;
	struct plan *plan; /* NULL when loaded without args */
};
int bundle_load(const char *recipe_path, bool trusted, const struct plan_args *args,
		struct bundle *b, struct diag_err *err);
void bundle_free(struct bundle *b);

#endif
