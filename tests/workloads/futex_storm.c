/* futex_storm.c — CPU burnt on lock hand-offs, for the high-cpu tests: THREADS (argv[1], default
 * 4) threads loop forever over update_counters(), which takes one global mutex for a few hundred
 * nanoseconds of work, then does as little outside it. With more threads than CPUs contending,
 * nearly every acquisition finds the lock taken: the waiter sleeps in futex(), the owner wakes it
 * on release, and most of the CPU goes to the kernel's futex and scheduler paths, entered from
 * pthread_mutex_lock / unlock under update_counters().
 *
 * `futex_storm THREADS private` is the healthy control of the same shape: each thread has a
 * mutex of its own (never contended, no futex calls): the CPU stays in user code.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64
#define WORK_ITERATIONS 64

struct slot {
	pthread_mutex_t lock;
	volatile unsigned long counters[8];
} __attribute__((aligned(128)));

static struct slot shared = { .lock = PTHREAD_MUTEX_INITIALIZER };
static struct slot own[MAX_THREADS];

__attribute__((noinline)) static void update_counters(struct slot *s, unsigned long seed)
{
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < WORK_ITERATIONS; i++)
		s->counters[i & 7] += seed * i;
	pthread_mutex_unlock(&s->lock);
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	for (unsigned long n = 0;; n++)
		update_counters(s, n);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	int private = argc > 2 && strcmp(argv[2], "private") == 0;
	if (threads < 1 || threads > MAX_THREADS)
		return 2;
	pthread_t t[MAX_THREADS];
	for (int i = 0; i < threads; i++) {
		if (private)
			pthread_mutex_init(&own[i].lock, NULL);
		pthread_create(&t[i], NULL, worker, private ? &own[i] : &shared);
	}
	pthread_join(t[0], NULL);
	return 0;
}
