/* tcp_events.c — catalog entry for engine/probes/tcp_events.bpf.c: TCP retransmits, resets, failed
 * connects and socket errors, per flow (local and peer address:port, IPv4 and IPv6).
 *
 * Owns: checking that the kernel has the five tracepoints and the BTF types the programs read
 * (a clear refusal, not a verifier log, when it does not), the port/address filters, seeding
 * the target's sockets from /proc at attach and at every tick (engine/probes/netowner.c), and turning
 * the flow counts into results: flows most troubled first, totals, a retransmit share of the
 * segments each socket sent, and the accept queues of listening sockets at the end.
 * Must not: judge the counts (the recipe's Lua does), or filter on the current task.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "abi/diag_bpf.h"
#include "kernel/kernel.h"
#include "kernel/kernel_btf.h"
#include "probes/net_owner.h"
#include "probes/netowner.h"
#include "probes/tcp_events.h"
#include "tcp_events.skel.h"

struct tcpe_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct tcp_events_bpf *skel;
	size_t seeded_flows, seeded_ports;
};

PROBE_BPF_SKELETON(tcp_events)

static const struct option_spec tcpe_options[] = {
	{ .name = "max_flows", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20,
	  .bytes_per_entry = sizeof(struct tcpe_flow) + sizeof(struct tcpe_counts) + 64,
	  .help = "distinct flows counted; events of flows beyond are counted as dropped" },
	{ .name = "max_owned", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = (8 + 8 + 64) + (sizeof(struct tcpe_flow) + 8 + 64),
	  .help = "with a target: its sockets and connections remembered (least recently used "
		  "forgotten first)" },
};

static const char *const tcpe_variants[] = { "tracepoint", NULL };

/* Tracepoint and the BTF type of its record that the programs read ("a|b": either, the older
 * kernels' record class second); an optional one (Linux 5.15's socket error reports) is left out
 * where the kernel lacks it, and the probe says so in its note. */
static const struct {
	const char *tp, *type;
	bool optional;
} tcpe_needs[] = {
	{ "tcp/tcp_retransmit_skb", "trace_event_raw_tcp_retransmit_skb|trace_event_raw_tcp_event_sk_skb", false },
	{ "tcp/tcp_send_reset", "trace_event_raw_tcp_send_reset|trace_event_raw_tcp_event_sk_skb", false },
	{ "tcp/tcp_receive_reset", "trace_event_raw_tcp_event_sk", false },
	{ "sock/inet_sock_set_state", "trace_event_raw_inet_sock_set_state", false },
	{ "sock/inet_sk_error_report", "trace_event_raw_inet_sk_error_report", true },
};
#define TCPE_ERROR_REPORT 4 /* tcpe_needs' index of the one program tcpe_error attaches to */

/* 0 when every tracepoint the programs need is there (*no_error_report: the optional one is
 * not), or -1 with err. */
static int tcpe_check_kernel(const struct probe *p, bool *no_error_report, struct diag_err *err)
{
	struct kernel_btf own;
	struct diag_err why;
	const struct kernel_btf *btf = probe_kernel_btf(p, &own, &why);
	if (!btf)
		return diag_fail(err, DIAG_EXIT_REFUSED, "tcp_events: %s", why.msg);
	*no_error_report = false;
	for (size_t i = 0; i < ARRAY_LEN(tcpe_needs); i++) {
		if (tcpe_needs[i].optional && !kernel_has_tracepoint(tcpe_needs[i].tp)) {
			*no_error_report = i == TCPE_ERROR_REPORT;
			continue;
		}
		if (!kernel_has_tracepoint(tcpe_needs[i].tp)) {
			kernel_btf_close(&own);
			return diag_fail(err, DIAG_EXIT_REFUSED, "tcp_events: this kernel has no "
					 "tracepoint %s", tcpe_needs[i].tp);
		}
		char types[128];
		snprintf(types, sizeof(types), "%s", tcpe_needs[i].type);
		bool found = false;
		for (char *save = NULL, *t = strtok_r(types, "|", &save); t && !found;
		     t = strtok_r(NULL, "|", &save))
			found = kernel_btf_find(btf, t, BTF_KIND_STRUCT) != 0;
		if (!found) {
			kernel_btf_close(&own);
			return diag_fail(err, DIAG_EXIT_REFUSED, "tcp_events: this kernel's tracepoint "
					 "%s has a record layout this build does not read (no BTF type %s)",
					 tcpe_needs[i].tp, tcpe_needs[i].type);
		}
	}
	kernel_btf_close(&own);
	return 0;
}

