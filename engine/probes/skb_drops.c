/* skb_drops.c — catalog entry for engine/probes/skb_drops.bpf.c: packets the kernel dropped, with the
 * kernel's reason, per protocol, local port and dropping function, and sampled kernel stacks.
 *
 * Owns: checking the kernel has skb:kfree_skb and a BTF record type for it (a clear refusal
 * otherwise), reading the names of the drop reasons from the running kernel's BTF enum
 * skb_drop_reason (no table compiled in: the enum changes between versions; a kernel without
 * it reports reason 0 "unknown"), seeding the target's sockets from /proc (engine/probes/netowner.c),
 * and turning the counts into results: per reason, per (reason, protocol, port, where), stacks.
 * Must not: judge the drops (the recipe's Lua does), or attribute a drop by the current task.
 */
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
#include "symbolize/ksyms.h"
#include "probes/net_owner.h"
#include "probes/netowner.h"
#include "probes/skb_drops.h"
#include "skb_drops.skel.h"
#include "symbolize/stacks.h"

struct reason_name {
	uint32_t value;
	char name[64];
};

struct skbd_priv {
	struct probe_bpf bpf; /* first: the generic ops use it */
	struct skb_drops_bpf *skel;
	struct reason_name *reasons; /* from the kernel's BTF; NULL when it has no such enum */
	size_t n_reasons;
	bool has_reason_field;
};

PROBE_BPF_SKELETON(skb_drops)

static const struct option_spec skbd_options[] = {
	{ .name = "max_keys", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 4096,
	  .min = 16, .max = 1u << 20, .bytes_per_entry = sizeof(struct skbd_key) + 8 + 64,
	  .help = "distinct (reason, protocol, port, location) counted; drops beyond are counted as dropped" },
	{ .name = "max_stacks", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 1024,
	  .min = 16, .max = 1u << 16,
	  .bytes_per_entry = 4 + DIAG_STACK_DEPTH * 8 + sizeof(struct skbd_stack_key) + 8 + 64,
	  .help = "distinct kernel stacks of drops kept" },
	{ .name = "stack_first", .type = OPT_UINT, .dflt = 16, .min = 0, .max = 1u << 16,
	  .help = "a kernel stack for the first N drops of each reason (a stack costs tens of µs)" },
	{ .name = "stack_every", .type = OPT_UINT, .dflt = 256, .min = 0, .max = 1u << 16,
	  .help = "then a kernel stack for 1 drop in N at random (0: none)" },
	{ .name = "sample_every", .type = OPT_UINT, .role = OPT_ROLE_SAMPLE_EVERY, .dflt = 1,
	  .min = 1, .max = 1u << 16,
	  .help = "count 1 drop in N at random and scale (raised by the pre-flight under degrade: sample)" },
	{ .name = "max_owned", .type = OPT_UINT, .role = OPT_ROLE_MAP_ENTRIES, .dflt = 16384,
	  .min = 64, .max = 1u << 20,
	  .bytes_per_entry = (8 + 8 + 64) + (sizeof(struct tcpe_flow) + 8 + 64),
	  .help = "with a target: its sockets and connections remembered (least recently used "
		  "forgotten first)" },
};

static const char *const skbd_variants[] = { "tracepoint", NULL };


/* The names of enum skb_drop_reason, "SKB_DROP_REASON_" removed. */
static void read_reasons(struct skbd_priv *sp, const struct kernel_btf *btf)
{
	uint32_t id = kernel_btf_find(btf, "skb_drop_reason", BTF_KIND_ENUM);
	if (!id)
		return;
	const struct btf_type *t = kernel_btf_type(btf, id);
	const struct btf_enum *e = btf_enum(t);
	size_t n = btf_vlen(t);
	sp->reasons = xmalloc((n ? n : 1) * sizeof(*sp->reasons));
	for (size_t i = 0; i < n; i++) {
		const char *name = kernel_btf_name(btf, e[i].name_off);
		if (!name)
			continue;
		if (!strncmp(name, "SKB_DROP_REASON_", 16))
			name += 16;
		struct reason_name *r = &sp->reasons[sp->n_reasons++];
		r->value = (uint32_t)e[i].val;
		snprintf(r->name, sizeof(r->name), "%s", name);
	}
}

