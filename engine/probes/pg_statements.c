/* pg_statements.c — catalog entry for engine/probes/pg_statements.bpf.c: a PostgreSQL server's
 * statements over the window, grouped by their text without constants, each with its time split
 * into lock waits, LWLock waits, reads and the rest; heavyweight lock waits by lock; LWLock waits
 * by tranche; checkpoints; buffer hits and misses; sorts and their spills.
 *
 * Owns: finding PostgreSQL's USDT probes in `binary` (query__start/done are required; the others
 * are attached where the binary has them and said when it does not), attaching the done probes
 * before their starts, reading the statements' ring as it fills (normalizing and aggregating them
 * in a table of max_statements texts, the rest counted), naming lock tags and modes in
 * PostgreSQL's words, and the results.
 * Must not: connect to the server or read its files, judge what is slow (lua/postgres-slow.lua
 * does), or keep a statement's constants (its text is normalized before it is stored).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "common/hash.h"
#include "probes/pg_normalize.h"
#include "probes/pg_statements.h"
#include "pg_statements.skel.h"
#include "probes/usdt_attach.h"

PROBE_BPF_SKELETON(pg_statements)

#define PG_HIST_SLOTS 48

/* PostgreSQL's probes, by enum pg_probe, in attach order: the required ones, then each done
 * probe before its start. */
static const struct pg_probe_name {
	const char *name;
	enum pg_probe id;
	uint32_t need_args; /* arguments the program reads */
	bool required;
	const char *option; /* a bool option that turns it off, or NULL */
} pg_probes[] = {
	{ "query__done", PG_QUERY_DONE, 0, true, NULL },
	{ "query__start", PG_QUERY_START, 1, true, NULL }, /* the required ones first: spec slots */
	{ "transaction__abort", PG_XACT_ABORT, 0, false, NULL },
	{ "lock__wait__done", PG_LOCK_DONE, 0, false, NULL },
	{ "lwlock__wait__done", PG_LWLOCK_DONE, 1, false, NULL },
	{ "smgr__md__read__done", PG_READ_DONE, 0, false, NULL },
	{ "checkpoint__done", PG_CKPT_DONE, 1, false, NULL },
	{ "sort__done", PG_SORT_DONE, 2, false, NULL },
	/* found is its last argument: the 8th until PostgreSQL 16, the 7th from 17 (no isExtend) */
	{ "buffer__read__done", PG_BUF_DONE, USDT_ALL_ARGS, false, "buffer_hits" },
	{ "deadlock__found", PG_DEADLOCK, 0, false, NULL },
	{ "lock__wait__start", PG_LOCK_START, 6, false, NULL },
	{ "lwlock__wait__start", PG_LWLOCK_START, 0, false, NULL },
	{ "smgr__md__read__start", PG_READ_START, 0, false, NULL },
	{ "checkpoint__start", PG_CKPT_START, 0, false, NULL },
};
#define N_PG_PROBES (sizeof(pg_probes) / sizeof(pg_probes[0]))

/* One normalized statement. */
struct stmt {
	char *text;
	uint64_t hash;
	uint64_t count, total_ns, max_ns, lock_ns, lwlock_ns, read_ns;
	uint64_t reads, hits, misses, sorts, sorts_disk, lock_waits, lwlock_waits;
	uint64_t failed, lock_waits_failed;
	uint64_t worst_lock_ns;
	struct pg_lock_key worst_lock;
	uint64_t slots[PG_HIST_SLOTS];
	bool cut; /* its text was longer than PG_QUERY_MAX bytes */
};

struct pg_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct pg_statements_bpf *skel;
	struct usdt_binary bin;
	bool bin_open;
	int pg_major; /* from the binary's path (/usr/lib/postgresql/15/bin/postgres), 0: unknown */
	uint32_t sites[N_PG_PROBES];
	struct ring_buffer *ring;
	struct stmt *stmts;
	size_t n_stmts, max_stmts;
	size_t *index, index_size; /* open addressing over stmts: i + 1, 0 = empty */
	uint64_t records, dropped_texts;
	uint64_t aborted_left; /* statements an error ended, read from the backends at the end */
};

