/* switch_storm.c — a context-switch storm: two threads pass one byte back and forth through two
 * pipes as fast as they can, so each blocks and is woken tens of thousands of times a second
 * (every hop is a switch-out, an off-CPU interval and a wakeup).
 * Usage: switch_storm — forever (the latency recipe's budget test);
 *        switch_storm ROUND_TRIPS WAIT_FD — the benchmark's loop: reads one byte from WAIT_FD (a
 *        tracer attaches meanwhile), makes ROUND_TRIPS round trips and prints ns per round trip.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];

static void *echo(void *arg)
{
	char c;
	(void)arg;
	while (read(ping[0], &c, 1) == 1 && write(pong[1], &c, 1) == 1)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char c = 'x';
	long n = argc > 2 ? atol(argv[1]) : -1;
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, echo, NULL))
		return 1;
	if (argc > 2 && read(atoi(argv[2]), &c, 1) != 1)
		return 1;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; n < 0 || i < n; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n);
	if (argc > 3) { /* hold: wait for WAIT_FD's end (a tracer stopping at our exit can be read) */
		fflush(stdout);
		while (read(atoi(argv[2]), &c, 1) > 0)
			;
	}
	return 0;
}
