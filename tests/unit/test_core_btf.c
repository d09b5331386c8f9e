/* test_core_btf.c — the kernel's BTF cut to what the run's objects relocate against
 * (engine/kernel/core_btf.c), on this machine's kernel (needs root: it loads every probe kind).
 *
 * The cut for every catalog kind's object and the process-set follower's: a small part of the
 * kernel's types; a struct a relocation starts from kept whole (task_struct: size and every
 * member's name and offset as the kernel has them); what is reached only through a pointer kept
 * as a shell of the kernel's name, kind and size. The proof that matters: every kind loaded as a
 * run loads it (defaults, as `diagnose doctor` does), once against the kernel's whole BTF and
 * once against the cut, gives the same instructions for every program — every CO-RE relocation
 * resolved alike. A kind that does not load here at all is skipped (said so). And a malformed
 * object: its CO-RE records out of bounds are an error, not a read past its end.
 *
 * The reader under the cut (engine/kernel/kernel_btf.c) against libbpf's parse of the same
 * file: every type's record byte for byte, lookups by name; tp_btf programs' attach ids
 * (engine/kernel/tp_btf.c) as libbpf's own handler finds them; and BTF bytes cut, overrun or of
 * an unknown kind refused with a reason, never read past.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "plan/catalog.h"
#include "kernel/core_btf.h"
#include "kernel/kernel.h"
#include "kernel/kernel_btf.h"
#include "session/procset.h"
#include "kernel/tp_btf.h"
#include "target/tfile.h"
#include "common/util.h"

/* Every object a run may load. */
static size_t all_objects(struct core_btf_obj *objs, size_t cap)
{
	size_t n_kinds, n = 0;
	const struct probe_kind *const *kinds = catalog_all(&n_kinds);
	for (size_t i = 0; i < n_kinds && n < cap; i++)
		if (kinds[i]->bpf_bytes)
			objs[n].bytes = kinds[i]->bpf_bytes(&objs[n].size), n++;
	if (n < cap)
		objs[n].bytes = procset_bpf_bytes(&objs[n].size), n++;
	return n;
}

/* The cut for every object a run may load (fails the test when it cannot be made). */
static size_t cut_all(struct core_btf *cut)
{
	struct core_btf_obj objs[64];
	size_t n = all_objects(objs, 64);
	struct diag_err err = { 0 };
	struct kernel_btf kernel;
	if (kernel_btf_open(&kernel, &err) || core_btf_build(&kernel, objs, n, cut, &err))
		fail_msg("%s", err.msg);
	kernel_btf_close(&kernel);
	return n;
}

static void test_cut_shape(void **state)
{
	(void)state;
	struct core_btf cut;
	size_t n = cut_all(&cut);
	printf("   %zu objects: %u of the kernel's %u types kept, %zu KiB\n", n, cut.types, cut.kernel_types,
	       cut.bytes >> 10);
	assert_true(cut.types > 0 && cut.types * 10 < cut.kernel_types);
	struct btf *small = btf__parse(cut.path, NULL), *kernel = btf__load_vmlinux_btf();
	assert_non_null(small);
	assert_non_null(kernel);
	assert_int_equal(btf__type_cnt(small), cut.types + 1);

	/* task_struct whole */
	int sid = btf__find_by_name_kind(small, "task_struct", BTF_KIND_STRUCT);
	int kid = btf__find_by_name_kind(kernel, "task_struct", BTF_KIND_STRUCT);
	assert_true(sid > 0 && kid > 0);
	const struct btf_type *s = btf__type_by_id(small, sid), *k = btf__type_by_id(kernel, kid);
	assert_int_equal(s->size, k->size);
	assert_int_equal(btf_vlen(s), btf_vlen(k));
	for (unsigned i = 0; i < btf_vlen(s); i++) {
		assert_string_equal(btf__name_by_offset(small, btf_members(s)[i].name_off),
				    btf__name_by_offset(kernel, btf_members(k)[i].name_off));
		assert_int_equal(btf_members(s)[i].offset, btf_members(k)[i].offset);
	}
	/* the shells: the kernel's name, kind and size, no members */
	unsigned shells = 0;
	for (unsigned id = 1; id < btf__type_cnt(small); id++) {
		const struct btf_type *t = btf__type_by_id(small, id);
		if (!btf_is_composite(t) || btf_vlen(t))
			continue;
		const char *name = btf__name_by_offset(small, t->name_off);
		if (!name[0])
			continue;
		int kid2 = btf__find_by_name_kind(kernel, name, btf_kind(t));
		assert_true(kid2 > 0);
		assert_int_equal(btf__type_by_id(kernel, kid2)->size, t->size);
		shells += btf_vlen(btf__type_by_id(kernel, kid2)) > 0;
	}
	printf("   %u structs and unions kept as shells\n", shells);
	assert_true(shells > 0);
	btf__free(small);
	btf__free(kernel);
	core_btf_close(&cut);
	assert_int_equal(cut.fd, -1);
}

