/* fork_workers — a parent that runs its work in short-lived children, one after another: each
 * child spins in short_job() for MS milliseconds (default 20) and exits; the parent only forks
 * and waits. Nearly all of the CPU goes to processes that live less than a scan's second: a
 * selection that covers children only when a rescan finds them sees almost none of it.
 *
 *   fork_workers [MS [PROGRAM]]   with PROGRAM, each child execs it as "PROGRAM child MS" (a
 *                                 link to this file under another name: the child then runs
 *                                 short_job() under that name)
 *   fork_workers child MS         one job, then exit
 */
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static uint64_t short_job(uint64_t ms)
{
	volatile uint64_t acc = 0;
	uint64_t end = now_ns() + ms * 1000000u;
	while (now_ns() < end)
		for (int i = 0; i < 10000; i++)
			acc += (uint64_t)i * 2654435761u;
	return acc;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "child") == 0)
		return (int)(short_job(strtoull(argv[2], NULL, 10)) & 1);
	uint64_t ms = argc > 1 ? strtoull(argv[1], NULL, 10) : 20;
	const char *program = argc > 2 ? argv[2] : NULL;
	for (;;) {
		pid_t child = fork();
		if (child == 0 && program) {
			execl(program, program, "child", argv[1], (char *)NULL);
			perror(program);
			_exit(127);
		}
		if (child == 0)
			_exit((int)(short_job(ms) & 1));
		if (child < 0) {
			usleep(10000);
			continue;
		}
		while (waitpid(child, NULL, 0) < 0)
			;
	}
}
