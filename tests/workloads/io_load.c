/* io_load.c — test workloads for `diagnose io-saturation`, one per cause, each running until
 * killed (or for the seconds given last):
 *   io_load journal FILE [SECONDS]   append a 128-byte record, then fsync, forever: the
 *                                    fsync-per-write journal (main → journal_run →
 *                                    journal_commit → fsync)
 *   io_load logger FILE [SECONDS]    a log line every 200 ms, no fsync: the healthy control
 *   io_load randread PATH THREADS [SECONDS]
 *                                    4 KiB O_DIRECT reads at random offsets of PATH (a file or a
 *                                    block device) from THREADS threads: a saturated device
 *   io_load seqread PATH [SECONDS]   64 KiB O_DIRECT reads in order, wrapping at the end: what a
 *                                    cgroup's blkio.throttle.read_bps_device holds back
 * Must not: write outside the path it is given.
 */
#define _GNU_SOURCE /* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

static double seconds = 0; /* 0: forever */
static struct timespec started;

static int expired(void)
{
	struct timespec now;
	if (seconds <= 0)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) / 1e9 >= seconds;
}

__attribute__((noinline)) static int journal_commit(int fd)
{
	return fsync(fd);
}

__attribute__((noinline)) static void journal_run(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	char rec[128];
	for (unsigned long n = 0; !expired(); n++) {
		int len = snprintf(rec, sizeof(rec), "txn %lu commit\n", n);
		memset(rec + len, '.', sizeof(rec) - (size_t)len - 1);
		rec[sizeof(rec) - 1] = '\n';
		if (write(fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec) || journal_commit(fd)) {
			perror("journal");
			exit(1);
		}
		if (n % 4096 == 4095 && ftruncate(fd, 0)) /* keep the file small */
			perror("ftruncate");
	}
	close(fd);
}

__attribute__((noinline)) static void logger_run(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0) {
		perror(path);
		exit(1);
	}
	for (unsigned long n = 0; !expired(); n++) {
		char line[96];
		int len = snprintf(line, sizeof(line), "request %lu served in 3 ms\n", n);
		if (write(fd, line, (size_t)len) != len)
			perror("log");
		usleep(200000);
	}
	close(fd);
}

struct reader {
	const char *path;
	unsigned seed;
	size_t block;
	int random;
};

static uint64_t size_of(int fd)
{
	struct stat st;
	uint64_t bytes = 0;
	if (fstat(fd, &st) == 0 && S_ISBLK(st.st_mode))
		ioctl(fd, BLKGETSIZE64, &bytes);
	else if (fstat(fd, &st) == 0)
		bytes = (uint64_t)st.st_size;
	return bytes;
}

__attribute__((noinline)) static void *read_run(void *arg)
{
	struct reader *r = arg;
	int fd = open(r->path, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		perror(r->path);
		exit(1);
	}
	uint64_t blocks = size_of(fd) / r->block;
	if (blocks == 0) {
		fprintf(stderr, "%s: too small\n", r->path);
		exit(1);
	}
	void *buf;
	if (posix_memalign(&buf, 4096, r->block))
		exit(1);
	for (uint64_t i = 0; !expired(); i++) {
		uint64_t blk = r->random ? (uint64_t)rand_r(&r->seed) * 2654435761u % blocks : i % blocks;
		if (pread(fd, buf, r->block, (off_t)(blk * r->block)) < 0) {
			perror("pread");
			exit(1);
		}
	}
	free(buf);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: io_load journal|logger|randread|seqread PATH [THREADS] [SECONDS]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &started);
	const char *mode = argv[1], *path = argv[2];
	if (strcmp(mode, "journal") == 0 || strcmp(mode, "logger") == 0) {
		if (argc > 3)
			seconds = atof(argv[3]);
		if (mode[0] == 'j')
			journal_run(path);
		else
			logger_run(path);
		return 0;
	}
	if (strcmp(mode, "randread") == 0) {
		int threads = argc > 3 ? atoi(argv[3]) : 4;
		if (argc > 4)
			seconds = atof(argv[4]);
		if (threads < 1 || threads > 64)
			threads = 4;
		pthread_t tid[64];
		struct reader rd[64];
		for (int i = 0; i < threads; i++) {
			rd[i] = (struct reader){ path, (unsigned)i * 7919u + 1, 4096, 1 };
			pthread_create(&tid[i], NULL, read_run, &rd[i]);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(tid[i], NULL);
		return 0;
	}
	if (strcmp(mode, "seqread") == 0) {
		if (argc > 3)
			seconds = atof(argv[3]);
		struct reader rd = { path, 1, 65536, 0 };
		read_run(&rd);
		return 0;
	}
	fprintf(stderr, "io_load: unknown mode %s\n", mode);
	return 2;
}
