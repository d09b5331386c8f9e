/* approval.c — the approvals lock: compute, parse, write, compare, approve, verify.
 * Format and contracts: approval.h.
 *
 * Why one file (~900 lines): the lock file's format (parse, write) and its uses (compare, approve,
 * verify, the production check) change together: a field added is parsed, written, compared and
 * verified in the same commit, and read here in one place.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "trust/approval.h"
#include "plan/catalog.h"
#include "session/procset.h"
#include "verdict/verdict.h"
/* The pre-flight's counting program runs before every recipe with an event-driven probe: it is
 * part of what such a recipe loads, so its bytes are pinned too. */

#define PREFIX_LEN 12 /* hash prefix shown in messages */

static const char LOCK_HEADER[] =
	"# diagnose approved.lock: the recipes approved for production mode, with the SHA-256 of\n"
	"# every file and BPF object each one uses. Written by `diagnose approve NAME`, checked by\n"
	"# `diagnose verify` and by every production run. Review it together with the recipes.\n";

/* ---- entries ------------------------------------------------------------------------------ */

static void item_free(struct approval_item *it)
{
	free(it->name);
	free(it->error);
}

void approval_entry_free(struct approval_entry *e)
{
	if (!e)
		return;
	free(e->recipe);
	free(e->engine);
	free(e->approved_by);
	free(e->approved_at);
	for (size_t i = 0; i < e->n_items; i++)
		item_free(&e->items[i]);
	free(e->items);
	memset(e, 0, sizeof(*e));
}

void approval_lock_free(struct approval_lock *lock)
{
	if (!lock)
		return;
	for (size_t i = 0; i < lock->n; i++)
		approval_entry_free(&lock->entries[i]);
	free(lock->entries);
	free(lock->path);
	free(lock);
}

static int item_cmp(const void *a, const void *b)
{
	const struct approval_item *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind == APPROVAL_FILE ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct approval_entry *)a)->recipe,
		      ((const struct approval_entry *)b)->recipe);
}

static struct approval_item *item_add(struct approval_entry *e, enum approval_item_kind kind,
				      char *name_take)
{
	e->items = xrealloc(e->items, (e->n_items + 1) * sizeof(*e->items));
	struct approval_item *it = &e->items[e->n_items++];
	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->name = name_take;
	return it;
}

static void add_source(struct approval_entry *e, const struct source_file *f)
{
	struct approval_item *it = item_add(e, APPROVAL_FILE, xstrdup(f->name));
	memcpy(it->sha256, f->sha256, SHA256_HEX_LEN);
}

static bool has_item(const struct approval_entry *e, enum approval_item_kind kind, const char *name)
{
	for (size_t i = 0; i < e->n_items; i++)
		if (e->items[i].kind == kind && strcmp(e->items[i].name, name) == 0)
			return true;
	return false;
}

void approval_compute(const struct recipe_sources *src, const struct plan *plan,
		      struct approval_entry *out)
{
	memset(out, 0, sizeof(*out));
	out->recipe = xstrdup(plan->recipe->name);
	out->engine = xstrdup(DIAG_VERSION);

	/* The bytes that were read once and that the run parses and executes: their hashes were
	 * taken from the same buffers. */
	add_source(out, &src->recipe);
	add_source(out, &src->lua);
	for (size_t i = 0; i < src->n_libs; i++)
		add_source(out, &src->libs[i]);

	/* Every probe of the recipe, also those a run leaves out by their `when:` (a host-wide run
	 * plans fewer probes than the approval did): the plan checked each kind exists. */
	const struct recipe *r = plan->recipe;
	for (unsigned i = 0; i < r->n_probes; i++) {
		const struct probe_kind *k = catalog_find(r->probes[i].kind);
		if (!k || !k->bpf_bytes || has_item(out, APPROVAL_BPF, k->name))
			continue;
		size_t sz = 0;
		const void *bytes = k->bpf_bytes(&sz);
		struct approval_item *it = item_add(out, APPROVAL_BPF, xstrdup(k->name));
		sha256_hex(bytes, sz, it->sha256);
	}
	/* A recipe that takes a set of processes runs the set's own program too (procset.c). */
	if (recipe_target_sets(r->target)) {
		size_t sz = 0;
		const void *bytes = procset_bpf_bytes(&sz);
		struct approval_item *it = item_add(out, APPROVAL_BPF, xstrdup(PROCSET_BPF_NAME));
		sha256_hex(bytes, sz, it->sha256);
	}
	qsort(out->items, out->n_items, sizeof(*out->items), item_cmp);
}

