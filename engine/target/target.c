/* target.c — resolving --comm / --cgroup / --unit / --container to the processes a run covers,
 * and rescanning them while it runs. See target.h.
 * Must not: load BPF, know probes, or print.
 */
#include "target/target.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "common/privilege.h"
#include "target/procfs.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

/* Deep enough for kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podX.slice/
 * cri-containerd-ID.scope and systemd's user slices, not so deep that a scan wanders. */
#define CGROUP_SEARCH_DEPTH 8

const char *target_kind_name(enum target_kind k)
{
	static const char *const names[] = { "", "pid", "comm", "cgroup", "unit", "container" };
	return (unsigned)k < ARRAY_LEN(names) ? names[k] : "";
}

const char *target_kind_flag(enum target_kind k)
{
	static const char *const flags[] = { "", "--pid", "--comm", "--cgroup", "--unit", "--container" };
	return (unsigned)k < ARRAY_LEN(flags) ? flags[k] : "";
}

/* ---- pure parts ------------------------------------------------------------------------------ */

bool target_comm_matches(const char *want, const char *comm)
{
	return want[0] && strncmp(want, comm, 15) == 0 && (strlen(want) >= 15 || comm[strlen(want)] == '\0');
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

bool target_container_dir_matches(const char *dirname, const char *id)
{
	static const char *const prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-", "" };
	size_t idlen = strlen(id);
	if (idlen < 12 || idlen > 64 || !all_hex(id, idlen))
		return false;
	for (size_t i = 0; i < ARRAY_LEN(prefixes); i++) {
		size_t pl = strlen(prefixes[i]);
		if (strncmp(dirname, prefixes[i], pl) != 0)
			continue;
		const char *rest = dirname + pl;
		size_t n = strlen(rest);
		if (n > 6 && strcmp(rest + n - 6, ".scope") == 0)
			n -= 6;
		/* the full id is 64 hex digits; the one asked for is a prefix of it */
		if (n == 64 && all_hex(rest, n) && strncasecmp(rest, id, idlen) == 0)
			return true;
	}
	return false;
}

const char *target_unit_dir_name(const char *unit, char *buf, size_t len)
{
	static const char *const suffixes[] = { ".service", ".scope", ".slice", ".socket", ".mount" };
	if (!unit[0] || strchr(unit, '/') || strstr(unit, "..") || unit[0] == '.')
		return NULL;
	for (size_t i = 0; i < ARRAY_LEN(suffixes); i++) {
		size_t n = strlen(unit), sl = strlen(suffixes[i]);
		if (n > sl && strcmp(unit + n - sl, suffixes[i]) == 0)
			return (size_t)snprintf(buf, len, "%s", unit) < len ? buf : NULL;
	}
	return (size_t)snprintf(buf, len, "%s.service", unit) < len ? buf : NULL;
}

static int find_in(int dir_fd, const char *path, bool (*match)(const char *, const void *),
		   const void *arg, int depth, char *out, size_t len)
{
	DIR *d = fdopendir(dir_fd);
	if (!d) {
		close(dir_fd);
		return 0;
	}
	int found = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || e->d_type != DT_DIR)
			continue;
		char sub[PATH_MAX];
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= sizeof(sub))
			continue;
		if (match(e->d_name, arg)) {
			if (!found++ && out)
				snprintf(out, len, "%s", sub);
			continue; /* a match's own children are its processes, not other matches */
		}
		if (depth <= 1)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			found += find_in(fd, sub, match, arg, depth - 1, found ? NULL : out, len);
	}
	closedir(d);
	return found;
}

int target_find_dir(const char *root, bool (*match)(const char *name, const void *arg),
		    const void *arg, int max_depth, char *out, size_t len)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (out && len)
		out[0] = '\0';
	return find_in(fd, root, match, arg, max_depth, out, len);
}

/* ---- cgroup hierarchies ---------------------------------------------------------------------- */