static const struct option_spec pg_options[] = {
	{ .name = "binary", .type = OPT_STRING, .check = usdt_check_binary,
	  .help = "PostgreSQL's server binary: \"target\" (the target's executable) or an absolute "
		  "path (/usr/lib/postgresql/15/bin/postgres); required" },
	{ .name = "buffer_hits", .type = OPT_BOOL, .dflt = 1,
	  .help = "count shared-buffer hits and misses (buffer__read__done: one trap per buffer "
		  "access, the costliest probe here)" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "count 1 shared-buffer access in N at random and scale the hits and misses "
		  "(raised over budget under degrade: sample); statements and waits are never "
		  "sampled" },
	{ .name = "max_backends", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20, .bytes_per_entry = 4 + sizeof(struct pg_backend) + 64,
	  .help = "backends with a statement or wait open at once" },
	{ .name = "max_locks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 1024,
	  .min = 16, .max = 1u << 20,
	  .bytes_per_entry = sizeof(struct pg_lock_key) + sizeof(struct pg_wait_stat) + 64,
	  .help = "distinct locks waited for" },
	{ .name = "max_statements", .type = OPT_UINT, .dflt = 2048, .min = 16, .max = 1u << 16,
	  .help = "distinct statements (after normalization) kept; the others are counted" },
	{ .name = "ring_kib", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 64, .max = 65536, .bytes_per_entry = 1024,
	  .help = "the ring of finished statements (a power of two of KiB)" },
};

static const char *const pg_variants[] = { "uprobe", NULL };

/* lint: PostgreSQL's statement probes in a server binary named by a path this machine has */
static int pg_lint(const struct probe_config *cfg, const struct probe_kind *kind, struct diag_err *err)
{
	int i = catalog_option_index(kind, "binary");
	return usdt_lint_probe(i >= 0 ? cfg->str[i] : NULL, "postgresql", "query__start", "query__done", err);
}

/* The major version in a Debian/PGDG path (/usr/lib/postgresql/15/bin/postgres), else 0. */
static int major_of_path(const char *path)
{
	const char *p = strstr(path, "/postgresql/");
	if (!p)
		return 0;
	int v = atoi(p + 12);
	return v > 0 && v < 1000 ? v : 0;
}

static int pg_ring_record(void *ctx, void *data, size_t size);

static int pg_load(struct probe *p, struct diag_err *err)
{
	struct pg_priv *pp = p->priv;
	if (usdt_binary_open_for(&pp->bin, p, probe_opt_str(p, "binary"), PG_MAX_SPECS, err))
		return -1;
	pp->bin_open = true;
	pp->pg_major = major_of_path(pp->bin.path);
	if (!usdt_binary_sites(&pp->bin, "postgresql", "query__start") ||
	    !usdt_binary_sites(&pp->bin, "postgresql", "query__done"))
		return diag_fail(err, DIAG_ERR_NOT_APPLICABLE, "%s has no USDT probes postgresql:query__start and "
				 "query__done: not a PostgreSQL server built with --enable-dtrace (Debian's "
				 "and PGDG's are; diagnose show --usdt %s lists what it has)",
				 pp->bin.path, pp->bin.path);
	if (!(pp->skel = pg_statements_skel_open(p, err)))
		return -1;
	bpf_map__set_max_entries(pp->skel->maps.backends, (__u32)probe_opt(p, "max_backends"));
	bpf_map__set_max_entries(pp->skel->maps.lock_waits, (__u32)probe_opt(p, "max_locks"));
	uint64_t kib = probe_opt(p, "ring_kib");
	uint64_t pow = 64;
	while (pow < kib)
		pow <<= 1;
	bpf_map__set_max_entries(pp->skel->maps.statements, (__u32)(pow * 1024));
	pp->skel->rodata->ring_wakeup_bytes = pow * 1024 / 4;
	int rc = pg_statements_bpf__load(pp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "loading the PostgreSQL USDT program: %s",
				 strerror(-rc));
	pp->max_stmts = probe_opt(p, "max_statements");
	pp->stmts = xcalloc(pp->max_stmts, sizeof(*pp->stmts));
	pp->index_size = 1;
	while (pp->index_size < 2 * pp->max_stmts)
		pp->index_size <<= 1;
	pp->index = xcalloc(pp->index_size, sizeof(*pp->index));
	pp->ring = ring_buffer__new(bpf_map__fd(pp->skel->maps.statements), pg_ring_record, pp, NULL);
	if (!pp->ring)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "reading the statements' ring: %s", strerror(errno));
	p->variant = "uprobe";
	return 0;
}