static const char *reason_name(const struct skbd_priv *sp, uint32_t v, char *buf, size_t len)
{
	if (!sp->has_reason_field)
		return "unknown";
	for (size_t i = 0; i < sp->n_reasons; i++)
		if (sp->reasons[i].value == v && strcmp(sp->reasons[i].name, "MAX") &&
		    strcmp(sp->reasons[i].name, "SUBSYS_MASK"))
			return sp->reasons[i].name;
	/* Reasons of a subsystem (high 16 bits) have enums of their own. */
	snprintf(buf, len, "subsys%u:%u", v >> 16, v & 0xffff);
	return buf;
}

static int skbd_load(struct probe *p, struct diag_err *err)
{
	struct skbd_priv *sp = p->priv;
	if (!kernel_has_tracepoint("skb/kfree_skb"))
		return diag_fail(err, DIAG_EXIT_REFUSED, "skb_drops: this kernel has no tracepoint skb:kfree_skb");
	struct kernel_btf own;
	struct diag_err why;
	const struct kernel_btf *btf = probe_kernel_btf(p, &own, &why);
	if (!btf)
		return diag_fail(err, DIAG_EXIT_REFUSED, "skb_drops: %s", why.msg);
	uint32_t id = kernel_btf_find(btf, "trace_event_raw_kfree_skb", BTF_KIND_STRUCT);
	if (!id || !kernel_btf_find(btf, "trace_event_raw_inet_sock_set_state", BTF_KIND_STRUCT)) {
		kernel_btf_close(&own);
		return diag_fail(err, DIAG_EXIT_REFUSED, "skb_drops: this kernel's BTF has no record type "
				 "for skb:kfree_skb or sock:inet_sock_set_state: cannot read their fields");
	}
	/* Does the record carry a reason (5.17+)? */
	const struct btf_type *t = kernel_btf_type(btf, id);
	const struct btf_member *m = btf_members(t);
	for (unsigned i = 0; i < btf_vlen(t); i++) {
		const char *name = kernel_btf_name(btf, m[i].name_off);
		if (name && !strcmp(name, "reason"))
			sp->has_reason_field = true;
	}
	if (sp->has_reason_field)
		read_reasons(sp, btf);
	kernel_btf_close(&own);
	if (!sp->has_reason_field)
		snprintf(p->note, sizeof(p->note), "this kernel's skb:kfree_skb has no drop reason "
			 "(before 5.17): every drop is reason \"unknown\"");

	if (!(sp->skel = skb_drops_skel_open(p, err)))
		return -1;
	if (bpf_map__key_size(sp->skel->maps.drops) != sizeof(struct skbd_key))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "internal: skb_drops layouts differ from the BPF side");
	sp->skel->rodata->stack_first = (__u32)probe_opt(p, "stack_first");
	sp->skel->rodata->stack_every = (__u32)probe_opt(p, "stack_every");
	sp->skel->rodata->filt_local_port = p->cfg.filter.local_port;
	bpf_map__set_max_entries(sp->skel->maps.drops, (__u32)probe_opt(p, "max_keys"));
	netowner_size_maps(sp->skel->maps.owned_socks, sp->skel->maps.owned_flows,
			   sp->skel->maps.owned_ports, netowner_has_target(&p->cfg.filter), (__u32)probe_opt(p, "max_owned"));
	bpf_map__set_max_entries(sp->skel->maps.stacks, (__u32)probe_opt(p, "max_stacks"));
	bpf_map__set_max_entries(sp->skel->maps.drop_stacks, (__u32)probe_opt(p, "max_stacks"));
	/* Without a target nothing is owned: the ownership program stays unloaded. */
	if (!netowner_has_target(&p->cfg.filter))
		bpf_program__set_autoload(sp->skel->progs.skbd_set_state, false);
	int rc = skb_drops_bpf__load(sp->skel);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "skb_drops: the kernel refused the program "
				 "(%s); run with -v for libbpf's log", strerror(-rc));
	p->variant = "tracepoint";
	return 0;
}

static void skbd_seed(struct probe *p)
{
	struct skbd_priv *sp = p->priv;
	netowner_seed_target(&p->cfg.filter, bpf_map__fd(sp->skel->maps.owned_flows),
			     bpf_map__fd(sp->skel->maps.owned_ports), NULL, NULL);
}

static int skbd_attach(struct probe *p, struct diag_err *err)
{
	skbd_seed(p);
	return probe_bpf_attach_all(p, err);
}

struct skbd_row {
	struct skbd_key key;
	uint64_t count;
};

static int row_cmp(const void *a, const void *b)
{
	const struct skbd_row *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return memcmp(&x->key, &y->key, sizeof(x->key));
}

