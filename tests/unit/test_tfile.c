/* test_tfile.c — the reader of the files a target names (engine/target/tfile.c).
 *
 * Opening: a FIFO, a directory and a device are refused without blocking; a file whose inode is
 * not the mapping's is refused. Images: the symbol tables and CFI of a real library are in, its
 * code is not (zeros, the section marked SHT_NOBITS), libelf reads the image and a memfd copy of
 * it alike. Waits: a read that never ends (a blocking FIFO open run as a job) is left behind at
 * the reader's limit, its file system is then refused at once while another one is read, after
 * TFILE_MAX_STALLED stalls nothing more is read, and a stop descriptor or a past deadline ends a
 * wait at once; the note says so. A descriptor of ours is read in a helper, to its end or a cap,
 * and one that never ends is left behind like a stalled file. A helper holds no descriptor of
 * ours but its socket.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fixture_path.h"
#include "target/tfile.h"
#include "common/util.h"

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_tfile.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void expect_refused(struct tfile_reader *r, const struct tfile_src *src, const char *needle)
{
	struct tfile_image *img = NULL;
	struct diag_err err = { 0 };
	assert_int_equal(tfile_read_elf(r, src, 0, &img, &err), -1);
	assert_null(img);
	assert_int_equal(err.code, TFILE_FAIL_FILE);
	if (!strstr(err.msg, needle))
		fail_msg("\"%s\" lacks \"%s\"", err.msg, needle);
}

static void test_not_regular(void **state)
{
	(void)state;
	struct tfile_reader *r = tfile_reader_new();
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/x.dbg", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* no writer: an open for reading would block for ever */
	expect_refused(r, &(struct tfile_src){ .path = fifo }, "a FIFO, not read");
	expect_refused(r, &(struct tfile_src){ .path = tmpdir }, "a directory");
	expect_refused(r, &(struct tfile_src){ .path = "/dev/null" }, "a character device");
	expect_refused(r, &(struct tfile_src){ .path = "/nonexistent/x" }, "cannot open");
	struct diag_err err = { 0 };
	assert_null(tfile_read_text(r, &(struct tfile_src){ .path = fifo }, 4096, NULL, NULL, &err));
	assert_int_equal(err.code, TFILE_FAIL_FILE);
	assert_null(tfile_reader_note(r)); /* the files' own fault: nothing stalled */
	tfile_reader_free(r);
}

static void test_identity(void **state)
{
	(void)state;
	const char *lib = fixture_path("libsymfix.so");
	if (!lib) {
		skip();
		return;
	}
	struct stat st;
	assert_int_equal(stat(lib, &st), 0);
	struct tfile_reader *r = tfile_reader_new();
	expect_refused(r, &(struct tfile_src){ .path = lib, .ino = (uint64_t)st.st_ino + 1 },
		       "not the mapped file");
	expect_refused(r,
		       &(struct tfile_src){ .path = lib, .ino = (uint64_t)st.st_ino,
					    .dev = ((uint64_t)major(st.st_dev) + 1) << 32 },
		       "another device");
	struct tfile_image *img;
	struct diag_err err;
	assert_int_equal(tfile_read_elf(r, &(struct tfile_src){ .path = lib, .ino = (uint64_t)st.st_ino },
					TFILE_KEEP_FD | TFILE_CRC, &img, &err), 0);
	assert_true(img->fd >= 0); /* kept: a uprobe goes on this very file */
	struct stat kept;
	assert_int_equal(fstat(img->fd, &kept), 0);
	assert_int_equal(kept.st_ino, st.st_ino);
	assert_int_equal(img->size, (size_t)st.st_size);
	assert_true(img->crc != 0);
	tfile_image_free(img);
	tfile_reader_free(r);
}

/* The section named `name` of elf: its header. */
static bool section(Elf *elf, const char *name, GElf_Shdr *out)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, out)) {
			const char *n = elf_strptr(elf, shstrndx, out->sh_name);
			if (n && !strcmp(n, name))
				return true;
		}
	return false;
}

