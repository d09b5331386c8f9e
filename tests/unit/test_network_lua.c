/* test_network_lua.c — lua/network-errors.lua on trimmed incidents: the reports `diagnose
 * network-errors --json` wrote in tests/e2e/t_network.sh
 * (tests/fixtures/trimmed/network-errors/NAME.json: a stream losing 3% of its segments, with --pid
 * of the sender, of the receiver and host-wide; the same stream clean; connects to a closed port
 * over IPv6 (--pid) and IPv4 (host-wide); a server aborting its connections (--pid of the client,
 * IPv6); a listener that never accepts, with --pid and host-wide; some flows and stacks trimmed),
 * each checked against the probes' declared shapes, must give the verdicts they gave live, naming
 * the same peers and ports; and the same trees edited into what the live tests do not produce
 * (interface and softnet drops, a share of retransmits under the threshold, drops that only follow
 * other trouble, a missing probe) must be judged as such. No root, no BPF: the snippet runs in this
 * process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "plan/catalog.h"
#include "common/json_parse.h"
#include "recipe/recipe.h"
#include "plan/shape.h"
#include "recipe/source.h"
#include "recorded_verdicts.h"
#include "verdict/verdict.h"

static struct value *load_incident(const char *name)
{
	return trimmed_incident("network-errors", name);
}

/* lua/network-errors.lua with recipes/network-errors.yaml's thresholds on a trimmed incident; the
 * verdicts (caller frees). */
static struct value *network(const struct value *incident)
{
	return recorded_verdicts("network-errors", incident, NULL, false);
}

#define verdict verdict_at

static void assert_as_recorded(const char *name)
{
	assert_recorded_verdicts("network-errors", name);
}

/* The verdict with this id (the first), or a failure. */
static const struct value *by_id(const struct value *verdicts, const char *id)
{
	for (size_t i = 0; i < verdicts->arr.len; i++)
		if (!strcmp(value_get_str(verdicts->arr.items[i], "id"), id))
			return verdicts->arr.items[i];
	fail_msg("no verdict %s", id);
	return NULL;
}

static bool has_id(const struct value *verdicts, const char *id)
{
	for (size_t i = 0; i < verdicts->arr.len; i++)
		if (!strcmp(value_get_str(verdicts->arr.items[i], "id"), id))
			return true;
	return false;
}

static void assert_title_has(const struct value *verdicts, const char *id, const char *text)
{
	const char *title = value_get_str(by_id(verdicts, id), "title");
	if (!strstr(title, text))
		fail_msg("%s: \"%s\" does not name %s", id, title, text);
}

static void test_loss_pid(void **state)
{
	(void)state;
	assert_as_recorded("loss-pid");
	struct value *fx = load_incident("loss-pid");
	struct value *v = network(fx);
	assert_title_has(v, "retransmits", "10.231.0.2:5001");
	assert_title_has(v, "retransmits", "% of segments sent");
	/* the drops were the receiver's: not the sender's */
	assert_false(has_id(v, "packet-drops"));
	value_free(v);
	value_free(fx);
}

static void test_loss_host(void **state)
{
	(void)state;
	assert_as_recorded("loss-host");
	struct value *fx = load_incident("loss-host");
	struct value *v = network(fx);
	assert_title_has(v, "retransmits", "10.231.0.2:5001");
	assert_title_has(v, "packet-drops", "NETFILTER_DROP");
	assert_title_has(v, "packet-drops", "port 5001");
	const struct value *ns = value_get(by_id(v, "packet-drops"), "next_steps");
	assert_non_null(strstr(ns->arr.items[0]->s, "nft list ruleset"));
	value_free(v);
	value_free(fx);
}

/* The receiver's run: the drops are its socket's; it retransmits nothing. */
static void test_loss_recv(void **state)
{
	(void)state;
	assert_as_recorded("loss-recv");
	struct value *fx = load_incident("loss-recv");
	struct value *v = network(fx);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "packet-drops");
	assert_title_has(v, "packet-drops", "NETFILTER_DROP");
	assert_title_has(v, "packet-drops", "port 5001");
	assert_false(has_id(v, "retransmits"));
	value_free(v);
	value_free(fx);
}

static void test_clean_pid(void **state)
{
	(void)state;
	assert_as_recorded("clean-pid");
	struct value *fx = load_incident("clean-pid");
	struct value *v = network(fx);
	assert_int_equal(v->arr.len, 1);
	assert_string_equal(value_get_str(verdict(v, 0), "severity"), "ok");
	assert_title_has(v, "ok", "segments sent");
	value_free(v);
	value_free(fx);
}

static void test_closed(void **state)
{
	(void)state;
	assert_as_recorded("closed6-pid");
	assert_as_recorded("closed4-host");
	struct value *fx = load_incident("closed6-pid");
	struct value *v = network(fx);
	assert_title_has(v, "connection-refused", "[fd00:231::2]:5003");
	assert_false(has_id(v, "connection-reset")); /* resets answering SYNs are refusals */
	value_free(v);
	value_free(fx);
	fx = load_incident("closed4-host");
	v = network(fx);
	assert_title_has(v, "connection-refused", "10.231.0.2:5002");
	assert_title_has(v, "resets-sent", "10.231.0.2:5002");
	assert_title_has(v, "packet-drops", "NO_SOCKET");
	value_free(v);
	value_free(fx);
}

