/* test_unwind.c — CFI lookups, leaf-frame recovery and DWARF unwinding (engine/symbolize/unwind.c), and
 * the counting of streamed samples (engine/probes/stack_sampler.c), on the fixtures of unwind.mk (built
 * by gcc as distributions build) and on this process itself.
 *
 * cfi_ra_rule_path on libleaf.so: the frameless leaf crc32_slice_update has its return address
 * at sp (CFA = rsp + 8) at its entry and in its body; leaf_main's handle_batch has it at sp at
 * its entry, and keeps a frame pointer in its body (CFA from rbp); an address no FDE covers and a
 * missing file are "unknown". unwind_leaf_caller on this very process with libleaf.so loaded
 * (dlopen): a synthetic sample at the leaf's entry gets the word at sp as the caller, found
 * through /proc/self/maps and map_files; a copy too short for that word, an address outside every
 * mapping give -1; unwind_leaf_callers through a chain of frameless frames up to one with a frame
 * pointer. unwind_dwarf on a copy of this process's own stack (registers read with inline
 * assembly, x86-64) finds the frames of its callers, and fewer when the copy is cut short.
 * stack_sampler on ring buffer records: DWARF stacks marked and merged, malformed records refused
 * and counted, sizes clamped to the record, at most max_rows stacks. Addresses are read from the
 * ELF symbol tables here (libelf), independently of unwind.c. Needs no root (map_files falls
 * back to the path with the same inode).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "abi/diag_unwind.h"
#include "fixture_path.h"
#include "probes/stack_sampler.h"
#include "symbolize/stacks.h"
#include "symbolize/unwind.h"

/* Value (ELF address) and size of function name in the .symtab of path; fails the test if none. */
static void elf_func(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	Elf_Scn *scn = NULL;
	bool found = false;
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;
			if (gelf_getsym(d, (int)i, &s) && (n = elf_strptr(elf, sh.sh_link, s.st_name)) &&
			    !strcmp(n, name) && GELF_ST_TYPE(s.st_info) == STT_FUNC) {
				*addr = s.st_value;
				*size = s.st_size;
				found = true;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (!found)
		fail_msg("no function %s in %s", name, path);
}

static const char *need(const char *name)
{
	const char *p = fixture_path(name);
	if (!p)
		fail_msg("fixture %s not built (make unit builds it)", name);
	return p;
}

static void test_cfi_leaf(void **state)
{
	(void)state;
	char lib[PATH_MAX];
	snprintf(lib, sizeof(lib), "%s", need("libleaf.so"));
	uint64_t addr, size, off = 99;
	elf_func(lib, "crc32_slice_update", &addr, &size);
	assert_int_equal(cfi_ra_rule_path(lib, addr, &off), CFI_RA_AT_SP);
	assert_int_equal(off, 0); /* nothing pushed yet: the return address is at sp */
	off = 99;
	assert_int_equal(cfi_ra_rule_path(lib, addr + size / 2, &off), CFI_RA_AT_SP);
	assert_int_equal(off % 8, 0);
	assert_true(off < 64); /* a leaf pushes a few callee-saved registers at most */
	assert_int_equal(cfi_ra_rule_path(lib, 0, &off), CFI_RA_UNKNOWN); /* the ELF header */
	assert_int_equal(cfi_ra_rule_path("/nonexistent/libleaf.so", addr, &off), CFI_RA_UNKNOWN);
}

static void test_cfi_framed(void **state)
{
	(void)state;
	char exe[PATH_MAX];
	snprintf(exe, sizeof(exe), "%s", need("leaf_main"));
	uint64_t addr, size, off = 99;
	elf_func(exe, "handle_batch", &addr, &size);
	assert_int_equal(cfi_ra_rule_path(exe, addr, &off), CFI_RA_AT_SP); /* before push %rbp */
	assert_int_equal(off, 0);
	/* the body, after the prologue: the frame pointer holds the CFA */
	assert_int_equal(cfi_ra_rule_path(exe, addr + size / 2, &off), CFI_RA_FRAME);
}

static void test_leaf_caller_live(void **state)
{
	(void)state;
	const char *lib = need("libleaf.so");
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	void *leaf = dlsym(h, "crc32_slice_update");
	assert_non_null(leaf);
	uint64_t stack[4] = { 0x401234, 0xdead, 0xbeef, 0 }, caller = 0;
	struct user_sample s = { .ip = (uint64_t)(uintptr_t)leaf, .sp = 0x7ffc0000, .bp = 0x7ffc1000,
				 .stack = (const uint8_t *)stack, .len = sizeof(stack) };
	struct unwinder *u = unwinder_new(NULL);
	assert_int_equal(unwind_leaf_caller(u, getpid(), &s, &caller), 1);
	assert_int_equal(caller, 0x401234);
	s.len = 4; /* the word at sp was not copied */
	assert_int_equal(unwind_leaf_caller(u, getpid(), &s, &caller), -1);
	s.len = sizeof(stack);
	s.ip = 16; /* no mapping */
	assert_int_equal(unwind_leaf_caller(u, getpid(), &s, &caller), -1);
	unwinder_new_period(u);
	s.ip = (uint64_t)(uintptr_t)leaf;
	assert_int_equal(unwind_leaf_caller(u, getpid(), &s, &caller), 1);
	unwinder_free(u);
	dlclose(h);
}

/* The top of the calling thread's stack mapping ([stack] in /proc/self/maps), 0 if not found. */
static uint64_t stack_top(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t top = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		if (sscanf(line, "%llx-%llx", &a, &b) == 2 && sp >= a && sp < b)
			top = b;
	}
	if (f)
		fclose(f);
	return top;
}