static void check_image_elf(Elf *elf, const unsigned char *bytes)
{
	GElf_Shdr sh;
	assert_non_null(elf);
	assert_int_equal(elf_kind(elf), ELF_K_ELF);
	assert_true(section(elf, ".symtab", &sh));
	assert_int_equal(sh.sh_type, SHT_SYMTAB);
	assert_true(section(elf, ".eh_frame", &sh));
	assert_int_equal(sh.sh_type, SHT_PROGBITS);
	assert_true(section(elf, ".text", &sh));
	assert_int_equal(sh.sh_type, SHT_NOBITS); /* not read: marked so */
	if (bytes) /* its bytes were never read */
		for (uint64_t i = 0; i < sh.sh_size; i++)
			assert_int_equal(bytes[sh.sh_offset + i], 0);
	/* the symbol table reads as libelf reads it from the file */
	assert_true(section(elf, ".symtab", &sh));
	Elf_Scn *scn = NULL;
	bool found = false;
	while ((scn = elf_nextscn(elf, scn)) && !found) {
		GElf_Shdr h;
		if (!gelf_getshdr(scn, &h) || h.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < h.sh_size / h.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;
			if (gelf_getsym(data, (int)i, &s) && (n = elf_strptr(elf, h.sh_link, s.st_name)) &&
			    !strcmp(n, "lib_local"))
				found = true;
		}
	}
	assert_true(found);
}

static void test_elf_image(void **state)
{
	(void)state;
	const char *lib = fixture_path("libsymfix.so");
	if (!lib) {
		skip();
		return;
	}
	struct tfile_reader *r = tfile_reader_new();
	struct tfile_image *img;
	struct diag_err err;
	assert_int_equal(tfile_read_elf(r, &(struct tfile_src){ .path = lib }, 0, &img, &err), 0);
	assert_int_equal(img->fd, -1);
	assert_int_equal(img->memfd, -1); /* not asked for: closed */
	assert_int_equal(tfile_image_memfd(img), -1);
	tfile_image_free(img);
	assert_int_equal(tfile_read_elf(r, &(struct tfile_src){ .path = lib }, TFILE_KEEP_MEMFD, &img, &err), 0);
	Elf *elf = tfile_image_elf(img);
	check_image_elf(elf, img->bytes);
	elf_end(elf);

	int fd = tfile_image_memfd(img);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	check_image_elf(elf, NULL);
	elf_end(elf);
	close(fd);

	/* given back: the memfd's whole pages within a range are freed and read as zeros after; a
	 * range inside one page frees nothing */
	size_t page = (size_t)sysconf(_SC_PAGESIZE), whole = img->size / page * page;
	assert_true(whole >= page);
	tfile_image_release(img, 1, page - 2);
	assert_memory_equal(img->bytes, "\177ELF", 4);
	struct stat st;
	assert_int_equal(fstat(img->memfd, &st), 0);
	blkcnt_t before = st.st_blocks;
	tfile_image_release(img, 0, img->size);
	assert_int_equal(fstat(img->memfd, &st), 0);
	assert_true(st.st_blocks < before);
	assert_int_equal(st.st_size, (off_t)img->size); /* the size kept */
	for (size_t i = 0; i < whole; i++)
		if (img->bytes[i])
			fail_msg("byte %zu of a released image is %u", i, img->bytes[i]);
	tfile_image_free(img);

	/* text and memory */
	size_t len;
	char *maps = tfile_read_proc(r, getpid(), "maps", TFILE_MAX_TEXT_BYTES, &len, &err);
	assert_non_null(maps);
	assert_true(len > 0 && strlen(maps) == len);
	assert_non_null(strstr(maps, "test_tfile"));
	free(maps);
	static const char probe[] = "memory read through /proc/PID/mem";
	char buf[sizeof(probe)];
	assert_int_equal(tfile_read_mem(r, getpid(), (uint64_t)(uintptr_t)probe, sizeof(probe), buf, &err), 0);
	assert_string_equal(buf, probe);
	char *cut = tfile_read_text(r, &(struct tfile_src){ .path = lib }, 10, &len, NULL, &err);
	assert_non_null(cut); /* a longer file is read that far */
	assert_int_equal(len, 10);
	free(cut);
	tfile_reader_free(r);
}

