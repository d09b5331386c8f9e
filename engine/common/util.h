/* util.h — error reporting and allocation helpers shared by every engine file.
 *
 * Owns: the error record (struct diag_err) that functions fill and return instead of printing,
 * the process exit codes (README.md's table), the x*alloc wrappers, how a number is written
 * (decimal_*: recipes and the command line alike), and how text a target, a report or a recipe
 * controls is shown (utf8_*: the one rule of every output).
 * Must not: print anything, or hold state. Allocation failure is fatal (as in Redis's zmalloc):
 * a diagnosis tool that cannot allocate a few kilobytes has nothing better to do than stop.
 */
#ifndef DIAG_UTIL_H
#define DIAG_UTIL_H

#include <signal.h>
#include <sys/types.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes: the contract is README.md's table "Exit codes" (and docs/commands.md). */
enum diag_exit {
	DIAG_EXIT_OK = 0,       /* ran; no verdict worse than info */
	DIAG_EXIT_RUNTIME = 1,  /* could not load/attach, target gone before data, internal error */
	DIAG_EXIT_USAGE = 2,    /* usage error or invalid recipe / input */
	DIAG_EXIT_REFUSED = 3,  /* over budget, forbidden by policy, kernel feature missing */
	DIAG_EXIT_WARNING = 4,  /* ran; worst verdict is warning */
	DIAG_EXIT_CRITICAL = 5, /* ran; worst verdict is critical */
};
/* Not an exit code: a probe's load found that the target lacks what the probe needs (no libc, no
 * USDT probes, no allocator of its own): the run goes on without it (session.c), and it becomes
 * DIAG_EXIT_USAGE when no probe is left. */
#define DIAG_ERR_NOT_APPLICABLE 100

/* One error: the exit code it maps to and a one-line message (no trailing newline). */
struct diag_err {
	int code;
	char msg[768];
};

/* Fill *err (if not NULL) and return -1, so callers can `return diag_fail(err, ...)`. Control
 * bytes in the message (it may quote input) become '?': a message is always one safe line. */
int diag_fail(struct diag_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix an existing message: "context: old message". Returns -1. */
int diag_wrap(struct diag_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *ptr, size_t size);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reads (read_full) or preads at off (pread_full) until len bytes, the end of the file or an
 * error (EINTR is retried): the bytes read; fewer than len at the end of the file or an error
 * (errno then says which, if the caller cleared it before). */
size_t read_full(int fd, void *buf, size_t len);
size_t pread_full(int fd, void *buf, size_t len, uint64_t off);
/* Writes until len bytes are written or an error (EINTR is retried): the bytes written, fewer
 * than len with errno set. For files and memfds; a pipe's writer wants poll and a deadline. */
size_t write_full(int fd, const void *buf, size_t len);

/* Read a whole (small) regular file into a NUL-terminated buffer. Returns NULL and sets errno:
 * EINVAL for a FIFO, socket or device (never blocks on one), EISDIR, EFBIG over READ_FILE_MAX. */
#define READ_FILE_MAX ((size_t)64 << 20)
char *read_file(const char *path, size_t *len_out);
/* The same from fd to its end (a pipe's too), buffers of at most max bytes (EFBIG beyond). */
char *read_fd(int fd, size_t max, size_t *len_out);
/* path opened for reading if it is a regular file: the fd, or -1 with errno (read_file's). */
int open_regular(const char *path);

/* Reads a kernel CPU list file ("0-3,8,10-11", e.g. /sys/devices/system/cpu/online). Returns
 * the number of CPUs (0 when unreadable); with cpus non-NULL, also the malloc'ed list. */
int cpu_list_read(const char *path, int **cpus);

/* The signals that end a run early — Ctrl-C, kill, a closed terminal, Ctrl-\ —: a run holds them
 * (sigprocmask) and reads them (signalfd) instead of dying mid-way. Fills *set with them. */
void stop_signals(sigset_t *set);
/* Takes the stop signals pending while they are held (sigtimedwait, no wait), so that restoring
 * the mask cannot kill the process with them; returns the last one taken, 0 when none. */
int stop_signals_take(void);

/* Numbers as recipes and the command line write them, one rule for both (strtol and strtod
 * alone take "0x10", " +5", "010" or "inf").
 * decimal_uint: decimal digits only — no sign, blank or leading zero ("0" itself is fine) — and
 * at most max. */
bool decimal_uint(const char *s, uint64_t max, uint64_t *out);
/* decimal_int: decimal_uint's text, or '-' and decimal_uint's text, within int64. */
bool decimal_int(const char *s, int64_t *out);
/* decimal_number: digits, optionally '.' and digits, optionally an exponent (e or E, an optional
 * sign, digits), finite: "5", "0.5", "1e1"; no sign, blank, hex, inf or nan. With sign, a
 * leading '-' is allowed too (thresholds). */
bool decimal_number(const char *s, bool sign, double *out);

/* Monotonic clock in nanoseconds (same clock as bpf_ktime_get_ns). */
uint64_t mono_ns(void);

/* Waits for child pid to end until deadline_ns (mono_ns), reaping it: 0 with *status (0 when
 * it reaped itself: SIGCHLD ignored), or -1 when it is still running at the deadline. With its
 * pidfd (>= 0) woken as it ends; without (pidfd_open before 5.3), by trying every millisecond.
 * A child that just closed its pipe or socket is still tearing its memory down: a first try
 * seldom finds it gone, and a sleep between tries cost a whole millisecond. */
int child_wait(pid_t pid, int pidfd, uint64_t deadline_ns, int *status);

/* ---- text that a target, a report or a recipe controls ---- */

/* Length (1..4) of the well-formed UTF-8 character at s, 0 at the terminating NUL or when the
 * bytes there are not well-formed UTF-8 (never reads past a NUL). */
size_t utf8_char_len(const char *s);
/* The one rule of every output (text, JSON, folded, SVG, pprof, error lines) for text that the
 * target, a report or a recipe may carry: whether the character at s, n = utf8_char_len(s), must
 * not go out as it is. True when n is 0 (not UTF-8) and for the characters a reader does not see
 * but that act on what is shown around them: C0 controls, DEL, C1 controls (U+0080..U+009F), the
 * bidirectional formatting controls (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069:
 * they reorder the text around them), the line and paragraph separators (U+2028, U+2029) and the
 * noncharacters U+FFFE, U+FFFF. Each writer shows such a character its own way: "\xNN" per byte
 * (utf8_safe_char: text, error lines, Prometheus; folded, SVG, pprof), \uNNNN (JSON). */
bool utf8_char_unsafe(const char *s, size_t n);
/* The code point of the well-formed UTF-8 character at s of n = utf8_char_len(s) >= 1 bytes. */
uint32_t utf8_code_point(const char *s, size_t n);
/* The next character of s as text shows it, into out (NUL-terminated): a character
 * utf8_char_unsafe lets through as it is; each byte of one it names, or of anything that is not
 * UTF-8, as "\xNN". What comes out is valid UTF-8 without a control: no terminal escape
 * sequence, line break or reordering of what s holds reaches a terminal, a log or a format that
 * wants UTF-8 (Prometheus's). Returns the bytes of s consumed (at least 1; s must not be at its
 * NUL). */
#define UTF8_SAFE_CHAR_MAX 17 /* 4 bytes as "\xNN" each, and a NUL */
size_t utf8_safe_char(const char *s, char out[UTF8_SAFE_CHAR_MAX]);

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
