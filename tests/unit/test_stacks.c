/* test_stacks.c — the shared stack table (engine/symbolize/stacks.c): rows that are equal once symbolized
 * merge whatever their raw ids, weight and count are summed apart, the order is by weight with a
 * fixed tie-break, tag and in_kernel keep rows apart, the table is bounded, every finished table
 * has the shape STACK_RESULT_FIELDS declares (user_from included: rows from fixed user addresses
 * carry it only when a frame is not from the frame-pointer walk). Exact values are
 * asserted. Reading stack ids needs a BPF map (root or CAP_BPF); that test is skipped without.
 * The folded writer (engine/report/folded.c) takes one probe's stacks, never a mix of units.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi/diag_bpf.h"
#include "symbolize/ksyms.h"
#include "report/report.h"
#include "plan/shape.h"
#include "symbolize/stacks.h"
#include "symbolize/unwind.h"
#include "symbolize/usyms.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char *const U_MAIN[] = { "work", "main" };
static const char *const U_OTHER[] = { "idle", "main" };
static const char *const K_READ[] = { "vfs_read", "ksys_read" };

static void add(struct stack_table *t, const char *comm, const char *const *u, size_t nu,
		const char *const *k, size_t nk, bool in_kernel, uint64_t weight, uint64_t count,
		const char *tag)
{
	assert_int_equal(stacks_add_frames(t, comm, u, nu, k, nk, in_kernel, weight, count, tag), 0);
}

/* Finishes t into a fresh results object; *res gets it (caller frees). */
static const struct value *finish(struct stack_table *t, const char *unit, struct value **res)
{
	*res = value_obj();
	const struct value *stacks = stacks_finish(t, *res, unit);
	assert_ptr_equal(stacks, value_get(*res, "stacks"));
	assert_string_equal(value_get_str(*res, "stack_unit"), unit);
	assert_int_equal(stacks->type, V_ARR);
	/* what stacks_finish builds is what STACK_RESULT_FIELDS declares for every stack kind */
	static const struct result_field declared[] = { STACK_RESULT_FIELDS };
	char msg[512];
	if (shape_check_fields(declared, ARRAY_LEN(declared), "p", "stacks", *res, msg, sizeof(msg)))
		fail_msg("%s", msg);
	return stacks;
}