static const char *proto_name(uint16_t proto, char *buf, size_t len)
{
	switch (proto) {
	case 0x0800: return "ipv4";
	case 0x86dd: return "ipv6";
	case 0x0806: return "arp";
	case 0: return "none";
	}
	snprintf(buf, len, "0x%04x", proto);
	return buf;
}

static int skbd_collect(struct probe *p, const struct collect_ctx *ctx, struct value **out,
			struct diag_err *err)
{
	struct skbd_priv *sp = p->priv;
	int fd = bpf_map__fd(sp->skel->maps.drops);
	double scale = probe_scale(p);
	size_t n = 0, cap = 64;
	struct skbd_row *rows = xmalloc(cap * sizeof(*rows));
	struct skbd_key keys[2], *prev = NULL, *next = &keys[0];
	(void)err;

	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		uint64_t c;
		prev = next;
		next = next == &keys[0] ? &keys[1] : &keys[0];
		if (bpf_map_lookup_elem(fd, prev, &c) || !c)
			continue;
		if (n == cap)
			rows = xrealloc(rows, (cap *= 2) * sizeof(*rows));
		rows[n++] = (struct skbd_row){ *prev, c * scale };
	}
	qsort(rows, n, sizeof(*rows), row_cmp);

	struct value *res = value_obj();
	if (scale > 1)
		value_set_int(res, "sampled_1_in", probe_sampled_1_in(p));
	value_set_bool(res, "reasons_known", sp->has_reason_field && sp->n_reasons > 0);
	uint64_t total = 0;
	/* Per reason: the sum of its rows, most first. */
	struct skbd_row *sums = xmalloc((n ? n : 1) * sizeof(*sums));
	size_t n_sums = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		total += rows[i].count;
		while (j < n_sums && sums[j].key.reason != rows[i].key.reason)
			j++;
		if (j == n_sums)
			sums[n_sums++] = (struct skbd_row){ { .reason = rows[i].key.reason }, 0 };
		sums[j].count += rows[i].count;
	}
	qsort(sums, n_sums, sizeof(*sums), row_cmp);
	struct value *by_reason = value_obj_set(res, "reasons", value_arr());
	for (size_t i = 0; i < n_sums; i++) {
		char buf[32];
		struct value *o = value_arr_push(by_reason, value_obj());
		value_set_str(o, "reason", reason_name(sp, sums[i].key.reason, buf, sizeof(buf)));
		value_set_int(o, "code", sums[i].key.reason);
		value_set_int(o, "count", (int64_t)sums[i].count);
	}
	free(sums);
	struct value *arr = value_obj_set(res, "drops", value_arr());
	for (size_t i = 0; i < n; i++) {
		char rbuf[32], pbuf[16], where[160];
		const struct skbd_key *k = &rows[i].key;
		struct value *o = value_arr_push(arr, value_obj());
		value_set_str(o, "reason", reason_name(sp, k->reason, rbuf, sizeof(rbuf)));
		value_set_str(o, "protocol", proto_name(k->protocol, pbuf, sizeof(pbuf)));
		value_set_int(o, "port", k->port);
		uint64_t off = 0;
		const char *sym = ctx->ksyms ? ksyms_lookup(ctx->ksyms, k->location, &off) : NULL;
		if (sym)
			snprintf(where, sizeof(where), "%s+0x%llx", sym, (unsigned long long)off);
		else
			snprintf(where, sizeof(where), "0x%llx", (unsigned long long)k->location);
		value_set_str(o, "location", where);
		value_set_int(o, "count", (int64_t)rows[i].count);
	}
	value_set_int(res, "total", (int64_t)total);
	value_set_num(res, "per_s", ctx->wall_s > 0 ? (double)total / ctx->wall_s : 0);

	/* Sampled stacks, tagged with the reason. */
	int sfd = bpf_map__fd(sp->skel->maps.drop_stacks);
	int stacks_fd = bpf_map__fd(sp->skel->maps.stacks);
	struct stack_table *table = stacks_new(ctx, bpf_map__max_entries(sp->skel->maps.drop_stacks));
	struct skbd_stack_key skeys[2], *sprev = NULL, *snext = &skeys[0];
	while (bpf_map_get_next_key(sfd, sprev, snext) == 0) {
		uint64_t c;
		char buf[32];
		sprev = snext;
		snext = snext == &skeys[0] ? &skeys[1] : &skeys[0];
		if (bpf_map_lookup_elem(sfd, sprev, &c) || !c)
			continue;
		stacks_add_ids(table, stacks_fd, 0, "[softirq or any task]", -1, sprev->kernel_stack_id,
			       true, c, c, reason_name(sp, sprev->reason, buf, sizeof(buf)));
	}
	value_set_int(res, "lost_stacks", (int64_t)probe_stat_sum(sp->skel->obj, DIAG_STAT_LOST));
	value_set_int(res, "dropped", (int64_t)(probe_stat_sum(sp->skel->obj, DIAG_STAT_MAP_FULL) +
						  stacks_refused(table)));
	if (netowner_has_target(&p->cfg.filter)) {
		struct value *own = value_obj_set(res, "ownership", value_obj());
		value_set_int(own, "not_owned", (int64_t)probe_stat_sum(sp->skel->obj, NET_STAT_NOT_OWNED));
		value_set_int(own, "unattributed", (int64_t)probe_stat_sum(sp->skel->obj, SKBD_STAT_UNATTRIBUTED));
	}
	stacks_finish(table, res, p->kind->stack_unit);
	free(rows);
	*out = res;
	return 0;
}