static int cgroup_fs_version(const char *path)
{
	struct statfs sf;
	if (statfs(path, &sf))
		return 0;
	return sf.f_type == CGROUP2_SUPER_MAGIC ? 2 : sf.f_type == CGROUP_SUPER_MAGIC ? 1 : 0;
}

/* The hierarchies to search for a unit or a container, best first: the v2 one (pure v2 at
 * /sys/fs/cgroup, hybrid at /sys/fs/cgroup/unified), then v1 ones where systemd and container
 * runtimes keep every process (name=systemd, pids, memory, cpu). */
static size_t cgroup_roots(const char *roots[], size_t max)
{
	static const char *const candidates[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified",
						   "/sys/fs/cgroup/systemd", "/sys/fs/cgroup/pids",
						   "/sys/fs/cgroup/memory", "/sys/fs/cgroup/cpu" };
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_LEN(candidates) && n < max; i++) {
		int v = cgroup_fs_version(candidates[i]);
		/* /sys/fs/cgroup itself is a tmpfs on hybrid hosts: only a v2 mount there counts */
		if (v == 2 || (v == 1 && i >= 2))
			roots[n++] = candidates[i];
	}
	return n;
}

static bool match_name(const char *name, const void *arg)
{
	return strcmp(name, arg) == 0;
}

static bool match_container(const char *name, const void *arg)
{
	return target_container_dir_matches(name, arg);
}

/* Finds the one directory a unit or container id names, in the first hierarchy that has it. */
static int find_cgroup(struct target *t, bool (*match)(const char *, const void *), const void *arg,
		       const char *what, struct diag_err *err)
{
	const char *roots[8];
	size_t nr = cgroup_roots(roots, ARRAY_LEN(roots));
	if (!nr)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s %s: no cgroup hierarchy is mounted under /sys/fs/cgroup",
				 target_kind_flag(t->kind), t->text);
	for (size_t i = 0; i < nr; i++) {
		int n = target_find_dir(roots[i], match, arg, CGROUP_SEARCH_DEPTH, t->cgroup_dir,
					sizeof(t->cgroup_dir));
		if (n > 1)
			return diag_fail(err, DIAG_EXIT_USAGE, "%s %s: %d cgroups in %s match (one is %s): give "
					 "a longer %s", target_kind_flag(t->kind), t->text, n, roots[i],
					 t->cgroup_dir, what);
		if (n == 1) {
			t->cgroup_version = cgroup_fs_version(roots[i]);
			return 0;
		}
	}
	return diag_fail(err, DIAG_EXIT_USAGE, "%s %s: no such %s in the cgroup hierarchies (searched %s%s)",
			 target_kind_flag(t->kind), t->text, what, roots[0], nr > 1 ? " and the v1 ones" : "");
}

