/* getppid_loop.c — benchmark workload: N calls of syscall(SYS_getppid), prints ns per call.
 * Usage: getppid_loop ITERATIONS [WAIT_FD [hold]]. With WAIT_FD, it first reads one byte from that
 * fd so a tracer can attach to its pid before the timed loop starts; with hold, it prints and
 * then waits for that fd's end before exiting (a tracer that stops when its target exits is
 * still there to be read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	if (argc > 2) {
		char c;
		if (read(atoi(argv[2]), &c, 1) < 0)
			return 1;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
	printf("%.1f\n", ns);
	if (argc > 3) {
		char c;
		fflush(stdout);
		while (read(atoi(argv[2]), &c, 1) > 0)
			;
	}
	return 0;
}
