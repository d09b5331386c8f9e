/* func_workload.c — functions of known latency for the func_latency probe tests.
 *
 * Loops forever: slow_op() (sleeps SLOW_OP_US = 2 ms, so every call lands in the 2^20..2^21-1 ns
 * or 2^21.. ns log2 bucket), then recurse(DEPTH) once: DEPTH + 1 nested calls whose innermost
 * sleeps LEAF_US = 300 us, so every one of them takes at least 300 us. DEPTH is argv[1]
 * (default 5); a depth beyond the probe's per-thread limit shows calls counted as lost.
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

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 5;
	for (;;) {
		slow_op();
		recurse(depth);
	}
}