static int pg_attach(struct probe *p, struct diag_err *err)
{
	struct pg_priv *pp = p->priv;
	int specs = bpf_map__fd(pp->skel->maps.usdt_specs);
	for (size_t i = 0; i < N_PG_PROBES; i++) {
		const struct pg_probe_name *n = &pg_probes[i];
		if (n->option && !probe_opt(p, n->option))
			continue;
		if (usdt_attach_probe(p, &pp->bin, pp->skel->progs.pg_fire, specs, "postgresql", n->name,
				      n->id, n->need_args, &pp->sites[i], err))
			return -1;
		if (n->required && !pp->sites[i])
			return diag_fail(err, DIAG_EXIT_USAGE, "%s: the sites of postgresql:%s have "
					 "arguments this probe cannot fetch (diagnose show --usdt %s)",
					 pp->bin.path, n->name, pp->bin.path);
	}
	return 0;
}

/* The statement of this text, created when there is room; NULL when the table is full. The texts
 * are the clients' (keyed hash, hash.h: chosen texts must not share a slot). */
static struct stmt *stmt_of(struct pg_priv *pp, const char *text)
{
	uint64_t h = hash_mem(text, strlen(text));
	size_t mask = pp->index_size - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		size_t at = pp->index[i];
		if (!at) {
			if (pp->n_stmts == pp->max_stmts)
				return NULL;
			struct stmt *s = &pp->stmts[pp->n_stmts];
			s->text = xstrdup(text);
			s->hash = h;
			pp->index[i] = ++pp->n_stmts;
			return s;
		}
		struct stmt *s = &pp->stmts[at - 1];
		if (s->hash == h && strcmp(s->text, text) == 0)
			return s;
	}
}

/* One finished statement into the table of normalized texts. */
static void add_record(struct pg_priv *pp, const struct pg_stmt_record *r)
{
	char raw[PG_QUERY_MAX], text[PG_QUERY_MAX + 8];
	memcpy(raw, r->query, sizeof(raw));
	raw[PG_QUERY_MAX - 1] = '\0';
	pg_normalize(raw, text, sizeof(text));
	struct stmt *s = stmt_of(pp, text[0] ? text : "(no text)");
	if (!s) {
		pp->dropped_texts++;
		return;
	}
	s->cut |= strlen(raw) == PG_QUERY_MAX - 1;
	s->count++;
	s->total_ns += r->duration_ns;
	if (r->duration_ns > s->max_ns)
		s->max_ns = r->duration_ns;
	s->lock_ns += r->fig.lock_ns;
	s->lwlock_ns += r->fig.lwlock_ns;
	s->read_ns += r->fig.read_ns;
	s->reads += r->fig.reads;
	s->hits += r->fig.hits;
	s->misses += r->fig.misses;
	s->sorts += r->fig.sorts;
	s->sorts_disk += r->fig.sorts_disk;
	s->lock_waits += r->fig.lock_waits;
	s->lwlock_waits += r->fig.lwlock_waits;
	s->failed += r->failed != 0;
	s->lock_waits_failed += r->fig.lock_waits_failed;
	if (r->fig.worst_lock_ns > s->worst_lock_ns) {
		s->worst_lock_ns = r->fig.worst_lock_ns;
		s->worst_lock = r->fig.worst_lock;
	}
	unsigned slot = 0;
	for (uint64_t v = r->duration_ns; v > 1 && slot < PG_HIST_SLOTS - 1; v >>= 1)
		slot++;
	s->slots[slot]++;
}

static int pg_ring_record(void *ctx, void *data, size_t size)
{
	struct pg_priv *pp = ctx;
	const struct pg_stmt_record *r = data;
	if (size < sizeof(*r))
		return 0;
	pp->records++;
	add_record(pp, r);
	return 0;
}

/* Statements an error ended whose backend ran no statement since: still open in the backends
 * map at the end, timed to their abort, counted as failed. */
static void add_aborted_left(struct pg_priv *pp)
{
	int fd = bpf_map__fd(pp->skel->maps.backends);
	__u32 k, next;
	bool first = true;
	struct pg_backend b;
	size_t guard = bpf_map__max_entries(pp->skel->maps.backends);
	while (guard-- && bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0) {
		first = false;
		k = next;
		if (bpf_map_lookup_elem(fd, &k, &b) || !b.query_start_ns || !b.aborted_ns)
			continue;
		struct pg_stmt_record r = {
			.duration_ns = b.aborted_ns > b.query_start_ns ? b.aborted_ns - b.query_start_ns : 0,
			.pid = k, .failed = 1, .fig = b.fig,
		};
		memcpy(r.query, b.query, sizeof(r.query));
		add_record(pp, &r);
		pp->aborted_left++;
	}
}
static int pg_wake_fd(struct probe *p)
{
	struct pg_priv *pp = p->priv;
	return pp->ring ? ring_buffer__epoll_fd(pp->ring) : -1;
}