/* A kind loaded with its defaults against core_btf (NULL: the kernel's whole BTF): its programs'
 * instructions, concatenated per program name ("name\n" + the raw instructions); NULL when the
 * kind does not load here (why in err). */
static char *load_insns(const struct probe_kind *k, const char *core_btf, size_t *len, struct diag_err *err)
{
	struct probe p;
	probe_init_defaults(&p, k);
	p.core_btf = core_btf;
	p.priv = xcalloc(1, k->private_size ? k->private_size : 1);
	p.files = tfile_reader_new();
	char *out = NULL;
	*len = 0;
	if (k->load(&p, err) == 0 && k->object && k->object(&p)) {
		struct bpf_program *prog;
		bpf_object__for_each_program(prog, k->object(&p)) {
			if (!bpf_program__autoload(prog))
				continue;
			size_t name_len = strlen(bpf_program__name(prog)) + 1;
			size_t code = bpf_program__insn_cnt(prog) * sizeof(struct bpf_insn);
			out = xrealloc(out, *len + name_len + code);
			memcpy(out + *len, bpf_program__name(prog), name_len - 1);
			out[*len + name_len - 1] = '\n';
			memcpy(out + *len + name_len, bpf_program__insns(prog), code);
			*len += name_len + code;
		}
		if (!out)
			out = xcalloc(1, 1);
	}
	k->destroy(&p);
	tfile_reader_free(p.files);
	free(p.priv);
	return out;
}

static void test_same_relocations(void **state)
{
	(void)state;
	struct core_btf cut;
	struct diag_err err = { 0 };
	cut_all(&cut);
	size_t n_kinds, compared = 0;
	const struct probe_kind *const *kinds = catalog_all(&n_kinds);
	for (size_t i = 0; i < n_kinds; i++) {
		if (!kinds[i]->bpf_bytes)
			continue;
		size_t whole_len, cut_len;
		char *whole = load_insns(kinds[i], NULL, &whole_len, &err);
		if (!whole) {
			printf("   %s: does not load here (%s): skipped\n", kinds[i]->name, err.msg);
			continue;
		}
		char *small = load_insns(kinds[i], cut.path, &cut_len, &err);
		if (!small)
			fail_msg("%s loads against the kernel's BTF, not against the cut: %s", kinds[i]->name, err.msg);
		if (whole_len != cut_len || memcmp(whole, small, whole_len))
			fail_msg("%s: its programs relocated differently against the cut", kinds[i]->name);
		compared++;
		free(whole);
		free(small);
	}
	printf("   %zu kinds: the same instructions against the cut\n", compared);
	assert_true(compared >= n_kinds / 2);
	core_btf_close(&cut);
}

