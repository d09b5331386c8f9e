/* malloc_loop.c — the cost of one malloc + free pair, for measuring the allocations probe
 * against an empty uprobe floor and bpftrace (docs/performance.md, "Allocation tracing").
 *
 * Usage: malloc_loop PAIRS [WAIT_FD]
 * With WAIT_FD, first reads one byte from that fd (a tracer attaches to its pid meanwhile: make
 * bench part 8, as getppid_loop), then makes PAIRS malloc(64) +
 * free pairs through a non-inlined caller and prints the CPU time (user + system, its own:
 * uprobe traps are charged to it; the wall time on a shared machine measures the neighbours) in
 * nanoseconds per pair on stdout. Owns nothing else.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <unistd.h>

static void *volatile sink;

static void one_pair(void)
{
	void *p = malloc(64);
	sink = p;
	free(p);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	long pairs = strtol(argv[1], NULL, 10);
	if (argc > 2) {
		char c;
		if (read(atoi(argv[2]), &c, 1) < 0)
			return 1;
	}
	struct rusage a, b;
	getrusage(RUSAGE_SELF, &a);
	for (long i = 0; i < pairs; i++)
		one_pair();
	getrusage(RUSAGE_SELF, &b);
	double us = (double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_stime.tv_sec) * 1e6 +
		    (double)(b.ru_utime.tv_usec - a.ru_utime.tv_usec + b.ru_stime.tv_usec - a.ru_stime.tv_usec);
	double ns = us * 1000.0;
	printf("%.1f\n", ns / (double)pairs);
	return 0;
}