static int tcpe_load(struct probe *p, struct diag_err *err)
{
	struct tcpe_priv *tp = p->priv;
	const struct probe_filters *f = &p->cfg.filter;
	bool no_error_report;
	if (tcpe_check_kernel(p, &no_error_report, err))
		return -1;
	if (!(tp->skel = tcp_events_skel_open(p, err)))
		return -1;
	if (no_error_report) { /* Linux 5.10-5.14: resets, retransmits and failed connects only */
		bpf_program__set_autoload(tp->skel->progs.tcpe_error, false);
		snprintf(p->note, sizeof(p->note), "socket error reports are not counted: this kernel has no "
			 "tracepoint %s (Linux 5.15+)", tcpe_needs[TCPE_ERROR_REPORT].tp);
	}
	if (bpf_map__key_size(tp->skel->maps.flows) != sizeof(struct tcpe_flow) ||
	    bpf_map__value_size(tp->skel->maps.flows) != sizeof(struct tcpe_counts))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "internal: tcp_events layouts differ from the BPF side");
	tp->skel->rodata->filt_local_port = f->local_port;
	tp->skel->rodata->filt_remote_port = f->remote_port;
	if (f->remote_addr.family) {
		tp->skel->rodata->filt_remote_family = f->remote_addr.family == AF_INET ? TCPE_AF_INET
											: TCPE_AF_INET6;
		memcpy((void *)tp->skel->rodata->filt_remote_addr, f->remote_addr.bytes, 16);
	}
	bpf_map__set_max_entries(tp->skel->maps.flows, (__u32)probe_opt(p, "max_flows"));
	netowner_size_maps(tp->skel->maps.owned_socks, tp->skel->maps.owned_flows,
			   tp->skel->maps.owned_ports, netowner_has_target(&p->cfg.filter), (__u32)probe_opt(p, "max_owned"));
	int rc = tcp_events_bpf__load(tp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "tcp_events: the kernel refused the programs "
				 "(%s); run with -v for libbpf's log", strerror(-rc));
	p->variant = "tracepoint";
	return 0;
}

static void tcpe_seed(struct probe *p)
{
	struct tcpe_priv *tp = p->priv;
	size_t nf = 0, np = 0;
	if (!netowner_has_target(&p->cfg.filter))
		return;
	if (netowner_seed_target(&p->cfg.filter, bpf_map__fd(tp->skel->maps.owned_flows),
				 bpf_map__fd(tp->skel->maps.owned_ports), &nf, &np) == 0) {
		if (nf > tp->seeded_flows)
			tp->seeded_flows = nf;
		if (np > tp->seeded_ports)
			tp->seeded_ports = np;
	}
}

/* The target's sockets that exist before the first event: from /proc, then the programs. */
static int tcpe_attach(struct probe *p, struct diag_err *err)
{
	tcpe_seed(p);
	return probe_bpf_attach_all(p, err);
}

struct tcpe_row {
	struct tcpe_flow key;
	struct tcpe_counts c;
	uint64_t trouble;
};

