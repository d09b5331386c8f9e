/* procset.c — the kernel's copy of a set of target processes, and their symbolizers. See
 * procset.h.
 * Must not: decide membership, or print.
 */
#include "session/procset.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "procset.skel.h"
#include "symbolize/usyms.h"

static __u32 parent_of(const struct procset *ps, __u32 tgid);
static struct procset_execd *execd_find(const struct procset *ps, __u32 tgid);

/* A symbolizer per process, created when the set first covers it: its mappings are read while
 * it lives (a process that exits later keeps them). A child forked by a member that has not
 * exec'd shares its parent's mappings: it borrows its parent's symbolizer (procset_usyms) until
 * it execs, when it gets its own. */
static void sync_usyms(struct procset *ps)
{
	struct target *t = ps->target;
	if (ps->n_usyms < t->n_procs) {
		ps->usyms = xrealloc(ps->usyms, t->n_procs * sizeof(*ps->usyms));
		ps->usyms_state = xrealloc(ps->usyms_state, t->n_procs * sizeof(*ps->usyms_state));
		for (size_t i = ps->n_usyms; i < t->n_procs; i++) {
			ps->usyms[i] = NULL;
			ps->usyms_state[i] = USYMS_NONE;
		}
		ps->n_usyms = t->n_procs;
	}
	for (size_t i = 0; i < ps->n_usyms; i++) {
		if (ps->usyms_state[i] == USYMS_OWN || ps->usyms_state[i] == USYMS_OVER_CAP ||
		    ps->usyms_state[i] == USYMS_EXECD || !t->procs[i].alive)
			continue;
		if (execd_find(ps, (__u32)t->procs[i].pid)) { /* its exec notice's symbolizer serves */
			ps->usyms_state[i] = USYMS_EXECD;
			continue;
		}
		__u32 parent = parent_of(ps, (__u32)t->procs[i].pid);
		if (parent && procset_usyms(ps, (int)parent)) {
			ps->usyms_state[i] = USYMS_BORROWED;
			continue;
		}
		if (ps->n_symbolized >= PROCSET_MAX_SYMBOLIZED) { /* each one holds its files' symbol tables */
			ps->usyms_state[i] = USYMS_OVER_CAP;
			ps->unsymbolized++;
			continue;
		}
		struct diag_err ignore;
		ps->usyms[i] = usyms_new_in(t->procs[i].pid, ps->files);
		usyms_snapshot(ps->usyms[i], &ignore);
		ps->usyms_state[i] = USYMS_OWN;
		ps->n_symbolized++;
	}
}

static void remember_parent(struct procset *ps, __u32 child, __u32 parent);

static void sync_map(struct procset *ps)
{
	struct target *t = ps->target;
	__u32 scanned = DIAG_SET_SCANNED;
	for (size_t i = 0; i < t->n_procs; i++) {
		struct target_proc *p = &t->procs[i];
		__u32 key = (__u32)p->pid, how;
		/* a child the kernel added at fork becomes a scanned member: its parent is kept */
		if (p->alive && !p->in_kernel && ps->follower &&
		    bpf_map_lookup_elem(ps->map_fd, &key, &how) == 0 && how != DIAG_SET_SCANNED)
			remember_parent(ps, key, how);
		if (p->alive && !p->in_kernel)
			p->in_kernel = bpf_map_update_elem(ps->map_fd, &key, &scanned, BPF_ANY) == 0;
		else if (!p->alive && p->in_kernel) {
			bpf_map_delete_elem(ps->map_fd, &key);
			p->in_kernel = false;
		}
	}
}

/* A stray's parent, kept when its entry leaves the map (bounded: the oldest go first). */
static void remember_parent(struct procset *ps, __u32 child, __u32 parent)
{
	if (parent == DIAG_SET_EXECED)
		return;
	if (ps->n_lineage == PROCSET_MAX_LINEAGE) {
		memmove(ps->lineage, ps->lineage + 1, (PROCSET_MAX_LINEAGE - 1) * sizeof(*ps->lineage));
		ps->n_lineage--;
	}
	if (!ps->lineage)
		ps->lineage = xcalloc(PROCSET_MAX_LINEAGE, sizeof(*ps->lineage));
	ps->lineage[ps->n_lineage++] = (struct procset_lineage){ .child = child, .parent = parent };
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;
	return x < y ? -1 : x > y;
}