/* The first object's bytes with its CO-RE records' length past the section's end. */
static void test_malformed(void **state)
{
	(void)state;
	struct core_btf_obj objs[64];
	size_t n = all_objects(objs, 64), which = n;
	for (size_t i = 0; i < n && which == n; i++)
		if (objs[i].size > sizeof(Elf64_Ehdr))
			which = i;
	assert_true(which < n);
	char *copy = xmalloc(objs[which].size);
	memcpy(copy, objs[which].bytes, objs[which].size);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)copy;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(copy + eh->e_shoff);
	const char *names = copy + sh[eh->e_shstrndx].sh_offset;
	bool done = false;
	for (unsigned i = 0; i < eh->e_shnum && !done; i++)
		if (!strcmp(names + sh[i].sh_name, ".BTF.ext") && sh[i].sh_size >= 32) {
			uint32_t huge = 0x7fffffff;
			memcpy(copy + sh[i].sh_offset + 28, &huge, 4); /* core_relo_len */
			done = true;
		}
	assert_true(done);
	struct core_btf_obj bad = { copy, objs[which].size };
	struct core_btf cut;
	struct diag_err err = { 0 };
	struct kernel_btf kernel;
	assert_int_equal(kernel_btf_open(&kernel, &err), 0);
	assert_int_equal(core_btf_build(&kernel, &bad, 1, &cut, &err), -1);
	assert_non_null(strstr(err.msg, "out of bounds"));
	assert_int_equal(cut.fd, -1);
	/* not an ELF image at all: nothing to relocate, an empty cut */
	struct core_btf_obj junk = { "not an object", 13 };
	assert_int_equal(core_btf_build(&kernel, &junk, 1, &cut, &err), 0);
	assert_int_equal(cut.types, 0);
	core_btf_close(&cut);
	kernel_btf_close(&kernel);
	free(copy);
}

/* The reader sees every type as libbpf's parser does: the same record bytes under each id. */
static void test_reader_matches_libbpf(void **state)
{
	(void)state;
	struct diag_err err = { 0 };
	struct kernel_btf k;
	if (kernel_btf_open(&k, &err))
		fail_msg("%s", err.msg);
	struct btf *whole = btf__load_vmlinux_btf();
	assert_non_null(whole);
	assert_int_equal(k.n, btf__type_cnt(whole));
	for (uint32_t id = 1; id < k.n; id++) {
		const struct btf_type *ours = kernel_btf_type(&k, id), *theirs = btf__type_by_id(whole, id);
		size_t size = kernel_btf_record_size(ours);
		assert_true(size >= sizeof(*ours));
		if (memcmp(ours, theirs, size))
			fail_msg("type %u differs from libbpf's", id);
		const char *a = kernel_btf_name(&k, ours->name_off), *b = btf__name_by_offset(whole, theirs->name_off);
		assert_non_null(a);
		assert_string_equal(a, b);
	}
	static const struct { const char *name; unsigned kind; } named[] = {
		{ "task_struct", BTF_KIND_STRUCT }, { "btf_trace_sched_switch", BTF_KIND_TYPEDEF },
		{ "trace_event_raw_sched_switch", BTF_KIND_STRUCT }, { "u64", BTF_KIND_TYPEDEF },
	};
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		assert_int_equal(kernel_btf_find(&k, named[i].name, named[i].kind),
				 btf__find_by_name_kind(whole, named[i].name, named[i].kind));
	assert_int_equal(kernel_btf_find(&k, "no_such_type_here", BTF_KIND_STRUCT), 0);
	assert_null(kernel_btf_type(&k, 0));
	assert_null(kernel_btf_type(&k, k.n));
	assert_null(kernel_btf_name(&k, k.strs_len));
	btf__free(whole);
	kernel_btf_close(&k);
}

/* A tp_btf program's attach id is the kernel's btf_trace_<tracepoint> typedef, as libbpf's own
 * tp_btf handler would look it up; a tracepoint the kernel lacks is -ESRCH. */
