/* runtime.c — what every probe kind shares at run time; contract: runtime.h.
 * Must not: contain anything specific to one probe kind.
 */
#include "probes/runtime.h"

#include <math.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi/diag_bpf.h"
#include "kernel/kernel_btf.h"
#include "kernel/uprobe_multi.h"
#include "target/target.h"

uint64_t probe_opt(const struct probe *p, const char *name)
{
	int i = catalog_option_index(p->kind, name);
	return i < 0 ? 0 : p->cfg.opt[i];
}

double probe_scale(const struct probe *p)
{
	if (p->sample_scale > 0)
		return p->sample_scale;
	int i = catalog_option_with_role(p->kind, OPT_ROLE_SAMPLE_EVERY);
	return i >= 0 && p->cfg.opt[i] > 1 ? (double)p->cfg.opt[i] : 1.0;
}

int64_t probe_sampled_1_in(const struct probe *p)
{
	double s = probe_scale(p);
	return s > 1 ? (int64_t)llround(s) : 1;
}

const char *probe_opt_str(const struct probe *p, const char *name)
{
	int i = catalog_option_index(p->kind, name);
	return i < 0 ? NULL : p->cfg.str[i];
}

uint64_t probe_percpu_sum(int fd, unsigned slot)
{
	int ncpus = libbpf_num_possible_cpus();
	if (fd < 0 || ncpus <= 0)
		return 0;
	uint64_t *vals = xcalloc((size_t)ncpus, sizeof(*vals)), sum = 0;
	__u32 key = slot;
	if (bpf_map_lookup_elem(fd, &key, vals) == 0)
		for (int i = 0; i < ncpus; i++)
			sum += vals[i];
	free(vals);
	return sum;
}

uint64_t probe_stat_sum(struct bpf_object *obj, unsigned slot)
{
	struct bpf_map *map = obj ? bpf_object__find_map_by_name(obj, "stats") : NULL;
	return map ? probe_percpu_sum(bpf_map__fd(map), slot) : 0;
}

int probe_set_mode(struct probe *p, bool count_only, uint64_t sample_every)
{
	struct bpf_object *obj = p->kind->object ? p->kind->object(p) : NULL;
	struct bpf_map *map = obj ? bpf_object__find_map_by_name(obj, DIAG_CTL_SECTION) : NULL;
	if (!map || bpf_map__fd(map) < 0 || bpf_map__value_size(map) != sizeof(struct diag_ctl))
		return -1;
	__u32 zero = 0;
	struct diag_ctl ctl = { .mode = count_only ? DIAG_MODE_COUNT : DIAG_MODE_FULL,
				.sample_every = sample_every > UINT32_MAX ? UINT32_MAX : (__u32)sample_every,
				.flags = p->stacks_dropped ? DIAG_CTL_NO_STACKS : 0 };
	return bpf_map_update_elem(bpf_map__fd(map), &zero, &ctl, BPF_ANY) ? -1 : 0;
}

void probe_count_only_totals(struct probe *p, uint64_t *firings, uint64_t *passed)
{
	struct bpf_object *obj = p->kind->object ? p->kind->object(p) : NULL;
	*firings = probe_stat_sum(obj, DIAG_STAT_FIRINGS);
	*passed = probe_stat_sum(obj, DIAG_STAT_PASSED);
}

uint64_t probe_events(struct probe *p)
{
	if (p->kind->events)
		return p->kind->events(p);
	return probe_stat_sum(p->kind->object(p), DIAG_STAT_EVENTS);
}

