/* slab_grower.c — grows a kernel slab cache at a known rate, or churns it without growth, for
 * host-wide memory-growth (tests/e2e/t_memory_host.sh).
 *
 * Usage: slab_grower DIR FILES_PER_S MAX_FILES grow|churn
 * grow:  creates empty files DIR/gNNNNNNN at FILES_PER_S (checked every 10 ms against the
 *        monotonic clock, so a late wake-up catches up) and keeps them, up to MAX_FILES; then it
 *        idles. On a tmpfs each file holds a shmem inode (shmem_inode_cache, ~750 bytes, not
 *        reclaimable while the file exists) and a dentry.
 * churn: the same rate of creations, each file unlinked right after: the same 1024 names over
 *        and over, so the caches do not grow.
 * Runs until killed; the files are left for the caller to remove (with the tmpfs).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int make_file(const char *dir, const char *prefix, unsigned long n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s%07lu", dir, prefix, n);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[4], "grow") && strcmp(argv[4], "churn"))) {
		fprintf(stderr, "usage: slab_grower DIR FILES_PER_S MAX_FILES grow|churn\n");
		return 2;
	}
	const char *dir = argv[1];
	double rate = strtod(argv[2], NULL);
	unsigned long max = strtoul(argv[3], NULL, 10);
	bool churn = !strcmp(argv[4], "churn");
	double t0 = now_s();
	unsigned long made = 0;
	for (;;) {
		unsigned long due = (unsigned long)((now_s() - t0) * rate);
		if (!churn && due > max)
			due = max;
		for (; made < due; made++) {
			if (make_file(dir, churn ? "c" : "g", churn ? made % 1024 : made) < 0) {
				fprintf(stderr, "slab_grower: %s: %s\n", dir, strerror(errno));
				return 1;
			}
			if (churn) {
				char path[4096];
				snprintf(path, sizeof(path), "%s/c%07lu", dir, made % 1024);
				unlink(path);
			}
		}
		usleep(10000);
	}
}
