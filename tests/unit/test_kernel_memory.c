/* test_kernel_memory.c — the kernel-memory reading of host-wide memory-growth runs: the
 * /proc/slabinfo parser of engine/target/procfs.c on recorded text (this build machine's, kernel 6.18)
 * and on damaged text (every malformed line is skipped and counted, never fatal; a file that is
 * not slabinfo 2.x is refused), the sums of prefixed /proc/vmstat counters, and the probe kind
 * kernel_memory itself on this machine: its results match their declared shape, whether or not
 * /proc/slabinfo is readable (root only), and a slab cache the test grows is among those grown.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "target/procfs.h"
#include "plan/shape.h"
#include "common/util.h"

/* ---- recorded text ------------------------------------------------------------------------ */

static const char SLABINFO[] =
	"slabinfo - version: 2.1\n"
	"# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n"
	"ext4_inode_cache   90205  90216   1128   14    4 : tunables    0    0    0 : slabdata   6444   6444      0\n"
	"TCP                   92    143   2368   13    8 : tunables    0    0    0 : slabdata     11     11      0\n"
	"shmem_inode_cache    338    357    752   21    4 : tunables    0    0    0 : slabdata     17     17      0\n"
	"dentry            166418 166803    192   21    1 : tunables    0    0    0 : slabdata   7943   7943      0\n"
	"kmalloc-64          2455   2624     64   64    1 : tunables    0    0    0 : slabdata     41     41      0\n";

/* The same with damage: each of these lines must be skipped and counted, the good ones kept. */
static const char SLABINFO_DAMAGED[] =
	"slabinfo - version: 2.1\n"
	"# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n"
	"dentry            166418 166803    192   21    1 : tunables    0    0    0 : slabdata   7943   7943      0\n"
	/* a column missing */
	"short               12     12    320   12 : tunables    0    0    0 : slabdata      1      1      0\n"
	/* not a number */
	"bad-number          12     1x    320   12    1 : tunables    0    0    0 : slabdata      1      1      0\n"
	/* a negative number */
	"negative            -1     12    320   12    1 : tunables    0    0    0 : slabdata      1      1      0\n"
	/* more active objects than objects */
	"impossible          99     12    320   12    1 : tunables    0    0    0 : slabdata      1      1      0\n"
	/* the slabdata part missing */
	"no-slabdata         12     12    320   12    1 : tunables    0    0    0\n"
	/* a word in place of "tunables" */
	"no-tunables         12     12    320   12    1 : tuneables    0    0    0 : slabdata      1      1      0\n"
	/* a column too many */
	"extra               12     12    320   12    1 : tunables    0    0    0 : slabdata      1      1      0 7\n"
	/* over 20 digits */
	"huge                12 123456789012345678901234 320 12 1 : tunables 0 0 0 : slabdata 1 1 0\n"
	/* a name of 64 bytes */
	"a234567890123456789012345678901234567890123456789012345678901234 1 1 8 1 1 : tunables 0 0 0 : slabdata 1 1 0\n"
	/* blanks only, and a lone word */
	"   \n"
	"garbage\n"
	/* tabs are blanks too; the last line has no newline */
	"kmalloc-64\t2455\t2624\t64\t64\t1 : tunables 0 0 0 : slabdata 41 41 0";

static void test_slabinfo(void **state)
{
	(void)state;
	struct procfs_slab s[8];
	struct procfs_slabinfo info;
	assert_int_equal(procfs_parse_slabinfo(SLABINFO, s, 8, &info), 0);
	assert_int_equal(info.n, 5);
	assert_int_equal(info.malformed, 0);
	assert_int_equal(info.overflow, 0);
	assert_string_equal(s[0].name, "ext4_inode_cache");
	assert_int_equal(s[0].active_objs, 90205);
	assert_int_equal(s[0].num_objs, 90216);
	assert_int_equal(s[0].objsize, 1128);
	assert_int_equal(s[0].objperslab, 14);
	assert_int_equal(s[0].pagesperslab, 4);
	assert_int_equal(s[0].active_slabs, 6444);
	assert_int_equal(s[0].num_slabs, 6444);
	assert_int_equal(procfs_slab_bytes(&s[0], 4096), 6444ull * 4 * 4096);
	assert_string_equal(s[1].name, "TCP");
	assert_int_equal(procfs_slab_bytes(&s[1], 4096), 11ull * 8 * 4096);
	assert_string_equal(s[3].name, "dentry");
	assert_int_equal(s[3].num_slabs, 7943);
	assert_string_equal(s[4].name, "kmalloc-64");

	/* room for two: the others are counted, not written */
	assert_int_equal(procfs_parse_slabinfo(SLABINFO, s, 2, &info), 0);
	assert_int_equal(info.n, 2);
	assert_int_equal(info.overflow, 3);
	assert_string_equal(s[1].name, "TCP");
}

static void test_slabinfo_damaged(void **state)
{
	(void)state;
	struct procfs_slab s[8];
	struct procfs_slabinfo info;
	assert_int_equal(procfs_parse_slabinfo(SLABINFO_DAMAGED, s, 8, &info), 0);
	assert_int_equal(info.n, 2);
	assert_int_equal(info.malformed, 11);
	assert_string_equal(s[0].name, "dentry");
	assert_string_equal(s[1].name, "kmalloc-64");
	assert_int_equal(s[1].num_slabs, 41);
	assert_int_equal(s[1].objsize, 64);

	/* not slabinfo 2.x */
	assert_int_equal(procfs_parse_slabinfo("slabinfo - version: 1.1\n", s, 8, &info), -1);
	assert_int_equal(procfs_parse_slabinfo("", s, 8, &info), -1);
	assert_int_equal(procfs_parse_slabinfo("dentry 1 1 192 21 1 : tunables 0 0 0 : slabdata 1 1 0\n", s, 8, &info), -1);
	/* the header alone: no cache */
	assert_int_equal(procfs_parse_slabinfo("slabinfo - version: 2.1", s, 8, &info), 0);
	assert_int_equal(info.n, 0);
	assert_int_equal(info.malformed, 0);
	/* every prefix of the recorded text parses without reading past its end */
	size_t len = strlen(SLABINFO);
	for (size_t cut = 0; cut <= len; cut++) {
		char *t = xmalloc(cut + 1);
		memcpy(t, SLABINFO, cut);
		t[cut] = '\0';
		int rc = procfs_parse_slabinfo(t, s, 8, &info);
		assert_true(rc == -1 || info.n <= 5);
		free(t);
	}
}

