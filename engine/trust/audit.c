/* audit.c — production policy file and audit trail. Contracts: audit.h. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <yaml.h>

#include "trust/audit.h"
#include "common/privilege.h"
#include "recipe/recipe.h"
#include "verdict/verdict.h"

/* ---- policy ------------------------------------------------------------------------------- */

static int pfail(struct diag_err *err, const char *path, const yaml_mark_t *m, const char *msg,
		 const char *arg)
{
	return diag_fail(err, DIAG_EXIT_USAGE, "%s:%zu: %s%s%.80s%s", path, m->line + 1, msg,
			 arg ? " \"" : "", arg ? arg : "", arg ? "\"" : "");
}

static bool abs_path_ok(const char *s)
{
	if (s[0] != '/' || strlen(s) > 1024)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < ' ')
			return false;
	return true;
}

/* A policy the environment named ($DIAGNOSE_POLICY) may only restrict: turn production on, add
 * an audit file. It never moves production's trust root: its recipes_dir must be the system
 * policy's (when that sets one), else it is an error. */
static int policy_apply(const char *path, bool from_env, struct policy *p, const char *key,
			const char *val, const yaml_mark_t *m, unsigned *seen, struct diag_err *err)
{
	static const char *const keys[] = { "mode", "audit_file", "recipes_dir" };
	unsigned k = 0;
	while (k < ARRAY_LEN(keys) && strcmp(keys[k], key))
		k++;
	if (k == ARRAY_LEN(keys))
		return pfail(err, path, m, "unknown key (known: mode, audit_file, recipes_dir):", key);
	if (*seen & (1u << k))
		return pfail(err, path, m, "key given twice:", key);
	*seen |= 1u << k;
	if (k == 0) {
		if (!strcmp(val, "production")) {
			p->production = true;
			p->production_source = p->files[p->n_files - 1];
		} else if (strcmp(val, "development"))
			return pfail(err, path, m, "mode: expected production or development, got", val);
	} else if (!abs_path_ok(val))
		return pfail(err, path, m, k == 1 ? "audit_file: expected an absolute path, got"
						  : "recipes_dir: expected an absolute path, got", val);
	else if (k == 1 && p->n_audit_files < ARRAY_LEN(p->audit_files)) {
		p->audit_from_env[p->n_audit_files] = from_env;
		p->audit_files[p->n_audit_files++] = xstrdup(val);
	} else if (k == 2) {
		if (from_env && !(p->recipes_dir && !strcmp(p->recipes_dir, val)))
			return pfail(err, path, m, "recipes_dir: only " POLICY_DEFAULT_PATH " sets production's "
				     "trust root; a policy named by $DIAGNOSE_POLICY may add restrictions, not move "
				     "it:", val);
		if (p->recipes_dir && strcmp(p->recipes_dir, val))
			return pfail(err, path, m, "recipes_dir: differs from the system policy's", val);
		free(p->recipes_dir);
		p->recipes_dir = xstrdup(val);
	}
	return 0;
}

