/* verdict.c — runs a recipe's Lua snippet in a child process, under a deadline, and takes back
 * its answer.
 *
 * Owns: verdict_run: the forked child (descriptors closed, death with the parent, RLIMIT_CPU,
 * RLIMIT_AS, no core), the wall-clock deadline, the pipe protocol (described below) and reading
 * the child's document with a size cap, its end as a message (exit status, signal).
 * Must not: print, read anything but the Lua sources it is given, interpret results, or return
 * with its child still alive. The sandbox is sandbox.c, running the chunks snippet.c, reading
 * the answer lua_value.c, checking it answer.c.
 */
#include "verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"
#include "json_parse.h"
#include "lua_value.h"

/* ---- in a child process ---------------------------------------------------------------------
 * Protocol: the parent makes a pipe and forks. The child closes every descriptor but the pipe's
 * write end (BPF objects, perf events, the signalfd, the audit file: it needs none), asks to be
 * killed when the parent dies, sets RLIMIT_CPU (the wall-clock limit rounded up, plus one second),
 * RLIMIT_AS (its current size plus room for the Lua cap and the answer; not under ASan, whose
 * shadow memory is huge) and RLIMIT_CORE 0, runs verdict_run_inprocess, writes one JSON document
 * — {"verdicts":[...],"report":[...],"ruled_out":[...],"metrics":[...]} or {"error":"message"} — and leaves
 * with _exit (no atexit handler, no flush of stdio buffers inherited from the parent). Blocked signals stay blocked:
 * Ctrl-C is for the parent to answer, and SIGKILL needs no permission.
 * The parent reads with poll until end of file or the deadline, at most a size derived from the
 * budget, then reaps the child; over the deadline or the size it kills it (SIGKILL) and reaps
 * it. Only an exit status of 0 counts: the document is then parsed (strict JSON, depth and node
 * caps) and checked again as if it came from Lua. Whatever goes wrong ends in -1 and err. */

#if defined(__SANITIZE_ADDRESS__)
#define VERDICT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VERDICT_ASAN 1
#endif
#endif

#define WIRE_SLACK_NODES 8          /* the document around the answer */
#define WIRE_SLACK_BYTES (64u << 10) /* its keys and the error message */

/* JSON as value_write_json writes it, but lossless: strings and keys keep bytes that are not
 * UTF-8 (json_write_bytes; the parent reads them with raw_bytes), and numbers are exact: %.17g,
 * a whole double keeping a ".0" so that it comes back as V_NUM, not V_INT. Non-finite numbers
 * become null, as in the JSON report. */
static void wire_write(const struct value *v, FILE *f)
{
	char buf[40];
	switch (v->type) {
	case V_STR:
		json_write_bytes(f, v->s);
		break;
	case V_NUM:
		if (!isfinite(v->n)) {
			fputs("null", f);
			break;
		}
		snprintf(buf, sizeof(buf), "%.17g", v->n);
		fputs(buf, f);
		if (!strpbrk(buf, ".eE"))
			fputs(".0", f);
		break;
	case V_ARR:
		fputc('[', f);
		for (size_t i = 0; i < v->arr.len; i++) {
			if (i)
				fputc(',', f);
			wire_write(v->arr.items[i], f);
		}
		fputc(']', f);
		break;
	case V_OBJ:
		fputc('{', f);
		for (size_t i = 0; i < v->obj.len; i++) {
			if (i)
				fputc(',', f);
			json_write_bytes(f, v->obj.keys[i]);
			fputc(':', f);
			wire_write(v->obj.vals[i], f);
		}
		fputc('}', f);
		break;
	default:
		value_write_json(v, f, -1);
		break;
	}
}