static void pg_drain(struct probe *p)
{
	struct pg_priv *pp = p->priv;
	if (pp->ring)
		ring_buffer__consume(pp->ring);
}

static void pg_destroy(struct probe *p)
{
	struct pg_priv *pp = p->priv;
	ring_buffer__free(pp->ring);
	pp->ring = NULL;
	for (size_t i = 0; i < pp->n_stmts; i++)
		free(pp->stmts[i].text);
	free(pp->stmts);
	free(pp->index);
	pp->stmts = NULL;
	pp->index = NULL;
	pp->n_stmts = 0;
	if (pp->bin_open)
		usdt_binary_close(&pp->bin);
	pp->bin_open = false;
	probe_bpf_destroy(p);
}

/* ---- PostgreSQL's words ------------------------------------------------------------------- */

/* LockTagType (src/include/storage/lock.h); 14 added DATABASE_FROZEN_IDS after RELATION_EXTEND. */
static const char *lock_type_name(int major, unsigned t)
{
	static const char *const v14[] = { "relation", "extend", "frozenid", "page", "tuple",
					   "transactionid", "virtualxid", "spectoken", "object",
					   "userlock", "advisory" };
	static const char *const v13[] = { "relation", "extend", "page", "tuple", "transactionid",
					   "virtualxid", "spectoken", "object", "userlock", "advisory" };
	if (major && major < 14)
		return t < ARRAY_LEN(v13) ? v13[t] : "unknown";
	return t < ARRAY_LEN(v14) ? v14[t] : "unknown";
}

static const char *lock_mode_name(unsigned m)
{
	static const char *const modes[] = { "NoLock", "AccessShareLock", "RowShareLock",
					     "RowExclusiveLock", "ShareUpdateExclusiveLock", "ShareLock",
					     "ShareRowExclusiveLock", "ExclusiveLock",
					     "AccessExclusiveLock" };
	return m < ARRAY_LEN(modes) ? modes[m] : "unknown";
}

/* The lock as pg_locks shows it: locktype, mode, and the fields its type uses. */
static void lock_value(struct value *v, int major, const struct pg_lock_key *k)
{
	const char *type = lock_type_name(major, k->type);
	value_set_str(v, "locktype", type);
	value_set_str(v, "mode", lock_mode_name(k->mode));
	if (!strcmp(type, "relation") || !strcmp(type, "extend") || !strcmp(type, "page") ||
	    !strcmp(type, "tuple")) {
		value_set_int(v, "database", k->field1);
		value_set_int(v, "relation", k->field2);
		if (strcmp(type, "relation") && strcmp(type, "extend"))
			value_set_int(v, "page", k->field3);
		if (!strcmp(type, "tuple"))
			value_set_int(v, "tuple", k->field4);
	} else if (!strcmp(type, "transactionid")) {
		value_set_int(v, "transactionid", k->field1);
	} else if (!strcmp(type, "virtualxid")) {
		char vx[32];
		snprintf(vx, sizeof(vx), "%u/%u", k->field1, k->field2);
		value_set_str(v, "virtualxid", vx);
	} else if (!strcmp(type, "frozenid")) {
		value_set_int(v, "database", k->field1);
	} else {
		value_set_int(v, "database", k->field1);
		value_set_int(v, "objid", k->field2);
	}
}

static void wait_value(struct value *v, const struct pg_wait_stat *w)
{
	value_set_int(v, "count", (int64_t)w->count);
	value_set_int(v, "total_ns", (int64_t)w->total_ns);
	value_set_int(v, "max_ns", (int64_t)w->max_ns);
}

/* The heaviest first; ties by text (never by where a table put them). */
static int by_total(const void *a, const void *b)
{
	const struct stmt *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return strcmp(x->text, y->text);
}

struct lock_line {
	struct pg_lock_key key;
	struct pg_wait_stat w;
};

static int lock_by_total(const void *a, const void *b)
{
	const struct lock_line *x = a, *y = b;
	if (x->w.total_ns != y->w.total_ns)
		return x->w.total_ns < y->w.total_ns ? 1 : -1;
	return memcmp(&x->key, &y->key, sizeof(x->key)); /* not the kernel map's order */
}

struct tranche_line {
	char name[PG_TRANCHE_MAX];
	struct pg_wait_stat w;
};

