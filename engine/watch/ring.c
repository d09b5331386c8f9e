/* ring.c — `diagnose watch`'s bounded history of runs under its state directory. Contract: ring.h.
 * Owns the state directory's layout (index.json, runs/NNNNNN-RECIPE/); must not run anything. */
#include "watch/ring.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/json_parse.h"

#define INDEX_NAME "index.json"
#define INDEX_MAX ((size_t)4 << 20)
#define MIN_FREE_BYTES ((uint64_t)256 << 20)

/* A directory we own and only we may write to: what runs as root keeps its reports there. */
static int check_dir(int fd, const char *what, const char *path, struct diag_err *err)
{
	struct stat st;
	if (fstat(fd, &st))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s %s: %s", what, path, strerror(errno));
	if (st.st_uid != geteuid())
		return diag_fail(err, DIAG_EXIT_USAGE, "%s %s: owned by uid %u, not by this user (uid %u)",
				 what, path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return diag_fail(err, DIAG_EXIT_USAGE, "%s %s: others may write to it (mode %03o): "
				 "chmod go-w it", what, path, (unsigned)(st.st_mode & 0777));
	return 0;
}

static int open_dir_at(int at, const char *name, const char *what, const char *path, bool create,
		       struct diag_err *err)
{
	if (create && mkdirat(at, name, 0700) && errno != EEXIST)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s %s: cannot create: %s", what, path, strerror(errno));
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s %s: %s", what, path,
				 errno == ELOOP || errno == ENOTDIR ? "not a directory (a symbolic link "
				 "or a file is there)" : strerror(errno));
	if (check_dir(fd, what, path, err)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Removes a run's directory: its regular files, then itself (never following a link). */
static void remove_run_dir(int runsfd, const char *name)
{
	int fd = openat(runsfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		DIR *d = fdopendir(fd);
		if (d) {
			for (struct dirent *de; (de = readdir(d));)
				if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
					unlinkat(dirfd(d), de->d_name, 0);
			closedir(d);
		} else {
			close(fd);
		}
	}
	unlinkat(runsfd, name, AT_REMOVEDIR);
}

static bool run_dir_name(const char *s)
{
	size_t digits = strspn(s, "0123456789");
	return digits >= 6 && s[digits] == '-' && s[digits + 1] &&
	       strspn(s + digits + 1, "abcdefghijklmnopqrstuvwxyz0123456789-_") == strlen(s + digits + 1);
}

static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

static void push(struct ring *r, const struct ring_entry *e)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->entries = xrealloc(r->entries, r->cap * sizeof(*r->entries));
	}
	r->entries[r->n++] = *e;
}

static bool known_dir(const struct ring *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->entries[i].dir + 5, name)) /* "runs/" */
			return true;
	return false;
}

