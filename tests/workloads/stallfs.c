/* stallfs.c — a FUSE file system that stops answering: the slow path a hostile target (or a dead
 * network server) puts under the files it maps (tests/e2e/t_hostile.sh).
 *
 *   stallfs MOUNTPOINT FILE TRIGGER [NAME]
 *
 * serves one file, /bin or /NAME (e.g. jdk/lib/server/libjvm.so, its directories made up: a
 * JVM's tree), with FILE's bytes (read into memory at start, mode 0755: a program can be run
 * from it, a library mapped), until TRIGGER exists; from then on every open, read and getattr
 * (of the file and of its directories) waits for ever
 * (the request is never answered; killing stallfs aborts the connection and ends the waits).
 * Single-threaded requests would let one stalled request hold every other: the default
 * multi-threaded loop keeps answering what it still answers.
 * Must not: answer a request made after the trigger, or serve anything but that file.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <stdbool.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *content;
static size_t content_len;
static const char *trigger;
static char served[256] = "/bin"; /* the file's path in the file system */

/* path is a directory above the served file ("/", "/jdk", "/jdk/lib"...). */
static bool is_dir(const char *path)
{
	size_t n = strlen(path);
	return !strcmp(path, "/") || (n < strlen(served) && !strncmp(served, path, n) && served[n] == '/');
}

static void stall_if_triggered(void)
{
	while (access(trigger, F_OK) == 0)
		pause(); /* never answered */
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (is_dir(path)) {
		if (strcmp(path, "/"))
			stall_if_triggered();
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, served))
		return -ENOENT;
	stall_if_triggered();
	st->st_mode = S_IFREG | 0755;
	st->st_nlink = 1;
	st->st_size = (off_t)content_len;
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	if (!is_dir(path))
		return -ENOENT;
	size_t n = strcmp(path, "/") ? strlen(path) : 0;
	char next[256];
	snprintf(next, sizeof(next), "%.*s", (int)strcspn(served + n + 1, "/"), served + n + 1);
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, next, NULL, 0, 0);
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, served))
		return -ENOENT;
	stall_if_triggered();
	fi->keep_cache = 1; /* the program's pages stay cached: it runs on after the trigger */
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	if (strcmp(path, served))
		return -ENOENT;
	stall_if_triggered();
	if ((size_t)off >= content_len)
		return 0;
	if (size > content_len - (size_t)off)
		size = content_len - (size_t)off;
	memcpy(buf, content + off, size);
	return (int)size;
}

static const struct fuse_operations ops = {
	.getattr = fs_getattr,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
};

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: stallfs MOUNTPOINT FILE TRIGGER [NAME]\n");
		return 2;
	}
	if (argc == 5 && (argv[4][0] == '/' || !argv[4][0] || strstr(argv[4], "//") ||
			  (size_t)snprintf(served, sizeof(served), "/%s", argv[4]) >= sizeof(served))) {
		fprintf(stderr, "stallfs: NAME must be relative, without empty components\n");
		return 2;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f || fseek(f, 0, SEEK_END) || (content_len = (size_t)ftell(f)) == 0 ||
	    fseek(f, 0, SEEK_SET) || !(content = malloc(content_len)) ||
	    fread(content, 1, content_len, f) != content_len) {
		perror(argv[2]);
		return 1;
	}
	fclose(f);
	trigger = argv[3];
	char *fargs[] = { argv[0], "-f", "-o", "allow_other,default_permissions,ro", argv[1], NULL };
	return fuse_main(5, fargs, &ops, NULL);
}