static void assert_frames(const struct value *s, const char *key, const char *const *want, size_t n)
{
	const struct value *f = value_get(s, key);
	assert_non_null(f);
	assert_int_equal(f->type, V_ARR);
	assert_int_equal(f->arr.len, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(f->arr.items[i]->s, want[i]);
}

static void assert_stack(const struct value *s, const char *comm, int64_t weight, int64_t count,
			 bool in_kernel, const char *tag)
{
	assert_string_equal(value_get_str(s, "comm"), comm);
	assert_int_equal(value_get(s, "weight")->i, weight);
	assert_int_equal(value_get(s, "count")->i, count);
	assert_int_equal(value_get(s, "in_kernel")->b, in_kernel);
	if (tag)
		assert_string_equal(value_get_str(s, "tag"), tag);
	else
		assert_null(value_get(s, "tag"));
}

/* ---- ids from a BPF map --------------------------------------------------------------------- */

static const char fake_kallsyms[] = "0000000000001000 T first_func\n"
				    "0000000000001010 t second_func\n"
				    "0000000000001040 T _etext\n";

static void put_stack(int fd, uint32_t id, const uint64_t *ips, size_t n)
{
	uint64_t v[DIAG_STACK_DEPTH] = { 0 };
	memcpy(v, ips, n * sizeof(*ips));
	assert_int_equal(bpf_map_update_elem(fd, &id, v, BPF_ANY), 0);
}

/* Different raw ids (other addresses inside the same functions) are one stack once symbolized;
 * an address no symbol covers stays apart as "[unknown]"; a missing id or id < 0 is no frames. */
static void test_merge_by_symbols_not_ids(void **state)
{
	(void)state;
	/* The same value size as every stack-trace map; a hash map because user space cannot write
	 * a stack-trace map. */
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "test_stacks", sizeof(uint32_t),
				DIAG_STACK_DEPTH * sizeof(uint64_t), 16, NULL);
	if (fd < 0)
		skip(); /* no CAP_BPF */
	char path[] = "/tmp/test_stacks_kallsyms.XXXXXX";
	int kfd = mkstemp(path);
	assert_true(kfd >= 0);
	assert_int_equal(write(kfd, fake_kallsyms, strlen(fake_kallsyms)), (ssize_t)strlen(fake_kallsyms));
	close(kfd);
	struct diag_err err = { 0 };
	struct ksyms *ks = ksyms_load(path, &err);
	unlink(path);
	assert_non_null(ks);

	put_stack(fd, 1, (const uint64_t[]){ 0x1000, 0x1010 }, 2);
	put_stack(fd, 2, (const uint64_t[]){ 0x1008, 0x1018 }, 2);
	put_stack(fd, 3, (const uint64_t[]){ 0x1008, 0x2000 }, 2);
	put_stack(fd, 7, (const uint64_t[]){ 0xabc }, 1);
	put_stack(fd, 8, (const uint64_t[]){ 0xabc }, 1);

	struct collect_ctx ctx = { .ksyms = ks };
	struct stack_table *t = stacks_new(&ctx, 16);
	assert_int_equal(stacks_add_ids(t, fd, 0, "app", 7, 1, true, 3, 3, NULL), 0);
	assert_int_equal(stacks_add_ids(t, fd, 0, "app", 8, 2, true, 2, 2, NULL), 0);
	assert_int_equal(stacks_add_ids(t, fd, 0, "app", 7, 3, true, 1, 1, NULL), 0);
	assert_int_equal(stacks_add_ids(t, fd, 0, "app", -14, 99, false, 4, 4, NULL), 0);
	struct value *res;
	const struct value *stacks = finish(t, "samples", &res);

	assert_int_equal(stacks->arr.len, 3);
	const struct value *s = stacks->arr.items[0];
	assert_stack(s, "app", 5, 5, true, NULL);
	assert_frames(s, "user", (const char *const[]){ "0xabc" }, 1);
	assert_frames(s, "kernel", (const char *const[]){ "first_func", "second_func" }, 2);
	s = stacks->arr.items[1];
	assert_stack(s, "app", 4, 4, false, NULL);
	assert_frames(s, "user", NULL, 0);
	assert_frames(s, "kernel", NULL, 0);
	s = stacks->arr.items[2];
	assert_stack(s, "app", 1, 1, true, NULL);
	assert_frames(s, "kernel", (const char *const[]){ "first_func", "[unknown]" }, 2);
	value_free(res);
	ksyms_free(ks);
	close(fd);
}

/* ---- frames already named -------------------------------------------------------------------- */

/* Weight and count are summed apart, and the order is by weight, not by count. */
static void test_weight_and_count_summed_apart(void **state)
{
	(void)state;
	struct stack_table *t = stacks_new(NULL, 8);
	add(t, "db", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 1000, 1, "blocked");
	add(t, "db", U_OTHER, N(U_OTHER), NULL, 0, false, 1200, 100, "blocked");
	add(t, "db", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 500, 4, "blocked");
	struct value *res;
	const struct value *stacks = finish(t, "ns", &res);
	assert_int_equal(stacks->arr.len, 2);
	assert_stack(stacks->arr.items[0], "db", 1500, 5, true, "blocked");
	assert_frames(stacks->arr.items[0], "user", U_MAIN, N(U_MAIN));
	assert_frames(stacks->arr.items[0], "kernel", K_READ, N(K_READ));
	assert_stack(stacks->arr.items[1], "db", 1200, 100, false, "blocked");
	assert_frames(stacks->arr.items[1], "user", U_OTHER, N(U_OTHER));
	/* the keys, in this order: what every stack probe emits */
	const struct value *s = stacks->arr.items[0];
	static const char *const keys[] = { "weight", "count", "comm", "in_kernel", "user", "kernel", "tag" };
	assert_int_equal(s->obj.len, N(keys));
	for (size_t i = 0; i < N(keys); i++)
		assert_string_equal(s->obj.keys[i], keys[i]);
	value_free(res);
}

