/* stacks.c — symbolized stacks with a weight (see stacks.h).
 * Must not: read a probe's counts map (its key layout is the probe's), or print.
 */
#include "symbolize/stacks.h"

#include <bpf/bpf.h>
#include <stdlib.h>
#include <string.h>

#include "abi/diag_bpf.h"
#include "symbolize/ksyms.h"
#include "symbolize/pkgdb.h"
#include "common/strset.h"
#include "symbolize/unwind.h"
#include "symbolize/usyms.h"

struct frames {
	char **names; /* leaf first */
	size_t n;
};

/* One stack as a probe added it; after merging, one distinct stack. */
struct stack_row {
	char *comm;
	char *tag; /* NULL: none */
	bool in_kernel;
	struct frames user, kernel;
	uint8_t *user_from; /* enum frame_origin per user frame; NULL: all FRAME_FP */
	uint64_t weight, count;
	uint64_t *extra; /* the table's n_extra values (stacks_last_extra); NULL: all 0 */
};

/* A stripped file some user frame points into (named "module+0xOFF"). */
struct hint_file {
	char *path, *base, *build_id;
	const char *key; /* the symbolizer's path string: the same file, without a strcmp */
	int64_t vaddr_bias;
	bool in_our_root;
	uint64_t self; /* weight of the rows whose leaf is in it */
};

struct stack_table {
	const struct collect_ctx *ctx;
	struct strset jit; /* the distinct user frame names a perf map gave (JIT code) */
	struct hint_file *files; /* at most STACKS_MAX_HINT_FILES */
	size_t nfiles, last;     /* last: the file noted last */
	struct stack_row *rows;
	size_t n, cap, max_rows, refused;
	const char *const *extra_names;
	bool extra_max[STACKS_MAX_EXTRA];
	size_t n_extra;
	stacks_frame_namer namer; /* FRAME_PY frames; NULL: "[python]" */
	void *namer_arg;
};

void stacks_set_namer(struct stack_table *t, stacks_frame_namer namer, void *arg)
{
	t->namer = namer;
	t->namer_arg = arg;
}

struct stack_table *stacks_new(const struct collect_ctx *ctx, size_t max_rows)
{
	struct stack_table *t = xcalloc(1, sizeof(*t));
	t->ctx = ctx;
	t->max_rows = max_rows;
	return t;
}

static void frames_free(struct frames *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
	f->names = NULL;
	f->n = 0;
}