/* A server aborting its connections: reset by the peer, not refused. */
static void test_abort(void **state)
{
	(void)state;
	assert_as_recorded("abort-pid");
	struct value *fx = load_incident("abort-pid");
	struct value *v = network(fx);
	assert_title_has(v, "connection-reset", "[fd00:231::2]:5005");
	assert_false(has_id(v, "connection-refused"));
	value_free(v);
	value_free(fx);
}

static void test_backlog(void **state)
{
	(void)state;
	assert_as_recorded("backlog-pid");
	assert_as_recorded("backlog-host");
	struct value *fx = load_incident("backlog-pid");
	struct value *v = network(fx);
	assert_title_has(v, "listen-overflow", "port 5004");
	value_free(v);
	value_free(fx);
	fx = load_incident("backlog-host");
	v = network(fx);
	assert_title_has(v, "connect-timeout", "10.231.0.2:5004");
	value_free(v);
	value_free(fx);
}

/* The clean run's counters, edited: an interface dropping, then the softnet backlog. */
static void test_interface_and_softnet_drops(void **state)
{
	(void)state;
	struct value *fx = load_incident("clean-pid");
	struct value *net = (struct value *)value_get(incident_results(fx, "context"), "net");
	struct value *ifs = (struct value *)value_get(net, "interfaces");
	assert_true(ifs->arr.len > 0);
	value_set_int(ifs->arr.items[ifs->arr.len - 1], "rx_drop", 250);
	struct value *v = network(fx);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "interface-drops");
	assert_false(has_id(v, "ok"));
	value_free(v);
	value_set_int(ifs->arr.items[ifs->arr.len - 1], "rx_drop", 0);
	value_set_int((struct value *)value_get(net, "softnet"), "dropped", 40);
	v = network(fx);
	assert_title_has(v, "interface-drops", "Softnet backlog drops");
	value_free(v);
	value_free(fx);
}

/* The lossy stream's share, edited under the threshold (0.5%), the namespace's too: no verdict. */
static void test_retransmits_under_threshold(void **state)
{
	(void)state;
	struct value *fx = load_incident("loss-pid");
	struct value *flows = (struct value *)value_get(incident_results(fx, "tcp"), "flows");
	for (size_t i = 0; i < flows->arr.len; i++) {
		struct value *f = flows->arr.items[i];
		int64_t segs = (int64_t)value_get_num(f, "segs_out", 0);
		value_set_int(f, "retrans_segs", segs / 200);
		value_set_num(f, "retrans_pct", 0.5);
	}
	value_set_num((struct value *)value_get(incident_results(fx, "context"), "net"), "tcp_retrans_pct", 0.5);
	struct value *v = network(fx);
	assert_int_equal(v->arr.len, 1);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "ok");
	value_free(v);
	value_free(fx);
}

/* Drops that only follow other trouble (old or duplicate TCP data) are listed, not judged; the
 * same number of SOCKET_RCVBUFF drops is. */
static void test_follower_drops_not_judged(void **state)
{
	(void)state;
	struct value *fx = load_incident("clean-pid");
	struct value *d = incident_results(fx, "drops");
	struct value *reasons = value_obj_set(d, "reasons", value_arr());
	struct value *r = value_arr_push(reasons, value_obj());
	value_set_str(r, "reason", "TCP_OLD_DATA");
	value_set_int(r, "code", 33);
	value_set_int(r, "count", 500);
	struct value *v = network(fx);
	assert_int_equal(v->arr.len, 1);
	assert_string_equal(value_get_str(verdict(v, 0), "id"), "ok");
	value_free(v);
	value_set_str(r, "reason", "SOCKET_RCVBUFF");
	v = network(fx);
	assert_title_has(v, "packet-drops", "SOCKET_RCVBUFF");
	value_free(v);
	value_free(fx);
}

/* Without the drops probe's results the verdicts say what was not measured. */
static void test_missing_probe(void **state)
{
	(void)state;
	struct value *fx = load_incident("loss-pid");
	value_obj_drop((struct value *)value_get(fx, "results"), "drops");
	struct value *v = network(fx);
	assert_true(has_id(v, "retransmits"));
	const struct value *inc = by_id(v, "incomplete-data");
	assert_string_equal(value_get_str(inc, "severity"), "warning");
	value_free(v);
	value_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loss_pid),
		cmocka_unit_test(test_loss_host),
		cmocka_unit_test(test_loss_recv),
		cmocka_unit_test(test_clean_pid),
		cmocka_unit_test(test_closed),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_backlog),
		cmocka_unit_test(test_interface_and_softnet_drops),
		cmocka_unit_test(test_retransmits_under_threshold),
		cmocka_unit_test(test_follower_drops_not_judged),
		cmocka_unit_test(test_missing_probe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