/* A chain of frameless frames (glibc's __lll_lock_wake under pthread_mutex_unlock under the
 * caller): the leaf's return address leads into a frameless frame again (the leaf's own body
 * stands in for one: its CFA is rsp + 8 there too), whose return address leads into a function
 * with a frame pointer (stack_top above, built with one): both are recovered, and the walk stops
 * there without reading the words above; max and a copy cut short bound it. */
static void test_leaf_callers_chain(void **state)
{
	(void)state;
	void *h = dlopen(need("libleaf.so"), RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	void *leaf = dlsym(h, "crc32_slice_update");
	assert_non_null(leaf);
	uint64_t body = (uint64_t)(uintptr_t)leaf + 8, framed = (uint64_t)(uintptr_t)stack_top + 32;
	uint64_t stack[4] = { body, framed, 0x401234, 0 }, callers[4] = { 0 };
	struct user_sample s = { .ip = (uint64_t)(uintptr_t)leaf, .sp = 0x7ffc0000, .bp = 0x7ffc1000,
				 .stack = (const uint8_t *)stack, .len = sizeof(stack) };
	struct unwinder *u = unwinder_new(NULL);
	assert_int_equal(unwind_leaf_callers(u, getpid(), &s, callers, 4), 2);
	assert_int_equal(callers[0], body);
	assert_int_equal(callers[1], framed);
	assert_int_equal(unwind_leaf_callers(u, getpid(), &s, callers, 1), 1);
	s.len = sizeof(uint64_t); /* only the leaf's return address was copied */
	assert_int_equal(unwind_leaf_callers(u, getpid(), &s, callers, 4), 1);
	s.ip = framed; /* a leaf with a frame pointer: nothing to recover */
	assert_int_equal(unwind_leaf_callers(u, getpid(), &s, callers, 4), 0);
	unwinder_free(u);
	dlclose(h);
}

/* Registers and a copy of the stack, as cpu_profile's BPF side takes them, of this very frame.
 * Not instrumented by ASan: reading the raw stack crosses its red zones on purpose. */
__attribute__((noinline, no_sanitize("address"))) static void capture(struct user_sample *s,
									  uint8_t *buf, size_t cap)
{
	uint64_t ip, sp, bp;
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	uint64_t top = stack_top(sp);
	size_t len = top > sp && top - sp < cap ? (size_t)(top - sp) : cap;
	const volatile uint8_t *from = (const volatile uint8_t *)(uintptr_t)sp;
	for (size_t i = 0; i < len; i++) /* not memcpy: ASan intercepts it */
		buf[i] = from[i];
	*s = (struct user_sample){ ip, sp, bp, buf, len };
}

__attribute__((noinline)) static void caller_of_capture(struct user_sample *s, uint8_t *buf, size_t cap)
{
	capture(s, buf, cap);
	__asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
}

/* DWARF unwinding of this process's own copied stack: capture's frame, then the return address
 * into caller_of_capture, then further; memory reads outside the copy fail (a 64-byte copy is
 * truncated after the first frame or two). */
static void test_dwarf_self(void **state)
{
	(void)state;
	static uint8_t buf[16384];
	struct user_sample s;
	caller_of_capture(&s, buf, sizeof(buf));
	uint64_t ips[64];
	size_t n = 0;
	struct unwinder *u = unwinder_new(NULL);
	int rc = unwind_dwarf(u, getpid(), gettid(), &s, ips, 64, &n);
	assert_true(rc == 0 || rc == 1);
	assert_true(n >= 3);
	assert_int_equal(ips[0], s.ip);
	uintptr_t caller = (uintptr_t)caller_of_capture;
	assert_true(ips[1] > caller && ips[1] < caller + 256); /* the return address into it */
	uintptr_t test = (uintptr_t)test_dwarf_self;
	assert_true(ips[2] > test && ips[2] < test + 4096);
	/* the same with only 64 bytes copied: fewer frames, never more */
	s.len = 64;
	size_t m = 0;
	rc = unwind_dwarf(u, getpid(), gettid(), &s, ips, 64, &m);
	assert_true(rc != 0);
	assert_true(m < n);
	unwinder_free(u);
}


/* Samples whose weight follows (off-CPU: the stack at switch-out, the time at switch-in): the
 * weight record settles the thread's sample with that cookie; a sample replaced by the thread's
 * next one before its weight came is counted unweighed and never reported; a weight for a
 * cookie that does not wait is refused; the rows keep their tag's name; flush scales. */
static void test_sampler_deferred_weights(void **state)
{
	(void)state;
	static const char *const tags[] = { "runnable", "sleeping" };
	static struct diag_user_sample rec;
	memset(&rec, 0, sizeof(rec));
	rec.rec = DIAG_REC_SAMPLE;
	rec.tgid = rec.tid = 4242;
	rec.user_stack_id = rec.kernel_stack_id = -14;
	memcpy(rec.comm, "waiter", 7);
	rec.tag = 1;
	size_t size = offsetof(struct diag_user_sample, stack); /* no copy: not even one caller */

	struct stack_sampler *sm = stack_sampler_new(-1, true, false, 16, tags, 2, 4, NULL);
	rec.cookie = 7;
	assert_int_equal(stack_sampler_add(sm, &rec, size), 0);
	struct diag_weight_rec w = { .rec = DIAG_REC_WEIGHT, .tid = 4242, .cookie = 7, .weight = 100 };
	assert_int_equal(stack_sampler_add(sm, &w, sizeof(w)), 0);
	rec.cookie = 8; /* replaced by 9 before its weight: unweighed */
	assert_int_equal(stack_sampler_add(sm, &rec, size), 0);
	rec.cookie = 9;
	assert_int_equal(stack_sampler_add(sm, &rec, size), 0);
	assert_int_equal(stack_sampler_settle(sm, 4242, 8, 1000), -1);
	assert_int_equal(stack_sampler_settle(sm, 4242, 9, 50), 0);
	assert_int_equal(stack_sampler_settle(sm, 4242, 9, 50), -1); /* once */
	assert_int_equal(stack_sampler_settle(sm, 1, 9, 50), -1);    /* no such thread */
	rec.cookie = 0; /* a sample with its weight: counted at once */
	rec.weight = 5;
	rec.tag = 0;
	assert_int_equal(stack_sampler_add(sm, &rec, size), 0);

	uint64_t tw[2] = { 0 }, tc[2] = { 0 };
	stack_sampler_tag_sums(sm, tw, tc);
	assert_int_equal(tw[1], 150);
	assert_int_equal(tc[1], 2);
	assert_int_equal(tw[0], 5);
	struct stack_table *t = stacks_new(NULL, 8);
	uint64_t wsum, n, k;
	assert_int_equal(stack_sampler_flush(sm, t, true, 2, &wsum, &n, &k), 0);
	assert_int_equal(wsum, 310);
	assert_int_equal(n, 6);
	struct value *res = value_obj();
	stack_sampler_report(sm, res, 2048, 4, 0);
	const struct value *stacks = stacks_finish(t, res, "ns");
	assert_int_equal(stacks->arr.len, 2);
	assert_string_equal(value_get_str(stacks->arr.items[0], "tag"), "sleeping");
	assert_int_equal(value_get(stacks->arr.items[0], "weight")->i, 300);
	assert_int_equal(value_get(value_get(res, "unwind"), "unweighed")->i, 1);
	value_free(res);
	stack_sampler_free(sm);
}

/* The sampler on records as the ring buffer hands them: a DWARF-unwound sample of this process
 * counted with its frames marked "dwarf", the same stack twice merged, a record shorter than its
 * header refused and counted, a stack_len beyond the record clamped (ASan would see an overread),
 * and no more distinct stacks kept than max_rows. */
static void test_sampler_records(void **state)
{
	(void)state;
	static struct diag_user_sample rec;
	static uint8_t buf[8192];
	struct user_sample us;
	caller_of_capture(&us, buf, sizeof(buf));
	memset(&rec, 0, sizeof(rec));
	rec.rec = DIAG_REC_SAMPLE;
	rec.tgid = (uint32_t)getpid();
	rec.tid = (uint32_t)gettid();
	rec.user_stack_id = rec.kernel_stack_id = -14; /* -EFAULT: user mode, no fp stack */
	memcpy(rec.comm, "self", 5);
	rec.weight = 3;
	rec.ip = us.ip;
	rec.sp = us.sp;
	rec.bp = us.bp;
	rec.stack_len = (uint32_t)us.len;
	memcpy(rec.stack, buf, us.len);
	size_t size = offsetof(struct diag_user_sample, stack) + us.len;

	struct stack_sampler *sm = stack_sampler_new(-1, true, false, 1, NULL, 0, 0, NULL);
	assert_int_equal(stack_sampler_add(sm, &rec, size), 0);
	assert_int_equal(stack_sampler_add(sm, &rec, size), 0);
	assert_int_equal(stack_sampler_add(sm, &rec, 10), 0); /* shorter than the header */
	rec.stack_len = 60000; /* more than the record holds: clamped to size */
	assert_int_equal(stack_sampler_add(sm, &rec, offsetof(struct diag_user_sample, stack) + 64), 0);
	/* the short record; the 64-byte one, a distinct (empty) stack over max_rows */
	assert_int_equal(stack_sampler_refused(sm), 2);

	struct stack_table *t = stacks_new(NULL, 8);
	uint64_t w, n, k;
	assert_int_equal(stack_sampler_flush(sm, t, true, 1, &w, &n, &k), 0);
	assert_int_equal(n, 2);
	assert_int_equal(w, 6);
	assert_int_equal(k, 0);
	/* a probe sampling 1 in 5 (page_faults' sample_every): weights and counts scaled */
	struct stack_table *t5 = stacks_new(NULL, 8);
	assert_int_equal(stack_sampler_flush(sm, t5, true, 5, &w, &n, &k), 0);
	assert_int_equal(n, 10);
	assert_int_equal(w, 30);
	stacks_free(t5);
	struct value *res = value_obj();
	stack_sampler_report(sm, res, 8192, 4, 0);
	const struct value *stacks = stacks_finish(t, res, "samples");
	assert_int_equal(stacks->arr.len, 1);
	const struct value *from = value_get(stacks->arr.items[0], "user_from");
	assert_non_null(from);
	assert_true(from->arr.len >= 3);
	for (size_t i = 0; i < from->arr.len; i++)
		assert_string_equal(from->arr.items[i]->s, "dwarf");
	const struct value *u = value_get(res, "unwind");
	assert_string_equal(value_get_str(res, "user_unwind"), "dwarf");
	assert_int_equal(value_get(u, "unwound")->i, 3);
	/* the 64-byte copy: not even one caller */
	assert_int_equal(value_get(u, "dwarf_complete")->i + value_get(u, "dwarf_truncated")->i, 2);
	assert_int_equal(value_get(u, "dwarf_failed")->i, 1);
	value_free(res);
	stack_sampler_free(sm);
}

static void test_origin_names(void **state)
{
	(void)state;
	assert_string_equal(frame_origin_name(FRAME_FP), "fp");
	assert_string_equal(frame_origin_name(FRAME_CFI), "cfi");
	assert_string_equal(frame_origin_name(FRAME_DWARF), "dwarf");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfi_leaf),
		cmocka_unit_test(test_cfi_framed),
		cmocka_unit_test(test_leaf_caller_live),
		cmocka_unit_test(test_leaf_callers_chain),
		cmocka_unit_test(test_dwarf_self),
		cmocka_unit_test(test_sampler_records),
		cmocka_unit_test(test_sampler_deferred_weights),
		cmocka_unit_test(test_origin_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
