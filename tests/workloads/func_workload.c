/* func_workload.c — functions of known latency for the func_latency probe tests.
 *
 * Loops forever: slow_op() (sleeps SLOW_OP_US = 2 ms, so every call lands in the 2^20..2^21-1 ns
 * or 2^21.. ns log2 bucket), then recurse(DEPTH) once: DEPTH + 1 nested calls whose innermost
 * sleeps LEAF_US = 300 us, so every one of them takes at least 300 us. DEPTH is argv[1]
 * (default 5); a depth beyond the probe's per-thread limit shows calls counted as lost.
 * argv[2] (default 0) is the milliseconds of CPU spin() burns after each recurse(): without it
 * the process runs only for microseconds after each timer wakeup, which a cpu-clock sampler
 * (its hrtimer the one the wakeup is coalesced with, within the timer slack) may never catch.
 */
#include <stdlib.h>
#include <time.h>

#define SLOW_OP_US 2000
#define LEAF_US 300

volatile unsigned long sink; /* a side effect after each recursive call: no tail call */

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) != 0)
		;
}

__attribute__((noinline)) void slow_op(void)
{
	sleep_us(SLOW_OP_US);
	sink++;
}

__attribute__((noinline)) unsigned long recurse(int depth)
{
	unsigned long r;
	if (depth <= 0) {
		sleep_us(LEAF_US);
		r = 1;
	} else {
		r = recurse(depth - 1) + 1;
	}
	sink += r;
	return r;
}

/* Burns ms milliseconds of this thread's CPU time. */
__attribute__((noinline)) void spin(long ms)
{
	struct timespec start, now;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < ms * 1000000L);
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 5;
	long spin_ms = argc > 2 ? atol(argv[2]) : 0;
	for (;;) {
		slow_op();
		recurse(depth);
		if (spin_ms > 0)
			spin(spin_ms);
	}
}