/* A read that does answer, on file system dev. */
static int quick(struct tfile_reader *r, uint64_t dev, struct diag_err *err)
{
	size_t len;
	char *t = tfile_read_text(r, &(struct tfile_src){ .path = "/proc/self/stat", .dev = dev, .proc = true },
				  4096, &len, NULL, err);
	free(t);
	return t ? 0 : -1;
}

static void release(const char *fifo)
{
	int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC); /* its blocked reader is there */
	if (fd >= 0)
		close(fd);
}

static void test_stalls(void **state)
{
	(void)state;
	struct tfile_reader *r = tfile_reader_new();
	struct diag_err err;
	char fifos[TFILE_MAX_STALLED][PATH_MAX];
	for (int i = 0; i < TFILE_MAX_STALLED; i++) {
		snprintf(fifos[i], sizeof(fifos[i]), "%s/stall%d", tmpdir, i);
		assert_int_equal(mkfifo(fifos[i], 0600), 0);
	}
	/* a file system that does not answer: the wait ends, the helper is left behind */
	assert_int_equal(tfile_reader_test_block(r, 7, fifos[0], &err), -1);
	assert_int_equal(err.code, TFILE_FAIL_WAIT);
	assert_non_null(strstr(err.msg, "no answer within"));
	/* the same file system: refused at once; another one: read */
	assert_int_equal(quick(r, 7, &err), -1);
	assert_non_null(strstr(err.msg, "stalled a read before"));
	assert_int_equal(quick(r, 8, &err), 0);
	/* more stalls, each on its own file system, up to the limit: then nothing is read */
	for (int i = 1; i < TFILE_MAX_STALLED; i++)
		assert_int_equal(tfile_reader_test_block(r, 100 + (uint64_t)i, fifos[i], &err), -1);
	assert_int_equal(quick(r, 9, &err), -1);
	assert_non_null(strstr(err.msg, "nothing more is read"));
	char *note = tfile_reader_note(r);
	assert_non_null(note);
	char want[64];
	snprintf(want, sizeof(want), "%d stalled", TFILE_MAX_STALLED);
	if (!strstr(note, want))
		fail_msg("note \"%s\" lacks \"%s\"", note, want);
	free(note);
	/* a helper that answers late frees its file system again */
	release(fifos[0]);
	for (int tries = 0; tries < 200 && quick(r, 7, &err); tries++)
		usleep(10000);
	assert_int_equal(quick(r, 7, &err), 0);
	tfile_reader_free(r); /* the helpers still blocked are killed: a FIFO open is killable */
	for (int i = 1; i < TFILE_MAX_STALLED; i++)
		release(fifos[i]);
}

