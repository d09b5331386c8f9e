/* audit.h — the production policy file and the audit trail.
 *
 * Owns: reading the policy (/etc/diagnose/policy.yaml and $DIAGNOSE_POLICY: a strict, tiny YAML
 * mapping `mode: production|development`, optional `audit_file: /abs/path` and
 * `recipes_dir: /abs/path`), and writing one JSON line per run, dry run, refusal or failure to
 * syslog (ident "diagnose", LOG_AUTHPRIV) and to every configured audit file (policy
 * `audit_file`, $DIAGNOSE_AUDIT_FILE), each opened O_APPEND|O_CREAT, mode 0640.
 * Must not: decide whether a recipe is approved (approval.c), or print.
 *
 * An environment variable can only add to the system policy: when /etc/diagnose/policy.yaml says
 * production, $DIAGNOSE_POLICY, $DIAGNOSE_MODE and the command line cannot switch it off, and
 * its audit file is always written.
 */
#ifndef DIAG_AUDIT_H
#define DIAG_AUDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "plan.h"
#include "util.h"
#include "value.h"

#define POLICY_DEFAULT_PATH "/etc/diagnose/policy.yaml"
#define AUDIT_MAX_FILES 4

struct policy {
	bool production;
	const char *production_source; /* the policy file that said production (points into files) */
	char *files[2];                /* policy files read */
	size_t n_files;
	char *audit_files[2];
	size_t n_audit_files;
	char *recipes_dir;             /* production: recipes only from here; NULL = not pinned */
};

/* Parses one policy file into *p (adds to it). Errors: DIAG_EXIT_USAGE, "PATH:LINE: message". */
int policy_parse_file(const char *path, struct policy *p, struct diag_err *err);
/* The system policy (POLICY_DEFAULT_PATH when it exists) and $DIAGNOSE_POLICY (which must exist
 * when set and not empty). */
int policy_load(struct policy *p, struct diag_err *err);
void policy_free(struct policy *p);
/* Production with `recipes_dir` in the policy: the recipes directory the search order finds
 * (explicit_dir = --recipes, may be NULL) must be that one. Else -1, DIAG_EXIT_REFUSED. */
int policy_check_recipes_dir(const struct policy *p, const char *explicit_dir, struct diag_err *err);

struct audit {
	int fds[AUDIT_MAX_FILES];
	char *paths[AUDIT_MAX_FILES];
	size_t n;
	bool production;
};

/* Opens syslog and the audit files. Returns -1 (err: which file, why; DIAG_EXIT_REFUSED) when an
 * audit file cannot be opened; the others stay usable, so a refusal can still be recorded. */
int audit_open(struct audit *a, const struct policy *pol, bool production, struct diag_err *err);
void audit_close(struct audit *a);

struct audit_event {
	const char *action;        /* "run", "dry-run", "refused", "failed" */
	const char *symptom;       /* as given on the command line */
	const char *recipe_name;   /* NULL when the recipe was not loaded */
	const char *recipe_path;
	const char *recipe_sha256;
	bool approved;             /* matches the approvals lock */
	int pid;                   /* requested --pid, 0 when none */
	double duration_s;         /* requested --duration, 0 when none */
	const struct plan *plan;   /* for the target; may be NULL */
	const struct value *report; /* the run's report, NULL when none */
	int exit_code;
	const char *reason;        /* refusal or failure message, or NULL */
};

/* The audit record as a value tree (caller frees). */
struct value *audit_record(const struct audit_event *ev, bool production);
/* Appends the record as one line to every audit file and to syslog. Returns -1 (err) when a
 * file write failed. */
int audit_write(struct audit *a, const struct audit_event *ev, struct diag_err *err);

#endif
