/* disk_reader.c — a request path blocked on the disk, for the latency tests: creates FILE
 * (argv[1]) of SIZE_MIB and loops in lookup_record(), which reads one 4 KiB block at a random
 * offset with O_DIRECT (no page cache: every read waits for the device), then does a little work.
 * The reads are the only waits, so most of the thread's time is in the block layer.
 * `disk_reader FILE cached` is its healthy control, the same loop on the same file read through
 * the page cache (warmed first): the reads never wait for the device.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZE_MIB 64
#define BLOCK 4096

static int fd;
static unsigned char *buf;
volatile unsigned long checksum;

__attribute__((noinline)) void lookup_record(void)
{
	off_t at = (off_t)(random() % (SIZE_MIB * 1024 * 1024 / BLOCK)) * BLOCK;
	if (pread(fd, buf, BLOCK, at) == BLOCK)
		for (int i = 0; i < BLOCK; i += 64)
			checksum += buf[i];
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "disk_reader.dat";
	bool cached = argc > 2 && strcmp(argv[2], "cached") == 0;
	int w = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	static unsigned char chunk[1 << 20];
	if (w < 0) {
		perror(path);
		return 1;
	}
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (unsigned char)(i * 2654435761u >> 24);
	for (int m = 0; m < SIZE_MIB; m++)
		if (write(w, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			return 1;
	fsync(w);
	close(w);
	fd = open(path, O_RDONLY | (cached ? 0 : O_DIRECT));
	if (fd < 0 || posix_memalign((void **)&buf, BLOCK, BLOCK)) {
		perror(path);
		return 1;
	}
	while (cached && read(fd, chunk, sizeof(chunk)) > 0) /* every block in the page cache */
		;
	puts("ready");
	fflush(stdout);
	for (;;)
		lookup_record();
}
