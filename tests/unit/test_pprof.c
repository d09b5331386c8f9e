/* test_pprof.c — the pprof writer (engine/report/pprof.c), read back as a reader would: the gzip stream
 * inflated with zlib, the profile decoded with protobuf-c from the same proto/profile.proto.
 * Asserts sample types and units per stack_unit, sample values, locations leaf first (kernel
 * frames, then user frames), functions and locations deduplicated, kernel frames told apart (own
 * mapping, " [k]" suffix), labels, and names with control or non-UTF-8 bytes made "\xNN". No root,
 * no files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "report/pprof.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

static struct value *str_array(const char *const *items)
{
	struct value *a = value_arr();
	for (; *items; items++)
		value_arr_push(a, value_str(*items));
	return a;
}
#define STRS(...) str_array((const char *const[]){ __VA_ARGS__, NULL })

static void add_stack(struct value *p, const char *comm, struct value *user, struct value *kernel,
		      int64_t weight, int64_t count, const char *tag)
{
	struct value *s = value_obj();
	value_set_str(s, "comm", comm);
	value_obj_set(s, "user", user ? user : value_arr());
	value_obj_set(s, "kernel", kernel ? kernel : value_arr());
	value_set_int(s, "weight", weight);
	value_set_int(s, "count", count);
	if (tag)
		value_set_str(s, "tag", tag);
	value_arr_push((struct value *)value_get(p, "stacks"), s);
}

static struct value *probe(const char *unit)
{
	struct value *p = value_obj();
	value_set_str(p, "stack_unit", unit);
	value_obj_set(p, "stacks", value_arr());
	return p;
}

/* pprof_write's bytes, inflated (gzip) and decoded. */
static Profile *write_and_read(const struct value *p, const struct pprof_info *info, int *rc)
{
	char *gz = NULL;
	size_t gz_len = 0;
	FILE *f = open_memstream(&gz, &gz_len);
	assert_non_null(f);
	struct diag_err err = { 0 };
	*rc = pprof_write(p, info, f, &err);
	assert_int_equal(fclose(f), 0);
	assert_true(gz_len > 18);
	assert_int_equal((unsigned char)gz[0], 0x1f); /* gzip magic */
	assert_int_equal((unsigned char)gz[1], 0x8b);

	z_stream z = { 0 };
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	size_t cap = 1 << 16, len = 0;
	uint8_t *raw = malloc(cap);
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)gz_len;
	int zrc;
	do {
		if (len == cap)
			raw = realloc(raw, cap *= 2);
		z.next_out = raw + len;
		z.avail_out = (uInt)(cap - len);
		zrc = inflate(&z, Z_NO_FLUSH);
		assert_true(zrc == Z_OK || zrc == Z_STREAM_END);
		len = cap - z.avail_out;
	} while (zrc != Z_STREAM_END);
	inflateEnd(&z);
	free(gz);
	Profile *prof = perftools__profiles__profile__unpack(NULL, len, raw);
	free(raw);
	assert_non_null(prof);
	assert_true(prof->n_string_table > 0);
	assert_string_equal(prof->string_table[0], "");
	return prof;
}

static const char *str(const Profile *p, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static const Perftools__Profiles__Function *func(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id == id)
			return p->function[i];
	fail_msg("no function %" PRIu64, id);
	return NULL;
}

static const Perftools__Profiles__Location *loc(const Profile *p, uint64_t id)
{
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	fail_msg("no location %" PRIu64, id);
	return NULL;
}

/* The function name at a sample's location i (leaf first). */
static const char *frame(const Profile *p, const Perftools__Profiles__Sample *s, size_t i)
{
	assert_true(i < s->n_location_id);
	const Perftools__Profiles__Location *l = loc(p, s->location_id[i]);
	assert_int_equal(l->n_line, 1);
	return str(p, func(p, l->line[0]->function_id)->name);
}

static const char *label(const Profile *p, const Perftools__Profiles__Sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (strcmp(str(p, s->label[i]->key), key) == 0)
			return str(p, s->label[i]->str);
	return NULL;
}