int policy_parse_file(const char *path, bool from_env, struct policy *p, struct diag_err *err)
{
	/* Root reads a policy only if no one else can have written it, and not from a pseudo file
	 * system (source_read): its owner and mode would say nothing there. */
	struct source_file f;
	if (source_read(path, privilege_strict(), 0, &f, err))
		return diag_wrap(err, "policy");
	if (p->n_files < ARRAY_LEN(p->files))
		p->files[p->n_files++] = xstrdup(path);
	yaml_parser_t parser;
	yaml_event_t ev;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)f.data, f.len);
	/* Expected: STREAM-START DOCUMENT-START MAPPING-START (SCALAR SCALAR)* MAPPING-END
	 * DOCUMENT-END STREAM-END. Anything else is refused. */
	enum { S_STREAM, S_DOC, S_MAP, S_KEY, S_VAL, S_DOC_END, S_STREAM_END, S_DONE } st = S_STREAM;
	char *key = NULL;
	unsigned seen = 0;
	int rc = 0;
	while (rc == 0 && st != S_DONE) {
		if (!yaml_parser_parse(&parser, &ev)) {
			yaml_mark_t m = parser.problem_mark;
			rc = pfail(err, path, &m, parser.problem ? parser.problem : "invalid YAML", NULL);
			break;
		}
		const yaml_mark_t *m = &ev.start_mark;
		switch (st) {
		case S_STREAM:
			st = S_DOC; /* STREAM-START */
			break;
		case S_DOC:
			if (ev.type != YAML_DOCUMENT_START_EVENT)
				rc = pfail(err, path, m, "empty policy: expected `mode: production` or "
					   "`mode: development`", NULL);
			st = S_MAP;
			break;
		case S_MAP:
			if (ev.type != YAML_MAPPING_START_EVENT || ev.data.mapping_start.anchor)
				rc = pfail(err, path, m, "the policy must be a mapping of `key: value` lines", NULL);
			st = S_KEY;
			break;
		case S_KEY:
			if (ev.type == YAML_MAPPING_END_EVENT) {
				st = S_DOC_END;
				break;
			}
			if (ev.type != YAML_SCALAR_EVENT || ev.data.scalar.anchor || ev.data.scalar.tag) {
				rc = pfail(err, path, m, "expected a plain key", NULL);
				break;
			}
			key = xstrdup((const char *)ev.data.scalar.value);
			st = S_VAL;
			break;
		case S_VAL:
			if (ev.type != YAML_SCALAR_EVENT || ev.data.scalar.anchor || ev.data.scalar.tag ||
			    strlen((const char *)ev.data.scalar.value) != ev.data.scalar.length) {
				rc = pfail(err, path, m, "expected a single text value for", key);
				break;
			}
			rc = policy_apply(path, from_env, p, key, (const char *)ev.data.scalar.value, m, &seen,
					  err);
			free(key);
			key = NULL;
			st = S_KEY;
			break;
		case S_DOC_END:
			st = S_STREAM_END;
			break;
		case S_STREAM_END:
			if (ev.type != YAML_STREAM_END_EVENT)
				rc = pfail(err, path, m, "only one YAML document is allowed", NULL);
			st = S_DONE;
			break;
		case S_DONE:
			break;
		}
		yaml_event_delete(&ev);
	}
	if (rc == 0 && !(seen & 1u))
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s: mode: missing (production or development)", path);
	free(key);
	yaml_parser_delete(&parser);
	source_free(&f);
	return rc;
}

int policy_load(struct policy *p, struct diag_err *err)
{
	memset(p, 0, sizeof(*p));
	if (access(POLICY_DEFAULT_PATH, F_OK) == 0 && policy_parse_file(POLICY_DEFAULT_PATH, false, p, err))
		return -1;
	/* a user given capabilities chooses no policy of their own (privilege.h) */
	const char *env = privilege_on_behalf_of_user() ? NULL : getenv("DIAGNOSE_POLICY");
	if (env && *env && strcmp(env, POLICY_DEFAULT_PATH) && policy_parse_file(env, true, p, err))
		return -1;
	return 0;
}

void policy_free(struct policy *p)
{
	for (size_t i = 0; i < p->n_files; i++)
		free(p->files[i]);
	for (size_t i = 0; i < p->n_audit_files; i++)
		free(p->audit_files[i]);
	free(p->recipes_dir);
	memset(p, 0, sizeof(*p));
}

/* ---- audit trail -------------------------------------------------------------------------- */

