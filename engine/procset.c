/* procset.c — the kernel's copy of a set of target processes, and their symbolizers. See
 * procset.h.
 * Must not: decide membership, or print.
 */
#include "procset.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols.h"

/* A symbolizer per process, created when the set first covers it: its mappings are read while
 * it lives (a process that exits later keeps them). */
static void sync_usyms(struct procset *ps)
{
	struct target *t = ps->target;
	if (ps->n_usyms < t->n_procs) {
		ps->usyms = xrealloc(ps->usyms, t->n_procs * sizeof(*ps->usyms));
		for (size_t i = ps->n_usyms; i < t->n_procs; i++) {
			struct diag_err ignore;
			ps->usyms[i] = NULL;
			if (i >= PROCSET_MAX_SYMBOLIZED) { /* each one holds its files' symbol tables */
				ps->unsymbolized++;
				continue;
			}
			ps->usyms[i] = usyms_new(t->procs[i].pid);
			usyms_snapshot(ps->usyms[i], &ignore);
		}
		ps->n_usyms = t->n_procs;
	}
}

static void sync_map(struct procset *ps)
{
	struct target *t = ps->target;
	__u8 one = 1;
	for (size_t i = 0; i < t->n_procs; i++) {
		struct target_proc *p = &t->procs[i];
		__u32 key = (__u32)p->pid;
		if (p->alive && !p->in_kernel)
			p->in_kernel = bpf_map_update_elem(ps->map_fd, &key, &one, BPF_ANY) == 0;
		else if (!p->alive && p->in_kernel) {
			bpf_map_delete_elem(ps->map_fd, &key);
			p->in_kernel = false;
		}
	}
}

int procset_open(struct procset *ps, struct target *t, struct diag_err *err)
{
	memset(ps, 0, sizeof(*ps));
	ps->target = t;
	ps->map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "diag_targets", sizeof(__u32), sizeof(__u8),
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
	sync_usyms(ps);
	return alive;
}

void procset_snapshot_all(struct procset *ps)
{
	for (size_t i = 0; i < ps->n_usyms; i++)
		if (ps->usyms[i] && ps->target->procs[i].alive) {
			struct diag_err ignore;
			usyms_snapshot(ps->usyms[i], &ignore);
		}
}

struct usyms *procset_usyms(const struct procset *ps, int tgid)
{
	for (size_t i = 0; ps->target && i < ps->n_usyms; i++)
		if (ps->target->procs[i].pid == tgid)
			return ps->usyms[i];
	return NULL;
}

void procset_close(struct procset *ps)
{
	for (size_t i = 0; i < ps->n_usyms; i++)
		usyms_free(ps->usyms[i]);
	free(ps->usyms);
	if (ps->map_fd >= 0)
		close(ps->map_fd);
	memset(ps, 0, sizeof(*ps));
	ps->map_fd = -1;
}