static int tranche_by_total(const void *a, const void *b)
{
	const struct tranche_line *x = a, *y = b;
	if (x->w.total_ns != y->w.total_ns)
		return x->w.total_ns < y->w.total_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

#define TOP_STATEMENTS 50
#define TOP_LOCKS 50

static void statements_value(struct pg_priv *pp, double scale, struct value *res)
{
	qsort(pp->stmts, pp->n_stmts, sizeof(*pp->stmts), by_total);
	struct value *arr = value_obj_set(res, "statements", value_arr());
	for (size_t i = 0; i < pp->n_stmts && i < TOP_STATEMENTS; i++) {
		const struct stmt *s = &pp->stmts[i];
		struct value *v = value_arr_push(arr, value_obj());
		value_set_str(v, "query", s->text);
		if (s->cut)
			value_set_bool(v, "text_cut", true);
		value_set_int(v, "count", (int64_t)s->count);
		value_set_int(v, "errors", (int64_t)s->failed);
		value_set_int(v, "total_ns", (int64_t)s->total_ns);
		value_set_int(v, "max_ns", (int64_t)s->max_ns);
		value_set_int(v, "lock_ns", (int64_t)s->lock_ns);
		value_set_int(v, "lwlock_ns", (int64_t)s->lwlock_ns);
		value_set_int(v, "read_ns", (int64_t)s->read_ns);
		value_set_int(v, "lock_waits", (int64_t)s->lock_waits);
		value_set_int(v, "lock_waits_failed", (int64_t)s->lock_waits_failed);
		value_set_int(v, "lwlock_waits", (int64_t)s->lwlock_waits);
		value_set_int(v, "reads", (int64_t)s->reads);
		value_set_int(v, "buffer_hits", (int64_t)llround((double)s->hits * scale));
		value_set_int(v, "buffer_misses", (int64_t)llround((double)s->misses * scale));
		value_set_int(v, "sorts", (int64_t)s->sorts);
		value_set_int(v, "sorts_disk", (int64_t)s->sorts_disk);
		if (s->worst_lock_ns) {
			struct value *l = value_obj_set(v, "worst_lock", value_obj());
			lock_value(l, pp->pg_major, &s->worst_lock);
			value_set_int(l, "wait_ns", (int64_t)s->worst_lock_ns);
		}
		value_obj_set(v, "buckets", probe_log2_slots_value(s->slots, PG_HIST_SLOTS));
	}
	value_set_int(res, "distinct_statements", (int64_t)pp->n_stmts);
}

static void locks_value(struct pg_priv *pp, struct value *res)
{
	int fd = bpf_map__fd(pp->skel->maps.lock_waits);
	size_t cap = bpf_map__max_entries(pp->skel->maps.lock_waits), n = 0;
	struct lock_line *lines = xcalloc(cap ? cap : 1, sizeof(*lines));
	struct pg_lock_key k, next;
	bool first = true;
	while (n < cap && bpf_map_get_next_key(fd, first ? NULL : &k, &next) == 0) {
		first = false;
		k = next;
		if (bpf_map_lookup_elem(fd, &k, &lines[n].w) == 0)
			lines[n++].key = k;
	}
	qsort(lines, n, sizeof(*lines), lock_by_total);
	struct value *arr = value_obj_set(res, "lock_waits", value_arr());
	for (size_t i = 0; i < n && i < TOP_LOCKS; i++) {
		struct value *v = value_arr_push(arr, value_obj());
		lock_value(v, pp->pg_major, &lines[i].key);
		wait_value(v, &lines[i].w);
	}
	free(lines);

	fd = bpf_map__fd(pp->skel->maps.lwlock_waits);
	cap = bpf_map__max_entries(pp->skel->maps.lwlock_waits);
	n = 0;
	struct tranche_line *tl = xcalloc(cap ? cap : 1, sizeof(*tl));
	char tk[PG_TRANCHE_MAX], tnext[PG_TRANCHE_MAX];
	first = true;
	while (n < cap && bpf_map_get_next_key(fd, first ? NULL : tk, tnext) == 0) {
		first = false;
		memcpy(tk, tnext, sizeof(tk));
		if (bpf_map_lookup_elem(fd, tk, &tl[n].w) == 0) {
			memcpy(tl[n].name, tk, sizeof(tk));
			tl[n++].name[PG_TRANCHE_MAX - 1] = '\0';
		}
	}
	qsort(tl, n, sizeof(*tl), tranche_by_total);
	arr = value_obj_set(res, "lwlock_waits", value_arr());
	for (size_t i = 0; i < n; i++) {
		struct value *v = value_arr_push(arr, value_obj());
		value_set_str(v, "tranche", tl[i].name[0] ? tl[i].name : "(unnamed)");
		wait_value(v, &tl[i].w);
	}
	free(tl);
}

static int pg_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
		      struct diag_err *err)
{
	struct pg_priv *pp = p->priv;
	(void)ctx;
	(void)err;
	if (pp->ring)
		ring_buffer__consume(pp->ring); /* detached: what is left */
	add_aborted_left(pp);
	struct bpf_object *obj = pp->skel->obj;
	struct value *res = value_obj();
	value_set_str(res, "binary", pp->bin.path);
	if (pp->pg_major)
		value_set_int(res, "major_version", pp->pg_major);
	struct value *probes = value_obj_set(res, "probes", value_obj());
	for (size_t i = 0; i < N_PG_PROBES; i++)
		value_set_int(probes, pg_probes[i].name, pp->sites[i]);
	value_set_int(res, "sites_unreadable", pp->bin.sites_unreadable + pp->bin.sites_over_slots);