static void test_stop_and_deadline(void **state)
{
	(void)state;
	struct tfile_reader *r = tfile_reader_new();
	struct diag_err err;
	char fifo[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/stop", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(stop >= 0);
	tfile_reader_set_stop_fd(r, stop);
	assert_int_equal(quick(r, 1, &err), 0);
	uint64_t one = 1;
	assert_int_equal(write(stop, &one, sizeof(one)), (ssize_t)sizeof(one));
	assert_int_equal(quick(r, 1, &err), -1);
	assert_non_null(strstr(err.msg, "stop signal"));
	tfile_reader_set_stop_fd(r, -1);
	close(stop);
	/* a deadline in the past: no read starts */
	tfile_reader_set_deadline(r, mono_ns() - 1);
	assert_int_equal(quick(r, 1, &err), -1);
	assert_non_null(strstr(err.msg, "past the run's time"));
	/* a deadline soon: a read that does not answer ends there */
	tfile_reader_set_deadline(r, mono_ns() + 50000000ull);
	assert_int_equal(tfile_reader_test_block(r, 2, fifo, &err), -1);
	assert_non_null(strstr(err.msg, "not read by the end of the run's time"));
	char *note = tfile_reader_note(r);
	assert_non_null(note);
	assert_non_null(strstr(note, "1 cut short by a stop signal"));
	free(note);
	tfile_reader_free(r);
	release(fifo);
}

/* A descriptor of ours read in a helper: a pipe's bytes to its end, at most max of them; one whose
 * writer never writes nor closes (a read that waits for ever) ends at the reader's limit, and its
 * stall domain is then refused at once while another one is read. */
static void test_read_fd(void **state)
{
	(void)state;
	struct tfile_reader *r = tfile_reader_new();
	struct diag_err err;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "records\0and more", 16), 16);
	close(p[1]);
	size_t len = 0;
	char *got = tfile_read_fd(r, p[0], 1, "a pipe", 1 << 20, &len, &err);
	close(p[0]);
	assert_non_null(got);
	assert_int_equal(len, 16);
	assert_memory_equal(got, "records\0and more", 16);
	free(got);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "0123456789", 10), 10);
	close(p[1]);
	got = tfile_read_fd(r, p[0], 1, "a pipe", 4, &len, &err);
	close(p[0]);
	assert_non_null(got);
	assert_int_equal(len, 4);
	free(got);
	/* a writer that never closes: the helper waits for ever in read() */
	assert_int_equal(pipe(p), 0);
	uint64_t t0 = mono_ns();
	assert_null(tfile_read_fd(r, p[0], 2, "a silent pipe", 1 << 20, &len, &err));
	assert_int_equal(err.code, TFILE_FAIL_WAIT);
	assert_true(mono_ns() - t0 < 3 * TFILE_WAIT_NS);
	close(p[0]);
	int q[2];
	assert_int_equal(pipe(q), 0);
	close(q[1]);
	assert_null(tfile_read_fd(r, q[0], 2, "the same domain", 1 << 20, &len, &err));
	assert_non_null(strstr(err.msg, "stalled a read before"));
	got = tfile_read_fd(r, q[0], 3, "another domain", 1 << 20, &len, &err);
	assert_non_null(got);
	assert_int_equal(len, 0);
	free(got);
	close(q[0]);
	close(p[1]);
	tfile_reader_free(r);
}

/* A helper holds nothing of ours: no descriptor but its socket and /dev/null. */
/* The helpers of process pid's zygotes: every grandchild (our children are the zygotes). */
static size_t grandchildren(int *out, size_t max)
{
	char path[128];
	size_t n = 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", getpid());
	FILE *f = fopen(path, "r");
	for (int z; f && fscanf(f, "%d", &z) == 1;) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", z, z);
		FILE *g = fopen(path, "r");
		for (int c; g && n < max && fscanf(g, "%d", &c) == 1;)
			out[n++] = c;
		if (g)
			fclose(g);
	}
	if (f)
		fclose(f);
	return n;
}

/* A helper holds nothing of ours: no descriptor but its socket and /dev/null, and no mapping made
 * after its reader (a BPF ring buffer, an image) — the zygote forked it from what was before. */