static bool has_dotdot(const char *path)
{
	for (const char *p = strstr(path, ".."); p; p = strstr(p + 1, ".."))
		if ((p == path || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

/* --cgroup PATH: a directory under /sys/fs/cgroup (any hierarchy), or a path relative to the v2
 * hierarchy's root ("/system.slice/x.service", a container's "/docker/ID"). */
static int resolve_cgroup_path(struct target *t, struct diag_err *err)
{
	const char *text = t->text;
	if (text[0] != '/' || has_dotdot(text))
		return diag_fail(err, DIAG_EXIT_USAGE, "--cgroup %s: expected an absolute path, in /sys/fs/cgroup "
				 "or in the cgroup v2 hierarchy (e.g. /system.slice/nginx.service)", text);
	if (strncmp(text, "/sys/fs/cgroup/", 15) == 0 || strcmp(text, "/sys/fs/cgroup") == 0) {
		snprintf(t->cgroup_dir, sizeof(t->cgroup_dir), "%s", text);
	} else {
		const char *roots[8];
		size_t nr = cgroup_roots(roots, ARRAY_LEN(roots));
		if (!nr || cgroup_fs_version(roots[0]) != 2)
			return diag_fail(err, DIAG_EXIT_USAGE, "--cgroup %s: no cgroup v2 hierarchy is mounted: give "
					 "the full path of a v1 directory (/sys/fs/cgroup/CONTROLLER/...)", text);
		if ((size_t)snprintf(t->cgroup_dir, sizeof(t->cgroup_dir), "%s%s", roots[0],
				     strcmp(text, "/") ? text : "") >= sizeof(t->cgroup_dir))
			return diag_fail(err, DIAG_EXIT_USAGE, "--cgroup: path too long");
	}
	size_t n = strlen(t->cgroup_dir);
	while (n > 1 && t->cgroup_dir[n - 1] == '/')
		t->cgroup_dir[--n] = '\0';
	struct stat st;
	if (lstat(t->cgroup_dir, &st))
		return diag_fail(err, DIAG_EXIT_USAGE, "--cgroup %s: no cgroup %s (%s)", text, t->cgroup_dir,
				 strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return diag_fail(err, DIAG_EXIT_USAGE, "--cgroup %s: %s is not a directory", text, t->cgroup_dir);
	t->cgroup_version = cgroup_fs_version(t->cgroup_dir);
	if (!t->cgroup_version)
		return diag_fail(err, DIAG_EXIT_USAGE, "--cgroup %s: %s is not in a cgroup hierarchy", text,
				 t->cgroup_dir);
	return 0;
}

/* ---- members --------------------------------------------------------------------------------- */

struct scan {
	int *pids;
	size_t n, cap;
};

static void scan_add(struct scan *s, int pid)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->pids = xrealloc(s->pids, s->cap * sizeof(*s->pids));
	}
	s->pids[s->n++] = pid;
}

static void read_comm(int pid, char *comm, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	char *text = read_file(path, NULL);
	snprintf(comm, len, "%s", text ? text : "");
	comm[strcspn(comm, "\n")] = '\0';
	free(text);
}

/* pid's /proc/PID/stat, parsed: 0, or -1 when it is gone or unreadable. */
static int stat_of(int pid, struct procfs_stat *st)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	char *text = read_file(path, NULL);
	int rc = text ? procfs_parse_stat(text, st) : -1;
	free(text);
	return rc;
}

/* Whether pid, child of parent, is diagnose's own: itself, or a helper of its own (the verdict
 * child, the file reader's zygote and the helpers the zygote forks), which share its cgroup and
 * never are its subject. */
static bool is_ours(int pid, int parent, int self)
{
	struct procfs_stat grand;
	return pid == self || parent == self ||
	       (parent > 1 && stat_of(parent, &grand) == 0 && grand.ppid == self);
}

/* The kernel's list of a thread's children (/proc/PID/task/TID/children, CONFIG_PROC_CHILDREN):
 * 1 when one is listed, 0 when none, -1 when the file is not there. */
static int thread_has_children(int pid, long tid)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%ld/children", pid, tid);
	char *text = read_file(path, NULL);
	if (!text)
		return -1;
	int has = text[strspn(text, " \n")] != '\0';
	free(text);
	return has;
}

/* Without the children files: every process's parent, until one is pid. */
static bool any_child_of(int pid)
{
	DIR *d = opendir("/proc");
	if (!d)
		return false;
	int self = getpid();
	bool found = false;
	for (struct dirent *e; !found && (e = readdir(d));) {
		char *end;
		long n = strtol(e->d_name, &end, 10);
		struct procfs_stat st;
		found = !*end && n > 0 && n != self && stat_of((int)n, &st) == 0 && st.ppid == pid;
	}
	closedir(d);
	return found;
}

bool target_has_children(int pid)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	DIR *d = pid > 0 ? opendir(dir) : NULL;
	if (!d)
		return false;
	int found = 0, listed = 0;
	size_t threads = 0;
	for (struct dirent *e; found <= 0 && threads < TARGET_CHILDREN_MAX_THREADS && (e = readdir(d));) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (*end || tid <= 0)
			continue;
		threads++;
		found = thread_has_children(pid, tid);
		listed |= found >= 0;
	}
	closedir(d);
	return found > 0 || (!listed && threads > 0 && any_child_of(pid));
}

