/* test_watchdog.c — the last bound on a run (engine/watchdog.c), in child processes: one stuck
 * for ever in an open() of a FIFO with a perf event open is ended at its limit, the event's
 * descriptor closed before its last words run, exit code DIAG_EXIT_RUNTIME; one disarmed in time
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

#include "util.h"
#include "watchdog.h"

static int words_fd = -1, event_fd = -1;

static void last_words(void *arg, const char *why)
{
	(void)arg;
	char line[400];
	int closed = event_fd < 0 ? -1 : fcntl(event_fd, F_GETFD) < 0;
	int n = snprintf(line, sizeof(line), "closed=%d %s", closed, why);
	if (write(words_fd, line, (size_t)n) < 0)
		_exit(9);
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
	/* the event was closed before the last words (-1: perf events refused here) */
	if (strncmp(words, "closed=1 ", 9) && strncmp(words, "closed=-1 ", 10))
		fail_msg("the perf event was not closed: \"%s\"", words);
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