static int row_cmp(const void *a, const void *b)
{
	const struct tcpe_row *x = a, *y = b;
	if (x->trouble != y->trouble)
		return x->trouble > y->trouble ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

static void addr_text(int family, const uint8_t *a, char *out, size_t len)
{
	if (!inet_ntop(family == TCPE_AF_INET ? AF_INET : AF_INET6, a, out, (socklen_t)len))
		snprintf(out, len, "?");
}

/* The counts every flow has, and their sums in `totals`: one list, X-expanded twice. */
#define TCPE_COUNTS(X)                                                                            \
	X("retransmits", "retransmits (tcp:tcp_retransmit_skb; one may carry several segments)") \
	X("retrans_loss", "of which in loss recovery: a retransmission timeout fired")           \
	X("retrans_syn", "of which SYNs: the peer did not answer a connect")                     \
	X("rst_sent", "resets sent (tcp:tcp_send_reset)")                                        \
	X("rst_recv", "resets received (tcp:tcp_receive_reset)")                                 \
	X("rst_recv_syn", "of which in answer to a SYN: a refused connect")                      \
	X("connect_fail", "connects that failed: SYN_SENT to CLOSE")                             \
	X("refused", "ECONNREFUSED reported to the socket's owner")                              \
	X("timedout", "ETIMEDOUT reported")                                                      \
	X("reset", "ECONNRESET or EPIPE reported")                                               \
	X("other_errors", "other socket errors reported")
#define COUNT_NAME(name, what) name,
static const char *const total_names[] = { TCPE_COUNTS(COUNT_NAME) };

static int tcpe_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct tcpe_priv *tp = p->priv;
	int fd = bpf_map__fd(tp->skel->maps.flows);
	size_t n = 0, cap = 64;
	struct tcpe_row *rows = xmalloc(cap * sizeof(*rows));
	struct tcpe_flow keys[2], *prev = NULL, *next = &keys[0];
	uint64_t totals[ARRAY_LEN(total_names)] = { 0 };
	(void)ctx;
	(void)err;

	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		struct tcpe_counts c;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(fd, prev, &c))
			continue;
		if (n == cap)
			rows = xrealloc(rows, (cap *= 2) * sizeof(*rows));
		rows[n] = (struct tcpe_row){ *prev, c, 0 };
		rows[n].trouble = c.retrans + c.rst_sent + c.rst_recv + c.connect_fail + c.refused +
				  c.timedout + c.reset + c.other_err;
		n++;
	}
	qsort(rows, n, sizeof(*rows), row_cmp);

	struct value *res = value_obj();
	struct value *flows = value_obj_set(res, "flows", value_arr());
	for (size_t i = 0; i < n; i++) {
		const struct tcpe_row *r = &rows[i];
		const uint64_t v[] = { r->c.retrans, r->c.retrans_loss, r->c.retrans_syn, r->c.rst_sent,
				       r->c.rst_recv, r->c.rst_recv_syn, r->c.connect_fail, r->c.refused, r->c.timedout,
				       r->c.reset, r->c.other_err };
		_Static_assert(ARRAY_LEN(v) == ARRAY_LEN(total_names), "a count per name, in order");
		char local[INET6_ADDRSTRLEN], remote[INET6_ADDRSTRLEN];
		addr_text(r->key.family, r->key.saddr, local, sizeof(local));
		addr_text(r->key.family, r->key.daddr, remote, sizeof(remote));
		struct value *o = value_arr_push(flows, value_obj());
		value_set_str(o, "family", r->key.family == TCPE_AF_INET ? "ipv4" : "ipv6");
		value_set_str(o, "local", local);
		value_set_int(o, "local_port", r->key.sport);
		value_set_str(o, "remote", remote);
		value_set_int(o, "remote_port", r->key.dport);
		value_set_int(o, "netns", r->c.netns);
		for (size_t k = 0; k < ARRAY_LEN(total_names); k++) {
			value_set_int(o, total_names[k], (int64_t)v[k]);
			totals[k] += v[k];
		}
		if (r->c.last_error)
			value_set_int(o, "last_error", r->c.last_error);
		/* The retransmitted share of the segments the socket sent (its own counters, both in
		 * segments): between its first and last retransmit of the window when that span is
		 * long enough, else over the socket's life up to the last one. */
		const struct tcpe_counts *c = &r->c;
		uint64_t span = c->segs_out_last - c->segs_out_first;
		if (c->segs_out_last > c->segs_out_first && span >= 100 &&
		    c->total_retrans_last >= c->total_retrans_first) {
			value_set_int(o, "segs_out", (int64_t)span);
			value_set_int(o, "retrans_segs", (int64_t)(c->total_retrans_last - c->total_retrans_first));
			value_set_num(o, "retrans_pct", 100.0 * (double)(c->total_retrans_last -
									 c->total_retrans_first) / (double)span);
			value_set_str(o, "retrans_pct_basis", "window");
		} else if (c->segs_out_last) {
			value_set_int(o, "segs_out", (int64_t)c->segs_out_last);
			value_set_int(o, "retrans_segs", (int64_t)c->total_retrans_last);
			value_set_num(o, "retrans_pct", 100.0 * (double)c->total_retrans_last /
							      (double)c->segs_out_last);
			value_set_str(o, "retrans_pct_basis", "lifetime");
		}
	}
	struct value *tot = value_obj_set(res, "totals", value_obj());
	for (size_t k = 0; k < ARRAY_LEN(total_names); k++)
		value_set_int(tot, total_names[k], (int64_t)totals[k]);
	/* Accept queues at the end of the window (a listener that does not keep up overflows). */
	struct netowner_sock ls[64];
	size_t nl = netowner_target_listeners(&p->cfg.filter, ls, ARRAY_LEN(ls));
	struct value *listeners = value_obj_set(res, "listeners", value_arr());
	for (size_t i = 0; i < nl; i++) {
		char addr[INET6_ADDRSTRLEN];
		addr_text(ls[i].family == 2 ? TCPE_AF_INET : TCPE_AF_INET6, ls[i].laddr, addr, sizeof(addr));
		struct value *o = value_arr_push(listeners, value_obj());
		value_set_str(o, "family", ls[i].family == 2 ? "ipv4" : "ipv6");
		value_set_str(o, "local", addr);
		value_set_int(o, "local_port", ls[i].lport);
		value_set_int(o, "accept_queue", ls[i].rx_queue);
	}
	value_set_int(res, "events", (int64_t)probe_stat_sum(tp->skel->obj, DIAG_STAT_EVENTS));
	value_set_int(res, "dropped", (int64_t)probe_stat_sum(tp->skel->obj, DIAG_STAT_MAP_FULL));
	if (netowner_has_target(&p->cfg.filter)) {
		struct value *own = value_obj_set(res, "ownership", value_obj());
		value_set_int(own, "not_owned", (int64_t)probe_stat_sum(tp->skel->obj, NET_STAT_NOT_OWNED));
		value_set_int(own, "seeded_flows", (int64_t)tp->seeded_flows);
		value_set_int(own, "seeded_listen_ports", (int64_t)tp->seeded_ports);
	}
	free(rows);
	*out = res;
	return 0;
}

