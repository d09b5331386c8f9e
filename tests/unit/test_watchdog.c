/* test_watchdog.c — the last bound on a run (engine/session/watchdog.c), in child processes: one stuck
 * for ever in an open() of a FIFO with a perf event and (as root) a BPF link open is ended at its
 * limit, both released before its last words run, exit code DIAG_EXIT_RUNTIME; one disarmed in time
 * is not; re-arming moves the limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "common/util.h"
#include "session/watchdog.h"

static int words_fd = -1, event_fd = -1, link_fd = -1;

/* 1 when fd no longer holds what it held (it is /dev/null now, or closed), -1 when there was none. */
static int released(int fd)
{
	if (fd < 0)
		return -1;
	char link[64], target[64] = "";
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	return n < 0 || (n > 0 && !strncmp(target, "/dev/null", (size_t)n));
}

static void last_words(void *arg, const char *why)
{
	(void)arg;
	char line[400];
	int n = snprintf(line, sizeof(line), "event=%d link=%d %s", released(event_fd), released(link_fd), why);
	if (write(words_fd, line, (size_t)n) < 0)
		_exit(9);
}

/* A BPF link (raw tracepoint sched_switch, a program that returns 0) when root may make one. */
static int open_link(void)
{
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int pfd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "wd_test", "GPL", prog, 2, NULL);
	if (pfd < 0)
		return -1;
	int lfd = bpf_raw_tracepoint_open("sched_switch", pfd);
	close(pfd); /* the link holds the program */
	return lfd;
}

/* A perf event of this process (the watchdog must close it); -1 when the kernel refuses. */
static int open_event(void)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
				     .config = PERF_COUNT_SW_TASK_CLOCK, .disabled = 1,
				     .exclude_kernel = 1, .exclude_hv = 1 };
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Runs body in a child; returns its exit status (-1: killed, after 20 s at most) and what its
 * last words said into words (len bytes). */
static int in_child(void (*body)(void), char *words, size_t len)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		words_fd = p[1];
		body();
		_exit(0);
	}
	close(p[1]);
	size_t got = 0;
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		if (poll(&pf, 1, 20000) <= 0)
			break; /* hung: killed below */
		ssize_t n = read(p[0], words + got, len - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	words[got] = '\0';
	close(p[0]);
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char fifo[64];

static void stuck(void)
{
	event_fd = open_event();
	link_fd = open_link();
	struct watchdog *w = watchdog_start(last_words, NULL);
	if (!w)
		_exit(8);
	watchdog_arm(w, "the collection", mono_ns() + 100000000ull);
	int fd = open(fifo, O_RDONLY); /* no writer: for ever */
	(void)fd;
	_exit(7);
}

static void test_fires(void **state)
{
	(void)state;
	snprintf(fifo, sizeof(fifo), "/tmp/test_watchdog.%d", getpid());
	assert_int_equal(mkfifo(fifo, 0600), 0);
	char words[512];
	int rc = in_child(stuck, words, sizeof(words));
	unlink(fifo);
	assert_int_equal(rc, DIAG_EXIT_RUNTIME);
	if (!strstr(words, "watchdog: the collection had not ended by its limit"))
		fail_msg("last words: \"%s\"", words);
	/* the event and the link were released before the last words (-1: not made here: not
	 * root, or perf events refused); as root the link must have been made */
	if (strncmp(words, "event=1 ", 8) && strncmp(words, "event=-1 ", 9))
		fail_msg("the perf event was not released: \"%s\"", words);
	if (!strstr(words, " link=1 ") && !(geteuid() != 0 && strstr(words, " link=-1 ")))
		fail_msg("the BPF link was not released (or, as root, not made): \"%s\"", words);
}

static void disarmed(void)
{
	struct watchdog *w = watchdog_start(last_words, NULL);
	watchdog_arm(w, "the collection", mono_ns() + 50000000ull);
	watchdog_arm(w, "reading the results", mono_ns() + 10000000000ull); /* moved away */
	usleep(200000);
	watchdog_arm(w, NULL, 0);
	usleep(100000);
	watchdog_stop(w);
	_exit(0);
}

static void test_disarmed(void **state)
{
	(void)state;
	char words[512];
	assert_int_equal(in_child(disarmed, words, sizeof(words)), 0);
	assert_string_equal(words, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fires),
		cmocka_unit_test(test_disarmed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
