/* peer_wait.c — catalog entry for engine/probes/peer_wait.bpf.c: how long the target waits for
 * the other end of its TCP and Unix stream connections, per peer (as a client: an upstream, a
 * database, a cache) and per service (as a server: from a request arriving to its answer).
 *
 * Owns: sizing the socket and peer maps, seeding the roles of the sockets the target holds
 * before attach (engine/probes/netowner.c reads them from /proc), noting when the window ends
 * (detach), and turning the histograms into results: peers by the time waited on them, each
 * with its count, total, longest, log-linear buckets, and the waits still open when the window
 * ended (requests sent and not yet answered, with the oldest one's age).
 * Must not: judge the times (the recipe's Lua does), or read what the sockets carry.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "probes/netowner.h"
#include "probes/peer_wait.h"
#include "peer_wait.skel.h"

struct peer_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct peer_wait_bpf *skel;
	uint64_t ended_ns; /* CLOCK_MONOTONIC at detach: the end of the window (open waits' age) */
	size_t seeded;     /* sockets whose role was read from /proc before attach */
};

PROBE_BPF_SKELETON(peer_wait)

static const struct option_spec peer_options[] = {
	{ .name = "max_sockets", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20, .bytes_per_entry = 8 + sizeof(struct peer_sock) + 64,
	  .help = "the target's sockets followed at once (least recently used forgotten first: a "
		  "wait open on a forgotten socket is not measured)" },
	{ .name = "max_peers", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 256,
	  .min = 4, .max = 1u << 14,
	  .bytes_per_entry = sizeof(struct peer_key) + sizeof(struct peer_hist) + 64,
	  .help = "peers and services timed; waits on peers beyond are counted as dropped" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "follow 1 socket in N (by inode) and scale the counts: every wait measured is "
		  "whole (the budget pre-flight raises it when the recipe says degrade: sample)" },
};

static const char *const peer_variants[] = { "raw_tp", NULL };

/* The hash's entries where task storage is missing: a thread of the target each. */
#define PEER_THREADS_NO_TASK_STORAGE 16384

static int peer_load(struct probe *p, struct diag_err *err)
{
	struct peer_priv *pp = p->priv;
	if (!(pp->skel = peer_wait_skel_open(p, err)))
		return -1;
	if (bpf_map__key_size(pp->skel->maps.peers) != sizeof(struct peer_key) ||
	    bpf_map__value_size(pp->skel->maps.peers) != sizeof(struct peer_hist) ||
	    bpf_map__value_size(pp->skel->maps.socks) != sizeof(struct peer_sock))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "internal: peer_wait layouts differ from the BPF side");
	bpf_map__set_max_entries(pp->skel->maps.socks, (__u32)probe_opt(p, "max_sockets"));
	bpf_map__set_max_entries(pp->skel->maps.peers, (__u32)probe_opt(p, "max_peers"));
	pp->skel->rodata->in_call_in_hash = probe_thread_state(
		p, pp->skel->maps.in_call, pp->skel->maps.in_call_by_tid, true,
		PEER_THREADS_NO_TASK_STORAGE, "each thread's open request and call");
	pp->skel->rodata->exit_nr = SYS_exit;
	pp->skel->rodata->exit_group_nr = SYS_exit_group;
	int rc = peer_wait_bpf__load(pp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED,
				 "loading peer_wait programs: %s (needs raw tracepoints); run with -v for "
				 "libbpf's log", strerror(-rc));
	p->variant = "raw_tp";
	return 0;
}

/* The sockets the target holds now get their role from /proc: a request in flight when the
 * probe attaches is then not mistaken for one arriving. */