struct value *probe_log2_buckets(int hist_fd, unsigned slots, int totals_fd, uint64_t *count,
				 uint64_t *sum, uint64_t *max)
{
	uint64_t counts[64] = { 0 };
	__u32 k0 = 0, k1 = 1;
	__u64 total = 0, longest = 0;
	*count = 0;
	for (__u32 slot = 0; slot < slots && slot < 64; slot++) {
		__u64 c = 0;
		if (bpf_map_lookup_elem(hist_fd, &slot, &c) == 0)
			counts[slot] = c;
		*count += counts[slot];
	}
	bpf_map_lookup_elem(totals_fd, &k0, &total);
	bpf_map_lookup_elem(totals_fd, &k1, &longest);
	*sum = total;
	*max = longest;
	/* every slot as it is (its last one is not a catch-all: the slots given are all there are) */
	return probe_log2_slots_value(counts, 64);
}

struct value *probe_log2_slots_value(const uint64_t *slots, unsigned n)
{
	struct value *buckets = value_arr();
	for (unsigned slot = 0; slot < n && slot < 64; slot++) {
		if (!slots[slot])
			continue;
		struct value *b = value_arr_push(buckets, value_obj());
		value_set_int(b, "lo", slot == 0 ? 0 : (int64_t)((uint64_t)1 << slot));
		value_set_int(b, "hi", slot >= 63 || slot == n - 1 ? INT64_MAX : ((int64_t)1 << (slot + 1)) - 1);
		value_set_int(b, "count", (int64_t)slots[slot]);
	}
	return buckets;
}

static bool is_uprobe_section(const char *sec)
{
	return sec && (!strncmp(sec, "uprobe", 6) || !strncmp(sec, "uretprobe", 9));
}

static bool has_uprobe_programs(struct bpf_object *obj)
{
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, obj)
		if (is_uprobe_section(bpf_program__section_name(prog)))
			return true;
	return false;
}

/* Whether the one process the probe's uprobes are for (--pid: their sites carry its pid; a set's
 * carry none, its filter is the programs') has children now: a forking server. A child forked
 * while a multi-uprobe link is attached inherits its breakpoints, and the kernel keeps them
 * there: every call of a probed function in the child traps, the program does not run (the
 * link's process filter), and no run count shows the cost (a postmaster's new backends under
 * memory-growth --pid: pgbench lost 30% while the report said 2%). A uprobe's own link (a perf
 * event with the pid) has its breakpoint removed from such a child at the child's first hit. */
static bool target_forks(const struct probe_filters *f)
{
	return f->pid > 0 && !f->pid_set && target_has_children(f->pid);
}

bool probe_thread_state(struct probe *p, struct bpf_map *storage, struct bpf_map *by_tid, bool used,
			uint32_t threads, const char *what)
{
	bool task_storage = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	bool hash = used && !task_storage;
	bpf_map__set_autocreate(storage, used && task_storage);
	bpf_map__set_autocreate(by_tid, hash);
	bpf_map__set_max_entries(by_tid, threads);
	if (hash)
		snprintf(p->note, sizeof(p->note), "no task storage (Linux 5.11+): %s is kept in an LRU "
			 "hash by thread, for at most %u threads at once", what, threads);
	return hash;
}

/* ---- twins (diag_bpf.h's DIAG_COMPAT_SUFFIX) --------------------------------------------------- */

/* Whether the kernel has bpf_loop (Linux 5.17), asked once per process (a fact of the kernel, as
 * its BTF is): a program using its callbacks does not load before, even where the call is never
 * reached. Assumed there unless the kernel says it is not (a probe that cannot run for another
 * reason fails its load the same either way). */
static pthread_once_t bpf_loop_once = PTHREAD_ONCE_INIT;
static bool bpf_loop_absent;

bool probe_test_compat(void)
{
	const char *force = getenv("DIAGNOSE_TEST_COMPAT_PROGRAMS");
	return force && !strcmp(force, "1");
}

static void ask_bpf_loop(void)
{
	bpf_loop_absent = probe_test_compat() ||
			  libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_loop, NULL) == 0;
}

static bool kernel_has_bpf_loop(void)
{
	pthread_once(&bpf_loop_once, ask_bpf_loop);
	return !bpf_loop_absent;
}

