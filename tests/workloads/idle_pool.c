/* idle_pool.c — the healthy control of the latency tests: a thread pool with no work. WORKERS
 * threads (argv[1], default 4) wait on a condition variable that is never signalled, in
 * wait_for_job(); the main thread waits in pause(). Nothing is slow: a latency diagnosis must not
 * warn about it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_ready = PTHREAD_COND_INITIALIZER;
static int jobs;

__attribute__((noinline)) static void wait_for_job(void)
{
	pthread_mutex_lock(&lock);
	while (jobs == 0)
		pthread_cond_wait(&job_ready, &lock);
	jobs--;
	pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;)
		wait_for_job();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
	}
	for (;;)
		pause();
}