static int say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* A diagnose audit log starts with one of our records: {"time":"...","user":...,"diagnose_pid":
 * within its first line. */
static bool is_audit_log(int fd, const struct stat *st)
{
	if (st->st_size == 0)
		return true;
	char buf[1024];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return strncmp(buf, "{\"time\":\"", 9) == 0 && strstr(buf, ",\"diagnose_pid\":") != NULL;
}

/* An audit path that the environment chose ($DIAGNOSE_AUDIT_FILE, or the audit_file of a policy
 * $DIAGNOSE_POLICY named), written as root: whoever set the environment must not be able to aim
 * root's appends — lines that carry what a target controls, such as its comm — at a file that
 * something else reads as code or configuration (/etc/profile.d/zz.sh, /etc/passwd). So:
 *  - the name is NAME.jsonl (no conf.d, profile.d, cron.d or sudoers.d reads such a name);
 *  - its directory is a real path (no symbolic link, `.` or `..`), owned by root and not group-
 *    or world-writable, and so is every directory above it (a root-owned sticky one, /tmp, may
 *    be world-writable): no one but root can change which file the name is;
 *  - a new file is created there (O_EXCL, 0640); an existing one is appended to only when it is a
 *    regular file with one link, root's, not group- or world-writable, and a diagnose audit log:
 *    empty, or its first line one of our records.
 * Returns the fd (O_APPEND), or -1 with why. */
static int open_chosen(const char *path, char *why, size_t len)
{
	const char *slash = strrchr(path, '/');
	if (path[0] != '/' || !slash)
		return say(why, len, "not an absolute path");
	const char *base = slash + 1;
	size_t bl = strlen(base);
	if (bl <= 6 || base[0] == '.' || strcmp(base + bl - 6, ".jsonl"))
		return say(why, len, "as root, an audit file named by the environment must be called NAME.jsonl");
	char dir[PATH_MAX], real[PATH_MAX];
	if ((size_t)(slash - path) >= sizeof(dir))
		return say(why, len, "path too long");
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (!realpath(dir, real))
		return say(why, len, "%s: %s", dir, strerror(errno));
	if (strcmp(real, dir))
		return say(why, len, "its directory %s is not a real path (it is %s): name that one", dir, real);
	struct stat dst;
	for (bool first = true;; first = false) {
		struct stat st;
		if (lstat(real, &st) || !S_ISDIR(st.st_mode))
			return say(why, len, "%s: not a directory", real);
		if (first)
			dst = st;
		bool sticky_ok = !first && (st.st_mode & S_ISVTX);
		if (st.st_uid != 0 || ((st.st_mode & 022) && !sticky_ok))
			return say(why, len, "%s %s is %s (mode %04o, uid %u): as root, an audit file named by "
				   "the environment is written only where root alone can change what is there",
				   first ? "its directory" : "the directory", real,
				   st.st_uid != 0 ? "not owned by root" : "group- or world-writable",
				   (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
		if (!strcmp(real, "/"))
			break;
		char *cut = strrchr(real, '/');
		if (cut == real)
			real[1] = '\0';
		else
			*cut = '\0';
	}
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dfd < 0 || fstat(dfd, &st) || st.st_dev != dst.st_dev || st.st_ino != dst.st_ino) {
		if (dfd >= 0)
			close(dfd);
		return say(why, len, "%s: changed while checked", dir);
	}
	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 2; tries++) {
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISLNK(st.st_mode)) {
				say(why, len, "a symbolic link (not followed)");
				break;
			}
			if (!S_ISREG(st.st_mode)) {
				say(why, len, "not a regular file");
				break;
			}
			fd = openat(dfd, base, O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
			const char *bad = NULL;
			if (fd < 0)
				bad = strerror(errno);
			else if (fstat(fd, &st) || !S_ISREG(st.st_mode))
				bad = "not a regular file";
			else if (st.st_uid != 0)
				bad = "owned by another user";
			else if (st.st_mode & 022)
				bad = "group- or world-writable";
			else if (st.st_nlink != 1)
				bad = "it has other hard links";
			else if (!is_audit_log(fd, &st))
				bad = "it exists and is not a diagnose audit log (its first line is not an audit "
				      "record): as root, an audit file named by the environment is created new or "
				      "appended to when it is one";
			if (bad) {
				say(why, len, "%s", bad);
				if (fd >= 0)
					close(fd);
				fd = -1;
				break;
			}
		} else if (errno == ENOENT) {
			fd = openat(dfd, base, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
				    O_CLOEXEC | O_NOCTTY, 0640);
			if (fd < 0 && errno != EEXIST) /* EEXIST: another run created it first; look again */
				say(why, len, "%s", strerror(errno));
			else if (fd < 0)
				say(why, len, "created by someone else while opened");
		} else {
			say(why, len, "%s", strerror(errno));
			break;
		}
	}
	close(dfd);
	return fd;
}

/* An audit file is appended to as root: never through a symlink, never a FIFO or device, and
 * only a file that is ours alone (owned by this euid, not group- or world-writable), so that no
 * one else can rewrite the trail or point it somewhere else. A path the environment chose is
 * opened by open_chosen's stricter rules when running as root (chosen). */
static void add_file(struct audit *a, const char *path, bool chosen, const char *label,
		     struct diag_err *err, int *rc)
{
	if (!path || !*path)
		return;
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->paths[i], path))
			return;
	if (a->n == AUDIT_MAX_FILES)
		return;
	char whybuf[400];
	const char *why = NULL;
	int fd;
	if (chosen) {
		fd = open_chosen(path, whybuf, sizeof(whybuf));
		if (fd < 0)
			why = whybuf;
	} else {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK,
			  0640);
		struct stat st;
		if (fd < 0)
			why = errno == ELOOP ? "a symbolic link (not followed)" : strerror(errno);
		else if (fstat(fd, &st))
			why = strerror(errno);
		else if (!S_ISREG(st.st_mode))
			why = "not a regular file";
		else if (st.st_uid != geteuid())
			why = "owned by another user";
		else if (st.st_mode & 022)
			why = "group- or world-writable";
	}
	if (why) {
		if (fd >= 0)
			close(fd);
		if (*rc == 0)
			*rc = diag_fail(err, DIAG_EXIT_REFUSED, "cannot use the audit file %s (%s): %s", path,
					label, why);
		return;
	}
	a->paths[a->n] = xstrdup(path);
	a->fds[a->n++] = fd;
}