/* The twin of program prog, or NULL: NAME_compat in its object. */
static struct bpf_program *twin_of(struct bpf_object *obj, const struct bpf_program *prog)
{
	char name[128];
	const char *base = bpf_program__name(prog);
	if (snprintf(name, sizeof(name), "%s%s", base, DIAG_COMPAT_SUFFIX) >= (int)sizeof(name))
		return NULL;
	return bpf_object__find_program_by_name(obj, name);
}

static bool is_twin(const struct bpf_program *prog)
{
	const char *name = bpf_program__name(prog);
	size_t n = strlen(name), k = strlen(DIAG_COMPAT_SUFFIX);
	return n > k && !strcmp(name + n - k, DIAG_COMPAT_SUFFIX);
}

/* A program of a twin pair this kernel does not load: the twin where bpf_loop is, the original
 * where it is not. */
static bool twin_unused(struct bpf_object *obj, const struct bpf_program *prog)
{
	if (is_twin(prog))
		return kernel_has_bpf_loop();
	return !kernel_has_bpf_loop() && twin_of(obj, prog);
}

void probe_bpf_pick_twins(struct probe *p, struct bpf_object_skeleton *s)
{
	struct probe_bpf *b = p->priv;
	bool compat = !kernel_has_bpf_loop();
	bool any = false;
	for (int i = 0; i < s->prog_cnt; i++) {
		struct bpf_program *prog = *s->progs[i].prog, *twin;
		if (!prog || is_twin(prog) || !(twin = twin_of(b->obj, prog)))
			continue;
		any = true;
		bpf_program__set_autoload(compat ? prog : twin, false);
		if (compat) /* the skeleton's pointer: the kind's code uses the twin unaware */
			*s->progs[i].prog = twin;
	}
	if (any && compat)
		p->degraded = "its programs for kernels without bpf_loop (before Linux 5.17): "
			      "no Python frames in its stacks";
}

void probe_bpf_adopt(struct probe *p, void *skel, void (*destroy_skel)(void *), struct bpf_object *obj)
{
	struct probe_bpf *b = p->priv;
	probe_bpf_destroy(p);
	b->skel = skel;
	b->destroy_skel = destroy_skel;
	b->obj = obj;
	/* uprobe programs loaded for multi-uprobe links where the kernel has them (their sites are
	 * then attached through probe_bpf_uprobe only) */
	struct bpf_program *prog;
	if (has_uprobe_programs(obj)) {
		if (p->uprobe_multi && target_forks(&p->cfg.filter)) {
			p->uprobe_multi = false;
			p->uprobe_links = "per-site: the target forks";
		} else if (!p->uprobe_links) { /* an attach variant reopens: the first reason stays */
			p->uprobe_links = p->uprobe_multi ? "multi" : "per-site";
		}
	}
	bpf_object__for_each_program(prog, obj) {
		if (p->uprobe_multi && is_uprobe_section(bpf_program__section_name(prog)))
			bpf_program__set_expected_attach_type(prog, (enum bpf_attach_type)UPROBE_MULTI_ATTACH_TYPE);
	}
}

int probe_bpf_share_targets(struct probe *p, struct bpf_map *map, struct diag_err *err)
{
	if (!p->cfg.filter.pid_set)
		return 0;
	int rc = bpf_map__reuse_fd(map, p->cfg.filter.targets_fd);
	if (rc)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "sharing the set of target processes with %s: %s",
				 p->cfg.id, strerror(-rc));
	return 0;
}

static void keep_link(struct probe_bpf *b, struct bpf_link *link, int fd)
{
	if (b->n_links == b->cap_links) {
		b->cap_links = b->cap_links ? 2 * b->cap_links : 8;
		b->links = xrealloc(b->links, b->cap_links * sizeof(*b->links));
	}
	b->links[b->n_links++] = (struct probe_link){ .link = link, .fd = fd };
}

int probe_bpf_link(struct probe *p, struct bpf_link *link, const char *what, struct diag_err *err)
{
	struct probe_bpf *b = p->priv;
	if (!link)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "attaching %s: %s", what, strerror(errno));
	keep_link(b, link, -1);
	return 0;
}