#define FLOW_COUNT(name, what) { "flows[]." name, RT_INTEGER, "count", false, what },
#define TOTAL_COUNT(name, what) { "totals." name, RT_INTEGER, "count", false, what ", all flows" },

static const struct result_field tcpe_results[] = {
	{ "flows", RT_ARRAY, NULL, false, "flows with an event, most events first" },
	{ "flows[]", RT_OBJECT, NULL, false, "one flow: local and peer address:port" },
	{ "flows[].family", RT_STRING, NULL, false, "\"ipv4\" or \"ipv6\"" },
	{ "flows[].local", RT_STRING, NULL, false, "local address (the host's end)" },
	{ "flows[].local_port", RT_INTEGER, NULL, false, "local port" },
	{ "flows[].remote", RT_STRING, NULL, false, "peer address" },
	{ "flows[].remote_port", RT_INTEGER, NULL, false, "peer port" },
	{ "flows[].netns", RT_INTEGER, NULL, false, "network namespace inode (0: unknown)" },
	TCPE_COUNTS(FLOW_COUNT)
	{ "flows[].last_error", RT_INTEGER, NULL, true, "errno of the last socket error reported" },
	{ "flows[].segs_out", RT_INTEGER, "count", true, "segments the socket sent (over retrans_pct_basis)" },
	{ "flows[].retrans_segs", RT_INTEGER, "count", true, "segments the socket retransmitted (over retrans_pct_basis)" },
	{ "flows[].retrans_pct", RT_NUMBER, "pct", true, "retrans_segs / segs_out" },
	{ "flows[].retrans_pct_basis", RT_STRING, NULL, true,
	  "\"window\": between the first and last retransmit of the window; \"lifetime\": the socket's life" },
	{ "totals", RT_OBJECT, NULL, false, "the counts summed over flows" },
	TCPE_COUNTS(TOTAL_COUNT)
	{ "listeners", RT_ARRAY, NULL, false, "listening sockets at the end: the target's, or without one "
	  "the host namespace's with connections waiting (/proc/PID/net/tcp{,6})" },
	{ "listeners[]", RT_OBJECT, NULL, false, "one listening socket" },
	{ "listeners[].family", RT_STRING, NULL, false, "\"ipv4\" or \"ipv6\"" },
	{ "listeners[].local", RT_STRING, NULL, false, "address it listens on" },
	{ "listeners[].local_port", RT_INTEGER, NULL, false, "port" },
	{ "listeners[].accept_queue", RT_INTEGER, "count", false, "connections waiting to be accepted" },
	{ "events", RT_INTEGER, "count", false, "events counted" },
	{ "dropped", RT_INTEGER, "count", false, "events not counted: more flows than max_flows" },
	{ "ownership", RT_OBJECT, NULL, true, "with a target: how its sockets were known" },
	{ "ownership.not_owned", RT_INTEGER, "count", false, "events of other processes' sockets, not counted" },
	{ "ownership.seeded_flows", RT_INTEGER, "count", false, "its connections found in /proc (most at one reading)" },
	{ "ownership.seeded_listen_ports", RT_INTEGER, "count", false, "its listening ports found in /proc" },
};
static const char *const tcpe_features[] = { "btf", "tracefs", "tracepoint", NULL };

const struct probe_kind probe_kind_tcp_events = {
	.name = "tcp_events",
	.summary = "TCP retransmits, resets, failed connects and socket errors per flow (IPv4/IPv6); "
		   "with a target, its sockets only",
	.options = tcpe_options,
	.n_options = ARRAY_LEN(tcpe_options),
	.filters = FILTER_PID | FILTER_LOCAL_PORT | FILTER_REMOTE_PORT | FILTER_REMOTE_ADDR,
	.variants = tcpe_variants,
	.private_size = sizeof(struct tcpe_priv),
	.results = tcpe_results,
	.n_results = ARRAY_LEN(tcpe_results),
	.features = tcpe_features,
	.load = tcpe_load,
	.attach = tcpe_attach,
	.detach = probe_bpf_detach,
	.tick = tcpe_seed,
	.collect = tcpe_collect,
	.destroy = probe_bpf_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = tcp_events_bpf__elf_bytes,
};
