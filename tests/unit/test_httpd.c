/* test_httpd.c — `diagnose watch`'s metrics endpoint (httpd.c) driven over real loopback sockets,
 * as watch's loop drives it (poll on httpd_pollfds, then httpd_service), against the clients an
 * unprivileged user can be: more idle connections than it has slots (it must not spin, and a
 * scrape must still get in), clients that trickle their request head or never finish it, a port
 * another user took first (the error names whose socket holds it), the socket systemd passes
 * (socket activation), and the request head's parser.
 * Wall time is never asserted tightly: CPU is, with a generous bound.
 */
/* cmocka.h needs these before it */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "watch/httpd.h"

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void body_fn(void *ctx, char **body, size_t *len)
{
	(void)ctx;
	*body = strdup("diagnose_up 1\n");
	*len = strlen(*body);
}

/* A port nothing listens on now (the kernel's pick, released). */
static unsigned free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &l), 0);
	close(s);
	return ntohs(a.sin_port);
}

static void open_endpoint(struct httpd *h, unsigned *port)
{
	char spec[64];
	struct diag_err err = { 0 };
	*port = free_port();
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", *port);
	if (httpd_open(h, spec, body_fn, NULL, &err))
		fail_msg("httpd_open %s: %s", spec, err.msg);
}

static int client(unsigned port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_true(s >= 0);
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

/* A scrape in progress: its socket and what came back. */
struct scrape {
	int fd;
	char got[4096];
	size_t len;
	bool done; /* the endpoint closed it */
};

static bool scrape_step(struct scrape *s)
{
	for (;;) {
		ssize_t n = recv(s->fd, s->got + s->len, sizeof(s->got) - 1 - s->len, MSG_DONTWAIT);
		if (n > 0) {
			s->len += (size_t)n;
			s->got[s->len] = '\0';
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			s->done = true;
		return s->done;
	}
}

/* Runs the endpoint as watch's loop does for ms milliseconds, or until the scrape s (if any) is
 * answered. Returns the polls made. */
static unsigned drive(struct httpd *h, unsigned ms, struct scrape *s)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned polls = 0;
	for (;;) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
			break;
		if (s && scrape_step(s))
			break;
		struct pollfd fds[1 + HTTPD_MAX_CONNS];
		size_t n = httpd_pollfds(h, fds);
		if (poll(fds, n, 100) >= 0)
			httpd_service(h, fds, n);
		polls++;
	}
	return polls;
}

/* More idle connections than slots (an unprivileged user's nine, or a dozen): the endpoint does
 * not spin — its listening socket stays readable while it cannot accept — and a scrape that
 * comes after them is answered, well before any of them times out. */