	uint64_t c[PG_NCOUNTERS] = { 0 };
	int cfd = bpf_map__fd(pp->skel->maps.counters);
	for (__u32 i = 0; i < PG_NCOUNTERS; i++)
		bpf_map_lookup_elem(cfd, &i, &c[i]);
	value_set_int(res, "statements_finished", (int64_t)(c[PG_C_STATEMENTS] + pp->aborted_left));
	value_set_int(res, "statements_failed", (int64_t)(c[PG_C_FAILED] + pp->aborted_left));
	value_set_int(res, "lock_waits_failed", (int64_t)c[PG_C_LOCK_FAILED]);
	value_set_int(res, "statements_read", (int64_t)(pp->records + pp->aborted_left));
	value_set_int(res, "ring_full", (int64_t)probe_stat_sum(obj, PG_STAT_RING_FULL));
	value_set_int(res, "statements_over_limit", (int64_t)pp->dropped_texts);
	value_set_int(res, "unmatched", (int64_t)probe_stat_sum(obj, PG_STAT_UNMATCHED));
	value_set_int(res, "map_full", (int64_t)probe_stat_sum(obj, DIAG_STAT_MAP_FULL));
	value_set_int(res, "deadlocks", (int64_t)probe_stat_sum(obj, PG_STAT_DEADLOCKS));
	statements_value(pp, probe_scale(p), res);
	locks_value(pp, res);
	struct value *ck = value_obj_set(res, "checkpoints", value_obj());
	value_set_int(ck, "count", (int64_t)c[PG_C_CKPTS]);
	value_set_int(ck, "total_ns", (int64_t)c[PG_C_CKPT_NS]);
	value_set_int(ck, "max_ns", (int64_t)c[PG_C_CKPT_MAX_NS]);
	value_set_int(ck, "buffers_written", (int64_t)c[PG_C_CKPT_BUFFERS]);
	struct value *bu = value_obj_set(res, "buffers", value_obj());
	value_set_bool(bu, "hits_counted", probe_opt(p, "buffer_hits") != 0);
	double scale = probe_scale(p);
	if (scale > 1)
		value_set_int(bu, "sampled_1_in", probe_sampled_1_in(p));
	value_set_int(bu, "hits", (int64_t)llround((double)c[PG_C_BUF_HITS] * scale));
	value_set_int(bu, "misses", (int64_t)llround((double)c[PG_C_BUF_MISSES] * scale));
	value_set_int(bu, "reads", (int64_t)c[PG_C_READS]);
	value_set_int(bu, "read_ns", (int64_t)c[PG_C_READ_NS]);
	struct value *so = value_obj_set(res, "sorts", value_obj());
	value_set_int(so, "count", (int64_t)c[PG_C_SORTS]);
	value_set_int(so, "disk", (int64_t)c[PG_C_SORTS_DISK]);
	value_set_int(so, "disk_kb", (int64_t)c[PG_C_SORT_DISK_KB]);
	*out = res;
	return 0;
}

