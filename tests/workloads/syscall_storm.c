/* syscall_storm.c — test workload whose CPU goes to the kernel: unbuffered one-byte write()s
 * to /dev/null in a tight loop (the "logging without a buffer" pattern).
 * Runs until killed, or for argv[1] seconds.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void log_byte(int fd, char c)
{
	if (write(fd, &c, 1) != 1)
		exit(1);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		return 1;
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned long i = 0;; i++) {
		log_byte(fd, (char)i);
		if (seconds > 0 && (i & 1023) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 > seconds)
				return 0;
		}
	}
}
