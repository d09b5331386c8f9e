/* mem_grower.c — a process whose RSS grows at a known rate and that writes a file, for the /proc
 * sampler's memory and io sections (tests/e2e/t_proc_sampler.sh).
 *
 * Usage: mem_grower RATE_KIB_PER_S FILE
 * Touches fresh anonymous memory so that RATE_KIB_PER_S KiB have been touched per second since
 * the start (checked every 20 ms against the monotonic clock, so a late wake-up catches up; at
 * most 1 GiB, then it stops growing), and appends 16 KiB to FILE every 20 ms with fdatasync, so
 * wchar, syscw and write_bytes grow. Runs until killed.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REGION ((size_t)1 << 30)
#define CHUNK 16384

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: mem_grower RATE_KIB_PER_S FILE\n");
		return 2;
	}
	double rate = strtod(argv[1], NULL) * 1024.0;
	char *mem = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	static char buf[CHUNK];
	memset(buf, 'x', sizeof(buf));
	long page = sysconf(_SC_PAGESIZE);
	size_t touched = 0;
	double start = now_s();
	for (;;) {
		size_t want = (size_t)((now_s() - start) * rate);
		if (want > REGION)
			want = REGION;
		for (; touched < want; touched += (size_t)page)
			mem[touched] = 1;
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 1;
		fdatasync(fd);
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}