#define LOCK_FIELDS(name)                                                                          \
	{ name ".locktype", RT_STRING, NULL, false, "as pg_locks.locktype: relation, tuple, transactionid, ..." }, \
	{ name ".mode", RT_STRING, NULL, false, "the mode waited for, as pg_locks.mode (ShareLock, ...)" }, \
	{ name ".database", RT_INTEGER, NULL, true, "the database's OID" },                          \
	{ name ".relation", RT_INTEGER, NULL, true, "the relation's OID (SELECT OID::regclass)" },    \
	{ name ".page", RT_INTEGER, NULL, true, "page, tuple: the block" },                           \
	{ name ".tuple", RT_INTEGER, NULL, true, "tuple: its offset in the block" },                  \
	{ name ".transactionid", RT_INTEGER, NULL, true, "transactionid: the xid waited for" },       \
	{ name ".virtualxid", RT_STRING, NULL, true, "virtualxid: backend/local xid" },               \
	{ name ".objid", RT_INTEGER, NULL, true, "object, advisory, ...: its second field" }

#define WAIT_FIELDS(name)                                                                          \
	{ name ".count", RT_INTEGER, "count", false, "waits finished in the window" },                \
	{ name ".total_ns", RT_INTEGER, "ns", false, "their time" },                                  \
	{ name ".max_ns", RT_INTEGER, "ns", false, "the longest" }

