/* net_peer.c — TCP workloads for the network-errors tests, IPv4 or IPv6 (the address says):
 *   net_peer recv ADDR PORT            listen, accept, read and discard everything, forever
 *   net_peer send ADDR PORT [KB_S]     connect, then write 16 KiB chunks at KB_S KiB/s (default
 *                                      8192: a steady stream that leaves the CPUs to others)
 *   net_peer closed ADDR PORT PER_S    connect PER_S times a second to a port nobody listens on
 *   net_peer backlog ADDR PORT         listen with a backlog of 1 and never accept
 *   net_peer abort ADDR PORT           listen, accept, read once, then close with SO_LINGER 0: an
 *                                      RST to the peer (a server that aborts its connections)
 *   net_peer flood ADDR PORT PER_S     open PER_S connections a second, keep up to 256 open
 * Owns: nothing beyond its sockets; runs until killed.
 * Must not: print on success (tests read their diagnose reports, not this).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static socklen_t make_addr(const char *host, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((unsigned short)port);
		return sizeof(*a4);
	}
	if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((unsigned short)port);
		return sizeof(*a6);
	}
	fprintf(stderr, "net_peer: bad address %s\n", host);
	exit(2);
}

static int listener(const struct sockaddr_storage *ss, socklen_t len, int backlog)
{
	int one = 1, fd = socket(ss->ss_family, SOCK_STREAM, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (const struct sockaddr *)ss, len) || listen(fd, backlog)) {
		perror("net_peer: listen");
		exit(1);
	}
	return fd;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: net_peer recv|send|closed|abort|backlog|flood ADDR PORT [PER_S]\n");
		return 2;
	}
	const char *mode = argv[1];
	struct sockaddr_storage ss;
	socklen_t len = make_addr(argv[2], atoi(argv[3]), &ss);
	long per_s = argc > 4 ? atol(argv[4]) : 10;
	if (per_s < 1)
		per_s = 1;
	static char buf[65536];

	if (!strcmp(mode, "recv")) {
		int lfd = listener(&ss, len, 16);
		for (;;) {
			int c = accept(lfd, NULL, NULL);
			if (c < 0)
				continue;
			while (read(c, buf, sizeof(buf)) > 0)
				;
			close(c);
		}
	}
	if (!strcmp(mode, "send")) {
		long kb_s = argc > 4 ? atol(argv[4]) : 8192;
		long gap_us = 16 * 1000000L / (kb_s > 0 ? kb_s : 1); /* one 16 KiB chunk per gap */
		for (;;) {
			int fd = socket(ss.ss_family, SOCK_STREAM, 0);
			if (fd >= 0 && connect(fd, (struct sockaddr *)&ss, len) == 0) {
				struct timespec next;
				clock_gettime(CLOCK_MONOTONIC, &next);
				while (write(fd, buf, 16384) > 0) {
					next.tv_nsec += gap_us * 1000;
					while (next.tv_nsec >= 1000000000L) {
						next.tv_nsec -= 1000000000L;
						next.tv_sec++;
					}
					clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
				}
			}
			if (fd >= 0)
				close(fd);
			pause_ms(100);
		}
	}
	if (!strcmp(mode, "closed")) {
		for (;;) {
			int fd = socket(ss.ss_family, SOCK_STREAM, 0);
			if (fd >= 0) {
				connect(fd, (struct sockaddr *)&ss, len); /* ECONNREFUSED expected */
				close(fd);
			}
			pause_ms(1000 / per_s);
		}
	}
	if (!strcmp(mode, "abort")) {
		int lfd = listener(&ss, len, 16);
		for (;;) {
			int c = accept(lfd, NULL, NULL);
			if (c < 0)
				continue;
			struct linger lg = { 1, 0 };
			if (read(c, buf, sizeof(buf)) < 0)
				perror("net_peer: read");
			setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(c); /* with linger 0: an RST, not a FIN */
		}
	}
	if (!strcmp(mode, "backlog")) {
		listener(&ss, len, 1);
		for (;;)
			pause(); /* never accepts */
	}
	if (!strcmp(mode, "flood")) {
		int fds[256];
		size_t next = 0;
		for (size_t i = 0; i < 256; i++)
			fds[i] = -1;
		for (;;) {
			if (fds[next] >= 0)
				close(fds[next]);
			fds[next] = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
			if (fds[next] >= 0)
				connect(fds[next], (struct sockaddr *)&ss, len); /* EINPROGRESS */
			next = (next + 1) % 256;
			pause_ms(1000 / per_s);
		}
	}
	fprintf(stderr, "net_peer: unknown mode %s\n", mode);
	return 2;
}