static bool contains(const __u32 *sorted, size_t n, __u32 key)
{
	return n && bsearch(&key, sorted, n, sizeof(key), cmp_u32);
}

/* Children the kernel added at fork (not DIAG_SET_SCANNED) that the scan did not find: the scan
 * may have run just before the fork, so one miss is forgiven; two in a row, out. Walks the map
 * only when something joined since the last walk or strays wait for their second scan. */
static void prune_strays(struct procset *ps)
{
	uint64_t joined = procset_joined_at_fork(ps);
	if (!ps->follower || (joined == ps->joined_seen && ps->n_strays == 0))
		return;
	ps->joined_seen = joined;
	struct target *t = ps->target;
	__u32 *members = xcalloc(t->n_procs ? t->n_procs : 1, sizeof(*members));
	size_t n_members = 0;
	for (size_t i = 0; i < t->n_procs; i++)
		if (t->procs[i].alive && t->procs[i].in_kernel)
			members[n_members++] = (__u32)t->procs[i].pid;
	qsort(members, n_members, sizeof(*members), cmp_u32);
	__u32 *keys = xcalloc(TARGET_MAX_PROCS, sizeof(*keys));
	size_t n_keys = 0;
	__u32 key, next;
	for (int rc = bpf_map_get_next_key(ps->map_fd, NULL, &next); rc == 0 && n_keys < TARGET_MAX_PROCS;
	     rc = bpf_map_get_next_key(ps->map_fd, &key, &next)) {
		keys[n_keys++] = next;
		key = next;
	}
	__u32 *strays = xcalloc(n_keys ? n_keys : 1, sizeof(*strays));
	size_t n_strays = 0;
	for (size_t i = 0; i < n_keys; i++) {
		__u32 how;
		if (contains(members, n_members, keys[i]) ||
		    bpf_map_lookup_elem(ps->map_fd, &keys[i], &how) || how == DIAG_SET_SCANNED)
			continue;
		if (contains(ps->strays, ps->n_strays, keys[i])) {
			remember_parent(ps, keys[i], how); /* its stacks may still need its parent's symbols */
			bpf_map_delete_elem(ps->map_fd, &keys[i]);
		} else {
			strays[n_strays++] = keys[i];
		}
	}
	if (n_strays)
		qsort(strays, n_strays, sizeof(*strays), cmp_u32);
	free(ps->strays);
	ps->strays = strays;
	ps->n_strays = n_strays;
	free(keys);
	free(members);
}

const void *procset_bpf_bytes(size_t *size)
{
	return procset_bpf__elf_bytes(size);
}

static struct procset_execd *execd_find(const struct procset *ps, __u32 tgid)
{
	for (size_t i = ps->n_execd; i-- > 0;)
		if (ps->execd[i].tgid == tgid)
			return &ps->execd[i];
	return NULL;
}

static void resnap_push(struct procset *ps, __u32 tgid, uint64_t due)
{
	if (ps->resnap_head == ps->n_resnap) {
		ps->resnap_head = ps->n_resnap = 0;
	} else if (ps->resnap_head >= 1024) { /* a queue that never empties: reclaim its head */
		memmove(ps->resnap, ps->resnap + ps->resnap_head,
			(ps->n_resnap - ps->resnap_head) * sizeof(*ps->resnap));
		ps->n_resnap -= ps->resnap_head;
		ps->resnap_head = 0;
	}
	if (ps->n_resnap - ps->resnap_head >= PROCSET_MAX_SYMBOLIZED)
		return; /* more execs in 3 ms than symbolizers: the first snapshot stands */
	if ((ps->n_resnap & (ps->n_resnap - 1)) == 0) /* 0 or a power of two: full */
		ps->resnap = xrealloc(ps->resnap, (ps->n_resnap ? ps->n_resnap * 2 : 16) * sizeof(*ps->resnap));
	ps->resnap[ps->n_resnap++] = (struct procset_resnap){ .tgid = tgid, .due = due };
}

/* A member that joined at fork exec'd a program of its own and stays in the set: read its
 * mappings now (the binary, the dynamic loader, the vdso), and again once its libraries are
 * mapped, before it is gone. One that exec'd before keeps its first program's mappings too (its
 * earlier stacks are symbolized after the run); a pid back as a new process starts afresh. */