static void test_helper_holds_nothing(void **state)
{
	(void)state;
	struct tfile_reader *r = tfile_reader_new();
	struct diag_err err;
	char fifo[PATH_MAX], marker[PATH_MAX];
	snprintf(fifo, sizeof(fifo), "%s/hold", tmpdir);
	snprintf(marker, sizeof(marker), "%s/marker", tmpdir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	int ours = open(marker, O_RDWR | O_CREAT, 0600); /* not close-on-exec: a fork would inherit it */
	assert_true(ours >= 0);
	assert_int_equal(ftruncate(ours, 4096), 0);
	void *mapped = mmap(NULL, 4096, PROT_READ, MAP_SHARED, ours, 0); /* made after the reader */
	assert_true(mapped != MAP_FAILED);
	assert_int_equal(tfile_reader_test_block(r, 3, fifo, &err), -1); /* left blocked */
	int helpers[16];
	size_t n = grandchildren(helpers, 16);
	assert_true(n >= 1);
	char out[8192] = "";
	for (size_t i = 0; i < n; i++) {
		char path[128];
		snprintf(path, sizeof(path), "/proc/%d/fd", helpers[i]);
		DIR *d = opendir(path);
		for (struct dirent *e; d && (e = readdir(d));) {
			char link[512], target[256];
			snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
			ssize_t len = readlink(link, target, sizeof(target) - 1);
			if (len > 0 && strlen(out) + (size_t)len + 2 < sizeof(out)) {
				target[len] = '\0';
				strcat(out, target);
				strcat(out, "\n");
			}
		}
		if (d)
			closedir(d);
		snprintf(path, sizeof(path), "/proc/%d/maps", helpers[i]);
		FILE *f = fopen(path, "r");
		char line[1024];
		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "marker"))
				fail_msg("helper %d maps what its reader's process mapped later: %s", helpers[i], line);
		if (f)
			fclose(f);
	}
	assert_non_null(strstr(out, "socket:"));
	if (strstr(out, "marker"))
		fail_msg("a helper holds a descriptor of ours: %s", out);
	munmap(mapped, 4096);
	close(ours);
	tfile_reader_free(r);
	release(fifo);
}

/* Files no target may make us read: the kernel's own (a read drains a log), another user's perf
 * map, and an image whose tables claim more than TFILE_MAX_IMAGE_BYTES (refused before reading). */
static void test_refused_before_reading(void **state)
{
	(void)state;
	struct tfile_reader *r = tfile_reader_new();
	struct diag_err err;
	expect_refused(r, &(struct tfile_src){ .path = "/proc/self/status" }, "pseudo file system");
	expect_refused(r, &(struct tfile_src){ .path = "/sys/kernel/mm/transparent_hugepage/enabled" },
		       "pseudo file system");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/owned", tmpdir);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "1 2 f\n", 6), 6);
	close(fd);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 1234, 1234), 0);
		assert_null(tfile_read_text(r, &(struct tfile_src){ .path = path, .check_owner = true, .owner = 4321 },
					    4096, NULL, NULL, &err));
		assert_non_null(strstr(err.msg, "owned by uid 1234"));
		char *t = tfile_read_text(r, &(struct tfile_src){ .path = path, .check_owner = true, .owner = 1234 },
					  4096, NULL, NULL, &err);
		assert_non_null(t);
		free(t);
	}
	/* a sparse ELF whose one section is a 600 MiB symbol table */
	snprintf(path, sizeof(path), "%s/huge.elf", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	unsigned char eh[64] = { 0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, 1 };
	uint64_t shoff = 1ull << 30;
	memcpy(eh + 40, &shoff, 8);           /* e_shoff */
	eh[52] = 64;                          /* e_ehsize */
	eh[58] = 64;                          /* e_shentsize */
	eh[60] = 2;                           /* e_shnum */
	unsigned char sh[128] = { 0 };
	uint32_t type = SHT_SYMTAB;
	uint64_t off = 4096, size = 600ull << 20, ent = 24;
	memcpy(sh + 64 + 4, &type, 4);
	memcpy(sh + 64 + 24, &off, 8);
	memcpy(sh + 64 + 32, &size, 8);
	memcpy(sh + 64 + 56, &ent, 8);
	assert_int_equal(pwrite(fd, eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
	assert_int_equal(pwrite(fd, sh, sizeof(sh), (off_t)shoff), (ssize_t)sizeof(sh));
	close(fd);
	expect_refused(r, &(struct tfile_src){ .path = path }, "over the");
	tfile_reader_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_elf_image),
		cmocka_unit_test(test_stalls),
		cmocka_unit_test(test_stop_and_deadline),
		cmocka_unit_test(test_read_fd),
		cmocka_unit_test(test_helper_holds_nothing),
		cmocka_unit_test(test_refused_before_reading),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
