/* verdict.c — runs a recipe's Lua snippet in a child process, under a deadline, and takes back
 * its answer.
 *
 * Owns: verdict_run: the forked child (descriptors closed, death with the parent, RLIMIT_CPU,
 * RLIMIT_AS, no core), the wall-clock deadline, the pipe protocol (described below) and reading
 * the child's document with a size cap, its end as a message (exit status, signal).
 * Must not: print, read anything but the Lua sources it is given, interpret results, or leave a
 * child behind: verdict_start returns with one alive by design, and verdict_finish and
 * verdict_cancel always reap it. The sandbox is sandbox.c, running the chunks snippet.c, reading
 * the answer lua_value.c, checking it answer.c.
 */
#include "verdict/verdict.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
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

#include "verdict/answer.h"
#include "common/json_parse.h"
#include "verdict/lua_value.h"
#include "verdict/limits.h"
#include "verdict/snippet.h"

/* ---- in a child process ---------------------------------------------------------------------
 * Protocol: the parent makes two pipes and forks (verdict_start), as early as the caller likes:
 * the engine does it as its collection window opens, so that the fork, the sandbox and the
 * libraries and the snippet's compilation are paid while the probes collect. The child closes
 * every descriptor but its two pipes' ends (BPF objects, perf events, the signalfd, the audit file:
 * it needs none), asks to be killed when the parent dies, sets RLIMIT_CPU (the wall-clock limit
 * rounded up, plus one second) and RLIMIT_CORE 0, prepares the state (snippet.h stage 1), then
 * reads its input to end of file: one document {"results":...,"run":...} in the wire format below,
 * which verdict_finish writes. It parses it, sets RLIMIT_AS (its current size plus room for the
 * Lua cap and the answer; not under ASan, whose shadow memory is huge), runs the snippet (stage
 * 2), writes one JSON document — {"verdicts":[...],"report":[...],"ruled_out":[...],
 * "metrics":[...]} or {"error":"message"} — and leaves with _exit (no atexit handler, no flush of
 * stdio buffers inherited from the parent). Blocked signals stay blocked: Ctrl-C is for the parent
 * to answer, and SIGKILL needs no permission.
 * The parent writes the input and reads the answer with poll until end of file or the deadline
 * (max_ms from verdict_finish), at most a size derived from the budget, then reaps the child;
 * over the deadline or the size it kills it (SIGKILL) and reaps it. Only an exit status of 0
 * counts: the document is then parsed (strict JSON, depth and node caps) and checked again as if
 * it came from Lua. Whatever goes wrong ends in -1 and err. */

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

/* The phase's limits from its input, 0 there meaning the default. */
struct limits {
	unsigned max_ms;
	size_t max_nodes, max_bytes, max_memory;
};

static struct limits limits_of(const struct verdict_input *in)
{
	return (struct limits){
		.max_ms = in->max_ms ? in->max_ms : VERDICT_DEFAULT_MAX_MS,
		.max_nodes = in->max_nodes ? in->max_nodes : VERDICT_DEFAULT_MAX_NODES,
		.max_bytes = in->max_text_bytes ? in->max_text_bytes : VERDICT_DEFAULT_MAX_TEXT_BYTES,
		.max_memory = in->max_memory_bytes ? in->max_memory_bytes : VERDICT_DEFAULT_MAX_MEMORY,
	};
}

/* The most text a child's document can take within the budget: every text byte escaped as
 * \uNNNN, every node with its punctuation and a 24-character number. */
static size_t wire_cap(const struct limits *lim)
{
	return sat_add(sat_add(sat_mul(lim->max_bytes, 6), sat_mul(lim->max_nodes, 40)), WIRE_SLACK_BYTES);
}

static void child_cpu_limits(unsigned max_ms)
{
	rlim_t cpu = max_ms / 1000 + 2; /* rounded up, plus at least one second */
	setrlimit(RLIMIT_CPU, &(struct rlimit){ cpu, cpu + 1 });
	setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
}

static void child_memory_limit(const struct limits *lim)
{
#ifndef VERDICT_ASAN
	/* What is mapped now (the parent's heap, libraries, the results as read), plus twice the
	 * Lua cap (realloc of the largest block), the answer as C values and as JSON, and room for
	 * the C library. */
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	if (pages) {
		size_t as = sat_mul(pages, (size_t)sysconf(_SC_PAGESIZE));
		as = sat_add(as, sat_mul(lim->max_memory, 2));
		as = sat_add(as, sat_mul(lim->max_nodes, 256));
		as = sat_add(as, sat_mul(lim->max_bytes, 4));
		as = sat_add(as, 128u << 20);
		if (as < RLIM_INFINITY)
			setrlimit(RLIMIT_AS, &(struct rlimit){ as, as });
	}
#else
	(void)lim;
#endif
}