static void test_idle_flood(void **state)
{
	(void)state;
	struct httpd h;
	unsigned port;
	open_endpoint(&h, &port);
	int idle[12];
	for (size_t i = 0; i < 12; i++)
		idle[i] = client(port);
	uint64_t cpu0 = thread_cpu_ns();
	unsigned polls = drive(&h, 1000, NULL);
	double cpu_s = (double)(thread_cpu_ns() - cpu0) / 1e9;
	/* spinning: ~1 s of CPU in 1 s and hundreds of thousands of polls; idle: a few ms */
	if (cpu_s > 0.25)
		fail_msg("12 idle connections: the endpoint spun, %.3f s of CPU in 1 s (%u polls)",
			 cpu_s, polls);

	struct scrape s = { .fd = client(port) };
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(send(s.fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	drive(&h, 3000, &s);
	if (!strstr(s.got, "HTTP/1.0 200 OK\r\n") || !strstr(s.got, "\r\n\r\ndiagnose_up 1\n"))
		fail_msg("a scrape behind 12 idle connections was not answered in 3 s: \"%s\"", s.got);
	close(s.fd);
	for (size_t i = 0; i < 12; i++)
		close(idle[i]);
	httpd_close(&h);
}

/* Slowloris: every slot taken by a client that sends its request head a byte at a time and never
 * ends it. Each is closed at the head's deadline however often it sends, and a scrape that comes
 * meanwhile is answered at once (a trickling client is shed for it). */
static void test_trickling_heads(void **state)
{
	(void)state;
	struct httpd h;
	unsigned port;
	open_endpoint(&h, &port);
	int slow[HTTPD_MAX_CONNS];
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		slow[i] = client(port);
	drive(&h, 200, NULL);
	struct scrape s = { .fd = client(port) };
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	assert_int_equal(send(s.fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	drive(&h, 3000, &s);
	if (!strstr(s.got, "HTTP/1.0 200 OK\r\n"))
		fail_msg("a scrape while %d clients trickled was not answered in 3 s: \"%s\"",
			 HTTPD_MAX_CONNS, s.got);
	close(s.fd);
	assert_int_equal(h.scrapes, 1);
	/* the trickle: a byte each 200 ms, until the endpoint closes the connection */
	size_t closed = 0;
	bool gone[HTTPD_MAX_CONNS] = { 0 };
	for (unsigned round = 0; round < (HTTPD_HEAD_MS + 3000) / 200 && closed < HTTPD_MAX_CONNS; round++) {
		for (size_t i = 0; i < HTTPD_MAX_CONNS; i++) {
			char c;
			if (gone[i])
				continue;
			if (send(slow[i], "G", 1, MSG_NOSIGNAL) != 1 ||
			    recv(slow[i], &c, 1, MSG_DONTWAIT) == 0) {
				gone[i] = true;
				closed++;
			}
		}
		drive(&h, 200, NULL);
	}
	if (closed < HTTPD_MAX_CONNS)
		fail_msg("%zu of %d clients trickling a request head were still connected %d ms after the "
			 "head's deadline",
			 HTTPD_MAX_CONNS - closed, HTTPD_MAX_CONNS, 3000);
	for (size_t i = 0; i < HTTPD_MAX_CONNS; i++)
		close(slow[i]);
	httpd_close(&h);
}

/* What serving costs is measured, the body built included, and seen from within the body's
 * callback too (watch's budget asks then). */
struct cost {
	struct httpd *h;
	uint64_t seen_in_body;
};

static void dear_body(void *ctx, char **body, size_t *len)
{
	struct cost *c = ctx;
	uint64_t t0 = thread_cpu_ns();
	volatile uint64_t x = 0;
	while (thread_cpu_ns() - t0 < 30000000ull) /* 30 ms of CPU */
		x++;
	c->seen_in_body = httpd_cpu_ns(c->h);
	body_fn(NULL, body, len);
}

static void test_cpu_measured(void **state)
{
	(void)state;
	struct httpd h;
	struct cost cost = { .h = &h };
	unsigned port = free_port();
	char spec[64];
	struct diag_err err = { 0 };
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", port);
	assert_int_equal(httpd_open(&h, spec, dear_body, &cost, &err), 0);
	assert_int_equal(httpd_cpu_ns(&h), 0);
	struct scrape s = { .fd = client(port) };
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	assert_int_equal(send(s.fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	drive(&h, 3000, &s);
	assert_non_null(strstr(s.got, "diagnose_up 1\n"));
	close(s.fd);
	assert_true(cost.seen_in_body >= 30000000ull);
	assert_true(httpd_cpu_ns(&h) >= cost.seen_in_body);
	httpd_close(&h);
}

/* A port someone else bound first (here: this test; in life, another user serving forged metrics
 * in diagnose's place): the error says whose socket holds it. */
static void test_port_taken(void **state)
{
	(void)state;
	unsigned port = free_port();
	int squat = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(squat, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(squat, 1), 0);
	struct httpd h;
	struct diag_err err = { 0 };
	char spec[64], want[128];
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", port);
	assert_int_equal(httpd_open(&h, spec, body_fn, NULL, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_RUNTIME);
	snprintf(want, sizeof(want), "127.0.0.1:%u is taken by a socket of uid %u", port,
		 (unsigned)geteuid());
	if (!strstr(err.msg, want))
		fail_msg("the port held: \"%s\", want \"%s\"", err.msg, want);
	close(squat);
}

/* Who holds a port, read from /proc/net/tcp{,6}'s text: the address itself, a wildcard, the
 * IPv4-mapped form in tcp6; a listening socket before another; never TIME_WAIT; other ports not. */
static void test_port_holder(void **state)
{
	(void)state;
	static const char tcp[] =
		"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 0100007F:24D8 0100007F:9C40 06 00000000:00000000 03:00000F2B 00000000     0        0 0 3 0\n"
		"   1: 0100007F:24D8 0100007F:A000 01 00000000:00000000 00:00000000 00000000  1001        0 7 1 0\n"
		"   2: 0100007F:24D8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 8 1 0\n"
		"   3: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000   108        0 9 1 0\n";
	static const char tcp6[] =
		"  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 0000000000000000FFFF00000100007F:24D9 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 10 1 0\n"
		"   1: 00000000000000000000000001000000:24DA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1003        0 11 1 0\n";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9432) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	uid_t uid = 0;
	assert_int_equal(httpd_port_holder(tcp, (struct sockaddr *)&a, &uid), 1);
	assert_int_equal(uid, 1000); /* the listener, not the connection (1001) nor TIME_WAIT (0) */
	a.sin_port = htons(8080);    /* 0.0.0.0:8080 holds 127.0.0.1:8080 */
	assert_int_equal(httpd_port_holder(tcp, (struct sockaddr *)&a, &uid), 1);
	assert_int_equal(uid, 108);
	a.sin_port = htons(9433); /* ::ffff:127.0.0.1 */
	assert_int_equal(httpd_port_holder(tcp6, (struct sockaddr *)&a, &uid), 1);
	assert_int_equal(uid, 1002);
	a.sin_port = htons(9999);
	assert_int_equal(httpd_port_holder(tcp, (struct sockaddr *)&a, &uid), 0);
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(9434) };
	inet_pton(AF_INET6, "::1", &a6.sin6_addr);
	assert_int_equal(httpd_port_holder(tcp6, (struct sockaddr *)&a6, &uid), 1);
	assert_int_equal(uid, 1003);
	inet_pton(AF_INET6, "::2", &a6.sin6_addr);
	assert_int_equal(httpd_port_holder(tcp6, (struct sockaddr *)&a6, &uid), 0);
	assert_int_equal(httpd_port_holder("", (struct sockaddr *)&a6, &uid), 0);
	assert_int_equal(httpd_port_holder("   0: 0100007F:24D8 garbage\n", (struct sockaddr *)&a, &uid), 0);
}

/* Socket activation: what systemd passes on descriptor 3 with LISTEN_PID and LISTEN_FDS. The
 * test's own descriptor 3, if any, is kept aside and put back. */
static int with_fd3(int fd, const char *pid, const char *nfds, struct httpd *h, struct diag_err *err)
{
	int saved = fcntl(3, F_DUPFD_CLOEXEC, 100);
	assert_int_equal(dup2(fd, 3), 3);
	if (pid)
		setenv("LISTEN_PID", pid, 1);
	if (nfds)
		setenv("LISTEN_FDS", nfds, 1);
	setenv("LISTEN_FDNAMES", "diagnose-watch.socket", 1);
	int r = httpd_inherit(h, body_fn, NULL, err);
	assert_null(getenv("LISTEN_PID")); /* unset whatever happened: the children must not see them */
	assert_null(getenv("LISTEN_FDS"));
	assert_null(getenv("LISTEN_FDNAMES"));
	if (r > 0) { /* served below, then closed by httpd_close */
		h->listen_fd = fcntl(3, F_DUPFD_CLOEXEC, 100);
		assert_true(h->listen_fd >= 0);
	}
	close(3);
	if (saved >= 0) {
		dup2(saved, 3);
		close(saved);
	}
	return r;
}

static void test_inherit(void **state)
{
	(void)state;
	char me[32];
	snprintf(me, sizeof(me), "%d", (int)getpid());
	struct httpd h;
	struct diag_err err = { 0 };
	unsigned port = free_port();
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	/* bound, not listening: refused */
	assert_int_equal(with_fd3(ls, me, "1", &h, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	assert_non_null(strstr(err.msg, "not a listening TCP socket"));
	assert_int_equal(listen(ls, 16), 0);
	/* another process's variables, or none: not ours */
	assert_int_equal(with_fd3(ls, "1", "1", &h, &err), 0);
	assert_int_equal(h.listen_fd, -1);
	assert_int_equal(with_fd3(ls, NULL, NULL, &h, &err), 0);
	/* two sockets: refused */
	assert_int_equal(with_fd3(ls, me, "2", &h, &err), -1);
	assert_non_null(strstr(err.msg, "2 sockets passed"));
	/* a datagram socket: refused */
	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_int_equal(with_fd3(udp, me, "1", &h, &err), -1);
	close(udp);
	/* ours: served */
	assert_int_equal(with_fd3(ls, me, "1", &h, &err), 1);
	char want[64];
	snprintf(want, sizeof(want), "127.0.0.1:%u", port);
	assert_string_equal(h.addr, want);
	close(ls);
	struct scrape s = { .fd = client(port) };
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	assert_int_equal(send(s.fd, req, sizeof(req) - 1, 0), (ssize_t)sizeof(req) - 1);
	drive(&h, 3000, &s);
	assert_non_null(strstr(s.got, "diagnose_up 1\n"));
	close(s.fd);
	httpd_close(&h);
}

/* The request head's parser (what httpd.c and tests/fuzz/fuzz_http.c call): routes, where the
 * head ends, and every prefix of a request read as a client sending it in pieces would have it
 * read. */
static void test_parse_head(void **state)
{
	(void)state;
	static const struct {
		const char *req;
		size_t len; /* 0: strlen */
		enum httpd_head want;
		size_t head_len;
	} cases[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 0, HTTPD_HEAD_METRICS, 34 },
		{ "GET /metrics HTTP/1.0\n\nbody", 0, HTTPD_HEAD_METRICS, 23 },
		{ "GET /metrics?name[]=up HTTP/1.0\r\n\r\n", 0, HTTPD_HEAD_METRICS, 35 },
		{ "GET /metrics\r\n\r\n", 0, HTTPD_HEAD_METRICS, 16 },
		{ "GET /metricsx HTTP/1.0\r\n\r\n", 0, HTTPD_HEAD_NOT_FOUND, 26 },
		{ "GET / HTTP/1.0\r\n\r\n", 0, HTTPD_HEAD_NOT_FOUND, 18 },
		{ "GET \n\n", 0, HTTPD_HEAD_NOT_FOUND, 6 },
		{ "GET /metrics\0/x HTTP/1.0\n\n", 26, HTTPD_HEAD_METRICS, 26 },
		{ "GET /met\0rics HTTP/1.0\n\n", 24, HTTPD_HEAD_NOT_FOUND, 24 },
		{ "POST /metrics HTTP/1.0\r\n\r\n", 0, HTTPD_HEAD_BAD_METHOD, 26 },
		{ "get /metrics HTTP/1.0\r\n\r\n", 0, HTTPD_HEAD_BAD_METHOD, 25 },
		{ "GET\t/metrics\n\n", 0, HTTPD_HEAD_BAD_METHOD, 14 },
		{ "\n\n", 0, HTTPD_HEAD_BAD_METHOD, 2 },
		{ "GET /metrics HTTP/1.0\r\n", 0, HTTPD_HEAD_PARTIAL, 0 },
		{ "GET /metrics HTTP/1.0\n\r\n", 0, HTTPD_HEAD_PARTIAL, 0 }, /* LF CR LF: no end */
		{ "", 0, HTTPD_HEAD_PARTIAL, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].req);
		char *buf = malloc(len + 1); /* exactly the bytes: nothing after them is read */
		memcpy(buf, cases[i].req, len);
		size_t head_len;
		enum httpd_head got = httpd_parse_head(buf, len, &head_len);
		if (got != cases[i].want || head_len != cases[i].head_len)
			fail_msg("case %zu: %d, head %zu; want %d, head %zu", i, got, head_len,
				 cases[i].want, cases[i].head_len);
		for (size_t k = 0; k < len; k++) { /* sent in pieces */
			size_t hk;
			enum httpd_head gk = httpd_parse_head(buf, k, &hk);
			if (k < cases[i].head_len || !cases[i].head_len)
				assert_int_equal(gk, HTTPD_HEAD_PARTIAL);
			else
				assert_true(gk == got && hk == head_len);
		}
		free(buf);
	}
	/* no end within HTTPD_HEAD_MAX bytes: too large, and an end after them does not count */
	char *big = malloc(HTTPD_HEAD_MAX + 4);
	memcpy(big, "GET /", 5);
	memset(big + 5, 'a', HTTPD_HEAD_MAX - 5);
	memcpy(big + HTTPD_HEAD_MAX, "\r\n\r\n", 4);
	size_t head_len;
	assert_int_equal(httpd_parse_head(big, HTTPD_HEAD_MAX - 1, &head_len), HTTPD_HEAD_PARTIAL);
	assert_int_equal(httpd_parse_head(big, HTTPD_HEAD_MAX, &head_len), HTTPD_HEAD_TOO_LARGE);
	assert_int_equal(httpd_parse_head(big, HTTPD_HEAD_MAX + 4, &head_len), HTTPD_HEAD_TOO_LARGE);
	memcpy(big + HTTPD_HEAD_MAX - 4, "\r\n\r\n", 4);
	assert_int_equal(httpd_parse_head(big, HTTPD_HEAD_MAX, &head_len), HTTPD_HEAD_NOT_FOUND);
	assert_int_equal(head_len, HTTPD_HEAD_MAX);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_flood),   cmocka_unit_test(test_trickling_heads),
		cmocka_unit_test(test_cpu_measured), cmocka_unit_test(test_port_taken),
		cmocka_unit_test(test_port_holder),  cmocka_unit_test(test_inherit),
		cmocka_unit_test(test_parse_head),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