static void test_cpu_samples(void **state)
{
	(void)state;
	struct value *v = probe("samples");
	add_stack(v, "cpu_burner", STRS("compute_checksum", "handle_request", "main"), NULL, 110, 110, NULL);
	add_stack(v, "cpu_burner", STRS("handle_request", "main"), STRS("schedule", "irq_exit"), 7, 7, NULL);
	struct pprof_info info = { .comment = "diagnose high-cpu, probe profile",
				   .started_at = "2026-12-01T11:30:00Z", .duration_s = 2.5,
				   .user_file = "/usr/bin/cpu_burner" };
	int rc;
	Profile *p = write_and_read(v, &info, &rc);
	assert_int_equal(rc, 2);
	assert_int_equal(p->n_sample_type, 1);
	assert_string_equal(str(p, p->sample_type[0]->type), "samples");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->default_sample_type), "samples");
	assert_int_equal(p->n_sample, 2);
	const Perftools__Profiles__Sample *s0 = p->sample[0], *s1 = p->sample[1];
	assert_int_equal(s0->n_value, 1);
	assert_int_equal(s0->value[0], 110);
	assert_int_equal(s1->value[0], 7);
	assert_int_equal(s0->n_location_id, 3);
	assert_string_equal(frame(p, s0, 0), "compute_checksum");
	assert_string_equal(frame(p, s0, 2), "main");
	/* leaf first: kernel frames, then user frames */
	assert_int_equal(s1->n_location_id, 4);
	assert_string_equal(frame(p, s1, 0), "schedule [k]");
	assert_string_equal(frame(p, s1, 1), "irq_exit [k]");
	assert_string_equal(frame(p, s1, 2), "handle_request");
	assert_string_equal(frame(p, s1, 3), "main");
	/* deduplicated: main and handle_request once each; 5 functions, one location each */
	assert_int_equal(p->n_function, 5);
	assert_int_equal(p->n_location, 5);
	assert_int_equal(s0->location_id[2], s1->location_id[3]);
	/* kernel frames have their own mapping */
	assert_int_equal(p->n_mapping, 2);
	uint64_t kmap = loc(p, s1->location_id[0])->mapping_id, umap = loc(p, s1->location_id[2])->mapping_id;
	assert_true(kmap != umap);
	for (size_t i = 0; i < p->n_mapping; i++) {
		const char *file = str(p, p->mapping[i]->filename);
		assert_true(p->mapping[i]->has_functions);
		assert_string_equal(file, p->mapping[i]->id == kmap ? "[kernel.kallsyms]" : "/usr/bin/cpu_burner");
	}
	assert_string_equal(str(p, func(p, loc(p, s1->location_id[0])->line[0]->function_id)->system_name),
			    "schedule");
	assert_string_equal(label(p, s0, "comm"), "cpu_burner");
	assert_null(label(p, s0, "tag"));
	assert_int_equal(p->n_comment, 1);
	assert_string_equal(str(p, p->comment[0]), "diagnose high-cpu, probe profile");
	assert_int_equal(p->time_nanos, 1796124600LL * 1000000000LL);
	assert_int_equal(p->duration_nanos, 2500000000LL);
	perftools__profiles__profile__free_unpacked(p, NULL);
	value_free(v);
}

static void test_off_cpu_time_and_bytes(void **state)
{
	(void)state;
	struct value *v = probe("ns");
	add_stack(v, "worker", STRS("__lll_lock_wait", "lock_and_work"), STRS("schedule"), 1500000, 3,
		  "blocked-uninterruptible");
	int rc;
	Profile *p = write_and_read(v, NULL, &rc);
	assert_int_equal(rc, 1);
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(str(p, p->sample_type[0]->type), "events");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->sample_type[1]->type), "time");
	assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");
	assert_string_equal(str(p, p->default_sample_type), "time");
	assert_int_equal(p->sample[0]->value[0], 3);
	assert_int_equal(p->sample[0]->value[1], 1500000);
	assert_string_equal(label(p, p->sample[0], "tag"), "blocked-uninterruptible");
	assert_string_equal(frame(p, p->sample[0], 1), "__lll_lock_wait");
	perftools__profiles__profile__free_unpacked(p, NULL);
	value_free(v);

	v = probe("bytes");
	add_stack(v, "grower", STRS("grow"), NULL, 4096, 2, NULL);
	p = write_and_read(v, NULL, &rc);
	assert_string_equal(str(p, p->sample_type[1]->type), "space");
	assert_string_equal(str(p, p->sample_type[1]->unit), "bytes");
	assert_int_equal(p->sample[0]->value[1], 4096);
	perftools__profiles__profile__free_unpacked(p, NULL);
	value_free(v);
}

static void test_names_made_utf8(void **state)
{
	(void)state;
	struct value *v = probe("samples");
	add_stack(v, "bad\x01\xff\xc2\x9b", STRS("f\x1b[0m\xfe\xe2\x80\xae", "caf\xc3\xa9"), NULL, 1, 1, NULL);
	int rc;
	Profile *p = write_and_read(v, NULL, &rc);
	assert_string_equal(frame(p, p->sample[0], 0), "f\\x1b[0m\\xfe\\xe2\\x80\\xae"); /* U+202E too */
	assert_string_equal(frame(p, p->sample[0], 1), "caf\xc3\xa9");
	assert_string_equal(label(p, p->sample[0], "comm"), "bad\\x01\\xff\\xc2\\x9b"); /* C1 too */
	perftools__profiles__profile__free_unpacked(p, NULL);
	value_free(v);
}

static void test_no_stacks(void **state)
{
	(void)state;
	int rc;
	Profile *p = write_and_read(NULL, NULL, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(p->n_sample, 0);
	assert_int_equal(p->n_sample_type, 1);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* Many stacks over few functions: the string table and functions stay deduplicated. */
static void test_many_stacks_dedup(void **state)
{
	(void)state;
	struct value *v = probe("samples");
	char name[32];
	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "f%d", i % 50);
		add_stack(v, "t", STRS(name, "main"), NULL, 1, 1, NULL);
	}
	int rc;
	Profile *p = write_and_read(v, NULL, &rc);
	assert_int_equal(rc, 2000);
	assert_int_equal(p->n_function, 51);
	for (size_t i = 1; i < p->n_string_table; i++)
		for (size_t j = i + 1; j < p->n_string_table; j++)
			assert_true(strcmp(p->string_table[i], p->string_table[j]) != 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
	value_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_samples),
		cmocka_unit_test(test_off_cpu_time_and_bytes),
		cmocka_unit_test(test_names_made_utf8),
		cmocka_unit_test(test_no_stacks),
		cmocka_unit_test(test_many_stacks_dedup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