/* Extra per-row integers (the allocations probe's allocs, oldest age, ...): summed when rows
 * merge, or the largest kept for those marked so; keys after in_kernel, in the order named. */
static void test_extra_fields(void **state)
{
	(void)state;
	static const char *const names[] = { "allocs", "oldest_age_ms" };
	static const bool is_max[] = { false, true };
	struct stack_table *t = stacks_new(NULL, 8);
	stacks_set_extra(t, names, is_max, N(names));
	add(t, "app", U_MAIN, N(U_MAIN), NULL, 0, false, 4096, 4, NULL);
	stacks_last_extra(t, (const uint64_t[]){ 10, 700 });
	add(t, "app", U_OTHER, N(U_OTHER), NULL, 0, false, 100, 1, NULL);
	stacks_last_extra(t, (const uint64_t[]){ 3, 50 });
	add(t, "app", U_MAIN, N(U_MAIN), NULL, 0, false, 1024, 1, NULL); /* merges with the first */
	stacks_last_extra(t, (const uint64_t[]){ 5, 1200 });
	struct value *res = value_obj();
	const struct value *stacks = stacks_finish(t, res, "bytes"); /* extras: not in the shared shape */
	assert_int_equal(stacks->arr.len, 2);
	assert_stack(stacks->arr.items[0], "app", 5120, 5, false, NULL);
	assert_int_equal(value_get(stacks->arr.items[0], "allocs")->i, 15);
	assert_int_equal(value_get(stacks->arr.items[0], "oldest_age_ms")->i, 1200);
	assert_int_equal(value_get(stacks->arr.items[1], "allocs")->i, 3);
	assert_int_equal(value_get(stacks->arr.items[1], "oldest_age_ms")->i, 50);
	static const char *const keys[] = { "weight", "count", "comm", "in_kernel", "allocs",
					    "oldest_age_ms", "user", "kernel" };
	const struct value *s0 = stacks->arr.items[0];
	assert_int_equal(s0->obj.len, N(keys));
	for (size_t i = 0; i < N(keys); i++)
		assert_string_equal(s0->obj.keys[i], keys[i]);
	value_free(res);
}

/* Equal weights: more count first, then comm, tag, in_kernel and frames, whatever the order in
 * which rows came. */
static void test_order_and_ties(void **state)
{
	(void)state;
	for (int reversed = 0; reversed < 2; reversed++) {
		struct stack_table *t = stacks_new(NULL, 8);
		static const char *const X[] = { "x" }, *const W[] = { "w" };
		struct {
			const char *comm;
			const char *const *u;
			uint64_t weight, count;
		} rows[] = {
			{ "b", X, 5, 1 }, { "a", X, 5, 1 }, { "c", X, 5, 2 },
			{ "a", W, 5, 1 }, { "z", X, 9, 1 }, { "y", X, 0, 0 },
		};
		for (size_t k = 0; k < N(rows); k++) {
			size_t i = reversed ? N(rows) - 1 - k : k;
			add(t, rows[i].comm, rows[i].u, 1, NULL, 0, false, rows[i].weight, rows[i].count, NULL);
		}
		struct value *res;
		const struct value *stacks = finish(t, "samples", &res);
		static const char *const want_comm[] = { "z", "c", "a", "a", "b", "y" };
		static const char *const want_leaf[] = { "x", "x", "w", "x", "x", "x" };
		assert_int_equal(stacks->arr.len, N(want_comm));
		for (size_t i = 0; i < N(want_comm); i++) {
			const struct value *s = stacks->arr.items[i];
			assert_string_equal(value_get_str(s, "comm"), want_comm[i]);
			assert_string_equal(value_get(s, "user")->arr.items[0]->s, want_leaf[i]);
		}
		value_free(res);
	}
}