static void scan_comm(const struct target *t, struct scan *s)
{
	DIR *d = opendir("/proc");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char comm[16];
		struct procfs_stat st;
		read_comm((int)pid, comm, sizeof(comm));
		/* not a process that exited and waits to be reaped: nothing left to observe (diagnose's
		 * own helpers are left out by target_scan, for every kind of target) */
		if (target_comm_matches(t->text, comm) && stat_of((int)pid, &st) == 0 && st.state != 'Z' &&
		    st.state != 'X')
			scan_add(s, (int)pid);
	}
	closedir(d);
}

/* cgroup.procs of dir and its descendants (a unit's or a pod's processes may sit in children). */
static void scan_cgroup(int dir_fd, struct scan *s, int depth)
{
	int fd = openat(dir_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		FILE *f = fdopen(fd, "r");
		if (f) {
			long pid;
			while (fscanf(f, "%ld", &pid) == 1)
				if (pid > 0)
					scan_add(s, (int)pid);
			fclose(f);
		} else {
			close(fd);
		}
	}
	if (depth <= 0)
		return;
	int dup_fd = dup(dir_fd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || e->d_type != DT_DIR)
			continue;
		int sub = openat(dir_fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			scan_cgroup(sub, s, depth - 1);
			close(sub);
		}
	}
	closedir(d);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

size_t target_scan(struct target *t)
{
	struct scan s = { 0 };
	if (t->kind == TARGET_COMM) {
		scan_comm(t, &s);
	} else {
		int fd = open(t->cgroup_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			scan_cgroup(fd, &s, CGROUP_SEARCH_DEPTH);
			close(fd);
		}
	}
	if (s.n)
		qsort(s.pids, s.n, sizeof(*s.pids), cmp_int);
	for (size_t i = 0; i < t->n_procs; i++)
		t->procs[i].alive = false;
	t->n_alive = 0;
	t->over_limit = 0;
	t->not_permitted = 0;
	int self = getpid(); /* diagnose and its helpers (is_ours): never their own subject */
	/* a user given capabilities: only what they could ptrace (privilege.h) */
	bool only_ptraceable = privilege_on_behalf_of_user() && !privilege_ptrace_any();
	for (size_t i = 0; i < s.n; i++) {
		if ((i && s.pids[i] == s.pids[i - 1]) || s.pids[i] == self)
			continue;
		if (t->n_alive >= TARGET_MAX_PROCS) { /* the kernel's set is full */
			t->over_limit++;
			continue;
		}
		struct target_proc *p = NULL;
		for (size_t k = 0; k < t->n_procs && !p; k++)
			if (t->procs[k].pid == s.pids[i])
				p = &t->procs[k];
		struct procfs_stat st; /* asked of new processes only */
		if (!p && stat_of(s.pids[i], &st) == 0 && is_ours(s.pids[i], st.ppid, self))
			continue;
		if (only_ptraceable && !privilege_can_ptrace(s.pids[i])) {
			t->not_permitted++;
			continue;
		}
		if (!p) {
			if (t->n_procs >= TARGET_MAX_RECORDS) {
				t->over_limit++;
				continue;
			}
			if (t->n_procs == t->cap_procs) {
				t->cap_procs = t->cap_procs ? t->cap_procs * 2 : 16;
				t->procs = xrealloc(t->procs, t->cap_procs * sizeof(*t->procs));
			}
			p = &t->procs[t->n_procs++];
			memset(p, 0, sizeof(*p));
			p->pid = s.pids[i];
			read_comm(p->pid, p->comm, sizeof(p->comm));
		}
		p->alive = true;
		t->n_alive++;
	}
	free(s.pids);
	return t->n_alive;
}

int target_first_pid(const struct target *t)
{
	for (size_t i = 0; i < t->n_procs; i++)
		if (t->procs[i].alive)
			return t->procs[i].pid;
	return t->n_procs ? t->procs[0].pid : 0;
}