const char *approval_entry_error(const struct approval_entry *e)
{
	for (size_t i = 0; i < e->n_items; i++)
		if (e->items[i].error)
			return e->items[i].error;
	return NULL;
}

/* ---- parse -------------------------------------------------------------------------------- */

static bool name_ok(const char *s, const char *extra)
{
	if (!*s || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || strchr(extra, *s)))
			return false;
	return true;
}

static bool path_ok(const char *s)
{
	if (!*s || *s == '/' || strlen(s) > 1024)
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return false;
	return strncmp(s, "../", 3) != 0 && !strstr(s, "/../") && strcmp(s, "..") != 0;
}

static bool hex64_ok(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 64;
}

static bool text_ok(const char *s)
{
	if (!*s || *s == ' ' || s[strlen(s) - 1] == ' ' || strlen(s) > 256)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < ' ' || *s == 0x7f)
			return false;
	return true;
}

static bool date_ok(const char *s)
{
	/* YYYY-MM-DDTHH:MM:SSZ */
	static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
	if (strlen(s) != sizeof(pat) - 1)
		return false;
	for (size_t i = 0; pat[i]; i++)
		if (pat[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pat[i])
			return false;
	return true;
}

/* What the lock can hold: the one answer for the parser (a line that breaks it is an error) and
 * for the writer (approve refuses, before writing, an entry whose lock `verify` would reject). */
enum lock_field { LF_RECIPE, LF_FILE, LF_BPF, LF_SHA256, LF_ENGINE, LF_APPROVED_BY, LF_APPROVED_AT };

static const char *const field_rule[] = {
	[LF_RECIPE] = "[a-z0-9-]+, at most 64 characters",
	[LF_FILE] = "a relative path without spaces, control characters or `..`",
	[LF_BPF] = "[a-z0-9_]+, at most 128 characters",
	[LF_SHA256] = "64 lowercase hex digits",
	[LF_ENGINE] = "a version without spaces",
	[LF_APPROVED_BY] = "1 to 256 characters, no control characters, no space at either end",
	[LF_APPROVED_AT] = "YYYY-MM-DDTHH:MM:SSZ",
};

static bool field_ok(enum lock_field f, const char *s)
{
	if (!s)
		return false;
	switch (f) {
	case LF_RECIPE: return recipe_name_ok(s);
	case LF_FILE: return path_ok(s);
	case LF_BPF: return name_ok(s, "_");
	case LF_SHA256: return hex64_ok(s);
	case LF_ENGINE: return text_ok(s) && path_ok(s);
	case LF_APPROVED_BY: return text_ok(s);
	case LF_APPROVED_AT: return text_ok(s) && date_ok(s);
	}
	return false;
}

static int field_fail(char *buf, size_t len, const char *what, const char *s, enum lock_field f)
{
	snprintf(buf, len, "%s \"%.64s\" cannot go in the approvals lock (allowed: %s)", what, s ? s : "",
		 field_rule[f]);
	return -1;
}

int approval_entry_problem(const struct approval_entry *e, char *buf, size_t len)
{
	if (!field_ok(LF_RECIPE, e->recipe))
		return field_fail(buf, len, "recipe name", e->recipe, LF_RECIPE);
	if (!field_ok(LF_ENGINE, e->engine))
		return field_fail(buf, len, "engine version", e->engine, LF_ENGINE);
	if (!field_ok(LF_APPROVED_BY, e->approved_by))
		return field_fail(buf, len, "approver", e->approved_by, LF_APPROVED_BY);
	if (!field_ok(LF_APPROVED_AT, e->approved_at))
		return field_fail(buf, len, "approval date", e->approved_at, LF_APPROVED_AT);
	for (size_t i = 0; i < e->n_items; i++) {
		const struct approval_item *it = &e->items[i];
		bool file = it->kind == APPROVAL_FILE;
		if (!field_ok(file ? LF_FILE : LF_BPF, it->name))
			return field_fail(buf, len, file ? "file name" : "bpf object name", it->name,
					  file ? LF_FILE : LF_BPF);
		if (it->error) {
			snprintf(buf, len, "%s: %s", it->name, it->error);
			return -1;
		}
		if (!field_ok(LF_SHA256, it->sha256))
			return field_fail(buf, len, "sha256 of", it->name, LF_SHA256);
	}
	return 0;
}

struct parser {
	const char *name;
	unsigned line;
	struct diag_err *err;
};

static int perr(const struct parser *p, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(const struct parser *p, unsigned line, const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return diag_fail(p->err, DIAG_EXIT_USAGE, "%s:%u: %s", p->name, line, msg);
}

static int entry_finish(const struct parser *p, const struct approval_entry *e)
{
	static const char *const keys[] = { "engine", "approved_by", "approved_at" };
	const char *vals[] = { e->engine, e->approved_by, e->approved_at };
	for (size_t i = 0; i < ARRAY_LEN(keys); i++)
		if (!vals[i])
			return perr(p, e->line, "[recipe %s]: missing %s", e->recipe, keys[i]);
	bool yaml = false;
	for (size_t i = 0; i < e->n_items; i++) {
		size_t n = strlen(e->items[i].name);
		if (e->items[i].kind == APPROVAL_FILE && n > 5 && !strcmp(e->items[i].name + n - 5, ".yaml"))
			yaml = true;
	}
	if (!yaml)
		return perr(p, e->line, "[recipe %s]: no `file ... .yaml` line for the recipe file",
			    e->recipe);
	return 0;
}

/* One line of a block: "KEY = VALUE" or "file|bpf NAME sha256=HEX". */
static int parse_body_line(const struct parser *p, struct approval_entry *e, char *s)
{
	if (!strncmp(s, "file ", 5) || !strncmp(s, "bpf ", 4)) {
		enum approval_item_kind kind = s[0] == 'f' ? APPROVAL_FILE : APPROVAL_BPF;
		char *name = strchr(s, ' ') + 1;
		char *sp = strchr(name, ' ');
		if (!sp || strncmp(sp + 1, "sha256=", 7))
			return perr(p, p->line, "expected `%s NAME sha256=HEX`", kind == APPROVAL_FILE ? "file" : "bpf");
		*sp = '\0';
		const char *hex = sp + 8;
		if (!field_ok(kind == APPROVAL_FILE ? LF_FILE : LF_BPF, name))
			return perr(p, p->line, "invalid %s name \"%.64s\"",
				    kind == APPROVAL_FILE ? "file" : "bpf", name);
		if (!field_ok(LF_SHA256, hex))
			return perr(p, p->line, "sha256 must be 64 lowercase hex digits");
		if (has_item(e, kind, name))
			return perr(p, p->line, "%s %s listed twice", kind == APPROVAL_FILE ? "file" : "bpf", name);
		struct approval_item *it = item_add(e, kind, xstrdup(name));
		memcpy(it->sha256, hex, 65);
		return 0;
	}
	char *eq = strstr(s, " = ");
	if (!eq)
		return perr(p, p->line, "expected `KEY = VALUE`, `file PATH sha256=HEX`, `bpf NAME sha256=HEX` "
			    "or `[recipe NAME]`");
	*eq = '\0';
	const char *val = eq + 3;
	char **slot;
	if (!strcmp(s, "engine"))
		slot = &e->engine;
	else if (!strcmp(s, "approved_by"))
		slot = &e->approved_by;
	else if (!strcmp(s, "approved_at"))
		slot = &e->approved_at;
	else
		return perr(p, p->line, "unknown key \"%.64s\" (known: engine, approved_by, approved_at)", s);
	if (*slot)
		return perr(p, p->line, "%s set twice", s);
	if (!text_ok(val))
		return perr(p, p->line, "%s: empty or invalid value", s);
	if (slot == &e->approved_at && !field_ok(LF_APPROVED_AT, val))
		return perr(p, p->line, "approved_at: expected YYYY-MM-DDTHH:MM:SSZ, got \"%.32s\"", val);
	if (slot == &e->engine && !field_ok(LF_ENGINE, val))
		return perr(p, p->line, "engine: invalid version \"%.32s\"", val);
	*slot = xstrdup(val);
	return 0;
}

int approval_lock_parse(const char *name, const char *text, size_t len, struct approval_lock **out,
			struct diag_err *err)
{
	struct approval_lock *lock = xcalloc(1, sizeof(*lock));
	lock->path = xstrdup(name);
	struct parser p = { .name = name, .err = err };
	struct approval_entry *cur = NULL;
	bool ended = false;
	size_t pos = 0;
	int rc = 0;
	char *line = NULL;
	*out = NULL;

	while (pos < len && rc == 0) {
		p.line++;
		const char *nl = memchr(text + pos, '\n', len - pos);
		if (!nl) {
			rc = perr(&p, p.line, "truncated: the last line has no newline (is the lock complete?)");
			break;
		}
		size_t n = (size_t)(nl - (text + pos));
		free(line);
		line = xmalloc(n + 1);
		memcpy(line, text + pos, n);
		line[n] = '\0';
		pos += n + 1;
		if (memchr(text + pos - n - 1, '\0', n)) {
			rc = perr(&p, p.line, "NUL byte");
			break;
		}
		if (strchr(line, '\r')) {
			rc = perr(&p, p.line, "carriage return: the lock must have LF line endings");
			break;
		}
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (ended) {
			rc = perr(&p, p.line, "text after [end]");
			break;
		}
		if (n && line[n - 1] == ' ') {
			rc = perr(&p, p.line, "trailing space");
			break;
		}
		if (!strcmp(line, "[end]") || !strncmp(line, "[recipe ", 8)) {
			if (cur && (rc = entry_finish(&p, cur)))
				break;
			cur = NULL;
			if (line[1] == 'e') {
				ended = true;
				continue;
			}
			if (line[n - 1] != ']') {
				rc = perr(&p, p.line, "expected `[recipe NAME]`");
				break;
			}
			line[n - 1] = '\0';
			const char *rname = line + 8;
			if (!field_ok(LF_RECIPE, rname)) {
				rc = perr(&p, p.line, "recipe name must match [a-z0-9-]+, got \"%.64s\"", rname);
				break;
			}
			const struct approval_entry *dup = approval_lock_find(lock, rname);
			if (dup) {
				rc = perr(&p, p.line, "[recipe %s] appears twice (first at line %u)", rname, dup->line);
				break;
			}
			lock->entries = xrealloc(lock->entries, (lock->n + 1) * sizeof(*lock->entries));
			cur = &lock->entries[lock->n++];
			memset(cur, 0, sizeof(*cur));
			cur->recipe = xstrdup(rname);
			cur->line = p.line;
			continue;
		}
		if (line[0] == '[') {
			rc = perr(&p, p.line, "unknown section (expected `[recipe NAME]` or `[end]`)");
			break;
		}
		if (!cur) {
			rc = perr(&p, p.line, "expected `[recipe NAME]` before this line");
			break;
		}
		rc = parse_body_line(&p, cur, line);
	}
	free(line);
	if (rc == 0 && !ended)
		rc = perr(&p, p.line + 1, "truncated: no `[end]` line (is the lock complete?)");
	if (rc) {
		approval_lock_free(lock);
		return -1;
	}
	for (size_t i = 0; i < lock->n; i++) /* every entry has at least its .yaml file */
		qsort(lock->entries[i].items, lock->entries[i].n_items, sizeof(struct approval_item), item_cmp);
	if (lock->n)
		qsort(lock->entries, lock->n, sizeof(*lock->entries), entry_cmp);
	*out = lock;
	return 0;
}

int approval_lock_read(const char *path, bool missing_ok, bool trusted, struct approval_lock **out,
		       struct diag_err *err)
{
	struct stat st;
	*out = NULL;
	if (lstat(path, &st) && errno == ENOENT) {
		if (missing_ok) {
			*out = xcalloc(1, sizeof(**out));
			(*out)->path = xstrdup(path);
			return 0;
		}
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: no approvals lock (create it with `diagnose "
				 "approve NAME`)", path);
	}
	struct source_file f;
	if (source_read(path, trusted, 0, &f, err))
		return -1;
	int rc = approval_lock_parse(path, f.data, f.len, out, err);
	source_free(&f);
	return rc;
}

const struct approval_entry *approval_lock_find(const struct approval_lock *lock, const char *name)
{
	for (size_t i = 0; lock && i < lock->n; i++)
		if (!strcmp(lock->entries[i].recipe, name))
			return &lock->entries[i];
	return NULL;
}

/* ---- write -------------------------------------------------------------------------------- */

char *approval_lock_format(const struct approval_lock *lock)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		abort();
	fputs(LOCK_HEADER, f);
	for (size_t i = 0; i < lock->n; i++) {
		const struct approval_entry *e = &lock->entries[i];
		fprintf(f, "\n[recipe %s]\nengine = %s\napproved_by = %s\napproved_at = %s\n", e->recipe,
			e->engine, e->approved_by, e->approved_at);
		for (size_t k = 0; k < e->n_items; k++)
			fprintf(f, "%s %s sha256=%s\n", e->items[k].kind == APPROVAL_FILE ? "file" : "bpf",
				e->items[k].name, e->items[k].sha256);
	}
	fputs("\n[end]\n", f);
	fclose(f);
	return buf;
}

int approval_lock_write(const struct approval_lock *lock, const char *path, struct diag_err *err)
{
	/* Never a lock that its own parser would reject. */
	for (size_t i = 0; i < lock->n; i++) {
		char why[400];
		if (approval_entry_problem(&lock->entries[i], why, sizeof(why)))
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: not written: [recipe %.64s]: %s", path,
					 lock->entries[i].recipe ? lock->entries[i].recipe : "", why);
	}
	char *text = approval_lock_format(lock);
	/* A fresh temporary name in the lock's directory (O_EXCL, unpredictable), then rename: a
	 * reader sees the old lock or the new one, and a planted symlink is replaced, not followed. */
	char *tmp = xasprintf("%s.XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	int rc = 0;
	if (fd < 0)
		rc = diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot create a temporary file: %s", path,
			       strerror(errno));
	else {
		size_t len = strlen(text);
		bool ok = fchmod(fd, 0644) == 0 && write_full(fd, text, len) == len;
		ok = ok && fsync(fd) == 0;
		ok = (close(fd) == 0) && ok;
		if (!ok || rename(tmp, path)) {
			rc = diag_fail(err, DIAG_EXIT_RUNTIME, "%s: %s", path, strerror(errno));
			unlink(tmp);
		}
	}
	free(tmp);
	free(text);
	return rc;
}