static const char VMSTAT[] =
	"workingset_refault_anon 7\n"
	"workingset_refault_file 3129942\n"
	"pgscan_kswapd 100\n"
	"pgscan_direct 20\n"
	"pgscan_direct_throttle 5\n"
	"allocstall_dma 0\n"
	"allocstall_dma32 3\n"
	"allocstall_normal 4\n"
	"allocstall_movable 0\n"
	"pgmajfault 28280\n";

static void test_vmstat_sums(void **state)
{
	(void)state;
	bool found;
	assert_int_equal(procfs_sum_prefixed(VMSTAT, "allocstall_", &found), 7);
	assert_true(found);
	/* a prefix sums every line it starts: pgscan_direct_throttle too */
	assert_int_equal(procfs_sum_prefixed(VMSTAT, "pgscan_", &found), 125);
	assert_int_equal(procfs_sum_prefixed(VMSTAT, "pgsteal_", &found), 0);
	assert_false(found);
	uint64_t v;
	assert_true(procfs_key_u64(VMSTAT, "workingset_refault_file", &v));
	assert_int_equal(v, 3129942);
	assert_false(procfs_key_u64(VMSTAT, "workingset_refault", &v)); /* whole keys only */
}

/* ---- the probe on this machine -------------------------------------------------------------- */

static const struct value *item_named(const struct value *arr, const char *name)
{
	for (size_t i = 0; arr && i < arr->arr.len; i++)
		if (!strcmp(value_get_str(arr->arr.items[i], "name"), name))
			return arr->arr.items[i];
	return NULL;
}

/* 32768 eventfds held over the window: their files come from the `filp` cache (and the
 * anonymous inode's), so filp grows by at least 32768 objects of 192 bytes — 6 MiB. */
static void test_live(void **state)
{
	(void)state;
	const struct probe_kind *k = catalog_find("kernel_memory");
	assert_non_null(k);
	struct probe p = { .kind = k, .cfg.id = "kmem" };
	p.cfg.opt[catalog_option_index(k, "top_n")] = 1000;
	p.priv = xcalloc(1, k->private_size);
	struct diag_err err = { 0 };
	assert_int_equal(k->load(&p, &err), 0);
	assert_int_equal(k->attach(&p, &err), 0);
	enum { N = 32768 };
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < N + 64) {
		rl.rlim_cur = rl.rlim_max < N + 64 ? rl.rlim_max : N + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* leave descriptors for the probe's own reading of /proc */
	size_t cap = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < N + 64
			     ? (rl.rlim_cur > 128 ? (size_t)rl.rlim_cur - 128 : 0) : N;
	int *fds = xcalloc(N, sizeof(*fds));
	size_t opened = 0;
	for (size_t i = 0; i < cap; i++) {
		fds[i] = eventfd(0, EFD_CLOEXEC);
		if (fds[i] < 0)
			break; /* RLIMIT_NOFILE */
		opened++;
	}
	struct value *res = NULL;
	struct collect_ctx ctx = { .ncpus = 2 };
	assert_int_equal(k->collect(&p, &ctx, &res, &err), 0);
	for (size_t i = 0; i < opened; i++)
		close(fds[i]);
	free(fds);
	k->destroy(&p);
	free(p.priv);

	char msg[256];
	assert_int_equal(shape_check(k, "kmem", res, msg, sizeof(msg)), 0);
	const struct value *vm = value_get(res, "vmstat"), *mi = value_get(res, "meminfo");
	assert_non_null(value_get(vm, "pgmajfault"));
	assert_true(value_get_num(mi, "mem_total_bytes", 0) > 0);
	assert_true(value_get_num(mi, "cached_bytes", -1) >= 0);
	const struct value *slab = value_get(res, "slab");
	if (access("/proc/slabinfo", R_OK) != 0) {
		assert_null(slab);
		assert_non_null(value_get_str(res, "slab_error"));
		printf("  (not root: /proc/slabinfo unreadable, slab_error checked)\n");
	} else {
		assert_null(value_get(res, "slab_error"));
		assert_true(value_get_num(slab, "caches", 0) > 20);
		assert_int_equal(value_get_num(slab, "malformed_lines", -1), 0);
		const struct value *filp = item_named(value_get(slab, "grown"), "filp");
		if (opened >= N / 2) {
			assert_non_null(filp);
			assert_true(value_get_num(filp, "objects_delta", 0) >= (double)opened * 9 / 10);
			assert_true(value_get_num(filp, "delta_bytes", 0) >= (double)opened * 192 * 9 / 10);
			assert_true(value_get_num(filp, "bytes_per_s", 0) > 0);
		} else {
			printf("  (only %zu eventfds: RLIMIT_NOFILE; filp growth not checked)\n", opened);
		}
	}
	value_free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slabinfo),
		cmocka_unit_test(test_slabinfo_damaged),
		cmocka_unit_test(test_vmstat_sums),
		cmocka_unit_test(test_live),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