/* index.json as the last ring_commit wrote it; entries whose directory is gone are dropped. */
static int load_index(struct ring *r, struct diag_err *err)
{
	int fd = openat(r->dirfd, INDEX_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0
				       : diag_fail(err, DIAG_EXIT_USAGE, "%s/%s: %s", r->path, INDEX_NAME,
						   strerror(errno));
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > INDEX_MAX) {
		close(fd);
		return diag_fail(err, DIAG_EXIT_USAGE, "%s/%s: not a regular file of at most 4 MiB",
				 r->path, INDEX_NAME);
	}
	char *text = xmalloc((size_t)st.st_size + 1);
	ssize_t got = read(fd, text, (size_t)st.st_size);
	close(fd);
	struct value *v = got == st.st_size ? json_parse(text, (size_t)got, NULL, err) : NULL;
	free(text);
	if (!v)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s/%s: unreadable (%s): move it away to start a "
				 "new history", r->path, INDEX_NAME, got == st.st_size ? err->msg : "short read");
	const struct value *runs = value_get(v, "runs");
	for (size_t i = 0; runs && runs->type == V_ARR && i < runs->arr.len; i++) {
		const struct value *x = runs->arr.items[i];
		struct ring_entry e = { 0 };
		e.seq = (uint64_t)value_get_num(x, "seq", 0);
		e.time = (int64_t)value_get_num(x, "time", 0);
		copy_str(e.recipe, sizeof(e.recipe), value_get_str(x, "recipe"));
		copy_str(e.dir, sizeof(e.dir), value_get_str(x, "dir"));
		e.exit_code = (int)value_get_num(x, "exit_code", 1);
		const struct value *w = value_get(x, "worst");
		copy_str(e.worst_severity, sizeof(e.worst_severity), value_get_str(w, "severity"));
		copy_str(e.worst_id, sizeof(e.worst_id), value_get_str(w, "id"));
		e.bytes = (uint64_t)value_get_num(x, "bytes", 0);
		const struct value *f = value_get(x, "followed");
		e.followed = (uint64_t)value_get_num(f, "seq", 0);
		copy_str(e.follow_verdict, sizeof(e.follow_verdict), value_get_str(f, "verdict"));
		struct stat ds;
		if (!e.seq || strncmp(e.dir, "runs/", 5) || !run_dir_name(e.dir + 5) ||
		    fstatat(r->runsfd, e.dir + 5, &ds, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(ds.st_mode))
			continue;
		push(r, &e);
		if (e.seq >= r->next_seq)
			r->next_seq = e.seq + 1;
	}
	value_free(v);
	return 0;
}

