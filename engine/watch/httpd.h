/* httpd.h — the metrics endpoint of `diagnose watch`: a minimal HTTP/1.0 responder for
 * Prometheus's scrapes, served from watch's own event loop (no thread).
 *
 * Owns: the listening socket (an address literal and a port, IPv4 or IPv6, no name lookup; or
 * the one systemd passed, socket activation; when the port is taken, whose socket holds it), at
 * most HTTPD_MAX_CONNS connections at once, each bounded in request size (8 KiB) and time (its
 * request head within HTTPD_HEAD_MS of its accept, its answer's last byte within HTTPD_ANSWER_MS
 * of the head), and what serving them costs (the thread's CPU in httpd_service, the metrics body
 * built by the callback included: httpd_cpu_ns). `GET /metrics` gets the exposition the callback
 * builds, any other path 404, any other method 405. Nonblocking: a slow client never stalls watch,
 * and a crowd of them never makes it spin: a connection waiting in the backlog is always accepted
 * — when every slot is taken, the connection idle longest is closed for it, one still sending its
 * request head first (a scrape sends its head at once: idle connections are what is shed).
 * Must not: build metrics, read more than the request line's path, or serve files.
 */
#ifndef DIAG_HTTPD_H
#define DIAG_HTTPD_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "common/util.h"

#define HTTPD_MAX_CONNS 8
#define HTTPD_HEAD_MS 2000    /* from accept to a whole request head */
#define HTTPD_ANSWER_MS 10000 /* from the head to the answer's last byte (Prometheus waits 10 s) */

#define HTTPD_HEAD_MAX 8192 /* bytes of a request head, its empty line included */

/* What a request head says, as httpd_parse_head reads it. */
enum httpd_head {
	HTTPD_HEAD_PARTIAL,    /* its end (an empty line: CRLF CRLF, or LF LF) is not in yet */
	HTTPD_HEAD_TOO_LARGE,  /* HTTPD_HEAD_MAX bytes without its end: 431 */
	HTTPD_HEAD_BAD_METHOD, /* whole, and not a GET: 405 */
	HTTPD_HEAD_METRICS,    /* whole, GET /metrics (a query string ignored): the exposition */
	HTTPD_HEAD_NOT_FOUND,  /* whole, GET of another path: 404 */
};

/* The request head at the start of buf[0..len): a pure function of those bytes (no NUL needed, none
 * read past len), so that what a client sends in pieces reads as it does whole: PARTIAL for every
 * prefix shorter than the head, the same answer for every longer one. *head_len: the head's bytes
 * when whole, its empty line included (else 0). Its end must lie within the first HTTPD_HEAD_MAX
 * bytes. The request line is read as far as its path: the method "GET" and a blank, then the path up
 * to a blank, '?', CR, LF or NUL; nothing else (version, header fields) is looked at. */
enum httpd_head httpd_parse_head(const char *buf, size_t len, size_t *head_len);

/* Builds the body for a scrape: *body malloc'd (the caller of the callback frees it). */
typedef void (*httpd_body_fn)(void *ctx, char **body, size_t *len);

struct httpd_conn {
	int fd;              /* -1: free */
	uint64_t deadline_ns;
	uint64_t active_ns; /* accepted, or a byte read or written last: the idlest is shed first */
	char req[HTTPD_HEAD_MAX];
	size_t req_len;
	char *resp;
	size_t resp_len, resp_off;
};

struct httpd {
	int listen_fd;       /* -1: not listening */
	char addr[80];       /* as bound, "127.0.0.1:9464" */
	struct httpd_conn conns[HTTPD_MAX_CONNS];
	httpd_body_fn body;
	void *ctx;
	uint64_t scrapes;    /* /metrics answered */
	uint64_t shed;       /* connections closed for a newer one, every slot being taken */
	uint64_t cpu_ns;     /* this thread's CPU in httpd_service, the calls ended */
	uint64_t serving_from; /* and at the start of the call in progress, when serving */
	bool serving;
	uint64_t paused_until_ns; /* accept failed for want of descriptors: listening paused */
};

/* Listens on spec ("ADDR:PORT", "[ADDR6]:PORT"). DIAG_EXIT_USAGE for a spec that is not one,
 * DIAG_EXIT_RUNTIME when the bind fails; for the port in use, the error names the uid of the
 * socket that holds it when /proc/net/tcp{,6} shows one (another user's may be serving forged
 * metrics in diagnose's place: httpd_inherit is the way to have the port first). */
int httpd_open(struct httpd *h, const char *spec, httpd_body_fn body, void *ctx, struct diag_err *err);

/* systemd's socket activation (sd_listen_fds(3)'s protocol): when LISTEN_PID is this process and
 * LISTEN_FDS is 1, the listening socket on descriptor 3 (HTTPD_LISTEN_FDS_START), bound by systemd
 * before any user could take the port, is the endpoint's: 1. 0 when the variables are absent or
 * another process's. DIAG_EXIT_USAGE when they are ours but pass more than one socket or one that
 * is not a listening TCP (IPv4 or IPv6) socket. LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are
 * unset in every case: the processes watch starts must not take them as theirs. */
#define HTTPD_LISTEN_FDS_START 3
int httpd_inherit(struct httpd *h, httpd_body_fn body, void *ctx, struct diag_err *err);

/* In the text of /proc/net/tcp or /proc/net/tcp6, the uid of a socket that keeps sa (its address
 * and port) from being bound: on that port, with that address, a wildcard, or the IPv4-mapped
 * form; a listening one first, never one in TIME_WAIT. 1 when found, else 0. */
int httpd_port_holder(const char *table, const struct sockaddr *sa, uid_t *uid);
void httpd_close(struct httpd *h);

/* The descriptors to poll (up to 1 + HTTPD_MAX_CONNS): returns how many were written to fds. */
size_t httpd_pollfds(const struct httpd *h, struct pollfd *fds);
/* The poll timeout that wakes the loop for the endpoint's next deadline: at most max_ms. */
int httpd_timeout_ms(const struct httpd *h, int max_ms);
/* After poll: accepts, reads, answers and closes what is ready or past its deadline. */
void httpd_service(struct httpd *h, const struct pollfd *fds, size_t n);
/* The CPU the endpoint has cost this thread (httpd_service, the bodies built in it), in ns; also
 * when called from within httpd_service (by the body callback). */
uint64_t httpd_cpu_ns(const struct httpd *h);

#endif