static int peer_attach(struct probe *p, struct diag_err *err)
{
	struct peer_priv *pp = p->priv;
	size_t max = bpf_map__max_entries(pp->skel->maps.socks) / 2;
	struct netowner_role *roles = xcalloc(max ? max : 1, sizeof(*roles));
	size_t n = netowner_target_roles(&p->cfg.filter, roles, max);
	int fd = bpf_map__fd(pp->skel->maps.socks);
	for (size_t i = 0; i < n; i++) {
		struct peer_sock s = { .role = (__u8)roles[i].role };
		__u64 ino = roles[i].inode;
		if (bpf_map_update_elem(fd, &ino, &s, BPF_NOEXIST) == 0)
			pp->seeded++;
	}
	free(roles);
	return probe_bpf_attach_all(p, err);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void peer_detach(struct probe *p)
{
	struct peer_priv *pp = p->priv;
	if (!pp->ended_ns)
		pp->ended_ns = monotonic_ns();
	probe_bpf_detach(p);
}

/* The bounds of log-linear slot s (see peer_wait.bpf.c's hist_slot). */
static void slot_bounds(unsigned s, uint64_t *lo, uint64_t *hi)
{
	if (s < 4) {
		*lo = *hi = s;
		return;
	}
	unsigned l = s / PEER_HIST_SUB + 1, sub = s % PEER_HIST_SUB;
	*lo = (uint64_t)(4 + sub) << (l - 2);
	*hi = ((uint64_t)(5 + sub) << (l - 2)) - 1;
}

struct peer_row {
	struct peer_key key;
	struct peer_hist h;
	uint64_t open, open_oldest_ns, open_ns;
};

static int row_cmp(const void *a, const void *b)
{
	const struct peer_row *x = a, *y = b;
	uint64_t tx = x->h.sum_ns + x->open_ns, ty = y->h.sum_ns + y->open_ns;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

/* "10.0.0.5:5432", "[::1]:80", a Unix socket's path, "(unnamed)". */
static void peer_name(const struct peer_key *k, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	if (k->family == PEER_AF_UNIX) {
		char path[PEER_PATH_LEN + 1];
		memcpy(path, k->path, PEER_PATH_LEN);
		path[PEER_PATH_LEN] = '\0';
		snprintf(out, len, "%s", path[0] && strcmp(path, "@") ? path : "(unnamed)");
	} else if (k->family == PEER_AF_INET) {
		inet_ntop(AF_INET, k->addr, a, sizeof(a));
		snprintf(out, len, "%s:%u", a, k->port);
	} else {
		inet_ntop(AF_INET6, k->addr, a, sizeof(a));
		snprintf(out, len, "[%s]:%u", a, k->port);
	}
}

static struct peer_row *find_row(struct peer_row *rows, size_t n, const struct peer_key *k)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(&rows[i].key, k, sizeof(*k)))
			return &rows[i];
	return NULL;
}