static void test_tp_btf_ids(void **state)
{
	(void)state;
	struct btf *whole = btf__load_vmlinux_btf();
	assert_non_null(whole);
	static const char *const tps[] = { "sched_switch", "sched_wakeup", "sched_wakeup_new",
					   "block_rq_issue", "block_rq_complete" };
	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		char name[64];
		snprintf(name, sizeof(name), "btf_trace_%s", tps[i]);
		int want = btf__find_by_name_kind(whole, name, BTF_KIND_TYPEDEF);
		assert_true(want > 0);
		assert_int_equal(tp_btf_id(tps[i]), want);
	}
	assert_int_equal(tp_btf_id("no_such_tracepoint"), -ESRCH);
	assert_int_equal(tp_btf_id(""), -ESRCH);
	btf__free(whole);
}

#define INFO(kind, vlen) ((uint32_t)(kind) << 24 | (uint32_t)(vlen))

/* Hand-made BTF: a header, then types, then strings ("\0int\0s\0"). */
struct tiny_btf {
	struct btf_header h;
	uint32_t types[10];
	char strs[8];
};

static size_t tiny_btf(struct tiny_btf *b)
{
	memset(b, 0, sizeof(*b));
	b->h = (struct btf_header){ .magic = BTF_MAGIC, .version = BTF_VERSION, .hdr_len = sizeof(b->h) };
	/* 1: int, 4 bytes, 32 bits; 2: struct s { int at 0 } of 4 bytes */
	uint32_t t[] = { 1, INFO(BTF_KIND_INT, 0), 4, 32,
			 5, INFO(BTF_KIND_STRUCT, 1), 4, 1, 1, 0 };
	memcpy(b->types, t, sizeof(t));
	b->h.type_len = sizeof(t);
	b->h.str_off = sizeof(b->types);
	memcpy(b->strs, "\0int\0s\0", 7);
	b->h.str_len = 7;
	return sizeof(b->h) + sizeof(b->types) + 7;
}

static void refused(const struct tiny_btf *b, size_t size, const char *why)
{
	struct kernel_btf k;
	struct diag_err err = { 0 };
	assert_int_equal(kernel_btf_from_bytes(&k, b, size, &err), -1);
	if (!strstr(err.msg, why))
		fail_msg("wanted \"%s\", got \"%s\"", why, err.msg);
	assert_null(k.start);
}

static void test_reader_malformed(void **state)
{
	(void)state;
	struct tiny_btf b;
	size_t size = tiny_btf(&b);
	struct kernel_btf k;
	struct diag_err err = { 0 };
	assert_int_equal(kernel_btf_from_bytes(&k, &b, size, &err), 0);
	assert_int_equal(k.n, 3);
	assert_int_equal(kernel_btf_find(&k, "s", BTF_KIND_STRUCT), 2);
	assert_int_equal(kernel_btf_find(&k, "int", BTF_KIND_STRUCT), 0);
	kernel_btf_close(&k);

	refused(&b, sizeof(b.h) - 1, "no header");
	tiny_btf(&b), b.h.magic = 0x9feb;
	refused(&b, size, "not BTF");
	tiny_btf(&b), b.h.str_len = 200;
	refused(&b, size, "out of bounds");
	tiny_btf(&b), b.h.type_len = 0xfffffff0u;
	refused(&b, size, "out of bounds");
	tiny_btf(&b), b.strs[6] = 'x';
	refused(&b, size, "not terminated");
	tiny_btf(&b), b.types[5] = INFO(31, 0);
	refused(&b, size, "unknown kind 31");
	tiny_btf(&b), b.types[5] = INFO(BTF_KIND_STRUCT, 40); /* members past the section */
	refused(&b, size, "type 2 cut short");
	tiny_btf(&b), b.h.type_len = 14; /* a record's header cut */
	refused(&b, size, "cut short");
}

int main(void)
{
	if (geteuid() != 0) {
		printf("test_core_btf: needs root (it loads BPF programs): skipped\n");
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_shape),
		cmocka_unit_test(test_same_relocations),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_reader_matches_libbpf),
		cmocka_unit_test(test_tp_btf_ids),
		cmocka_unit_test(test_reader_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