/* A tag splits rows the frames do not ("" is no tag); it appears only when set. */
static void test_tag_distinguishes(void **state)
{
	(void)state;
	struct stack_table *t = stacks_new(NULL, 8);
	add(t, "db", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 10, 1, "blocked-uninterruptible");
	add(t, "db", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 7, 1, NULL);
	add(t, "db", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 3, 1, "");
	add(t, "db", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 20, 1, "blocked-interruptible");
	add(t, "db", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 1, 1, "blocked-uninterruptible");
	struct value *res;
	const struct value *stacks = finish(t, "ns", &res);
	assert_int_equal(stacks->arr.len, 3);
	assert_stack(stacks->arr.items[0], "db", 20, 1, true, "blocked-interruptible");
	assert_stack(stacks->arr.items[1], "db", 11, 2, true, "blocked-uninterruptible");
	assert_stack(stacks->arr.items[2], "db", 10, 2, true, NULL);
	assert_int_equal(stacks->arr.items[2]->obj.len, 6);
	value_free(res);
}

/* in_kernel splits rows with the same frames; so do user vs kernel frames and comm. */
static void test_in_kernel_distinguishes(void **state)
{
	(void)state;
	struct stack_table *t = stacks_new(NULL, 8);
	add(t, "app", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 4, 4, NULL);
	add(t, "app", U_MAIN, N(U_MAIN), K_READ, N(K_READ), false, 3, 3, NULL);
	add(t, "app", K_READ, N(K_READ), U_MAIN, N(U_MAIN), true, 2, 2, NULL);
	add(t, "app2", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 1, 1, NULL);
	add(t, "app", U_MAIN, 1, K_READ, N(K_READ), true, 1, 1, NULL); /* a prefix is another stack */
	struct value *res;
	const struct value *stacks = finish(t, "samples", &res);
	assert_int_equal(stacks->arr.len, 5);
	assert_stack(stacks->arr.items[0], "app", 4, 4, true, NULL);
	assert_stack(stacks->arr.items[1], "app", 3, 3, false, NULL);
	assert_frames(stacks->arr.items[1], "user", U_MAIN, N(U_MAIN));
	assert_stack(stacks->arr.items[2], "app", 2, 2, true, NULL);
	assert_frames(stacks->arr.items[2], "user", K_READ, N(K_READ));
	assert_stack(stacks->arr.items[3], "app", 1, 1, true, NULL); /* "app" before "app2" */
	assert_frames(stacks->arr.items[3], "user", U_MAIN, 1);
	assert_stack(stacks->arr.items[4], "app2", 1, 1, true, NULL);
	value_free(res);
}

/* At most max_rows rows; more are refused and counted, even ones that would merge. */
/* Rows from fixed user addresses: named "0x..." without a symbolizer, user_from present only when
 * a frame did not come from the frame-pointer walk, and equal frames of different provenance
 * kept apart. */
static void test_user_ips_and_provenance(void **state)
{
	(void)state;
	struct stack_table *t = stacks_new(NULL, 8);
	const uint64_t ips[] = { 0x1000, 0x2000, 0x3000 };
	const uint8_t all_fp[] = { FRAME_FP, FRAME_FP, FRAME_FP };
	const uint8_t leaf_fixed[] = { FRAME_FP, FRAME_CFI, FRAME_FP };
	assert_int_equal(stacks_add_user_ips(t, -1, 0, "w", ips, leaf_fixed, 3, -1, false, 5, 5, NULL), 0);
	assert_int_equal(stacks_add_user_ips(t, -1, 0, "w", ips, leaf_fixed, 3, -1, false, 2, 2, NULL), 0);
	assert_int_equal(stacks_add_user_ips(t, -1, 0, "w", ips, all_fp, 3, -1, false, 4, 4, NULL), 0);
	assert_int_equal(stacks_add_user_ips(t, -1, 0, "w", ips, NULL, 3, -1, false, 1, 1, NULL), 0);
	struct value *res;
	const struct value *stacks = finish(t, "samples", &res);
	assert_int_equal(stacks->arr.len, 2);
	const struct value *fixed = stacks->arr.items[0], *walked = stacks->arr.items[1];
	assert_int_equal(value_get(fixed, "weight")->i, 7);
	assert_int_equal(value_get(walked, "weight")->i, 5); /* NULL origin = all fp */
	static const char *const names[] = { "0x1000", "0x2000", "0x3000" };
	assert_frames(fixed, "user", names, 3);
	assert_frames(walked, "user", names, 3);
	static const char *const from[] = { "fp", "cfi", "fp" };
	assert_frames(fixed, "user_from", from, 3);
	assert_null(value_get(walked, "user_from"));
	value_free(res);
}