void approval_lock_path_for(const char *recipe_path, char *out, size_t len)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", recipe_path);
	snprintf(out, len, "%s/%s", dirname(tmp), APPROVAL_LOCK_NAME);
}

/* ---- compare / update --------------------------------------------------------------------- */

static const char *label(const struct approval_item *it, char *buf, size_t len)
{
	if (it->kind == APPROVAL_FILE)
		return it->name;
	snprintf(buf, len, "bpf object %s (built into this binary)", it->name);
	return buf;
}

char *approval_diff(const struct approval_entry *locked, const struct approval_entry *now,
		    const char *sep)
{
	char *buf = NULL;
	size_t size = 0, count = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		abort();
	char lb[128];
#define SAY(...) (fputs(count++ ? sep : "", f), fprintf(f, __VA_ARGS__))
	if (strcmp(locked->engine, now->engine))
		SAY("engine: approved with %s, this binary is %s", locked->engine, now->engine);
	size_t i = 0, k = 0;
	while (i < locked->n_items || k < now->n_items) {
		const struct approval_item *a = i < locked->n_items ? &locked->items[i] : NULL;
		const struct approval_item *b = k < now->n_items ? &now->items[k] : NULL;
		int c = !a ? 1 : !b ? -1 : item_cmp(a, b);
		if (c < 0) {
			SAY("%s: approved (sha256 %.*s) but no longer used or present", label(a, lb, sizeof(lb)),
			    PREFIX_LEN, a->sha256);
			i++;
		} else if (c > 0) {
			if (b->error)
				SAY("%s: used now but not approved (%s)", label(b, lb, sizeof(lb)), b->error);
			else
				SAY("%s: used now but not approved (sha256 %.*s)", label(b, lb, sizeof(lb)),
				    PREFIX_LEN, b->sha256);
			k++;
		} else {
			if (b->error)
				SAY("%s: %s", label(b, lb, sizeof(lb)), b->error);
			else if (strcmp(a->sha256, b->sha256))
				SAY("%s: sha256 approved %.*s, now %.*s", label(b, lb, sizeof(lb)), PREFIX_LEN,
				    a->sha256, PREFIX_LEN, b->sha256);
			i++;
			k++;
		}
	}
#undef SAY
	fclose(f);
	if (count == 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int approval_lock_set(struct approval_lock *lock, struct approval_entry *now, const char *by,
		      const char *at)
{
	struct approval_entry *old = (struct approval_entry *)approval_lock_find(lock, now->recipe);
	if (old) {
		char *d = approval_diff(old, now, "\n");
		if (!d) {
			approval_entry_free(now);
			return 0;
		}
		free(d);
		approval_entry_free(old);
	} else {
		lock->entries = xrealloc(lock->entries, (lock->n + 1) * sizeof(*lock->entries));
		old = &lock->entries[lock->n++];
	}
	*old = *now;
	memset(now, 0, sizeof(*now));
	free(old->approved_by);
	free(old->approved_at);
	old->approved_by = xstrdup(by);
	old->approved_at = xstrdup(at);
	old->line = 0;
	qsort(lock->entries, lock->n, sizeof(*lock->entries), entry_cmp);
	return 1;
}

/* ---- production check --------------------------------------------------------------------- */

bool approval_is_adhoc(const char *symptom)
{
	size_t n = strlen(symptom);
	return strchr(symptom, '/') || (n >= 5 && !strcmp(symptom + n - 5, ".yaml"));
}

static void lock_dir_of(const char *recipe_path, char *out, size_t len)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", recipe_path);
	snprintf(out, len, "%s", dirname(tmp));
}

int approval_check(const struct bundle *b, bool trusted, struct diag_err *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	const struct recipe *r = b->recipe;
	lock_dir_of(b->src.recipe.path, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, APPROVAL_LOCK_NAME);
	struct approval_lock *lock;
	struct diag_err lerr = { 0 };
	if (approval_lock_read(path, false, trusted, &lock, &lerr))
		return diag_fail(err, DIAG_EXIT_REFUSED,
				 "production mode refuses every recipe: the approvals lock is unusable: %s",
				 lerr.msg);
	const struct approval_entry *e = approval_lock_find(lock, r->name);
	int rc = 0;
	if (!e)
		rc = diag_fail(err, DIAG_EXIT_REFUSED,
			       "production mode: recipe %s is not approved (no [recipe %s] in %s); get it "
			       "approved with `diagnose approve %s` in a pull request",
			       r->name, r->name, path, r->name);
	else {
		struct approval_entry now;
		approval_compute(&b->src, b->plan, &now);
		char *d = approval_diff(e, &now, "; ");
		if (d)
			rc = diag_fail(err, DIAG_EXIT_REFUSED,
				       "production mode: recipe %s does not match its approval in %s: %s; get "
				       "the change approved with `diagnose approve %s` in a pull request",
				       r->name, path, d, r->name);
		free(d);
		approval_entry_free(&now);
	}
	approval_lock_free(lock);
	return rc;
}

/* ---- approve / verify --------------------------------------------------------------------- */

/* Recipe + plan + Lua syntax, as `diagnose lint` checks them, from bytes read once. */
static int lint_load(const char *path, struct bundle *b, struct diag_err *err)
{
	struct plan_args args = { .check_target = false };
	if (bundle_load(path, false, &args, b, err))
		return -1;
	if (verdict_check_sources(&b->src, err) == 0)
		return 0;
	diag_wrap(err, "%s: lua", path);
	err->code = DIAG_EXIT_USAGE;
	bundle_free(b);
	return -1;
}

static bool same_dir(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

int approval_approve(char *const *paths, size_t n, const char *lock_path, const char *by,
		     FILE *out, struct diag_err *err)
{
	struct bundle *bs = xcalloc(n ? n : 1, sizeof(*bs));
	int problems = 0, rc = 0;
	char at[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));

	for (size_t i = 0; i < n; i++) {
		struct diag_err e = { 0 };
		if (lint_load(paths[i], &bs[i], &e) == 0) {
			char base[PATH_MAX], want[256];
			snprintf(base, sizeof(base), "%s", paths[i]);
			snprintf(want, sizeof(want), "%s.yaml", bs[i].recipe->name);
			if (strcmp(basename(base), want))
				diag_fail(&e, DIAG_EXIT_USAGE, "%s: name: recipe %s must be in a file named %s "
					  "(production mode finds it by name)", paths[i], bs[i].recipe->name, want);
			else if (lock_path) {
				char ld[PATH_MAX], rd[PATH_MAX];
				snprintf(ld, sizeof(ld), "%s", lock_path);
				lock_dir_of(paths[i], rd, sizeof(rd));
				if (!same_dir(dirname(ld), rd))
					diag_fail(&e, DIAG_EXIT_USAGE, "%s: not in the directory of the lock %s "
						  "(a lock covers the recipes next to it)", paths[i], lock_path);
			}
			/* What the lock would say, checked as `verify` will read it: a name the lock
			 * cannot hold refuses the approval here, not every production run later. */
			if (!e.msg[0]) {
				struct approval_entry ce;
				char why[400];
				approval_compute(&bs[i].src, bs[i].plan, &ce);
				ce.approved_by = xstrdup(by);
				ce.approved_at = xstrdup(at);
				if (approval_entry_problem(&ce, why, sizeof(why)))
					diag_fail(&e, DIAG_EXIT_USAGE, "%s: %s; rename it", paths[i], why);
				approval_entry_free(&ce);
			}
		}
		if (e.msg[0]) {
			fprintf(stderr, "%s\n", e.msg);
			problems++;
		}
	}
	if (problems) {
		rc = diag_fail(err, DIAG_EXIT_USAGE, "approve: %d recipe%s with problems: nothing approved",
			       problems, problems == 1 ? "" : "s");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char dir[PATH_MAX], lp[PATH_MAX + 32];
		const char *name = bs[i].recipe->name;
		lock_dir_of(bs[i].src.recipe.path, dir, sizeof(dir));
		if (lock_path)
			snprintf(lp, sizeof(lp), "%s", lock_path);
		else
			snprintf(lp, sizeof(lp), "%s/%s", dir, APPROVAL_LOCK_NAME);
		struct approval_lock *lock;
		if ((rc = approval_lock_read(lp, true, false, &lock, err)))
			goto out;
		struct approval_entry e;
		approval_compute(&bs[i].src, bs[i].plan, &e);
		size_t files = 0, objs = 0;
		for (size_t k = 0; k < e.n_items; k++)
			*(e.items[k].kind == APPROVAL_FILE ? &files : &objs) += 1;
		int changed = approval_lock_set(lock, &e, by, at);
		if (changed)
			rc = approval_lock_write(lock, lp, err);
		if (rc == 0) {
			const struct approval_entry *ke = approval_lock_find(lock, name);
			if (changed)
				fprintf(out, "approved %s in %s: %zu files, %zu BPF objects, by %s at %s\n",
					name, lp, files, objs, ke->approved_by, ke->approved_at);
			else
				fprintf(out, "%s unchanged in %s: approval by %s at %s kept\n", name, lp,
					ke->approved_by, ke->approved_at);
		}
		approval_lock_free(lock);
		if (rc)
			goto out;
	}
out:
	for (size_t i = 0; i < n; i++)
		bundle_free(&bs[i]);
	free(bs);
	return rc;
}

int approval_verify(const char *lock_path, FILE *out, struct diag_err *err)
{
	struct source_file raw;
	struct approval_lock *lock;
	struct stat st;
	if (lstat(lock_path, &st) && errno == ENOENT)
		return diag_fail(err, DIAG_EXIT_USAGE, "%s: no approvals lock (create it with `diagnose "
				 "approve NAME`)", lock_path);
	if (source_read(lock_path, false, 0, &raw, err))
		return -1;
	if (approval_lock_parse(lock_path, raw.data, raw.len, &lock, err)) {
		source_free(&raw);
		return -1;
	}
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", lock_path);
	const char *dir = dirname(tmp);
	int bad = 0;
	char *canon = approval_lock_format(lock);
	if (strcmp(raw.data, canon))
		fprintf(out, "note: %s is not in the form `diagnose approve` writes (edited by hand?)\n",
			lock_path);
	source_free(&raw);
	free(canon);
	for (size_t i = 0; i < lock->n; i++) {
		const struct approval_entry *e = &lock->entries[i];
		char *path = xasprintf("%s/%s.yaml", dir, e->recipe);
		struct bundle b;
		struct diag_err le = { 0 };
		struct plan_args args = { .check_target = false };
		if (bundle_load(path, false, &args, &b, &le)) {
			fprintf(out, "%s: CHANGED\n  %s\n", e->recipe, le.msg);
			bad++;
		} else {
			struct approval_entry now;
			approval_compute(&b.src, b.plan, &now);
			char *d = approval_diff(e, &now, "\n  ");
			if (d) {
				fprintf(out, "%s: CHANGED (approved by %s at %s)\n  %s\n", e->recipe, e->approved_by,
					e->approved_at, d);
				bad++;
			} else
				fprintf(out, "%s: ok (%zu files and BPF objects match)\n", e->recipe, now.n_items);
			free(d);
			approval_entry_free(&now);
			bundle_free(&b);
		}
		free(path);
	}
	fprintf(out, "verify: %zu recipe%s in %s, %d changed\n", lock->n, lock->n == 1 ? "" : "s",
		lock_path, bad);
	approval_lock_free(lock);
	return bad;
}

int approval_status(const char *recipe_path, char *buf, size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	lock_dir_of(recipe_path, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, APPROVAL_LOCK_NAME);
	struct approval_lock *lock;
	struct diag_err e = { 0 };
	struct bundle b;
	struct plan_args args = { .check_target = false };
	int st = -1;
	if (approval_lock_read(path, true, false, &lock, &e)) {
		snprintf(buf, len, "lock unusable");
		return -1;
	}
	if (bundle_load(recipe_path, false, &args, &b, &e))
		snprintf(buf, len, "invalid");
	else {
		const struct approval_entry *ae = approval_lock_find(lock, b.recipe->name);
		if (!ae) {
			snprintf(buf, len, "not approved");
			st = 1;
		} else {
			struct approval_entry now;
			approval_compute(&b.src, b.plan, &now);
			char *d = approval_diff(ae, &now, "; ");
			if (d)
				snprintf(buf, len, "approved %.10s, CHANGED since (diagnose verify)", ae->approved_at);
			else {
				snprintf(buf, len, "approved %.10s by %s, matches", ae->approved_at, ae->approved_by);
				st = 0;
			}
			if (d)
				st = 2;
			free(d);
			approval_entry_free(&now);
		}
		bundle_free(&b);
	}
	approval_lock_free(lock);
	return st;
}
