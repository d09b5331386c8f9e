/* test_netowner.c — engine/probes/netowner.c: the parser of /proc/net/tcp and tcp6 on recorded kernel
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
#include <sys/stat.h>
#include <unistd.h>

#include "plan/filters.h"
#include "probes/netowner.h"

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

/* /proc/net/unix as 6.18 prints it: a listener, a socket it accepted (its path), the client
 * that connected to it (no path), an unconnected datagram socket, a socketpair end, garbage. */
static const char UNIX_TEXT[] =
	"Num       RefCount Protocol Flags    Type St Inode Path\n"
	"0000000000000000: 00000002 00000000 00010000 0001 01 1001 /run/pg/.s.PGSQL.5432\n"
	"0000000000000000: 00000003 00000000 00000000 0001 03 1002 /run/pg/.s.PGSQL.5432\n"
	"0000000000000000: 00000003 00000000 00000000 0001 03 1003\n"
	"0000000000000000: 00000002 00000000 00000000 0002 01 1004 /dev/log\n"
	"0000000000000000: 00000003 00000000 00000000 0001 03 1005 @abstract\n"
	"not a socket line\n";

static void test_parse_unix(void **state)
{
	(void)state;
	struct netowner_role r[8];
	assert_int_equal(netowner_parse_unix(UNIX_TEXT, r, 8), 3);
	assert_int_equal(r[0].inode, 1002);
	assert_int_equal(r[0].role, 2); /* accepted: the listener's path */
	assert_int_equal(r[1].inode, 1003);
	assert_int_equal(r[1].role, 1); /* connected: no path */
	assert_int_equal(r[2].inode, 1005);
	assert_int_equal(r[2].role, 2);
	assert_int_equal(netowner_parse_unix(UNIX_TEXT, r, 1), 1); /* bounded */
}

static int role_of(const struct netowner_role *r, size_t n, int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	for (size_t i = 0; i < n; i++)
		if (r[i].inode == (uint64_t)st.st_ino)
			return r[i].role;
	return 0;
}

/* This process connects to its own listener: the connecting end is a client, the accepted end
 * a server, the listener neither. */
static void test_own_roles(void **state)
{
	(void)state;
	int lfd = socket(AF_INET, SOCK_STREAM, 0), cfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	assert_true(lfd >= 0 && cfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 3), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	int afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	struct probe_filters f = { .pid = getpid() };
	struct netowner_role r[256];
	size_t n = netowner_target_roles(&f, r, 256);
	assert_int_equal(role_of(r, n, cfd), 1);
	assert_int_equal(role_of(r, n, afd), 2);
	assert_int_equal(role_of(r, n, lfd), 0);
	close(afd);
	close(cfd);
	close(lfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_tcp4),
		cmocka_unit_test(test_parse_tcp6),
		cmocka_unit_test(test_own_listener),
		cmocka_unit_test(test_parse_unix),
		cmocka_unit_test(test_own_roles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
