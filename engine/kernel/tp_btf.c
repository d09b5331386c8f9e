/* tp_btf.c — tp_btf programs loaded with the kernel's attach id as the run read it (tp_btf.h).
 *
 * Choices:
 * - The table holds every tracepoint the kernel's BTF has a btf_trace_ typedef for (~1,500 on
 *   6.18, ~50 KiB of names), sorted by name: one pass learns them all, so that each load after it
 *   is a lookup, and a tracepoint the kernel lacks is known to be missing without another read.
 * - A lookup before any run learned them (diagnose doctor, the tests) reads the kernel's BTF then,
 *   once for the process.
 * - The program's type changes to TRACING inside the prepare callback, the one moment libbpf lets
 *   a handler shape the load; libbpf reads the type for the load right after it (1.1 and since).
 */
#include "kernel/tp_btf.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "kernel/kernel_btf.h"
#include "common/util.h"

#define TRACE_PREFIX "btf_trace_"

struct tp_id {
	const char *name; /* the tracepoint's, without the prefix: into names */
	int id;
};

/* The process's table (see the file's comment). */
static struct {
	pthread_mutex_t lock;
	struct tp_id *v;
	size_t n;
	char *names;
	bool learned;
} table = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tp_id *)a)->name, ((const struct tp_id *)b)->name);
}

static void learn_locked(const struct kernel_btf *k)
{
	size_t prefix = strlen(TRACE_PREFIX), n = 0, bytes = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t id = 1; id < k->n; id++) {
			const struct btf_type *t = kernel_btf_type(k, id);
			const char *s;
			if (btf_kind(t) != BTF_KIND_TYPEDEF || !(s = kernel_btf_name(k, t->name_off)) ||
			    strncmp(s, TRACE_PREFIX, prefix) || !s[prefix])
				continue;
			size_t len = strlen(s + prefix) + 1;
			if (pass == 1) {
				memcpy(table.names + bytes, s + prefix, len);
				table.v[n] = (struct tp_id){ table.names + bytes, (int)id };
			}
			n++;
			bytes += len;
		}
		if (pass == 0) {
			free(table.v);
			free(table.names);
			table.v = xcalloc(n ? n : 1, sizeof(*table.v));
			table.names = xcalloc(bytes ? bytes : 1, 1);
			n = bytes = 0;
		}
	}
	table.n = n;
	qsort(table.v, n, sizeof(*table.v), by_name);
	table.learned = true;
}

void tp_btf_learn(const struct kernel_btf *k)
{
	pthread_mutex_lock(&table.lock);
	learn_locked(k);
	pthread_mutex_unlock(&table.lock);
}

int tp_btf_id(const char *tracepoint)
{
	int rc = -ESRCH;
	pthread_mutex_lock(&table.lock);
	if (!table.learned) {
		struct kernel_btf k;
		if (kernel_btf_open(&k, NULL)) {
			pthread_mutex_unlock(&table.lock);
			return -ENOENT;
		}
		learn_locked(&k);
		kernel_btf_close(&k);
	}
	struct tp_id key = { tracepoint, 0 };
	const struct tp_id *hit = bsearch(&key, table.v, table.n, sizeof(*table.v), by_name);
	if (hit)
		rc = hit->id;
	pthread_mutex_unlock(&table.lock);
	return rc;
}

/* libbpf's prepare callback: the load as libbpf's own tp_btf handler makes it, with our id. */
static int tp_btf_prepare(struct bpf_program *prog, struct bpf_prog_load_opts *opts, long cookie)
{
	(void)cookie;
	const char *slash = strchr(bpf_program__section_name(prog), '/');
	if (!slash || !slash[1])
		return -EINVAL; /* SEC("tp_btf") with its target set at run time: not ours to guess */
	int id = tp_btf_id(slash + 1);
	if (id < 0)
		return id;
	int rc = bpf_program__set_type(prog, BPF_PROG_TYPE_TRACING);
	if (rc)
		return rc;
	opts->expected_attach_type = BPF_TRACE_RAW_TP;
	opts->attach_btf_id = (uint32_t)id;
	opts->attach_btf_obj_fd = 0;
	return 0;
}

static int tp_btf_attach_fn(const struct bpf_program *prog, long cookie, struct bpf_link **link)
{
	(void)cookie;
	*link = bpf_program__attach_trace(prog);
	return *link ? 0 : -errno;
}

static void install_once(void)
{
	LIBBPF_OPTS(libbpf_prog_handler_opts, opts, .prog_prepare_load_fn = tp_btf_prepare,
		    .prog_attach_fn = tp_btf_attach_fn);
	/* on failure libbpf's own handler stays: the same programs, at libbpf's cost */
	(void)libbpf_register_prog_handler("tp_btf+", BPF_PROG_TYPE_RAW_TRACEPOINT, BPF_TRACE_RAW_TP, &opts);
}

void tp_btf_install(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install_once);
}

struct bpf_link *tp_btf_attach(const struct bpf_program *prog)
{
	if (bpf_program__type(prog) == BPF_PROG_TYPE_TRACING &&
	    bpf_program__expected_attach_type(prog) == BPF_TRACE_RAW_TP)
		return bpf_program__attach_trace(prog);
	return bpf_program__attach(prog);
}