/* The input document, read to end of file and parsed: results and run (each NULL when absent),
 * or NULL with err (the parent wrote it: only a child out of memory or cut short fails here). */
static struct value *child_read_input(int rfd, const char *chunk, const struct value **results,
				      const struct value **run, struct diag_err *err)
{
	*results = *run = NULL;
	size_t len = 0;
	char *buf = read_fd(rfd, SIZE_MAX / 2, &len); /* the parent's document: no cap of ours */
	if (!buf) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: the verdict phase's input: %s", chunk, strerror(errno));
		return NULL;
	}
	/* results nest a few levels; the cap is jansson's own, held below */
	struct json_limits lim = { .raw_bytes = true, .max_depth = 1024 };
	struct diag_err perr = { 0 };
	struct value *doc = json_parse(buf, len, &lim, &perr);
	free(buf);
	if (!doc) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: the verdict phase's input: %s", chunk, perr.msg);
		return NULL;
	}
	if (doc->type == V_OBJ) {
		*results = value_get(doc, "results");
		*run = value_get(doc, "run");
	}
	return doc;
}

/* Closes every descriptor from 3 up but a and b (both at least 3: pipes made after stdio). */
static void close_all_but(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;
	if (lo > 3)
		close_range(3, (unsigned)lo - 1, 0);
	if (hi > lo + 1)
		close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
	close_range((unsigned)hi + 1, ~0u, 0);
}

