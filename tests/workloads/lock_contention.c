/* lock_contention.c — lock contention with a known holder, for the latency tests. WORKERS
 * threads (argv[1], default 4) loop in handle_request(), which takes one global mutex and, while
 * holding it, runs update_shared_state() (about HOLD_US of computation); so each worker spends
 * most of its time waiting for the mutex that another worker holds. With one worker (argv[1] = 1)
 * the same loop never waits: the healthy control.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define HOLD_US 500

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
volatile unsigned long shared_state;

static unsigned long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000ul + (unsigned long)ts.tv_nsec / 1000;
}

__attribute__((noinline)) void update_shared_state(void)
{
	unsigned long end = now_us() + HOLD_US;
	while (now_us() < end)
		shared_state = shared_state * 6364136223846793005ul + 1;
}

__attribute__((noinline)) void handle_request(void)
{
	pthread_mutex_lock(&state_lock);
	update_shared_state();
	pthread_mutex_unlock(&state_lock);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;)
		handle_request();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t;
	for (int i = 1; i < n; i++)
		pthread_create(&t, NULL, worker, NULL);
	worker(NULL);
}
