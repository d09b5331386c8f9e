/* map_grower.c — a process whose address space changes by known call paths at known rates, for
 * the mappings probe (tests/e2e/t_mappings.sh).
 *
 * Usage: map_grower
 * Every 200 ms (on a schedule against the monotonic clock: a late wake-up catches up), each
 * through glibc's own wrappers (mmap, munmap, sbrk, mremap, madvise: frameless, their caller is
 * what the probe must name):
 *   grow_mmap()    maps 1 MiB of anonymous memory, touches every page and keeps it (5 MiB/s);
 *   grow_brk()     raises the heap's break by 256 KiB with sbrk, touches it and keeps it
 *                  (1.25 MiB/s);
 *   churn_mmap()   maps 1 MiB, touches it and unmaps it (net 0);
 *   grow_mremap()  grows a buffer by 64 KiB with mremap (it may move), touches the new part
 *                  (320 KiB/s);
 *   map_file()     maps 64 KiB of its own executable read-only and keeps it (320 KiB/s);
 *   purge()        gives a 1 MiB region mapped at start back with MADV_DONTNEED (5 MiB/s).
 * Once, at the first tick after a SIGUSR1:
 *   release_early()  unmaps the 4 MiB it mapped at start (a region older than any window);
 *   fixed_over()     maps 1 MiB and maps its upper half again, PROT_NONE, with MAP_FIXED;
 *   trim_middle()    maps 1 MiB and unmaps the 256 KiB in its middle;
 *   shrink_mremap()  maps 1 MiB and shrinks it to 512 KiB with mremap;
 *   shrink_brk()     lowers the break by 128 KiB (what grow_brk raised it by last).
 * Nothing else allocates after the start (no stdio, no malloc: the heap's break is
 * grow_brk's). Growth stops after 60 s (at most ~420 MiB); runs until killed.
 */
#define _GNU_SOURCE /* mremap */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define TICK_NS 200000000LL
#define GROW_TICKS 300 /* 60 s */

static long page;
static int self_fd = -1;
static char *buffer, *purged, *early;
static size_t buffer_len;
static volatile sig_atomic_t signalled;

static void touch(char *p, size_t len)
{
	for (size_t i = 0; i < len; i += (size_t)page)
		p[i] = 1;
}

static void grow_mmap(void)
{
	char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	touch(p, MIB);
}

static void grow_brk(void)
{
	char *p = sbrk(256 * 1024);
	if (p == (void *)-1)
		exit(1);
	touch(p, 256 * 1024);
}

static void churn_mmap(void)
{
	char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	touch(p, MIB);
	if (munmap(p, MIB))
		exit(1);
}

static void grow_mremap(void)
{
	char *p = mremap(buffer, buffer_len, buffer_len + 64 * 1024, MREMAP_MAYMOVE);
	if (p == MAP_FAILED)
		exit(1);
	touch(p + buffer_len, 64 * 1024);
	buffer = p;
	buffer_len += 64 * 1024;
}

static void map_file(void)
{
	if (mmap(NULL, 64 * 1024, PROT_READ, MAP_PRIVATE, self_fd, 0) == MAP_FAILED)
		exit(1);
}

static void purge(void)
{
	touch(purged, MIB);
	if (madvise(purged, MIB, MADV_DONTNEED))
		exit(1);
}

static void release_early(void)
{
	if (munmap(early, 4 * MIB))
		exit(1);
}

static void fixed_over(void)
{
	char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	touch(p, MIB);
	if (mmap(p + MIB / 2, MIB / 2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
	    MAP_FAILED)
		exit(1);
}

static void trim_middle(void)
{
	char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || munmap(p + 384 * 1024, 256 * 1024))
		exit(1);
}

static void shrink_mremap(void)
{
	char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mremap(p, MIB, MIB / 2, 0) == MAP_FAILED)
		exit(1);
}

static void shrink_brk(void)
{
	if (sbrk(-128 * 1024) == (void *)-1)
		exit(1);
}

static void on_usr1(int sig)
{
	(void)sig;
	if (!signalled)
		signalled = 1;
}

int main(void)
{
	page = sysconf(_SC_PAGESIZE);
	self_fd = open("/proc/self/exe", O_RDONLY);
	buffer_len = 64 * 1024;
	buffer = mmap(NULL, buffer_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	purged = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	early = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (self_fd < 0 || buffer == MAP_FAILED || purged == MAP_FAILED || early == MAP_FAILED)
		return 1;
	signal(SIGUSR1, on_usr1);
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long tick = 0;; tick++) {
		if (tick < GROW_TICKS) {
			grow_mmap();
			grow_brk();
			grow_mremap();
			map_file();
		}
		churn_mmap();
		purge();
		if (signalled == 1) {
			signalled = 2;
			release_early();
			fixed_over();
			trim_middle();
			shrink_mremap();
			shrink_brk();
		}
		next.tv_nsec += TICK_NS;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
}