/* syslog(3) says nothing when no daemon listens: talk to /dev/log ourselves, so that a lost
 * record is known. Datagram first, as syslog(3) does, then stream. */
static int syslog_connect(struct audit *a)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", AUDIT_SYSLOG_PATH);
	int saved = 0;
	for (size_t i = 0; i < ARRAY_LEN(types); i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			a->syslog_fd = fd;
			a->syslog_stream = types[i] == SOCK_STREAM;
			return 0;
		}
		saved = errno;
		close(fd);
	}
	snprintf(a->syslog_error, sizeof(a->syslog_error), "%s: %s", AUDIT_SYSLOG_PATH, strerror(saved));
	return -1;
}

static int syslog_send(struct audit *a, int severity, const char *line, size_t len)
{
	if (a->syslog_fd < 0)
		return -1;
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", localtime_r(&now, &tm));
	/* RFC 3164 as syslog(3) writes it; a stream socket takes a NUL after each message. */
	char *msg = xasprintf("<%d>%s diagnose[%d]: %.*s", LOG_AUTHPRIV | severity, stamp, (int)getpid(),
			      (int)len, line);
	size_t n = strlen(msg) + (a->syslog_stream ? 1 : 0);
	ssize_t w = send(a->syslog_fd, msg, n, MSG_NOSIGNAL);
	int rc = 0;
	if (w != (ssize_t)n) {
		snprintf(a->syslog_error, sizeof(a->syslog_error), "%s: %s", AUDIT_SYSLOG_PATH,
			 w < 0 ? strerror(errno) : "short write");
		rc = -1;
	}
	free(msg);
	return rc;
}

int audit_open(struct audit *a, const struct policy *pol, bool production, struct diag_err *err)
{
	memset(a, 0, sizeof(*a));
	a->production = production;
	a->syslog_fd = -1;
	int rc = 0;
	bool root = privilege_strict();
	for (size_t i = 0; pol && i < pol->n_audit_files; i++)
		add_file(a, pol->audit_files[i], root && pol->audit_from_env[i],
			 pol->audit_from_env[i] ? "audit_file of $DIAGNOSE_POLICY" : "audit_file of the policy",
			 err, &rc);
	/* Production's trail is the policy's: the variable would only let a caller choose where root
	 * writes. Ignored there (said, when it names a file the policy does not). */
	const char *env = privilege_on_behalf_of_user() ? NULL : getenv("DIAGNOSE_AUDIT_FILE");
	if (env && *env && production) {
		bool listed = false;
		for (size_t i = 0; i < a->n; i++)
			listed |= !strcmp(a->paths[i], env);
		for (size_t i = 0; pol && i < pol->n_audit_files; i++)
			listed |= !strcmp(pol->audit_files[i], env);
		a->env_ignored = listed ? NULL : env;
	} else
		add_file(a, env, root, "$DIAGNOSE_AUDIT_FILE", err, &rc);
	if (syslog_connect(a) && rc == 0 && production && a->n == 0)
		rc = diag_fail(err, DIAG_EXIT_REFUSED,
			       "syslog is not reachable (%s) and no audit_file is configured",
			       a->syslog_error);
	return rc;
}

void audit_close(struct audit *a)
{
	for (size_t i = 0; i < a->n; i++) {
		close(a->fds[i]);
		free(a->paths[i]);
	}
	a->n = 0;
	if (a->syslog_fd >= 0)
		close(a->syslog_fd);
	a->syslog_fd = -1;
}

static void set_str_or_null(struct value *o, const char *key, const char *s)
{
	if (s)
		value_set_str(o, key, s);
	else
		value_obj_set(o, key, value_null());
}