/* A set of processes (--comm, --cgroup...): each row's user frames are named by its own
 * process's symbolizer (collect_ctx.usyms_of); a process the set did not cover gets addresses. */
struct two_procs {
	struct usyms *a, *b;
};

static struct usyms *usyms_of_pid(const void *arg, int tgid)
{
	const struct two_procs *tp = arg;
	return tgid == 10 ? tp->a : tgid == 20 ? tp->b : NULL;
}

static void test_per_process_symbolizers(void **state)
{
	(void)state;
	struct two_procs tp = { usyms_new(10), usyms_new(20) };
	usyms_add_mapping(tp.a, 0x1000, 0x2000, 0, "/nonexistent/liba.so");
	usyms_add_mapping(tp.b, 0x1000, 0x2000, 0, "/nonexistent/libb.so");
	struct collect_ctx ctx = { .usyms_of = usyms_of_pid, .usyms_arg = &tp };
	struct stack_table *t = stacks_new(&ctx, 8);
	const uint64_t ips[] = { 0x1010 };
	assert_int_equal(stacks_add_user_ips(t, -1, 10, "svc", ips, NULL, 1, -1, false, 3, 3, NULL), 0);
	assert_int_equal(stacks_add_user_ips(t, -1, 20, "svc", ips, NULL, 1, -1, false, 2, 2, NULL), 0);
	assert_int_equal(stacks_add_user_ips(t, -1, 30, "svc", ips, NULL, 1, -1, false, 1, 1, NULL), 0);
	struct value *res;
	const struct value *stacks = finish(t, "samples", &res);
	assert_int_equal(stacks->arr.len, 3);
	static const char *const in_a[] = { "liba.so+0x10" }, *const in_b[] = { "libb.so+0x10" },
				 *const unknown[] = { "0x1010" };
	assert_frames(stacks->arr.items[0], "user", in_a, 1);
	assert_frames(stacks->arr.items[1], "user", in_b, 1);
	assert_frames(stacks->arr.items[2], "user", unknown, 1);
	value_free(res);
	usyms_free(tp.a);
	usyms_free(tp.b);
}

static void test_bounded(void **state)
{
	(void)state;
	struct stack_table *t = stacks_new(NULL, 2);
	add(t, "a", U_MAIN, N(U_MAIN), NULL, 0, false, 1, 1, NULL);
	add(t, "b", U_MAIN, N(U_MAIN), NULL, 0, false, 2, 1, NULL);
	assert_int_equal(stacks_add_frames(t, "a", U_MAIN, N(U_MAIN), NULL, 0, false, 5, 1, NULL), -1);
	assert_int_equal(stacks_add_frames(t, "c", U_MAIN, N(U_MAIN), NULL, 0, false, 5, 1, NULL), -1);
	assert_int_equal(stacks_refused(t), 2);
	struct value *res;
	const struct value *stacks = finish(t, "bytes", &res);
	assert_int_equal(stacks->arr.len, 2);
	assert_stack(stacks->arr.items[0], "b", 2, 1, false, NULL);
	assert_stack(stacks->arr.items[1], "a", 1, 1, false, NULL);
	value_free(res);

	/* frames beyond DIAG_STACK_DEPTH are not kept; an empty table gives an empty array */
	const char *deep[DIAG_STACK_DEPTH + 3];
	for (size_t i = 0; i < N(deep); i++)
		deep[i] = "f";
	t = stacks_new(NULL, 1);
	add(t, "a", deep, N(deep), NULL, 0, false, 1, 1, NULL);
	stacks = finish(t, "samples", &res);
	assert_int_equal(value_get(stacks->arr.items[0], "user")->arr.len, DIAG_STACK_DEPTH);
	value_free(res);
	t = stacks_new(NULL, 0);
	assert_int_equal(stacks_add_frames(t, "a", NULL, 0, NULL, 0, false, 1, 1, NULL), -1);
	assert_int_equal(finish(t, "samples", &res)->arr.len, 0);
	value_free(res);
	stacks_free(NULL);
}