static int peer_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct peer_priv *pp = p->priv;
	int peers_fd = bpf_map__fd(pp->skel->maps.peers), socks_fd = bpf_map__fd(pp->skel->maps.socks);
	size_t cap = bpf_map__max_entries(pp->skel->maps.peers) + 64, n = 0;
	struct peer_row *rows = xcalloc(cap, sizeof(*rows));
	double scale = probe_scale(p);
	uint64_t ended = pp->ended_ns ? pp->ended_ns : monotonic_ns();
	struct peer_key key, next;
	(void)ctx;
	(void)err;

	for (int rc = bpf_map_get_next_key(peers_fd, NULL, &next); rc == 0 && n < cap;
	     rc = bpf_map_get_next_key(peers_fd, &key, &next)) {
		key = next;
		if (bpf_map_lookup_elem(peers_fd, &key, &rows[n].h) == 0)
			rows[n++].key = key;
	}
	/* Waits still open at the window's end: requests not answered yet. */
	__u64 ino, next_ino;
	size_t sockets = 0;
	for (int rc = bpf_map_get_next_key(socks_fd, NULL, &next_ino); rc == 0;
	     rc = bpf_map_get_next_key(socks_fd, &ino, &next_ino)) {
		struct peer_sock s;
		ino = next_ino;
		if (bpf_map_lookup_elem(socks_fd, &ino, &s))
			continue;
		sockets++;
		if (!s.since_ns || !s.named || s.since_ns >= ended)
			continue;
		struct peer_row *r = find_row(rows, n, &s.key);
		if (!r && n < cap) {
			r = &rows[n++];
			memset(r, 0, sizeof(*r));
			r->key = s.key;
		}
		if (!r)
			continue;
		uint64_t age = ended - s.since_ns;
		r->open++;
		r->open_ns += age;
		if (age > r->open_oldest_ns)
			r->open_oldest_ns = age;
	}
	qsort(rows, n, sizeof(*rows), row_cmp);

	struct value *res = value_obj();
	uint64_t waits = 0;
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_str(res, "unit", "ns");
	struct value *list = value_obj_set(res, "peers", value_arr());
	for (size_t i = 0; i < n; i++) {
		const struct peer_row *r = &rows[i];
		char name[PEER_PATH_LEN + INET6_ADDRSTRLEN + 16];
		struct value *e = value_arr_push(list, value_obj());
		peer_name(&r->key, name, sizeof(name)); /* a path is the target's: the writers escape it */
		value_set_str(e, "role", r->key.role == PEER_ROLE_SERVER ? "server" : "client");
		value_set_str(e, "family", r->key.family == PEER_AF_UNIX ? "unix" :
					   r->key.family == PEER_AF_INET ? "tcp" : "tcp6");
		value_set_str(e, "peer", name);
		if (r->key.family != PEER_AF_UNIX)
			value_set_int(e, "port", r->key.port);
		value_set_int(e, "count", (int64_t)(r->h.count * scale));
		value_set_int(e, "total_ns", (int64_t)(r->h.sum_ns * scale));
		value_set_int(e, "max_ns", (int64_t)r->h.max_ns);
		value_set_int(e, "open", (int64_t)(r->open * scale));
		value_set_int(e, "open_oldest_ns", (int64_t)r->open_oldest_ns);
		value_set_int(e, "sleeps", (int64_t)r->h.sleeps);
		value_set_int(e, "sleep_ns", (int64_t)r->h.sleep_ns);
		struct value *b = value_obj_set(e, "buckets", value_arr());
		for (unsigned s = 0; s < PEER_HIST_SLOTS; s++) {
			if (!r->h.slots[s])
				continue;
			uint64_t lo, hi;
			slot_bounds(s, &lo, &hi);
			struct value *slot = value_arr_push(b, value_obj());
			value_set_int(slot, "lo", (int64_t)lo);
			value_set_int(slot, "hi", (int64_t)hi);
			value_set_int(slot, "count", (int64_t)(r->h.slots[s] * scale));
		}
		waits += r->h.count * scale;
	}
	value_set_int(res, "waits", (int64_t)waits);
	struct value *sl = value_obj_set(res, "sleeps", value_obj());
	static const char *const sleep_names[PEER_SLEEP_NR] = {
		"in_request_ns", "in_request", "between_ns", "between", "unplaced_ns", "unplaced",
	};
	int sleeps_fd = bpf_map__fd(pp->skel->maps.sleeps);
	for (unsigned i = 0; i < PEER_SLEEP_NR; i++)
		value_set_int(sl, sleep_names[i], (int64_t)probe_percpu_sum(sleeps_fd, i));
	struct value *rd = value_obj_set(res, "reads", value_obj());
	static const char *const read_names[PEER_READ_NR] = {
		"for_work_ns", "for_work", "for_answer_ns", "for_answer", "other_ns", "other",
	};
	int reads_fd = bpf_map__fd(pp->skel->maps.reads);
	for (unsigned i = 0; i < PEER_READ_NR; i++)
		value_set_int(rd, read_names[i], (int64_t)(probe_percpu_sum(reads_fd, i) * scale));
	value_set_int(res, "sockets", (int64_t)sockets);
	value_set_int(res, "seeded", (int64_t)pp->seeded);
	value_set_int(res, "inferred", (int64_t)probe_stat_sum(pp->skel->obj, PEER_STAT_INFERRED));
	value_set_int(res, "dropped", (int64_t)probe_stat_sum(pp->skel->obj, DIAG_STAT_MAP_FULL));
	free(rows);
	*out = res;
	return 0;
}

