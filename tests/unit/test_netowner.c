/* test_netowner.c — engine/session/netowner.c: the parser of /proc/net/tcp and tcp6 on recorded kernel
 * text (addresses back to network order, ports, states, listeners' accept queues,
 * inodes; malformed lines skipped), and the listeners of this very process (no root needed to
 * read one's own /proc).
 * Must not: load BPF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netowner.h"

static const char TCP4[] =
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	"   0: 0200E70A:138C 00000000:0000 0A 00000001:00000002 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n"
	"   1: 0100E70A:C8A4 0200E70A:1389 01 00000000:00000000 02:000000C8 00000000     0        0 4343 2 0000000000000000 20 4 30 10 -1\n"
	"   2: garbage line\n";

static const char TCP6[] =
	"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	"   0: 310200FD0000000000000000010000000:AF12 310200FD000000000000000002000000:138B 02 00000001:00000000 01:00000064 00000001     0        0 5151 1 0000000000000000 200 0 0 1 -1\n"
	"   1: 310200FD000000000000000001000000:AF12 310200FD000000000000000002000000:138B 02 00000001:00000000 01:00000064 00000001     0        0 5152 1 0000000000000000 200 0 0 1 -1\n";

static void test_parse_tcp4(void **state)
{
	(void)state;
	struct netowner_sock s[4];
	assert_int_equal(netowner_parse_tcp(TCP4, 2, s, 4), 2);
	char a[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, s[0].laddr, a, sizeof(a));
	assert_string_equal(a, "10.231.0.2");
	assert_int_equal(s[0].lport, 5004);
	assert_int_equal(s[0].state, 10); /* LISTEN */
	assert_int_equal(s[0].rx_queue, 2); /* a listener's: connections waiting to be accepted */
	assert_int_equal(s[0].inode, 4242);
	inet_ntop(AF_INET, s[1].raddr, a, sizeof(a));
	assert_string_equal(a, "10.231.0.2");
	assert_int_equal(s[1].lport, 51364);
	assert_int_equal(s[1].rport, 5001);
	assert_int_equal(s[1].state, 1);
	assert_int_equal(s[1].inode, 4343);
	assert_int_equal(netowner_parse_tcp(TCP4, 2, s, 1), 1); /* bounded */
}

static void test_parse_tcp6(void **state)
{
	(void)state;
	struct netowner_sock s[4];
	/* the first row's local address has 33 hex digits: skipped */
	assert_int_equal(netowner_parse_tcp(TCP6, 10, s, 4), 1);
	char a[INET6_ADDRSTRLEN];
	inet_ntop(AF_INET6, s[0].laddr, a, sizeof(a));
	assert_string_equal(a, "fd00:231::1");
	inet_ntop(AF_INET6, s[0].raddr, a, sizeof(a));
	assert_string_equal(a, "fd00:231::2");
	assert_int_equal(s[0].lport, 0xAF12);
	assert_int_equal(s[0].rport, 5003);
	assert_int_equal(s[0].state, 2); /* SYN_SENT */
	assert_int_equal(s[0].inode, 5152);
}

/* A socket this process listens on is among its listeners, nothing waiting on it. */
static void test_own_listener(void **state)
{
	(void)state;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 3), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	struct netowner_sock ls[64];
	size_t n = netowner_listeners(getpid(), ls, 64), found = 0;
	for (size_t i = 0; i < n; i++)
		if (ls[i].lport == ntohs(sa.sin_port)) {
			found++;
			assert_int_equal(ls[i].rx_queue, 0);
		}
	assert_int_equal(found, 1);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_tcp4),
		cmocka_unit_test(test_parse_tcp6),
		cmocka_unit_test(test_own_listener),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
