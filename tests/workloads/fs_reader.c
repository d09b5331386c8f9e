/* fs_reader.c — a process that reads a file, for the stuck-in-the-kernel tests (tests/e2e/t_stuck.sh):
 *
 *   fs_reader PATH GO
 *
 * opens PATH, then waits until the file GO exists (polling it every 50 ms, on a file system of its
 * own), then reads PATH once in load_config() and exits. On a file system that stops answering
 * (tests/workloads/stallfs.c with its trigger made before GO) the read never returns: the thread
 * waits in the kernel for a server that does not answer, since before any run looks at it.
 * Must not: touch PATH before GO exists (its pages stay out of the page cache), or retry.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) static ssize_t load_config(int fd, char *buf, size_t len)
{
	return read(fd, buf, len); /* never returns on a stalled file system */
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: fs_reader PATH GO\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	while (access(argv[2], F_OK))
		usleep(50000);
	char buf[4096];
	return load_config(fd, buf, sizeof(buf)) < 0;
}