int ring_open(struct ring *r, const char *path, size_t max_runs, uint64_t max_bytes,
	      struct diag_err *err)
{
	memset(r, 0, sizeof(*r));
	r->dirfd = r->runsfd = -1;
	r->next_seq = 1;
	r->max_runs = max_runs;
	r->max_bytes = max_bytes;
	r->path = xstrdup(path);
	if ((r->dirfd = open_dir_at(AT_FDCWD, path, "--state-dir", path, true, err)) < 0)
		goto fail;
	char *runs = xasprintf("%s/runs", path);
	r->runsfd = open_dir_at(r->dirfd, "runs", "--state-dir", runs, true, err);
	free(runs);
	if (r->runsfd < 0 || load_index(r, err))
		goto fail;
	/* what a run cut short left (its directory made, never indexed) */
	int fd = dup(r->runsfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		if (run_dir_name(de->d_name) && !known_dir(r, de->d_name)) {
			remove_run_dir(r->runsfd, de->d_name);
			uint64_t seq = strtoull(de->d_name, NULL, 10);
			if (seq >= r->next_seq)
				r->next_seq = seq + 1;
		}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	return 0;
fail:
	ring_close(r);
	return -1;
}

void ring_close(struct ring *r)
{
	if (r->dirfd >= 0)
		close(r->dirfd);
	if (r->runsfd >= 0)
		close(r->runsfd);
	free(r->entries);
	free(r->path);
	memset(r, 0, sizeof(*r));
	r->dirfd = r->runsfd = -1;
}

bool ring_has_room(const struct ring *r)
{
	struct statvfs sv;
	if (fstatvfs(r->dirfd, &sv))
		return true; /* cannot tell: the write will say */
	uint64_t total = (uint64_t)sv.f_blocks * sv.f_frsize, avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	uint64_t need = total / 20 < MIN_FREE_BYTES ? total / 20 : MIN_FREE_BYTES;
	return avail >= need;
}

int ring_begin(struct ring *r, const char *recipe, struct ring_entry *e, struct diag_err *err)
{
	memset(e, 0, sizeof(*e));
	e->seq = r->next_seq++;
	e->time = (int64_t)time(NULL);
	/* the recipe's name in a file name: its own characters only */
	char safe[48];
	size_t k = 0;
	for (const char *p = recipe; *p && k + 1 < sizeof(safe); p++)
		safe[k++] = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'
				    ? *p : (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : '_';
	safe[k] = '\0';
	copy_str(e->recipe, sizeof(e->recipe), recipe);
	char name[80];
	snprintf(name, sizeof(name), "%06" PRIu64 "-%s", e->seq, k ? safe : "run");
	snprintf(e->dir, sizeof(e->dir), "runs/%s", name);
	if (mkdirat(r->runsfd, name, 0700))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s/%s: %s", r->path, e->dir, strerror(errno));
	int fd = openat(r->runsfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s/%s: %s", r->path, e->dir, strerror(errno));
	return fd;
}

void ring_abandon(struct ring *r, const struct ring_entry *e)
{
	if (!strncmp(e->dir, "runs/", 5))
		remove_run_dir(r->runsfd, e->dir + 5);
}

struct value *ring_index_value(const struct ring *r)
{
	struct value *v = value_obj();
	struct value *runs = value_obj_set(v, "runs", value_arr());
	for (size_t i = 0; i < r->n; i++) {
		const struct ring_entry *e = &r->entries[i];
		struct value *x = value_arr_push(runs, value_obj());
		value_set_int(x, "seq", (int64_t)e->seq);
		value_set_int(x, "time", e->time);
		char iso[32];
		struct tm tm;
		time_t t = (time_t)e->time;
		strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		value_set_str(x, "started_at", iso);
		value_set_str(x, "recipe", e->recipe);
		value_set_str(x, "dir", e->dir);
		value_set_int(x, "exit_code", e->exit_code);
		if (e->worst_severity[0]) {
			struct value *w = value_obj_set(x, "worst", value_obj());
			value_set_str(w, "severity", e->worst_severity);
			value_set_str(w, "id", e->worst_id);
		}
		value_set_int(x, "bytes", (int64_t)e->bytes);
		if (e->followed) {
			struct value *f = value_obj_set(x, "followed", value_obj());
			value_set_int(f, "seq", (int64_t)e->followed);
			value_set_str(f, "verdict", e->follow_verdict);
		}
	}
	return v;
}

static int write_index(struct ring *r, struct diag_err *err)
{
	char tmp[32];
	snprintf(tmp, sizeof(tmp), ".%s.%d", INDEX_NAME, (int)getpid());
	unlinkat(r->dirfd, tmp, 0);
	int fd = openat(r->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s/%s: %s", r->path, tmp, strerror(errno));
	}
	struct value *v = ring_index_value(r);
	value_write_json(v, f, 2);
	fputc('\n', f);
	value_free(v);
	bool bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
	bad |= fclose(f) != 0;
	if (bad || renameat(r->dirfd, tmp, r->dirfd, INDEX_NAME)) {
		int e = errno;
		unlinkat(r->dirfd, tmp, 0);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s/%s: %s", r->path, INDEX_NAME, strerror(e));
	}
	return 0;
}

int ring_commit(struct ring *r, struct ring_entry *e, struct diag_err *err)
{
	/* its files: empty ones go (a run without stacks leaves its folded file empty) */
	int fd = openat(r->runsfd, e->dir + 5, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	e->bytes = 0;
	for (struct dirent *de; d && (de = readdir(d));) {
		struct stat st;
		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISREG(st.st_mode) && st.st_size == 0)
			unlinkat(dirfd(d), de->d_name, 0);
		else
			e->bytes += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	push(r, e);
	/* the oldest go first, while over a limit; never the run just added */
	uint64_t total = 0;
	for (size_t i = 0; i < r->n; i++)
		total += r->entries[i].bytes;
	size_t drop = 0;
	while (r->n - drop > 1 && ((r->max_runs && r->n - drop > r->max_runs) ||
				   (r->max_bytes && total > r->max_bytes))) {
		remove_run_dir(r->runsfd, r->entries[drop].dir + 5);
		total -= r->entries[drop].bytes;
		drop++;
	}
	if (drop) {
		memmove(r->entries, r->entries + drop, (r->n - drop) * sizeof(*r->entries));
		r->n -= drop;
	}
	return write_index(r, err);
}