static int on_exec_notice(void *ctx, void *data, size_t size)
{
	struct procset *ps = ctx;
	struct diag_set_exec_notice notice;
	if (size < sizeof(notice))
		return 0;
	memcpy(&notice, data, sizeof(notice));
	struct procset_execd *e = execd_find(ps, notice.tgid);
	bool fresh = !e || !notice.again;
	if (e && fresh) {
		usyms_free(e->usyms);
	} else if (!e) {
		if (ps->n_symbolized >= PROCSET_MAX_SYMBOLIZED) {
			ps->unsymbolized++;
			return 0;
		}
		if ((ps->n_execd & (ps->n_execd - 1)) == 0)
			ps->execd = xrealloc(ps->execd, (ps->n_execd ? ps->n_execd * 2 : 16) * sizeof(*ps->execd));
		e = &ps->execd[ps->n_execd++];
		e->tgid = notice.tgid;
		ps->n_symbolized++;
	}
	if (fresh)
		e->usyms = usyms_new_in((int)notice.tgid, ps->files);
	struct diag_err ignore;
	if (usyms_snapshot(e->usyms, &ignore) == 0) {
		resnap_push(ps, notice.tgid, mono_ns() + PROCSET_RESNAP_NS);
	} else if (fresh) { /* gone already: nothing to read, and no symbolizer spent on it */
		usyms_free(e->usyms);
		*e = ps->execd[--ps->n_execd]; /* the order does not matter: tgids are distinct */
		ps->n_symbolized--;
	}
	return 0;
}

int procset_wake_fd(const struct procset *ps)
{
	return ps->notices ? ring_buffer__epoll_fd(ps->notices) : -1;
}

void procset_drain(struct procset *ps)
{
	if (ps->notices)
		ring_buffer__consume(ps->notices);
}

uint64_t procset_due_ns(const struct procset *ps)
{
	return ps->resnap_head < ps->n_resnap ? ps->resnap[ps->resnap_head].due : UINT64_MAX;
}

void procset_settle(struct procset *ps, uint64_t now)
{
	while (ps->resnap_head < ps->n_resnap && ps->resnap[ps->resnap_head].due <= now) {
		struct procset_execd *e = execd_find(ps, ps->resnap[ps->resnap_head++].tgid);
		struct diag_err ignore;
		if (e) /* gone already: the first snapshot stands */
			usyms_snapshot(e->usyms, &ignore);
	}
}

int procset_follow_forks(struct procset *ps, struct diag_err *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = ps->core_btf);
	struct procset_bpf *skel = procset_bpf__open_opts(&opts);
	if (!skel)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "following the set's forks: opening: %s", strerror(errno));
	if (ps->target->kind == TARGET_COMM) /* a child that execs another name leaves at exec */
		memcpy((char *)skel->rodata->follow_comm, ps->target->text,
		       strnlen(ps->target->text, sizeof(skel->rodata->follow_comm) - 1));
	int rc = bpf_map__reuse_fd(skel->maps.diag_targets, ps->map_fd);
	if (!rc)
		rc = procset_bpf__load(skel);
	if (!rc)
		rc = procset_bpf__attach(skel);
	if (!rc) {
		ps->notices = ring_buffer__new(bpf_map__fd(skel->maps.exec_notices), on_exec_notice, ps, NULL);
		if (!ps->notices)
			rc = -errno;
	}
	if (rc) {
		procset_bpf__destroy(skel);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "following the set's forks: %s", strerror(rc < 0 ? -rc : rc));
	}
	ps->follower = skel;
	return 0;
}

uint64_t procset_notices_lost(const struct procset *ps)
{
	return ps->follower ? probe_stat_sum(ps->follower->obj, DIAG_STAT_LOST) : 0;
}

uint64_t procset_joined_at_fork(const struct procset *ps)
{
	return ps->follower ? probe_stat_sum(ps->follower->obj, DIAG_SET_STAT_JOINED) : 0;
}

void procset_unscanned(const struct procset *ps, uint64_t *processes, uint64_t *cpu_ns)
{
	*processes = ps->follower ? probe_stat_sum(ps->follower->obj, DIAG_SET_STAT_UNSCANNED) : 0;
	*cpu_ns = ps->follower ? probe_stat_sum(ps->follower->obj, DIAG_SET_STAT_UNSCANNED_NS) : 0;
}

