/* stuck_threads.c — threads blocked for good before anyone looks: the 3 AM page that latency and
 * triage must not call idle (tests/e2e/t_stuck.sh).
 *
 *   stuck_threads deadlock   two threads take two mutexes in opposite orders and wait on each
 *                            other for ever: transfer_funds() holds accounts_lock and waits for
 *                            audit_lock, run_audit() holds audit_lock and waits for accounts_lock
 *   stuck_threads holder     rotate_logs() takes log_lock and sleeps for ever holding it;
 *                            append_record() waits for log_lock for ever
 *
 * Both are default (PTHREAD_MUTEX_NORMAL) glibc mutexes, as a service's are. The main thread
 * waits in pause(). Every thread is blocked within a fraction of a second of the start and never
 * runs again: a run started later sees no context switch of theirs.
 * Must not: wake a stuck thread (no timeouts, no signals), or spin.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t accounts_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold;
volatile unsigned long balance;

__attribute__((noinline)) static void transfer_funds(void)
{
	pthread_mutex_lock(&accounts_lock);
	pthread_barrier_wait(&both_hold); /* the other holds audit_lock now */
	pthread_mutex_lock(&audit_lock);  /* never returns */
	balance++;
	pthread_mutex_unlock(&audit_lock);
	pthread_mutex_unlock(&accounts_lock);
}

__attribute__((noinline)) static void run_audit(void)
{
	pthread_mutex_lock(&audit_lock);
	pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(&accounts_lock); /* never returns */
	balance--;
	pthread_mutex_unlock(&accounts_lock);
	pthread_mutex_unlock(&audit_lock);
}

__attribute__((noinline)) static void rotate_logs(void)
{
	pthread_mutex_lock(&log_lock);
	for (;;)
		sleep(3600); /* holds log_lock while it sleeps */
}

__attribute__((noinline)) static void append_record(void)
{
	usleep(100000);                /* rotate_logs() has the lock by then */
	pthread_mutex_lock(&log_lock); /* never returns */
	balance++;
	pthread_mutex_unlock(&log_lock);
}

static void *teller(void *arg)
{
	(void)arg;
	transfer_funds();
	return NULL;
}

static void *auditor(void *arg)
{
	(void)arg;
	run_audit();
	return NULL;
}

static void *rotator(void *arg)
{
	(void)arg;
	rotate_logs();
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	append_record();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "deadlock";
	pthread_t a, b;
	if (!strcmp(mode, "deadlock")) {
		pthread_barrier_init(&both_hold, NULL, 2);
		pthread_create(&a, NULL, teller, NULL);
		pthread_create(&b, NULL, auditor, NULL);
	} else if (!strcmp(mode, "holder")) {
		pthread_create(&a, NULL, rotator, NULL);
		pthread_create(&b, NULL, writer, NULL);
	} else {
		fprintf(stderr, "usage: stuck_threads deadlock|holder\n");
		return 2;
	}
	for (;;)
		pause();
}