static void skbd_destroy(struct probe *p)
{
	struct skbd_priv *sp = p->priv;
	free(sp->reasons);
	sp->reasons = NULL;
	sp->n_reasons = 0;
	probe_bpf_destroy(p);
}

static const struct result_field skbd_results[] = {
	{ "sampled_1_in", RT_INTEGER, "count", true, "only when sampling: 1 drop in N counted, counts scaled by N" },
	{ "reasons_known", RT_BOOLEAN, NULL, false, "the kernel names its drop reasons (BTF enum skb_drop_reason)" },
	{ "reasons", RT_ARRAY, NULL, false, "drops per reason, most first" },
	{ "reasons[]", RT_OBJECT, NULL, false, "one reason" },
	{ "reasons[].reason", RT_STRING, NULL, false, "the kernel's name without SKB_DROP_REASON_ (e.g. NETFILTER_DROP)" },
	{ "reasons[].code", RT_INTEGER, NULL, false, "its value in this kernel" },
	{ "reasons[].count", RT_INTEGER, "count", false, "drops" },
	{ "drops", RT_ARRAY, NULL, false, "per (reason, protocol, local port, location), most first" },
	{ "drops[]", RT_OBJECT, NULL, false, "one key" },
	{ "drops[].reason", RT_STRING, NULL, false, "drop reason" },
	{ "drops[].protocol", RT_STRING, NULL, false, "ipv4, ipv6, arp, none or 0xNNNN (ethertype)" },
	{ "drops[].port", RT_INTEGER, NULL, false, "local port of the packet's socket (0: no socket)" },
	{ "drops[].location", RT_STRING, NULL, false, "kernel function that dropped it (symbol+offset)" },
	{ "drops[].count", RT_INTEGER, "count", false, "drops" },
	{ "total", RT_INTEGER, "count", false, "drops counted" },
	{ "per_s", RT_NUMBER, "per_s", false, "total over the collection time" },
	{ "lost_stacks", RT_INTEGER, "count", false, "stacks that could not be walked or stored" },
	{ "dropped", RT_INTEGER, "count", false, "drops or stacks not kept: a map was full" },
	{ "ownership", RT_OBJECT, NULL, true, "with a target: what was left out" },
	{ "ownership.not_owned", RT_INTEGER, "count", false, "drops of other processes' sockets" },
	{ "ownership.unattributed", RT_INTEGER, "count", false, "drops of packets with no socket (cannot be attributed)" },
	STACK_RESULT_FIELDS,
};
static const char *const skbd_features[] = { "btf", "tracefs", "tracepoint", NULL };

const struct probe_kind probe_kind_skb_drops = {
	.name = "skb_drops",
	.summary = "packets the kernel dropped, by its drop reason (names from the kernel's BTF), "
		   "protocol, local port and function, with sampled kernel stacks; weight: drops",
	.options = skbd_options,
	.n_options = ARRAY_LEN(skbd_options),
	.filters = FILTER_PID | FILTER_LOCAL_PORT,
	.variants = skbd_variants,
	.private_size = sizeof(struct skbd_priv),
	.stack_unit = "drops",
	.results = skbd_results,
	.n_results = ARRAY_LEN(skbd_results),
	.features = skbd_features,
	.load = skbd_load,
	.attach = skbd_attach,
	.detach = probe_bpf_detach,
	.tick = skbd_seed,
	.collect = skbd_collect,
	.destroy = skbd_destroy,
	.object = probe_bpf_object,
	.bpf_bytes = skb_drops_bpf__elf_bytes,
};
