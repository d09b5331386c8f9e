/* util.c — error records, fatal-on-failure allocation, small file and clock helpers, the one
 * rule for numbers written as text (decimal_*) and the one for text a target controls (utf8_*).
 * Must not: know about recipes, probes or reports.
 */
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A message is one line that is safe on a terminal: it may quote bytes from a recipe, a lock or
 * the target, so control bytes (newline and escape included) become '?'. */
static void one_line(char *msg)
{
	for (unsigned char *p = (unsigned char *)msg; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
}

int diag_fail(struct diag_err *err, int code, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	one_line(err->msg);
	return -1;
}

int diag_wrap(struct diag_err *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	char prefix[256], old[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	if (snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old) >= (int)sizeof(err->msg))
		memcpy(err->msg + sizeof(err->msg) - 4, "...", 4); /* keep the line, mark the cut */
	one_line(err->msg);
	return -1;
}

void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
}

static void out_of_memory(size_t size)
{
	fprintf(stderr, "diagnose: out of memory allocating %zu bytes\n", size);
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		out_of_memory(size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		out_of_memory(n * size);
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);
	if (!p)
		out_of_memory(size);
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		out_of_memory(strlen(s));
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		out_of_memory(0);
	return s;
}

int open_regular(const char *path)
{
	/* O_NONBLOCK: a FIFO must not hang the open; it is refused below with devices. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	struct stat st;
	int bad = fstat(fd, &st) ? errno : S_ISREG(st.st_mode) ? 0 : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
	if (bad) {
		close(fd);
		errno = bad;
		return -1;
	}
	return fd;
}

/* read (off < 0) or pread at off until len, the end or an error */
static size_t io_full(int fd, void *buf, size_t len, int64_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = off < 0 ? read(fd, (char *)buf + got, len - got)
				    : pread(fd, (char *)buf + got, len - got, (off_t)((uint64_t)off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

size_t read_full(int fd, void *buf, size_t len) { return io_full(fd, buf, len, -1); }

size_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	if (off > INT64_MAX) {
		errno = EINVAL;
		return 0;
	}
	return io_full(fd, buf, len, (int64_t)off);
}

size_t write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			break;
		}
		done += (size_t)n;
	}
	return done;
}

char *read_fd(int fd, size_t max, size_t *len_out)
{
	size_t cap = 4096, len = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= max) {
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int saved = errno;
			free(buf);
			errno = saved;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (len_out)
		*len_out = len;
	return buf;
}

char *read_file(const char *path, size_t *len_out)
{
	int fd = open_regular(path);
	if (fd < 0)
		return NULL;
	char *buf = read_fd(fd, READ_FILE_MAX, len_out);
	int saved = errno;
	close(fd);
	errno = saved;
	return buf;
}

int cpu_list_read(const char *path, int **cpus)
{
	char *text = read_file(path, NULL);
	int n = 0, cap = 0;
	if (cpus)
		*cpus = NULL;
	for (char *p = text; p && *p && *p != '\n';) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p || a < 0)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b; c++, n++) {
			if (!cpus)
				continue;
			if (n == cap)
				*cpus = xrealloc(*cpus, (size_t)(cap = cap ? cap * 2 : 8) * sizeof(int));
			(*cpus)[n] = (int)c;
		}
		p = *end == ',' ? end + 1 : end;
	}
	free(text);
	return n;
}

static size_t digits(const char *s)
{
	size_t n = 0;
	while (s[n] >= '0' && s[n] <= '9')
		n++;
	return n;
}

bool decimal_uint(const char *s, uint64_t max, uint64_t *out)
{
	size_t n = s ? digits(s) : 0;
	if (!n || s[n] || (s[0] == '0' && n > 1))
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

bool decimal_int(const char *s, int64_t *out)
{
	bool neg = s && s[0] == '-';
	uint64_t v;
	if (!decimal_uint(s ? s + neg : NULL, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &v))
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

bool decimal_number(const char *s, bool sign, double *out)
{
	if (!s)
		return false;
	const char *p = s + (sign && s[0] == '-');
	size_t n = digits(p);
	if (!n)
		return false;
	p += n;
	if (*p == '.') {
		if (!(n = digits(p + 1)))
			return false;
		p += 1 + n;
	}
	if (*p == 'e' || *p == 'E') {
		p += 1 + (p[1] == '+' || p[1] == '-');
		if (!(n = digits(p)))
			return false;
		p += n;
	}
	if (*p)
		return false;
	errno = 0;
	double d = strtod(s, NULL);
	if (errno || !isfinite(d))
		return false;
	*out = d;
	return true;
}

int stop_signals_take(void)
{
	sigset_t set;
	stop_signals(&set);
	const struct timespec now = { 0, 0 };
	int sig, last = 0;
	while ((sig = sigtimedwait(&set, NULL, &now)) > 0)
		last = sig;
	return last;
}

size_t utf8_char_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	size_t n;
	if (!p[0])
		return 0;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		if (p[0] == 0xe0)
			lo = 0xa0; /* overlong */
		else if (p[0] == 0xed)
			hi = 0x9f; /* UTF-16 surrogates */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		if (p[0] == 0xf0)
			lo = 0x90; /* overlong */
		else if (p[0] == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0; /* continuation byte, overlong lead C0/C1, or F5..FF */
	}
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++) /* stops at the NUL: it is no continuation byte */
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

uint32_t utf8_code_point(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	static const unsigned char lead_mask[5] = { 0, 0x7f, 0x1f, 0x0f, 0x07 };
	uint32_t cp = p[0] & lead_mask[n < 5 ? n : 0];
	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	return cp;
}

bool utf8_char_unsafe(const char *s, size_t n)
{
	if (n == 0)
		return true;
	uint32_t cp = utf8_code_point(s, n);
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
	       cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	       cp == 0xfffe || cp == 0xffff;
}

size_t utf8_safe_char(const char *s, char out[UTF8_SAFE_CHAR_MAX])
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = utf8_char_len(s);
	if (!utf8_char_unsafe(s, n)) {
		memcpy(out, s, n);
		out[n] = '\0';
		return n;
	}
	n = n ? n : 1;
	for (size_t i = 0; i < n; i++)
		snprintf(out + 4 * i, UTF8_SAFE_CHAR_MAX - 4 * i, "\\x%02x", p[i]);
	return n;
}

uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int child_wait(pid_t pid, int pidfd, uint64_t deadline_ns, int *status)
{
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR) {
			*status = 0;
			return 0;
		}
		uint64_t now = mono_ns();
		if (now >= deadline_ns)
			return -1;
		uint64_t ms = (deadline_ns - now + 999999) / 1000000;
		struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
		if (pidfd < 0 || poll(&pfd, 1, ms > 60000 ? 60000 : (int)ms) < 0)
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
}