static size_t sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t sat_mul(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

/* The most text a child's document can take within the budget: every text byte escaped as
 * \uNNNN, every node with its punctuation and a 24-character number. */
static size_t wire_cap(size_t max_nodes, size_t max_bytes)
{
	return sat_add(sat_add(sat_mul(max_bytes, 6), sat_mul(max_nodes, 40)), WIRE_SLACK_BYTES);
}

static void child_limits(const struct verdict_input *in, unsigned max_ms, size_t max_nodes,
			 size_t max_bytes)
{
	rlim_t cpu = max_ms / 1000 + 2; /* rounded up, plus at least one second */
	setrlimit(RLIMIT_CPU, &(struct rlimit){ cpu, cpu + 1 });
	setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
#ifndef VERDICT_ASAN
	/* What is mapped now (the parent's heap, libraries), plus twice the Lua cap (realloc of
	 * the largest block), the answer as C values and as JSON, and room for the C library. */
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	if (pages) {
		size_t lua = in->max_memory_bytes ? in->max_memory_bytes : VERDICT_DEFAULT_MAX_MEMORY;
		size_t as = sat_mul(pages, (size_t)sysconf(_SC_PAGESIZE));
		as = sat_add(as, sat_mul(lua, 2));
		as = sat_add(as, sat_mul(max_nodes, 256));
		as = sat_add(as, sat_mul(max_bytes, 4));
		as = sat_add(as, 128u << 20);
		if (as < RLIM_INFINITY)
			setrlimit(RLIMIT_AS, &(struct rlimit){ as, as });
	}
#else
	(void)in;
	(void)max_nodes;
	(void)max_bytes;
#endif
}

static _Noreturn void child_main(const struct verdict_input *in, pid_t parent, int wfd,
				 unsigned max_ms, size_t max_nodes, size_t max_bytes)
{
	/* Never outlive the parent's call: dies with it (checked once, in case it is already gone). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "diagnose-lua"); /* what ps and pgrep show of it */
	if (getppid() != parent)
		_exit(3);
	if (wfd > 3)
		close_range(3, (unsigned)wfd - 1, 0);
	close_range((unsigned)wfd + 1, ~0u, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXCPU, SIG_DFL);
	sigset_t fatal;
	sigemptyset(&fatal);
	sigaddset(&fatal, SIGXCPU);
	sigaddset(&fatal, SIGSEGV);
	sigaddset(&fatal, SIGBUS);
	sigaddset(&fatal, SIGFPE);
	sigaddset(&fatal, SIGILL);
	sigaddset(&fatal, SIGABRT);
	sigprocmask(SIG_UNBLOCK, &fatal, NULL);
	child_limits(in, max_ms, max_nodes, max_bytes);

	struct verdict_answer answer;
	struct diag_err err = { 0 };
	struct value *doc = value_obj();
	if (verdict_run_inprocess(in, &answer, &err) == 0) {
		value_obj_set(doc, "verdicts", answer.verdicts);
		value_obj_set(doc, "report", answer.report);
		value_obj_set(doc, "ruled_out", answer.ruled_out);
		value_obj_set(doc, "metrics", answer.metrics);
	} else {
		value_set_str(doc, "error", err.msg);
	}
	FILE *f = fdopen(wfd, "w");
	if (!f)
		_exit(1);
	wire_write(doc, f);
	_exit(fclose(f) == 0 ? 0 : 1);
}

static const char *signal_name(int sig)
{
	static const struct {
		int sig;
		const char *name;
	} names[] = {
		{ SIGKILL, "SIGKILL" }, { SIGXCPU, "SIGXCPU" }, { SIGSEGV, "SIGSEGV" },
		{ SIGBUS, "SIGBUS" },   { SIGABRT, "SIGABRT" }, { SIGFPE, "SIGFPE" },
		{ SIGILL, "SIGILL" },   { SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" },
		{ SIGHUP, "SIGHUP" },   { SIGQUIT, "SIGQUIT" }, { SIGPIPE, "SIGPIPE" },
		{ SIGSYS, "SIGSYS" },   { SIGXFSZ, "SIGXFSZ" }, { SIGTRAP, "SIGTRAP" },
	};
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (names[i].sig == sig)
			return names[i].name;
	return NULL;
}

/* What a child's end means, as a message. */
static int child_status_fail(const char *chunk, int status, struct diag_err *err)
{
	if (WIFEXITED(status))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase failed (exit status %d)",
				 chunk, WEXITSTATUS(status));
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	const char *name = signal_name(sig);
	const char *why = sig == SIGXCPU ? " (over its CPU time limit)"
			: sig == SIGKILL ? " (out of memory, or over its CPU time limit)"
			: sig == SIGABRT ? " (out of memory?)" : "";
	if (name)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase killed by %s%s", chunk, name, why);
	return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase killed by signal %d", chunk, sig);
}

static void kill_and_reap(pid_t pid)
{
	int status;
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

static int ms_until(uint64_t deadline)
{
	uint64_t now = mono_ns();
	if (now >= deadline)
		return 0;
	uint64_t ms = (deadline - now + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Reads the child's document until end of file. Returns 0, or -1 with *timed_out or *too_big
 * set, or errno-style failure (err set). */
static int read_child(int rfd, uint64_t deadline, size_t cap, char **buf, size_t *len,
		      bool *timed_out, bool *too_big, struct diag_err *err)
{
	size_t size = 0;
	*buf = NULL;
	*len = 0;
	for (;;) {
		int left = ms_until(deadline);
		if (left == 0) {
			*timed_out = true;
			return -1;
		}
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };
		int r = poll(&pfd, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return diag_fail(err, DIAG_EXIT_RUNTIME, "poll: %s", strerror(errno));
		if (r == 0)
			continue;
		if (*len == size) {
			if (size > cap) {
				*too_big = true;
				return -1;
			}
			size = size ? size * 2 : 64u << 10;
			if (size > cap + 1)
				size = cap + 1;
			*buf = xrealloc(*buf, size);
		}
		ssize_t n = read(rfd, *buf + *len, size - *len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return diag_fail(err, DIAG_EXIT_RUNTIME, "reading the verdict phase's answer: %s",
					 strerror(errno));
		if (n == 0)
			return 0;
		*len += (size_t)n;
		if (*len > cap) {
			*too_big = true;
			return -1;
		}
	}
}

/* Waits for a child that closed its pipe (child_wait). Returns its status, or -1 once over the
 * deadline (the child is then killed and reaped). */
static int reap(pid_t pid, int pidfd, uint64_t deadline, int *status)
{
	if (child_wait(pid, pidfd, deadline, status) == 0)
		return 0;
	kill_and_reap(pid);
	return -1;
}

/* The child's document, parsed and checked. */
static int read_document(const struct verdict_input *in, const char *text, size_t len,
			 size_t max_nodes, struct verdict_answer *out, struct diag_err *err)
{
	const char *chunk = in->lua->path;
	struct json_limits lim = { .max_depth = VERDICT_MAX_DEPTH + 2,
				   .max_nodes = sat_add(max_nodes, WIRE_SLACK_NODES),
				   .raw_bytes = true /* Lua strings and target names are any bytes */ };
	struct diag_err perr = { 0 };
	struct value *doc = json_parse(text, len, &lim, &perr);
	if (!doc)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent a malformed answer: %s",
				 chunk, perr.msg);
	int rc = -1;
	const struct value *msg = value_get(doc, "error");
	struct value *vs = (struct value *)value_get(doc, "verdicts");
	struct value *rep = (struct value *)value_get(doc, "report");
	struct value *ro = (struct value *)value_get(doc, "ruled_out");
	struct value *mt = (struct value *)value_get(doc, "metrics");
	if (doc->type != V_OBJ) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent a malformed answer: not an object",
			  chunk);
	} else if (msg) {
		if (msg->type == V_STR && msg->s[0])
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s", msg->s);
		else
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase failed without a message",
				  chunk);
	} else if (!vs || !rep || !ro || !mt) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent a malformed answer: no verdicts, "
			  "report, ruled_out or metrics", chunk);
	} else {
		/* Take the four out of the document, then check them as the child did. */
		for (size_t i = 0; i < doc->obj.len; i++)
			if (doc->obj.vals[i] == vs || doc->obj.vals[i] == rep || doc->obj.vals[i] == ro ||
			    doc->obj.vals[i] == mt)
				doc->obj.vals[i] = NULL;
		struct verdict_answer raw = { vs, rep, ro, mt };
		rc = answer_check(chunk, &raw, out, err);
	}
	value_free(doc);
	return rc;
}