static const struct result_field peer_results[] = {
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 socket in N followed, counts scaled by N" },
	{ "unit", RT_STRING, NULL, false, "unit of the times and buckets: \"ns\"" },
	{ "waits", RT_INTEGER, "count", false, "waits that ended in the window, all peers" },
	{ "sockets", RT_INTEGER, "count", false, "the target's sockets followed at the end" },
	{ "seeded", RT_INTEGER, "count", false, "sockets whose role was read from /proc before attach" },
	{ "inferred", RT_INTEGER, "count", false, "sockets whose role was taken from the direction of their first transfer" },
	{ "dropped", RT_INTEGER, "count", false, "waits or sockets not recorded: a map was full" },
	{ "sleeps", RT_OBJECT, NULL, true, "the target's threads' sleeps (nanosleep, clock_nanosleep) that ended in the window, by what the sleeping thread's last transfer left open (absent in reports before it)" },
	{ "sleeps.in_request_ns", RT_INTEGER, "ns", true, "time slept with a request of the thread's open (a client's sent and unanswered, a server's read and unanswered)" },
	{ "sleeps.in_request", RT_INTEGER, "count", true, "how many such sleeps" },
	{ "sleeps.between_ns", RT_INTEGER, "ns", true, "time slept with none open: pacing between requests, a loop with no request" },
	{ "sleeps.between", RT_INTEGER, "count", true, "how many such sleeps" },
	{ "sleeps.unplaced_ns", RT_INTEGER, "ns", true, "time slept after a transfer on a socket sampling does not follow" },
	{ "sleeps.unplaced", RT_INTEGER, "count", true, "how many such sleeps" },
	{ "reads", RT_OBJECT, NULL, true, "the target's threads' time in reads that returned data on the sockets followed (scaled when sampling), by what the data was" },
	{ "reads.for_work_ns", RT_INTEGER, "ns", true, "a server's reads that brought a new request: the thread waited for its client's next request (idle)" },
	{ "reads.for_work", RT_INTEGER, "count", true, "how many" },
	{ "reads.for_answer_ns", RT_INTEGER, "ns", true, "a client's reads that brought the answer to its open request: the thread waited on the peer" },
	{ "reads.for_answer", RT_INTEGER, "count", true, "how many" },
	{ "reads.other_ns", RT_INTEGER, "ns", true, "the rest: more of a request or an answer already under way, data with no request open" },
	{ "reads.other", RT_INTEGER, "count", true, "how many" },
	{ "peers", RT_ARRAY, NULL, false, "per peer (client role) or service (server role), most time waited first" },
	{ "peers[]", RT_OBJECT, NULL, false, "one peer or service" },
	{ "peers[].role", RT_STRING, NULL, false, "\"client\": the target sends and waits for the peer's answer; \"server\": the target answers requests (time from a request arriving to the first bytes of its answer)" },
	{ "peers[].family", RT_STRING, NULL, false, "\"tcp\", \"tcp6\" or \"unix\"" },
	{ "peers[].peer", RT_STRING, NULL, false, "client: the peer's address:port or Unix socket path; server: the target's own address:port or path" },
	{ "peers[].port", RT_INTEGER, NULL, true, "TCP only: the port of peer" },
	{ "peers[].count", RT_INTEGER, "count", false, "waits that ended in the window" },
	{ "peers[].total_ns", RT_INTEGER, "ns", false, "their time, summed" },
	{ "peers[].max_ns", RT_INTEGER, "ns", false, "the longest" },
	{ "peers[].open", RT_INTEGER, "count", false, "waits still open when the window ended (requests not yet answered)" },
	{ "peers[].open_oldest_ns", RT_INTEGER, "ns", false, "the age of the oldest open wait at the window's end" },
	{ "peers[].sleeps", RT_INTEGER, "count", true, "sleeps (nanosleep, clock_nanosleep) of a thread whose request on this peer or service was open: delays and back-offs inside requests" },
	{ "peers[].sleep_ns", RT_INTEGER, "ns", true, "their time, summed" },
	{ "peers[].buckets", RT_ARRAY, NULL, false, "non-empty log-linear slots (4 per power of 2), shortest first" },
	{ "peers[].buckets[]", RT_OBJECT, NULL, false, "one slot: values in [lo, hi]" },
	{ "peers[].buckets[].lo", RT_INTEGER, "ns", false, "lowest value of the slot" },
	{ "peers[].buckets[].hi", RT_INTEGER, "ns", false, "highest value of the slot" },
	{ "peers[].buckets[].count", RT_INTEGER, "count", false, "waits that fell in the slot" },
};
/* task_storage is not needed: a hash by thread stands in where it is missing. */
static const char *const peer_features[] = { "btf", "raw_tp", NULL };

const struct probe_kind probe_kind_peer_wait = {
	.name = "peer_wait",
	.summary = "time the target waits for the other end of its TCP and Unix connections, per peer and per service",
	.options = peer_options,
	.n_options = ARRAY_LEN(peer_options),
	.filters = FILTER_PID | FILTER_TID | FILTER_COMM | FILTER_CGROUP,
	.variants = peer_variants,
	.private_size = sizeof(struct peer_priv),
	.results = peer_results,
	.n_results = ARRAY_LEN(peer_results),
	.features = peer_features,
	.load = peer_load,
	.attach = peer_attach,
	.detach = peer_detach,
	.collect = peer_collect,
	.destroy = probe_bpf_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = peer_wait_bpf__elf_bytes,
};