/* ---- folded output ---------------------------------------------------------------------------- */

/* Folded output of report_write_folded(results, probe_id); *n gets its return value. */
static char *folded(const struct value *results, const char *probe_id, int *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	*n = report_write_folded(results, probe_id, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* results: "runq" without stacks, "offcpu" in ns with task-state tags, "profile" in samples. */
static struct value *two_units(void)
{
	struct value *results = value_obj();
	value_set_int(value_obj_set(results, "runq", value_obj()), "count", 7);
	struct stack_table *t = stacks_new(NULL, 8);
	add(t, "db", U_MAIN, N(U_MAIN), K_READ, N(K_READ), true, 2500000000, 3, "blocked-uninterruptible");
	add(t, "db", U_MAIN, N(U_MAIN), NULL, 0, false, 900, 1, NULL);
	stacks_finish(t, value_obj_set(results, "offcpu", value_obj()), "ns");
	t = stacks_new(NULL, 8);
	add(t, "db", U_OTHER, N(U_OTHER), NULL, 0, false, 42, 42, NULL);
	stacks_finish(t, value_obj_set(results, "profile", value_obj()), "samples");
	return results;
}

static void test_folded_one_probe_one_unit(void **state)
{
	(void)state;
	struct value *results = two_units();
	int n;
	char *out = folded(results, "profile", &n);
	assert_int_equal(n, 1);
	assert_string_equal(out, "db;main;idle 42\n");
	free(out);

	static const char offcpu[] = "db;[blocked-uninterruptible];main;work;ksys_read_[k];vfs_read_[k] "
				     "2500000000\n"
				     "db;main;work 900\n";
	out = folded(results, "offcpu", &n);
	assert_int_equal(n, 2);
	assert_string_equal(out, offcpu);
	free(out);
	/* default: the first probe, in results order, whose results carry stacks */
	out = folded(results, NULL, &n);
	assert_int_equal(n, 2);
	assert_string_equal(out, offcpu);
	free(out);

	/* a probe without stacks, or none such: nothing written, -1 */
	out = folded(results, "runq", &n);
	assert_int_equal(n, -1);
	assert_string_equal(out, "");
	free(out);
	out = folded(results, "nope", &n);
	assert_int_equal(n, -1);
	assert_string_equal(out, "");
	free(out);
	value_free(results);
	results = value_obj();
	value_obj_set(results, "runq", value_obj());
	out = folded(results, NULL, &n);
	assert_int_equal(n, -1);
	assert_string_equal(out, "");
	free(out);
	/* stacks present but empty: 0 stacks, not an error */
	stacks_finish(stacks_new(NULL, 1), value_obj_set(results, "profile", value_obj()), "samples");
	out = folded(results, NULL, &n);
	assert_int_equal(n, 0);
	assert_string_equal(out, "");
	free(out);
	value_free(results);
}

/* A comm (and a tag) with ';', ' ' and a newline stays one field of one line. */
static void test_folded_escapes(void **state)
{
	(void)state;
	struct value *results = value_obj();
	struct stack_table *t = stacks_new(NULL, 4);
	add(t, "a;b c\nd", U_MAIN, 1, NULL, 0, false, 5, 5, "x y;z");
	stacks_finish(t, value_obj_set(results, "p", value_obj()), "samples");
	int n;
	char *out = folded(results, "p", &n);
	assert_int_equal(n, 1);
	assert_string_equal(out, "a_b_c\\x0ad;[x_y_z];work 5\n");
	free(out);
	value_free(results);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_by_symbols_not_ids),
		cmocka_unit_test(test_weight_and_count_summed_apart),
		cmocka_unit_test(test_extra_fields),
		cmocka_unit_test(test_order_and_ties),
		cmocka_unit_test(test_tag_distinguishes),
		cmocka_unit_test(test_in_kernel_distinguishes),
		cmocka_unit_test(test_user_ips_and_provenance),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_per_process_symbolizers),
		cmocka_unit_test(test_folded_one_probe_one_unit),
		cmocka_unit_test(test_folded_escapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
