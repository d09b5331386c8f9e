/* watchdog.c — a thread that ends a stuck run (see watchdog.h).
 *
 * Choices: a condition variable on CLOCK_MONOTONIC (the clock of mono_ns()) that the thread waits
 * on until the armed deadline; arming again or disarming wakes it to wait anew. The descriptors
 * to release are found by what /proc/self/fd says they are ("anon_inode:bpf_link", "bpf-prog",
 * "[perf_event]"): no registry that every attach path would have to keep.
 */
#include "session/watchdog.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"

struct watchdog {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t deadline_ns; /* 0: disarmed */
	const char *stage;
	bool quit;
	void (*last_words)(void *arg, const char *why);
	void *arg;
};

/* Whether fd is a BPF link, program or perf event (as /proc/self/fd names them: links are
 * "bpf_link", programs "bpf-prog"). */
static bool is_bpf_attachment(int fd)
{
	char link[64], target[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, target, sizeof(target) - 1);
	if (len <= 0)
		return false;
	target[len] = '\0';
	return !strcmp(target, "anon_inode:bpf_link") || !strcmp(target, "anon_inode:bpf-link") ||
	       !strcmp(target, "anon_inode:bpf-prog") || !strcmp(target, "anon_inode:[perf_event]");
}

int watchdog_detach_all(void)
{
	/* /dev/null over each, not close: the kernel drops the attachment all the same, and the
	 * number stays taken, so a thread of ours still running cannot be handed it for a file of
	 * its own and then see libbpf close it */
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int n = 0;
	for (bool again = true; again;) { /* until a pass finds none (the list changes as we go) */
		again = false;
		DIR *d = opendir("/proc/self/fd");
		if (!d)
			break;
		int self = dirfd(d);
		for (struct dirent *e; (e = readdir(d));) {
			int fd = atoi(e->d_name);
			if (e->d_name[0] == '.' || fd == self || fd == null || !is_bpf_attachment(fd))
				continue;
			if (null >= 0 ? dup3(null, fd, O_CLOEXEC) == fd : close(fd) == 0) {
				n++;
				again = true;
			}
		}
		closedir(d);
	}
	if (null >= 0)
		close(null);
	return n;
}

static void fire(struct watchdog *w, const char *stage)
{
	int n = watchdog_detach_all();
	char why[256], line[320];
	snprintf(why, sizeof(why), "watchdog: %s had not ended by its limit (something the target "
		 "controls stalled the run where no deadline held); %d BPF links, programs and events "
		 "released, run abandoned", stage, n);
	int len = snprintf(line, sizeof(line), "diagnose: %s\n", why);
	if (write(STDERR_FILENO, line, (size_t)len) < 0) { /* nothing better to do */
	}
	if (w->last_words)
		w->last_words(w->arg, why);
	_exit(DIAG_EXIT_RUNTIME);
}

static void *watchdog_main(void *arg)
{
	struct watchdog *w = arg;
	pthread_mutex_lock(&w->lock);
	while (!w->quit) {
		if (!w->deadline_ns) {
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		uint64_t now = mono_ns();
		if (now >= w->deadline_ns) /* under the lock: a disarm cannot slip in */
			fire(w, w->stage);
		struct timespec ts = { .tv_sec = (time_t)(w->deadline_ns / 1000000000ull),
				       .tv_nsec = (long)(w->deadline_ns % 1000000000ull) };
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct watchdog *watchdog_start(void (*last_words)(void *arg, const char *why), void *arg)
{
	struct watchdog *w = xcalloc(1, sizeof(*w));
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&w->lock, NULL);
	w->last_words = last_words;
	w->arg = arg;
	if (pthread_create(&w->thread, NULL, watchdog_main, w)) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return NULL;
	}
	return w;
}

void watchdog_arm(struct watchdog *w, const char *stage, uint64_t deadline_ns)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stage = stage;
	w->deadline_ns = deadline_ns;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

void watchdog_stop(struct watchdog *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->quit = true;
	w->deadline_ns = 0;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