static const struct result_field pg_results[] = {
	{ "binary", RT_STRING, NULL, false, "the server binary probed" },
	{ "major_version", RT_INTEGER, NULL, true, "from its path (/usr/lib/postgresql/15/...)" },
	{ "probes", RT_OBJECT, NULL, false, "sites attached per PostgreSQL probe (0: not in this binary, or off)" },
	{ "probes.*", RT_INTEGER, "count", false, "sites of that probe attached" },
	{ "sites_unreadable", RT_INTEGER, "count", false, "sites skipped: arguments that cannot be fetched" },
	{ "statements_finished", RT_INTEGER, "count", false, "statements that finished in the window (query__done)" },
	{ "statements_failed", RT_INTEGER, "count", false, "of them, ended by an error (transaction__abort): a timeout, a cancel, a deadlock, a constraint" },
	{ "lock_waits_failed", RT_INTEGER, "count", false, "lock waits an error ended (lock_timeout, deadlock, statement_timeout, cancel)" },
	{ "statements_read", RT_INTEGER, "count", false, "of them, records read (the rest: ring_full)" },
	{ "ring_full", RT_INTEGER, "count", false, "statements whose record found the ring full" },
	{ "statements_over_limit", RT_INTEGER, "count", false, "statements of texts beyond max_statements" },
	{ "unmatched", RT_INTEGER, "count", false, "done probes without their start (began before the window)" },
	{ "map_full", RT_INTEGER, "count", false, "backends, locks or tranches not kept: a map was full" },
	{ "deadlocks", RT_INTEGER, "count", false, "deadlocks found (deadlock__found)" },
	{ "distinct_statements", RT_INTEGER, "count", false, "texts after normalization" },
	{ "statements", RT_ARRAY, NULL, false, "the statements by total time, at most 50" },
	{ "statements[]", RT_OBJECT, NULL, false, "one normalized text" },
	{ "statements[].query", RT_STRING, NULL, false, "the text, constants replaced by ? (at most 511 bytes read)" },
	{ "statements[].text_cut", RT_BOOLEAN, NULL, true, "the text was longer than what was read" },
	{ "statements[].count", RT_INTEGER, "count", false, "executions finished in the window" },
	{ "statements[].errors", RT_INTEGER, "count", false, "of them, ended by an error (their time runs to it)" },
	{ "statements[].total_ns", RT_INTEGER, "ns", false, "their time, start to done (or to the error)" },
	{ "statements[].max_ns", RT_INTEGER, "ns", false, "the longest" },
	{ "statements[].lock_ns", RT_INTEGER, "ns", false, "of it, waiting for heavyweight locks" },
	{ "statements[].lwlock_ns", RT_INTEGER, "ns", false, "waiting for LWLocks" },
	{ "statements[].read_ns", RT_INTEGER, "ns", false, "reading blocks from the kernel (shared-buffer misses)" },
	{ "statements[].lock_waits", RT_INTEGER, "count", false, "heavyweight lock waits" },
	{ "statements[].lock_waits_failed", RT_INTEGER, "count", false, "of them, ended by an error (lock_timeout, ...)" },
	{ "statements[].lwlock_waits", RT_INTEGER, "count", false, "LWLock waits" },
	{ "statements[].reads", RT_INTEGER, "count", false, "blocks read from the kernel" },
	{ "statements[].buffer_hits", RT_INTEGER, "count", false, "buffer accesses found in shared buffers" },
	{ "statements[].buffer_misses", RT_INTEGER, "count", false, "buffer accesses not found" },
	{ "statements[].sorts", RT_INTEGER, "count", false, "sorts finished" },
	{ "statements[].sorts_disk", RT_INTEGER, "count", false, "sorts that spilled to disk" },
	{ "statements[].worst_lock", RT_OBJECT, NULL, true, "the lock of its longest wait" },
	LOCK_FIELDS("statements[].worst_lock"),
	{ "statements[].worst_lock.wait_ns", RT_INTEGER, "ns", false, "that wait" },
	LOG2_BUCKET_FIELDS("statements[].buckets", "ns"),
	{ "lock_waits", RT_ARRAY, NULL, false, "heavyweight lock waits by lock and mode, by total time, at most 50" },
	{ "lock_waits[]", RT_OBJECT, NULL, false, "one lock and mode" },
	LOCK_FIELDS("lock_waits[]"),
	WAIT_FIELDS("lock_waits[]"),
	{ "lwlock_waits", RT_ARRAY, NULL, false, "LWLock waits by tranche, by total time" },
	{ "lwlock_waits[]", RT_OBJECT, NULL, false, "one tranche" },
	{ "lwlock_waits[].tranche", RT_STRING, NULL, false, "as pg_stat_activity.wait_event names it" },
	WAIT_FIELDS("lwlock_waits[]"),
	{ "checkpoints", RT_OBJECT, NULL, false, "checkpoints finished in the window" },
	{ "checkpoints.count", RT_INTEGER, "count", false, "how many" },
	{ "checkpoints.total_ns", RT_INTEGER, "ns", false, "their time" },
	{ "checkpoints.max_ns", RT_INTEGER, "ns", false, "the longest" },
	{ "checkpoints.buffers_written", RT_INTEGER, "count", false, "buffers they wrote" },
	{ "buffers", RT_OBJECT, NULL, false, "shared buffers" },
	{ "buffers.hits_counted", RT_BOOLEAN, NULL, false, "buffer__read__done was attached (buffer_hits)" },
	{ "buffers.sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 access in N counted, hits and misses scaled by N" },
	{ "buffers.hits", RT_INTEGER, "count", false, "accesses found in shared buffers" },
	{ "buffers.misses", RT_INTEGER, "count", false, "accesses not found" },
	{ "buffers.reads", RT_INTEGER, "count", false, "blocks read from the kernel" },
	{ "buffers.read_ns", RT_INTEGER, "ns", false, "their time" },
	{ "sorts", RT_OBJECT, NULL, false, "sorts finished" },
	{ "sorts.count", RT_INTEGER, "count", false, "how many" },
	{ "sorts.disk", RT_INTEGER, "count", false, "that spilled to disk (work_mem too small)" },
	{ "sorts.disk_kb", RT_INTEGER, "KiB", false, "what they wrote" },
};
/* What its sample_every samples: the shared-buffer accesses counted so far. */
static uint64_t pg_sampled_events(struct probe *p)
{
	struct pg_priv *pp = p->priv;
	int fd = bpf_map__fd(pp->skel->maps.counters);
	uint64_t n = 0;
	for (__u32 k = PG_C_BUF_HITS, i = 0; i < 2; i++, k = PG_C_BUF_MISSES) {
		__u64 v = 0;
		if (bpf_map_lookup_elem(fd, &k, &v) == 0)
			n += v;
	}
	return n;
}

static const char *const pg_features[] = { "btf", "uprobe", "uprobe_semaphore", NULL };

const struct probe_kind probe_kind_pg_statements = {
	.name = "pg_statements",
	.summary = "PostgreSQL's statements by normalized text with their time split (lock, LWLock, "
		   "reads), lock waits by lock, checkpoints, buffers (its USDT probes)",
	.options = pg_options,
	.n_options = ARRAY_LEN(pg_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = pg_variants,
	.private_size = sizeof(struct pg_priv),
	.results = pg_results,
	.n_results = ARRAY_LEN(pg_results),
	.features = pg_features,
	.lint = pg_lint,
	.load = pg_load,
	.attach = pg_attach,
	.detach = probe_bpf_detach,
	.tick = pg_drain, /* the ring wakes us only when a quarter full */
	.wake_fd = pg_wake_fd,
	.drain = pg_drain,
	.collect = pg_collect,
	.sampled_events = pg_sampled_events,
	.destroy = pg_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = pg_statements_bpf__elf_bytes,
};
