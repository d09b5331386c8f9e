/* audit.h — the production policy file and the audit trail.
 *
 * Owns: reading the policy (/etc/diagnose/policy.yaml and $DIAGNOSE_POLICY: a strict, tiny YAML
 * mapping `mode: production|development`, optional `audit_file: /abs/path` and
 * `recipes_dir: /abs/path`, production's trust root), and writing JSON lines — a start record
 * before anything is loaded, and one end record per run, dry run, refusal or failure — to syslog
 * (/dev/log, ident "diagnose", LOG_AUTHPRIV) and to every configured audit file (policy
 * `audit_file`, and outside production $DIAGNOSE_AUDIT_FILE), each opened O_APPEND|O_NOFOLLOW,
 * created mode 0640.
 * Must not: decide whether a recipe is approved (approval.c), or print.
 *
 * The environment can only restrict: when /etc/diagnose/policy.yaml says production,
 * $DIAGNOSE_POLICY, $DIAGNOSE_MODE and the command line cannot switch it off, and its audit file
 * is always written; a $DIAGNOSE_POLICY policy may turn production on and add audit files, never
 * set or move recipes_dir. As root, an audit path the environment chose ($DIAGNOSE_AUDIT_FILE, or
 * the audit_file of a $DIAGNOSE_POLICY policy) is only a NAME.jsonl in a directory root alone can
 * change, created new or already a diagnose audit log (audit.c, open_chosen); in production
 * $DIAGNOSE_AUDIT_FILE is ignored (audit.env_ignored says so).
 */
#ifndef DIAG_AUDIT_H
#define DIAG_AUDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "plan/plan.h"
#include "recipe/source.h"
#include "common/util.h"
#include "common/value.h"

#define POLICY_DEFAULT_PATH "/etc/diagnose/policy.yaml"
#define AUDIT_MAX_FILES 4

struct policy {
	bool production;
	const char *production_source; /* the policy file that said production (points into files) */
	char *files[2];                /* policy files read */
	size_t n_files;
	char *audit_files[2];
	bool audit_from_env[2];        /* named by the $DIAGNOSE_POLICY policy: a path the environment chose */
	size_t n_audit_files;
	char *recipes_dir;             /* production: recipes only from here; NULL = the installed ones.
					* Set by the system policy only. */
};

/* Parses one policy file into *p (adds to it); from_env: the file $DIAGNOSE_POLICY named, which
 * may not set recipes_dir other than the system policy's. A file on a pseudo file system (procfs,
 * sysfs, ...) is refused (source_read). Errors: DIAG_EXIT_USAGE, "PATH:LINE: message". */
int policy_parse_file(const char *path, bool from_env, struct policy *p, struct diag_err *err);
/* The system policy (POLICY_DEFAULT_PATH when it exists) and $DIAGNOSE_POLICY (which must exist
 * when set and not empty). */
int policy_load(struct policy *p, struct diag_err *err);
void policy_free(struct policy *p);
#define AUDIT_SYSLOG_PATH "/dev/log"

struct audit {
	int fds[AUDIT_MAX_FILES];
	char *paths[AUDIT_MAX_FILES];
	size_t n;
	bool production;
	int syslog_fd;         /* connected to /dev/log, -1 when not reachable */
	bool syslog_stream;    /* SOCK_STREAM (messages end in NUL) rather than datagrams */
	char syslog_error[160]; /* why the last syslog send or connect failed */
	const char *env_ignored; /* production: the $DIAGNOSE_AUDIT_FILE not used, for a warning; or NULL */
};

/* Connects to syslog and opens the audit files (O_APPEND, no symlink, a regular file owned by
 * this euid and not group/world-writable; as root, a path the environment chose by the stricter
 * rules above; $DIAGNOSE_AUDIT_FILE not in production). Returns -1 (err: which file, why; DIAG_EXIT_REFUSED)
 * when an audit file cannot be used, or in production when there is no audit file and syslog is
 * not reachable; what could be opened stays usable, so a refusal can still be recorded. */
int audit_open(struct audit *a, const struct policy *pol, bool production, struct diag_err *err);
void audit_close(struct audit *a);

struct audit_event {
	const char *action;        /* "start", "run", "dry-run", "refused", "failed" */
	const char *run_id;        /* links a run's start record to its end record; may be NULL */
	const struct recipe_sources *sources; /* hashes of every file read, for the record */
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
/* Appends the record as one line to every audit file (fsync'ed) and to syslog. Returns -1 (err)
 * when a file write failed, or in production when syslog is the only destination and the send
 * failed. */
int audit_write(struct audit *a, const struct audit_event *ev, struct diag_err *err);

#endif
