/* lock_contention.c — lock contention with a known holder, for the latency tests.
 *
 * The main thread dispatches requests, WORKERS (argv[1], default 4) per millisecond, to WORKERS
 * threads waiting for work on a condition variable (as a thread pool does); each request runs
 * handle_request(), which takes one global mutex for a short update (REQUEST_US of computation).
 * With more than one worker, a background thread also runs compact_state(), which takes the same
 * mutex and holds it for COMPACT_US at a time, then rests REST_US: the requests wait for the lock
 * that compact_state() holds — the waiters' path names handle_request(), the holder's
 * compact_state(). With one worker (argv[1] = 1) there is no compactor and requests never wait
 * for the lock: the healthy control (a pool mostly waiting for work). Waits that are not the
 * lock's are for work (condition variable, epoll_wait), never sleeps, so that only the lock
 * stands out.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define REQUEST_US 50
#define COMPACT_US 3000
#define REST_MS 1

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static unsigned pending;
volatile unsigned long shared_state;

static unsigned long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000ul + (unsigned long)ts.tv_nsec / 1000;
}

__attribute__((noinline)) static void compute_for(unsigned long us)
{
	unsigned long end = now_us() + us;
	while (now_us() < end)
		shared_state = shared_state * 6364136223846793005ul + 1;
}

/* An event loop's tick: wait ms on an epoll set with nothing in it. */
static void tick(int epfd, int ms)
{
	struct epoll_event ev;
	epoll_wait(epfd, &ev, 1, ms);
}

__attribute__((noinline)) void handle_request(void)
{
	pthread_mutex_lock(&state_lock);
	compute_for(REQUEST_US);
	pthread_mutex_unlock(&state_lock);
}

__attribute__((noinline)) void compact_state(void)
{
	pthread_mutex_lock(&state_lock);
	compute_for(COMPACT_US);
	pthread_mutex_unlock(&state_lock);
}

static void *compactor(void *arg)
{
	int epfd = epoll_create1(0);
	(void)arg;
	for (;;) {
		compact_state();
		tick(epfd, REST_MS);
	}
	return NULL;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&queue_lock);
		while (!pending)
			pthread_cond_wait(&queue_cond, &queue_lock);
		pending--;
		pthread_mutex_unlock(&queue_lock);
		handle_request();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	int epfd = epoll_create1(0);
	pthread_t t;
	if (n > 1)
		pthread_create(&t, NULL, compactor, NULL);
	for (int i = 0; i < n; i++)
		pthread_create(&t, NULL, worker, NULL);
	for (;;) { /* dispatch: n requests a millisecond, dropped when the pool lags behind */
		tick(epfd, 1);
		pthread_mutex_lock(&queue_lock);
		if (pending < 16u * (unsigned)n)
			pending += (unsigned)n;
		pthread_cond_broadcast(&queue_cond);
		pthread_mutex_unlock(&queue_lock);
	}
}