struct value *audit_record(const struct audit_event *ev, bool production)
{
	struct value *r = value_obj();
	char buf[256];
	time_t now = time(NULL);
	struct tm tm;
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	value_set_str(r, "time", buf);
	uid_t uid = getuid();
	struct passwd *pw = getpwuid(uid);
	if (pw)
		value_set_str(r, "user", pw->pw_name);
	else
		value_obj_set(r, "user", value_null());
	value_set_int(r, "uid", (int64_t)uid);
	if (uid != geteuid())
		value_set_int(r, "euid", (int64_t)geteuid());
	const char *sudo = getenv("SUDO_USER");
	if (sudo && *sudo)
		value_set_str(r, "sudo_user", sudo);
	if (gethostname(buf, sizeof(buf)) == 0) {
		buf[sizeof(buf) - 1] = '\0';
		value_set_str(r, "host", buf);
	}
	value_set_int(r, "diagnose_pid", (int64_t)getpid());
	value_set_str(r, "version", DIAG_VERSION);
	value_set_str(r, "mode", production ? "production" : "development");
	value_set_str(r, "action", ev->action);
	if (ev->run_id)
		value_set_str(r, "run_id", ev->run_id);
	value_set_int(r, "exit", ev->exit_code);
	if (ev->reason)
		value_set_str(r, "reason", ev->reason);
	struct value *rec = value_obj_set(r, "recipe", value_obj());
	set_str_or_null(rec, "symptom", ev->symptom);
	set_str_or_null(rec, "name", ev->recipe_name);
	set_str_or_null(rec, "path", ev->recipe_path);
	set_str_or_null(rec, "sha256", ev->recipe_sha256 && *ev->recipe_sha256 ? ev->recipe_sha256 : NULL);
	if (ev->sources) {
		const struct recipe_sources *src = ev->sources;
		struct value *files = value_obj_set(rec, "files", value_obj());
		const struct source_file *fs[] = { &src->recipe, &src->lua };
		for (size_t i = 0; i < ARRAY_LEN(fs) + src->n_libs; i++) {
			const struct source_file *f = i < ARRAY_LEN(fs) ? fs[i] : &src->libs[i - ARRAY_LEN(fs)];
			if (f->name)
				value_set_str(files, f->name, f->sha256);
		}
	}
	value_set_bool(r, "approved", ev->approved);
	struct value *params = value_obj_set(r, "params", value_obj());
	if (ev->pid > 0)
		value_set_int(params, "pid", ev->pid);
	if (ev->duration_s > 0)
		value_set_num(params, "duration", ev->duration_s);

	const struct value *rep = ev->report;
	const struct value *t = rep ? value_get(rep, "target") : NULL;
	struct value *planned = (!t || t->type != V_OBJ) && ev->plan ? plan_target_value(ev->plan) : NULL;
	if (t && t->type == V_OBJ)
		value_obj_set(r, "target", value_copy(t));
	else
		value_obj_set(r, "target", planned ? planned : value_null());
	if (rep) {
		value_set_num(r, "duration_s", value_get_num(rep, "duration_s", 0));
		set_str_or_null(r, "stop_reason", value_get_str(rep, "stop_reason"));
		const struct value *v = value_get(rep, "verdicts");
		if (v && v->type == V_ARR && v->arr.len)
			value_set_str(r, "worst_verdict", severity_name(verdicts_worst(v)));
		else
			value_obj_set(r, "worst_verdict", value_null());
		const struct value *o = value_get(rep, "overhead");
		const struct value *pct = o ? value_get(o, "bpf_cpu_pct") : NULL;
		value_obj_set(r, "bpf_cpu_pct", pct ? value_copy(pct) : value_null());
	} else {
		value_obj_set(r, "duration_s", value_null());
		value_obj_set(r, "stop_reason", value_null());
		value_obj_set(r, "worst_verdict", value_null());
		value_obj_set(r, "bpf_cpu_pct", value_null());
	}
	return r;
}

int audit_write(struct audit *a, const struct audit_event *ev, struct diag_err *err)
{
	struct value *rec = audit_record(ev, a->production);
	char *line = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&line, &len);
	if (!f)
		abort();
	value_write_json(rec, f, -1);
	fputc('\n', f);
	fclose(f);
	value_free(rec);
	int rc = 0;
	bool logged = syslog_send(a, strcmp(ev->action, "refused") ? LOG_INFO : LOG_NOTICE, line,
				  len ? len - 1 : 0) == 0;
	for (size_t i = 0; i < a->n; i++) {
		/* One write per line: O_APPEND keeps concurrent writers' lines whole. fsync: the
		 * record must outlive a crash of the machine the run may be part of. */
		ssize_t w = write(a->fds[i], line, len);
		if ((w != (ssize_t)len || fsync(a->fds[i])) && rc == 0)
			rc = diag_fail(err, DIAG_EXIT_REFUSED, "cannot write the audit file %s: %s", a->paths[i],
				       w < 0 || w == (ssize_t)len ? strerror(errno) : "short write");
	}
	/* With no audit file, syslog is the whole trail: losing it is an error. */
	if (rc == 0 && a->n == 0 && !logged && a->production)
		rc = diag_fail(err, DIAG_EXIT_REFUSED, "cannot write the audit record to syslog: %s",
			       a->syslog_error[0] ? a->syslog_error : "not connected");
	free(line);
	return rc;
}