static void row_free(struct stack_row *r)
{
	free(r->comm);
	free(r->tag);
	free(r->user_from);
	free(r->extra);
	frames_free(&r->user);
	frames_free(&r->kernel);
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void stacks_free(struct stack_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		row_free(&t->rows[i]);
	for (size_t i = 0; i < t->nfiles; i++) {
		free(t->files[i].path);
		free(t->files[i].base);
		free(t->files[i].build_id);
	}
	free(t->files);
	free(t->rows);
	strset_free(&t->jit);
	free(t);
}

void stacks_set_extra(struct stack_table *t, const char *const *names, const bool *is_max, size_t n)
{
	t->n_extra = n > STACKS_MAX_EXTRA ? STACKS_MAX_EXTRA : n;
	t->extra_names = names;
	for (size_t i = 0; i < t->n_extra; i++)
		t->extra_max[i] = is_max && is_max[i];
}

void stacks_last_extra(struct stack_table *t, const uint64_t *vals)
{
	if (!t->n || !t->n_extra)
		return;
	struct stack_row *r = &t->rows[t->n - 1];
	if (!r->extra)
		r->extra = xmalloc(t->n_extra * sizeof(*r->extra));
	memcpy(r->extra, vals, t->n_extra * sizeof(*vals));
}

size_t stacks_refused(const struct stack_table *t)
{
	return t->refused;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A new row with comm, tag and the sums set, frames empty; NULL when the table is full. */
static struct stack_row *new_row(struct stack_table *t, const char *comm, bool in_kernel,
				 uint64_t weight, uint64_t count, const char *tag)
{
	if (t->n >= t->max_rows) {
		t->refused++;
		return NULL;
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		if (t->cap > t->max_rows)
			t->cap = t->max_rows;
		t->rows = xrealloc(t->rows, t->cap * sizeof(*t->rows));
	}
	struct stack_row *r = &t->rows[t->n++];
	memset(r, 0, sizeof(*r));
	r->comm = xstrdup(comm ? comm : "");
	r->tag = tag && *tag ? xstrdup(tag) : NULL;
	r->in_kernel = in_kernel;
	r->weight = weight;
	r->count = count;
	return r;
}

static void frames_copy(struct frames *f, const char *const *names, size_t n)
{
	if (n > DIAG_STACK_DEPTH)
		n = DIAG_STACK_DEPTH;
	f->names = xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		f->names[f->n++] = xstrdup(names[i] ? names[i] : "[unknown]");
}

int stacks_add_frames(struct stack_table *t, const char *comm, const char *const *user,
		      size_t n_user, const char *const *kernel, size_t n_kernel, bool in_kernel,
		      uint64_t weight, uint64_t count, const char *tag)
{
	struct stack_row *r = new_row(t, comm, in_kernel, weight, count, tag);
	if (!r)
		return -1;
	frames_copy(&r->user, user, n_user);
	frames_copy(&r->kernel, kernel, n_kernel);
	return 0;
}

/* A kernel frame of the tracing machinery itself (the BPF program, the tracepoint's dispatch):
 * a stack taken inside a tracepoint program starts with them; they say nothing about the task. */
static bool tracing_frame(const char *sym)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__traceiter_",
						 "__bpf_trace_", "perf_trace_", "trace_call_bpf" };
	for (size_t i = 0; i < ARRAY_LEN(prefixes); i++)
		if (strncmp(sym, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

size_t stacks_read_ids(int stacks_fd, int32_t id, uint64_t *ips)
{
	size_t n = 0;
	if (id < 0 || bpf_map_lookup_elem(stacks_fd, &id, ips))
		return 0;
	while (n < DIAG_STACK_DEPTH && ips[n])
		n++;
	return n;
}

/* The stripped file user frame ips[i] points into, noted in t (its self weight when i is the
 * leaf); files past STACKS_MAX_HINT_FILES are not noted. */
static void note_file(struct stack_table *t, struct usyms *us, uint64_t ip, size_t i, uint64_t weight)
{
	struct usym_file uf;
	if (!t || usyms_file_at(us, ip, i > 0, &uf))
		return;
	size_t k = 0; /* most frames are the file before's: its key is compared first */
	if (t->last < t->nfiles && t->files[t->last].key == uf.path)
		k = t->last;
	else
		while (k < t->nfiles && (strcmp(t->files[k].path, uf.path) ||
					 strcmp(t->files[k].build_id, uf.build_id)))
			k++;
	if (k == t->nfiles) {
		if (k == STACKS_MAX_HINT_FILES)
			return;
		if (!t->files)
			t->files = xcalloc(STACKS_MAX_HINT_FILES, sizeof(*t->files));
		t->files[t->nfiles++] = (struct hint_file){ xstrdup(uf.path), xstrdup(uf.base),
							    xstrdup(uf.build_id), uf.path,
							    uf.vaddr_bias, uf.in_our_root, 0 };
	}
	t->last = k;
	if (i == 0)
		t->files[k].self += weight;
}

/* Names n addresses, leaf first, into f: frames whose origin (NULL: none) is FRAME_PY by the
 * table's namer; the stripped files user frames point into are noted in t (NULL: not noted)
 * with the row's weight, and the names a perf map gave go into t's jit set. */
static void frames_name(struct frames *f, const struct collect_ctx *ctx, struct usyms *us,
			const uint64_t *ips, size_t n, bool kernel, struct stack_table *t,
			const uint8_t *origin, int tgid, uint64_t weight)
{
	char name[USYM_NAME_MAX]; /* demangled C++ names often pass 256 bytes: cut, two template
				   * instances would merge into one frame */
	if (n > DIAG_STACK_DEPTH)
		n = DIAG_STACK_DEPTH;
	f->names = xcalloc(n ? n : 1, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		const char *sym = NULL;
		if (kernel) {
			sym = ctx && ctx->ksyms ? ksyms_lookup(ctx->ksyms, ips[i], NULL) : NULL;
		} else if (origin && origin[i] == FRAME_PY) {
			if (t && t->namer)
				t->namer(t->namer_arg, tgid, ips[i], name, sizeof(name));
			else
				snprintf(name, sizeof(name), "[python]");
			sym = name;
		} else if (us) { /* below the leaf, frames are return addresses */
			enum usym_source src;
			int named = i ? usyms_symbolize_ret(us, ips[i], name, sizeof(name), &src)
				      : usyms_symbolize_src(us, ips[i], name, sizeof(name), &src);
			if (!named)
				note_file(t, us, ips[i], i, weight);
			sym = name;
			if (t && src == USYM_SRC_PERFMAP)
				strset_add(&t->jit, name, SIZE_MAX);
		}
		if (!sym) {
			snprintf(name, sizeof(name), kernel ? "[unknown]" : "0x%llx",
				 (unsigned long long)ips[i]);
			sym = name;
		}
		if (kernel && f->n == 0 && tracing_frame(sym))
			continue;
		f->names[f->n++] = xstrdup(sym);
	}
}

/* The frames of stack id in stacks_fd, named, leading tracing frames dropped; empty for id < 0
 * or an id the map no longer has. */
static void frames_read(struct frames *f, const struct collect_ctx *ctx, struct usyms *us,
			int stacks_fd, int32_t id, bool kernel, struct stack_table *t, uint64_t weight)
{
	uint64_t ips[DIAG_STACK_DEPTH];
	frames_name(f, ctx, us, ips, stacks_read_ids(stacks_fd, id, ips), kernel, t, NULL, 0, weight);
}

int stacks_add_ids(struct stack_table *t, int stacks_fd, int tgid, const char *comm, int32_t user_stack_id,
		   int32_t kernel_stack_id, bool in_kernel, uint64_t weight, uint64_t count,
		   const char *tag)
{
	struct stack_row *r = new_row(t, comm, in_kernel, weight, count, tag);
	if (!r)
		return -1;
	frames_read(&r->user, t->ctx, collect_usyms(t->ctx, tgid), stacks_fd, user_stack_id, false,
		    t, weight);
	frames_read(&r->kernel, t->ctx, NULL, stacks_fd, kernel_stack_id, true, NULL, 0);
	return 0;
}

int stacks_add_user_ips(struct stack_table *t, int stacks_fd, int tgid, const char *comm,
			const uint64_t *user, const uint8_t *origin, size_t n_user,
			int32_t kernel_stack_id, bool in_kernel, uint64_t weight, uint64_t count,
			const char *tag)
{
	struct stack_row *r = new_row(t, comm, in_kernel, weight, count, tag);
	if (!r)
		return -1;
	frames_name(&r->user, t->ctx, collect_usyms(t->ctx, tgid), user, n_user, false, t, origin, tgid,
		    weight);
	frames_read(&r->kernel, t->ctx, NULL, stacks_fd, kernel_stack_id, true, NULL, 0);
	bool all_fp = true;
	for (size_t i = 0; origin && i < r->user.n; i++)
		all_fp &= origin[i] == FRAME_FP;
	if (!all_fp) {
		r->user_from = xmalloc(r->user.n);
		memcpy(r->user_from, origin, r->user.n);
	}
	return 0;
}

struct value *stacks_frames_value(const struct collect_ctx *ctx, int tgid, const uint64_t *ips,
				  const uint8_t *origin, size_t n, bool kernel, stacks_frame_namer namer,
				  void *namer_arg)
{
	struct stack_table t = { .ctx = ctx, .namer = namer, .namer_arg = namer_arg };
	struct frames f = { 0 };
	frames_name(&f, ctx, kernel ? NULL : collect_usyms(ctx, tgid), ips, n, kernel, &t, origin, tgid, 0);
	struct value *arr = value_arr();
	for (size_t i = 0; i < f.n; i++)
		value_arr_push(arr, value_str(f.names[i]));
	frames_free(&f);
	for (size_t i = 0; i < t.nfiles; i++) {
		free(t.files[i].path);
		free(t.files[i].base);
		free(t.files[i].build_id);
	}
	free(t.files);
	strset_free(&t.jit);
	return arr;
}

/* Provenance order: rows without it first, then by the bytes. */
static int from_cmp(const struct stack_row *a, const struct stack_row *b)
{
	if (!a->user_from != !b->user_from)
		return a->user_from ? 1 : -1;
	return a->user_from ? memcmp(a->user_from, b->user_from, a->user.n) : 0;
}

static int frames_cmp(const struct frames *a, const struct frames *b)
{
	for (size_t i = 0; i < a->n && i < b->n; i++) {
		int c = strcmp(a->names[i], b->names[i]);
		if (c)
			return c;
	}
	return a->n < b->n ? -1 : a->n > b->n;
}

/* The identity of a stack: what merging compares, and the tie-break of the weight order. */
static int by_identity(const void *pa, const void *pb)
{
	const struct stack_row *a = pa, *b = pb;
	int c = strcmp(a->comm, b->comm);
	if (c)
		return c;
	if (!a->tag != !b->tag)
		return a->tag ? 1 : -1; /* untagged first */
	if (a->tag && (c = strcmp(a->tag, b->tag)))
		return c;
	if (a->in_kernel != b->in_kernel)
		return a->in_kernel ? 1 : -1;
	if ((c = frames_cmp(&a->user, &b->user)))
		return c;
	if ((c = from_cmp(a, b))) /* equal user frames: equal counts of them */
		return c;
	return frames_cmp(&a->kernel, &b->kernel);
}

static int by_weight_desc(const void *pa, const void *pb)
{
	const struct stack_row *a = pa, *b = pb;
	if (a->weight != b->weight)
		return a->weight < b->weight ? 1 : -1;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return by_identity(a, b);
}

static struct value *frames_value(const struct frames *f)
{
	struct value *arr = value_arr();
	for (size_t i = 0; i < f->n; i++)
		value_arr_push(arr, value_str(f->names[i]));
	return arr;
}

static int64_t clamp_i64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int by_self_desc(const void *pa, const void *pb)
{
	const struct hint_file *a = pa, *b = pb;
	if (a->self != b->self)
		return a->self < b->self ? 1 : -1;
	return strcmp(a->path, b->path);
}

/* res's "debug_hints": per stripped file, what would name its code (see stacks.h). */
static void hints_finish(struct stack_table *t, struct value *res, const char *admindir)
{
	if (!t->nfiles)
		return;
	qsort(t->files, t->nfiles, sizeof(*t->files), by_self_desc);
	const char *paths[STACKS_MAX_HINT_FILES];
	struct pkg_owner owners[STACKS_MAX_HINT_FILES];
	size_t n = 0, at[STACKS_MAX_HINT_FILES];
	for (size_t i = 0; i < t->nfiles; i++)
		if (t->files[i].in_our_root) {
			at[n] = i;
			paths[n++] = t->files[i].path;
		}
	struct pkg_owner *owner_of[STACKS_MAX_HINT_FILES] = { 0 };
	if (n && admindir && pkgdb_dpkg_owners(admindir, paths, n, owners) > 0)
		for (size_t k = 0; k < n; k++)
			if (owners[k].package[0])
				owner_of[at[k]] = &owners[k];
	struct value *arr = value_obj_set(res, "debug_hints", value_arr());
	for (size_t i = 0; i < t->nfiles; i++) {
		const struct hint_file *h = &t->files[i];
		struct value *o = value_arr_push(arr, value_obj());
		char buf[256];
		value_set_str(o, "file", h->base);
		value_set_str(o, "path", h->path);
		value_set_int(o, "self_weight", clamp_i64(h->self));
		value_set_int(o, "vaddr_bias", h->vaddr_bias);
		if (h->build_id[0])
			value_set_str(o, "build_id", h->build_id);
		if (!pkgdb_build_id_path(h->build_id, buf, sizeof(buf)))
			value_set_str(o, "debug_path", buf);
		const struct pkg_owner *po = owner_of[i];
		if (po) {
			value_set_str(o, "package", po->package);
			if (po->version[0])
				value_set_str(o, "package_version", po->version);
			if (!pkgdb_dbgsym_name(po->package, buf, sizeof(buf)))
				value_set_str(o, "dbgsym_package", buf);
		}
	}
}

struct value *stacks_finish(struct stack_table *t, struct value *res, const char *unit)
{
	size_t merged = 0;
	if (t->n)
		qsort(t->rows, t->n, sizeof(*t->rows), by_identity);
	for (size_t i = 0; i < t->n; i++) {
		struct stack_row *last = merged ? &t->rows[merged - 1] : NULL;
		if (last && by_identity(last, &t->rows[i]) == 0) {
			last->weight = add_sat(last->weight, t->rows[i].weight);
			last->count = add_sat(last->count, t->rows[i].count);
			if (t->n_extra && t->rows[i].extra && !last->extra)
				last->extra = xcalloc(t->n_extra, sizeof(*last->extra));
			for (size_t k = 0; t->rows[i].extra && k < t->n_extra; k++) {
				uint64_t v = t->rows[i].extra[k];
				last->extra[k] = t->extra_max[k] ? (v > last->extra[k] ? v : last->extra[k])
								 : add_sat(last->extra[k], v);
			}
			row_free(&t->rows[i]);
		} else {
			t->rows[merged++] = t->rows[i];
		}
	}
	t->n = merged;
	if (t->n)
		qsort(t->rows, t->n, sizeof(*t->rows), by_weight_desc);

	value_set_str(res, "stack_unit", unit);
	struct value *stacks = value_obj_set(res, "stacks", value_arr());
	for (size_t i = 0; i < t->n; i++) {
		const struct stack_row *r = &t->rows[i];
		struct value *s = value_arr_push(stacks, value_obj());
		value_set_int(s, "weight", clamp_i64(r->weight));
		value_set_int(s, "count", clamp_i64(r->count));
		value_set_str(s, "comm", r->comm);
		value_set_bool(s, "in_kernel", r->in_kernel);
		for (size_t k = 0; k < t->n_extra; k++)
			value_set_int(s, t->extra_names[k], r->extra ? clamp_i64(r->extra[k]) : 0);
		value_obj_set(s, "user", frames_value(&r->user));
		value_obj_set(s, "kernel", frames_value(&r->kernel));
		if (r->tag)
			value_set_str(s, "tag", r->tag);
		if (r->user_from) {
			struct value *from = value_obj_set(s, "user_from", value_arr());
			for (size_t k = 0; k < r->user.n; k++)
				value_arr_push(from, value_str(frame_origin_name(r->user_from[k])));
		}
	}
	if (t->jit.n) { /* in name order: the same stacks always give the same list */
		qsort(t->jit.names, t->jit.n, sizeof(*t->jit.names), str_ptr_cmp);
		struct value *jit = value_obj_set(res, "jit_frames", value_arr());
		for (size_t i = 0; i < t->jit.n; i++)
			value_arr_push(jit, value_str(t->jit.names[i]));
	}
	hints_finish(t, res, PKGDB_DPKG_ADMINDIR);
	stacks_free(t);
	return stacks;
}