int target_resolve(const struct target_sel *sel, struct target **out, struct diag_err *err)
{
	struct target *t = xcalloc(1, sizeof(*t));
	t->kind = sel->kind;
	const char *text = sel->text ? sel->text : "";
	if ((size_t)snprintf(t->text, sizeof(t->text), "%s", text) >= sizeof(t->text)) {
		diag_fail(err, DIAG_EXIT_USAGE, "%s: too long", target_kind_flag(t->kind));
		goto fail;
	}
	char unit[256];
	switch (sel->kind) {
	case TARGET_COMM:
		if (!text[0] || strchr(text, '/')) {
			diag_fail(err, DIAG_EXIT_USAGE, "--comm: expected a process name (as in /proc/PID/comm), got \"%s\"", text);
			goto fail;
		}
		break;
	case TARGET_CGROUP:
		if (resolve_cgroup_path(t, err))
			goto fail;
		break;
	case TARGET_UNIT:
		if (!target_unit_dir_name(text, unit, sizeof(unit))) {
			diag_fail(err, DIAG_EXIT_USAGE, "--unit: expected a systemd unit name (nginx.service), got \"%s\"", text);
			goto fail;
		}
		if (find_cgroup(t, match_name, unit, "unit", err))
			goto fail;
		break;
	case TARGET_CONTAINER:
		if (strlen(text) < 12 || strlen(text) > 64 || !all_hex(text, strlen(text))) {
			diag_fail(err, DIAG_EXIT_USAGE, "--container: expected a container id (12 to 64 hex digits), got \"%s\"", text);
			goto fail;
		}
		if (find_cgroup(t, match_container, text, "container id", err))
			goto fail;
		break;
	default:
		diag_fail(err, DIAG_EXIT_USAGE, "not a selection of processes");
		goto fail;
	}
	if (t->cgroup_version == 2) {
		struct stat st;
		if (stat(t->cgroup_dir, &st) == 0)
			t->cgroup_id = (uint64_t)st.st_ino;
	}
	if (!target_scan(t)) {
		if (t->not_permitted)
			diag_fail(err, DIAG_EXIT_REFUSED, "%s %s: none of its %zu processes could be "
				  "ptraced by uid %u: with capabilities but not root, diagnose takes only "
				  "those (docs/production.md#running-with-capabilities)",
				  target_kind_flag(t->kind), t->text, t->not_permitted, (unsigned)getuid());
		else if (t->kind == TARGET_COMM)
			diag_fail(err, DIAG_EXIT_USAGE, "--comm %s: no process has that name", t->text);
		else
			diag_fail(err, DIAG_EXIT_USAGE, "%s %s: no process in %s", target_kind_flag(t->kind),
				  t->text, t->cgroup_dir);
		goto fail;
	}
	*out = t;
	return 0;
fail:
	target_free(t);
	return -1;
}

struct value *target_to_value(const struct target *t)
{
	struct value *v = value_obj();
	value_set_str(v, "selection", target_kind_name(t->kind));
	value_set_str(v, "name", t->text);
	if (t->cgroup_dir[0]) {
		value_set_str(v, "cgroup", t->cgroup_dir);
		value_set_int(v, "cgroup_version", t->cgroup_version);
	}
	value_set_int(v, "processes_alive", (int64_t)t->n_alive);
	if (t->over_limit)
		value_set_int(v, "processes_not_covered", (int64_t)t->over_limit);
	if (t->not_permitted)
		value_set_int(v, "processes_not_permitted", (int64_t)t->not_permitted);
	if (t->follows_forks)
		value_set_int(v, "processes_joined_at_fork", (int64_t)t->joined_at_fork);
	struct value *procs = value_obj_set(v, "processes", value_arr());
	for (size_t i = 0; i < t->n_procs; i++) {
		struct value *p = value_arr_push(procs, value_obj());
		value_set_int(p, "pid", t->procs[i].pid);
		value_set_str(p, "comm", t->procs[i].comm);
		value_set_bool(p, "alive", t->procs[i].alive);
	}
	return v;
}

void target_free(struct target *t)
{
	if (!t)
		return;
	free(t->procs);
	free(t);
}