static _Noreturn void child_main(const struct verdict_input *in, pid_t parent, int rfd, int wfd,
				 const struct limits *lim)
{
	/* Never outlive the parent's call: dies with it (checked once, in case it is already gone). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	prctl(PR_SET_NAME, "diagnose-lua"); /* what ps and pgrep show of it */
	if (getppid() != parent)
		_exit(3);
	close_all_but(rfd, wfd);
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
	child_cpu_limits(lim->max_ms);

	struct verdict_state *st = verdict_prepare(in);
	const struct value *results = NULL, *run = NULL;
	struct diag_err err = { 0 };
	struct value *input = child_read_input(rfd, in->lua->path, &results, &run, &err);
	close(rfd);
	child_memory_limit(lim);

	struct verdict_answer answer;
	struct value *doc = value_obj();
	if (!input) {
		value_set_str(doc, "error", err.msg);
	} else if (verdict_answer(st, results, run, &answer, &err) == 0) {
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

/* Waits until fd is ready for events, or the deadline: 1, 0 (the deadline passed), -1 (poll's
 * error, errno set). */
static int ready_by(int fd, short events, uint64_t deadline)
{
	for (;;) {
		int left = ms_until(deadline);
		if (left == 0)
			return 0;
		struct pollfd pfd = { .fd = fd, .events = events };
		int r = poll(&pfd, 1, left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
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
		int ready = ready_by(rfd, POLLIN, deadline);
		if (ready == 0) {
			*timed_out = true;
			return -1;
		}
		if (ready < 0)
			return diag_fail(err, DIAG_EXIT_RUNTIME, "poll: %s", strerror(errno));
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

/* write(2) to a pipe whose reader may be gone, without the SIGPIPE that would end a caller that
 * kept its default disposition (a library must not rely on main's SIG_IGN): the signal blocked in
 * this thread for the call, and one it raised taken back unless it was pending already. */
static ssize_t write_no_sigpipe(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old_mask, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
	ssize_t n = write(fd, buf, len);
	int saved = errno;
	if (n < 0 && errno == EPIPE && !was_pending) {
		const struct timespec now = { 0, 0 };
		while (sigtimedwait(&pipe_set, NULL, &now) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	errno = saved;
	return n;
}

/* Writes len bytes of text to fd (non-blocking) by the deadline. 0, or -1: *timed_out, or the
 * child closed its end (it ended: its status says why). */
static int write_child(int fd, const char *text, size_t len, uint64_t deadline, bool *timed_out)
{
	size_t off = 0;
	while (off < len) {
		int ready = ready_by(fd, POLLOUT, deadline);
		if (ready == 0)
			*timed_out = true;
		if (ready <= 0)
			return -1;
		ssize_t n = write_no_sigpipe(fd, text + off, len - off);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

int verdict_start(const struct verdict_input *in, struct verdict_child *ch, struct diag_err *err)
{
	*ch = VERDICT_CHILD_NONE;
	ch->in = in;
	const char *chunk = in->lua->path;
	struct limits lim = limits_of(in);

	int down[2], up[2]; /* parent → child, child → parent */
	if (pipe2(down, O_CLOEXEC))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot start the verdict phase: pipe: %s",
				 chunk, strerror(errno));
	if (pipe2(up, O_CLOEXEC)) {
		int e = errno;
		close(down[0]);
		close(down[1]);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot start the verdict phase: pipe: %s",
				 chunk, strerror(e));
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(down[0]);
		close(down[1]);
		close(up[0]);
		close(up[1]);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot start the verdict phase: fork: %s",
				 chunk, strerror(e));
	}
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		child_main(in, parent, down[0], up[1], &lim);
	}
	close(down[0]);
	close(up[1]);
	fcntl(down[1], F_SETFL, O_NONBLOCK); /* written with poll, under the deadline */
	ch->pid = pid;
	ch->pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* -1 before 5.3: reap tries each ms */
	ch->to_child = down[1];
	ch->from_child = up[0];
	return 0;
}

static void child_release(struct verdict_child *ch)
{
	/* above stdio: a zeroed struct (no child) holds none of these */
	if (ch->to_child > 2)
		close(ch->to_child);
	if (ch->from_child > 2)
		close(ch->from_child);
	if (ch->pidfd > 2)
		close(ch->pidfd);
	*ch = VERDICT_CHILD_NONE;
}

void verdict_cancel(struct verdict_child *ch)
{
	if (ch->pid > 0)
		kill_and_reap(ch->pid);
	child_release(ch);
}

/* The input document: results and run in the wire format; NULL when memory runs out. */
static char *input_text(const struct value *results, const struct value *run, size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);
	if (!f)
		return NULL;
	fputs("{\"results\":", f);
	if (results)
		wire_write(results, f);
	else
		fputs("{}", f);
	fputs(",\"run\":", f);
	if (run)
		wire_write(run, f);
	else
		fputs("{}", f);
	fputc('}', f);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

int verdict_finish(struct verdict_child *ch, const struct value *results, const struct value *run,
		   struct verdict_answer *out, struct diag_err *err)
{
	*out = (struct verdict_answer){ 0 };
	const struct verdict_input *in = ch->in;
	if (ch->pid <= 0 || !in) { /* never started: nothing to hand results to (and no pid to kill) */
		child_release(ch);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the verdict phase was not started");
	}
	const char *chunk = in->lua->path;
	struct limits lim = limits_of(in);
	uint64_t deadline = mono_ns() + (uint64_t)lim.max_ms * 1000000;
	pid_t pid = ch->pid;

	size_t in_len;
	char *in_text = input_text(results, run, &in_len);
	if (!in_text) {
		verdict_cancel(ch);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "%s: cannot write the verdict phase's input: out "
				 "of memory", chunk);
	}
	bool timed_out = false, too_big = false;
	/* A child that ended early (killed, or out of memory) closed its end: its status says why. */
	write_child(ch->to_child, in_text, in_len, deadline, &timed_out);
	free(in_text);
	close(ch->to_child);
	ch->to_child = -1;

	char *buf = NULL;
	size_t len;
	int status, rc = -1;
	size_t cap = wire_cap(&lim);
	struct diag_err rerr = { 0 };
	if (timed_out || read_child(ch->from_child, deadline, cap, &buf, &len, &timed_out, &too_big, &rerr)) {
		kill_and_reap(pid);
		if (timed_out)
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase over its time limit of %u ms "
				  "(killed)", chunk, lim.max_ms);
		else if (too_big)
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase sent more than %zu bytes "
				  "(killed)", chunk, cap);
		else
			diag_fail(err, DIAG_EXIT_RUNTIME, "%s: %s", chunk, rerr.msg);
	} else if (reap(pid, ch->pidfd, deadline, &status)) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "%s: verdict phase over its time limit of %u ms "
			  "(killed)", chunk, lim.max_ms);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		child_status_fail(chunk, status, err);
	} else {
		rc = read_document(in, buf, len, lim.max_nodes, out, err);
	}
	ch->pid = -1; /* reaped on every path above */
	child_release(ch);
	free(buf);
	return rc;
}

int verdict_run(const struct verdict_input *in, struct verdict_answer *out, struct diag_err *err)
{
	struct verdict_child ch;
	*out = (struct verdict_answer){ 0 };
	if (verdict_start(in, &ch, err))
		return -1;
	return verdict_finish(&ch, in->results, in->run, out, err);
}