/* Sites gathered for one multi-uprobe link. */
struct uprobe_batch {
	struct uprobe_site first;  /* prog, pid, direction; path copied: */
	char path[PATH_MAX];
	char what[256];            /* the first site's, for an error */
	uint64_t *offsets, *cookies, *ref_ctr;
	size_t n, cap;
};

static bool same_batch(const struct uprobe_batch *u, const struct uprobe_site *s)
{
	return u->n && u->first.prog == s->prog && u->first.pid == s->pid &&
	       u->first.retprobe == s->retprobe && !strcmp(u->path, s->path) &&
	       u->n < UPROBE_MULTI_MAX_SITES;
}

int probe_bpf_uprobes_flush(struct probe *p, struct diag_err *err)
{
	struct probe_bpf *b = p->priv;
	struct uprobe_batch *u = b->pending;
	if (!u || !u->n)
		return 0;
	bool any_ref = false;
	for (size_t i = 0; i < u->n; i++)
		any_ref |= u->ref_ctr[i] != 0;
	int fd = uprobe_multi_link(bpf_program__fd(u->first.prog), u->path, u->offsets,
				   any_ref ? u->ref_ctr : NULL, u->cookies, u->n, u->first.pid,
				   u->first.retprobe);
	size_t n = u->n;
	u->n = 0;
	if (fd < 0)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "attaching %s%s (one multi-uprobe link for %zu "
				 "sites): %s", u->what, n > 1 ? " and the program's other sites" : "", n,
				 strerror(errno));
	keep_link(b, NULL, fd);
	return 0;
}

int probe_bpf_uprobe(struct probe *p, const struct uprobe_site *site, const char *what,
		     struct diag_err *err)
{
	struct probe_bpf *b = p->priv;
	if (!p->uprobe_multi) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = site->retprobe, .bpf_cookie = site->cookie,
			    .ref_ctr_offset = (size_t)site->ref_ctr_offset);
		return probe_bpf_link(p, bpf_program__attach_uprobe_opts(site->prog, site->pid > 0 ? site->pid : -1,
									 site->path, (size_t)site->offset, &opts),
				      what, err);
	}
	if (!b->pending)
		b->pending = xcalloc(1, sizeof(*b->pending));
	struct uprobe_batch *u = b->pending;
	if (u->n && !same_batch(u, site) && probe_bpf_uprobes_flush(p, err))
		return -1;
	if (!u->n) {
		u->first = *site;
		snprintf(u->path, sizeof(u->path), "%s", site->path);
		snprintf(u->what, sizeof(u->what), "%s", what);
	}
	if (u->n == u->cap) {
		u->cap = u->cap ? 2 * u->cap : 16;
		u->offsets = xrealloc(u->offsets, u->cap * sizeof(*u->offsets));
		u->cookies = xrealloc(u->cookies, u->cap * sizeof(*u->cookies));
		u->ref_ctr = xrealloc(u->ref_ctr, u->cap * sizeof(*u->ref_ctr));
	}
	u->offsets[u->n] = site->offset;
	u->cookies[u->n] = site->cookie;
	u->ref_ctr[u->n] = site->ref_ctr_offset;
	u->n++;
	return 0;
}

static void batch_free(struct probe_bpf *b)
{
	if (!b->pending)
		return;
	free(b->pending->offsets);
	free(b->pending->cookies);
	free(b->pending->ref_ctr);
	free(b->pending);
	b->pending = NULL;
}

int probe_bpf_attach_all(struct probe *p, struct diag_err *err)
{
	struct probe_bpf *b = p->priv;
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, b->obj) {
		if (bpf_program__autoload(prog) && bpf_program__autoattach(prog) &&
		    probe_bpf_link(p, tp_btf_attach(prog), bpf_program__name(prog), err))
			return -1;
	}
	return 0;
}