int procset_open(struct procset *ps, struct target *t, struct tfile_reader *reader,
		 struct diag_err *err)
{
	memset(ps, 0, sizeof(*ps));
	ps->target = t;
	ps->files = elf_cache_new(reader);
	ps->map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "diag_targets", sizeof(__u32), sizeof(__u32),
				    TARGET_MAX_PROCS, NULL);
	if (ps->map_fd < 0) {
		int e = errno;
		ps->map_fd = -1;
		return diag_fail(err, DIAG_EXIT_RUNTIME, "creating the set of target processes: %s", strerror(e));
	}
	for (size_t i = 0; i < t->n_procs; i++)
		t->procs[i].in_kernel = false;
	sync_map(ps);
	sync_usyms(ps);
	return 0;
}

size_t procset_refresh(struct procset *ps)
{
	size_t alive = target_scan(ps->target);
	sync_map(ps);
	prune_strays(ps);
	sync_usyms(ps);
	return alive;
}

void procset_snapshot_all(struct procset *ps)
{
	procset_drain(ps);
	procset_settle(ps, UINT64_MAX);
	for (size_t i = 0; i < ps->n_usyms; i++) {
		if (!ps->target->procs[i].alive)
			continue;
		struct usyms *u = ps->usyms[i];
		if (ps->usyms_state[i] == USYMS_EXECD) {
			const struct procset_execd *e = execd_find(ps, (__u32)ps->target->procs[i].pid);
			u = e ? e->usyms : NULL;
		}
		struct diag_err ignore;
		if (u)
			usyms_snapshot(u, &ignore);
	}
}

static struct usyms *own_usyms(const struct procset *ps, __u32 tgid)
{
	for (size_t i = 0; ps->target && i < ps->n_usyms; i++)
		if ((__u32)ps->target->procs[i].pid == tgid)
			return ps->usyms[i];
	return NULL;
}

/* Whether tgid exec'd during the run (as the process that has that pid now, or last had it). */
static bool exec_seen(const struct procset *ps, __u32 tgid)
{
	__u8 execd;
	return ps->follower && bpf_map_lookup_elem(bpf_map__fd(ps->follower->maps.execs), &tgid, &execd) == 0;
}

/* The parent a child joined from at fork (0: not known, or it exec'd since). */
static __u32 parent_of(const struct procset *ps, __u32 tgid)
{
	__u32 how;
	if (exec_seen(ps, tgid))
		return 0; /* a program of its own now */
	if (ps->map_fd >= 0 && bpf_map_lookup_elem(ps->map_fd, &tgid, &how) == 0 && how != DIAG_SET_SCANNED)
		return how; /* DIAG_SET_EXECED (0) included */
	for (size_t i = ps->n_lineage; i-- > 0;) /* the latest first: pids get reused */
		if (ps->lineage[i].child == tgid)
			return ps->lineage[i].parent;
	return 0;
}

struct usyms *procset_usyms(const struct procset *ps, int tgid)
{
	__u32 who = (__u32)tgid;
	/* a child that did not exec has its parent's mappings: its parent's symbolizer serves,
	 * through a few generations (a worker's worker) */
	for (int depth = 0; who && depth < 8; depth++) {
		struct usyms *u = own_usyms(ps, who);
		if (u)
			return u;
		const struct procset_execd *e = exec_seen(ps, who) ? execd_find(ps, who) : NULL;
		if (e)
			return e->usyms;
		who = parent_of(ps, who);
	}
	return NULL;
}

void procset_close(struct procset *ps)
{
	for (size_t i = 0; i < ps->n_usyms; i++)
		usyms_free(ps->usyms[i]);
	free(ps->usyms);
	free(ps->usyms_state);
	for (size_t i = 0; i < ps->n_execd; i++)
		usyms_free(ps->execd[i].usyms);
	free(ps->execd);
	free(ps->resnap);
	elf_cache_release(ps->files);
	ring_buffer__free(ps->notices); /* before the map under it goes with the object */
	procset_bpf__destroy(ps->follower); /* detaches: links first, before the map goes */
	free(ps->strays);
	free(ps->lineage);
	if (ps->map_fd >= 0)
		close(ps->map_fd);
	memset(ps, 0, sizeof(*ps));
	ps->map_fd = -1;
}