int verdict_run(const struct verdict_input *in, struct verdict_answer *out, struct diag_err *err)
{
	*out = (struct verdict_answer){ 0 };
	const char *chunk = in->lua->path;
	unsigned max_ms = in->max_ms ? in->max_ms : VERDICT_DEFAULT_MAX_MS;
	size_t max_nodes = in->max_nodes ? in->max_nodes : VERDICT_DEFAULT_MAX_NODES;
	size_t max_bytes = in->max_text_bytes ? in->max_text_bytes : VERDICT_DEFAULT_MAX_TEXT_BYTES;
	uint64_t deadline = mono_ns() + (uint64_t)max_ms * 1000000;

	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot start the verdict phase: pipe: %s",
				 chunk, strerror(errno));
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot start the verdict phase: fork: %s",
				 chunk, strerror(e));
	}
	if (pid == 0) {
		close(fds[0]);
		child_main(in, parent, fds[1], max_ms, max_nodes, max_bytes);
	}
	close(fds[1]);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* -1 before 5.3: reap tries each ms */

	char *buf;
	size_t len;
	bool timed_out = false, too_big = false;
	int status, rc = -1;
	size_t cap = wire_cap(max_nodes, max_bytes);
	struct diag_err rerr = { 0 };
	if (read_child(fds[0], deadline, cap, &buf, &len, &timed_out, &too_big, &rerr)) {
		kill_and_reap(pid);
		if (timed_out)
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase over its time limit of %u ms "
				  "(killed)", chunk, max_ms);
		else if (too_big)
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent more than %zu bytes "
				  "(killed)", chunk, cap);
		else
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: %s", chunk, rerr.msg);
	} else if (reap(pid, pidfd, deadline, &status)) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase over its time limit of %u ms "
			  "(killed)", chunk, max_ms);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		child_status_fail(chunk, status, err);
	} else {
		rc = read_document(in, buf, len, max_nodes, out, err);
	}
	close(fds[0]);
	if (pidfd >= 0)
		close(pidfd);
	free(buf);
	return rc;
}