/* Releasing a uprobe's link waits for the kernel's grace periods (~55-110 ms each on 6.18; the
 * kernel serializes most of it). Released from several threads at once, part of the waits overlap:
 * `latency --duration 1` went from 2.2 s to 1.9 s. Where the kernel has multi-uprobe links (6.6+),
 * a program's sites are one link (probe_bpf_uprobe), released with one wait. */
#define DETACH_THREADS 16

struct detach_slice {
	struct probe_link *links;
	size_t n, first, step;
};

static void release_link(struct probe_link *l)
{
	if (l->link)
		bpf_link__destroy(l->link);
	else if (l->fd >= 0)
		close(l->fd);
	l->link = NULL;
	l->fd = -1;
}

static void *detach_slice_main(void *arg)
{
	const struct detach_slice *d = arg;
	for (size_t i = d->first; i < d->n; i += d->step)
		release_link(&d->links[d->n - 1 - i]); /* last first */
	return NULL;
}

const struct kernel_btf *probe_kernel_btf(const struct probe *p, struct kernel_btf *own,
					  struct diag_err *err)
{
	memset(own, 0, sizeof(*own));
	if (p->kernel_btf)
		return p->kernel_btf;
	return kernel_btf_open(own, err) ? NULL : own;
}

void probe_bpf_detach(struct probe *p)
{
	struct probe_bpf *b = p->priv;
	size_t n = b->n_links, step = n < 4 ? 1 : n < DETACH_THREADS ? n : DETACH_THREADS;
	struct detach_slice slices[DETACH_THREADS];
	pthread_t threads[DETACH_THREADS];
	bool started[DETACH_THREADS] = { false };
	for (size_t t = 0; t < step; t++) {
		slices[t] = (struct detach_slice){ .links = b->links, .n = n, .first = t, .step = step };
		/* slice 0 is this thread's; one a thread cannot take is this thread's too */
		started[t] = t > 0 && pthread_create(&threads[t], NULL, detach_slice_main, &slices[t]) == 0;
	}
	for (size_t t = 0; t < step; t++)
		if (!started[t])
			detach_slice_main(&slices[t]);
	for (size_t t = 0; t < step; t++)
		if (started[t])
			pthread_join(threads[t], NULL);
	free(b->links);
	b->links = NULL;
	b->n_links = b->cap_links = 0;
	batch_free(b);
}

void probe_bpf_destroy(struct probe *p)
{
	struct probe_bpf *b = p->priv;
	probe_bpf_detach(p);
	if (b->skel)
		b->destroy_skel(b->skel);
	b->skel = NULL;
	b->obj = NULL;
}

struct bpf_object *probe_bpf_object(struct probe *p)
{
	return ((struct probe_bpf *)p->priv)->obj;
}

void probe_bpf_select_variant(struct bpf_object *obj, const char *variant)
{
	struct bpf_program *prog;
	size_t len = strlen(variant);
	bpf_object__for_each_program(prog, obj) {
		const char *name = bpf_program__name(prog);
		bpf_program__set_autoload(prog, strncmp(name, variant, len) == 0 && name[len] == '_' &&
						!twin_unused(obj, prog));
	}
}

bool probe_variant_loaded(struct probe *p, struct variant_tries *t, const char *v, int rc)
{
	if (rc == 0) {
		p->variant = v;
		if (t->first_failure[0])
			snprintf(p->note, sizeof(p->note), "%s; using %s", t->first_failure, v);
		return true;
	}
	if (!t->first_failure[0])
		snprintf(t->first_failure, sizeof(t->first_failure), "%s programs did not load (%s)", v,
			 strerror(-rc));
	return false;
}

int probe_no_variant(struct variant_tries *t, const char *what, struct diag_err *err)
{
	return diag_fail(err, DIAG_EXIT_REFUSED, "%s: no attach variant works: %s", what,
			 t->first_failure[0] ? t->first_failure : "none listed");
}
