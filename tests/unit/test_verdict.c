/* test_verdict.c — the Lua verdict layer: sandbox, read-only results, answer checking, the shared
 * diag.lua helpers and the high-cpu verdicts on recorded result trees built below; the budget of
 * the answer, the child process's deadline, and the answer's way back through the pipe (every
 * run that can goes both through verdict_run and verdict_run_inprocess, which must agree).
 * Needs DIAG_SRCDIR (the repository root); no root, no BPF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "recipe/recipe.h"
#include "plan/shape.h"
#include "recorded_shape.h"
#include "verdict/verdict.h"

/* ---- building result trees ------------------------------------------------------------- */

static char *src(const char *rel)
{
	const char *root = getenv("DIAG_SRCDIR");
	return xasprintf("%s/%s", root ? root : ".", rel);
}

/* A NULL-terminated list of frame names, leaf first. */
#define FRAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NOFRAMES ((const char *const[]){ NULL })

static struct value *frames(const char *const *names)
{
	struct value *a = value_arr();
	for (; *names; names++)
		value_arr_push(a, value_str(*names));
	return a;
}

static struct value *profile(int64_t samples, int64_t kernel)
{
	struct value *p = value_obj();
	value_set_str(p, "event", "cpu_clock");
	value_set_int(p, "frequency_hz", 99);
	value_set_int(p, "samples", samples);
	value_set_int(p, "user_samples", samples - kernel);
	value_set_int(p, "kernel_samples", kernel);
	value_set_int(p, "lost_stacks", 0);
	value_set_int(p, "dropped", 0);
	value_set_str(p, "user_unwind", "fp");
	struct value *u = value_obj_set(p, "unwind", value_obj());
	value_set_bool(u, "leaf_fixup", true);
	static const char *const counts[] = { "copy_bytes", "sent", "ring_full", "unwound",
					      "copied_bytes_avg", "copies_cut", "fixed_leaves",
					      "leaf_frame_ok", "leaf_unknown", "dwarf_complete",
					      "dwarf_truncated", "dwarf_failed", "dwarf_spliced",
					      "unweighed" };
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		value_set_int(u, counts[i], 0);
	value_set_str(p, "stack_unit", "samples");
	value_obj_set(p, "stacks", value_arr());
	return p;
}

static void stack(struct value *prof, int64_t count, bool in_kernel, const char *const *user,
		  const char *const *kernel)
{
	struct value *s = value_arr_push((struct value *)value_get(prof, "stacks"), value_obj());
	value_set_int(s, "weight", count); /* cpu_profile: weight = count = samples */
	value_set_int(s, "count", count);
	value_set_str(s, "comm", "burner");
	value_set_bool(s, "in_kernel", in_kernel);
	value_obj_set(s, "user", frames(user));
	value_obj_set(s, "kernel", frames(kernel));
}

/* buckets: n triples lo, hi, count */
static struct value *runq(int n, const int64_t *b, int64_t max_us)
{
	struct value *r = value_obj(), *bk = value_arr();
	int64_t count = 0, total = 0;
	value_set_str(r, "unit", "us");
	for (int i = 0; i < n; i++) {
		struct value *x = value_arr_push(bk, value_obj());
		value_set_int(x, "lo", b[3 * i]);
		value_set_int(x, "hi", b[3 * i + 1]);
		value_set_int(x, "count", b[3 * i + 2]);
		count += b[3 * i + 2];
		total += b[3 * i + 2] * (b[3 * i] + b[3 * i + 1]) / 2;
	}
	value_set_int(r, "count", count);
	value_set_int(r, "total_us", total);
	value_set_int(r, "max_us", max_us);
	value_set_int(r, "dropped", 0);
	value_obj_set(r, "buckets", bk);
	return r;
}

/* Timed syscall results (timing: true) carry total_ns and errors; count-only ones (the
 * default) carry counts alone. */
static struct value *syscalls_of(bool timed)
{
	struct value *s = value_obj();
	value_set_bool(s, "timed", timed);
	value_set_int(s, "total", 0);
	if (timed)
		value_set_int(s, "total_ns", 0);
	value_set_int(s, "dropped", 0);
	value_obj_set(s, "syscalls", value_arr());
	return s;
}

static struct value *syscalls(void) { return syscalls_of(true); }

static void add_syscall(struct value *s, const char *name, int64_t nr, int64_t count, int64_t total_ns,
		    int64_t errors)
{
	bool timed = value_get(s, "total_ns") != NULL;
	struct value *x = value_arr_push((struct value *)value_get(s, "syscalls"), value_obj());
	value_set_str(x, "name", name);
	value_set_int(x, "nr", nr);
	value_set_int(x, "count", count);
	if (timed) {
		value_set_int(x, "total_ns", total_ns);
		value_set_int(x, "errors", errors);
		value_set_int(s, "total_ns", (int64_t)value_get_num(s, "total_ns", 0) + total_ns);
	}
	value_set_int(s, "total", (int64_t)value_get_num(s, "total", 0) + count);
}

static struct value *context(double cpu_pct, double user_share, int64_t vol, int64_t nonvol)
{
	struct value *c = value_obj();
	double cpu_s = cpu_pct / 100 * 5.0;
	value_set_int(c, "pid", 4242);
	value_set_str(c, "comm", "burner");
	value_set_str(c, "sections", "cpu");
	value_set_int(c, "threads", 1);
	value_set_int(c, "readings", 6);
	value_set_num(c, "wall_s", 5.0);
	value_set_num(c, "utime_s", cpu_s * user_share);
	value_set_num(c, "stime_s", cpu_s * (1 - user_share));
	value_set_num(c, "cpu_pct", cpu_pct);
	value_set_int(c, "ncpus", 4);
	value_set_int(c, "voluntary_ctxt_switches", vol);
	value_set_int(c, "nonvoluntary_ctxt_switches", nonvol);
	value_set_bool(c, "exited", false);
	struct value *psi = value_obj_set(c, "psi", value_obj());
	value_set_num(psi, "some_pct", 1200 / 5e6 * 100);
	value_set_num(psi, "some_avg10", 0.5);
	value_set_num(psi, "some_avg60", 0.4);
	value_set_num(psi, "full_avg10", 0.0);
	value_set_int(psi, "some_total_us", 1200);
	return c;
}

static struct value *run_info(const char *stop_reason)
{
	struct value *r = value_obj();
	value_set_str(r, "recipe", "high-cpu");
	value_set_num(r, "duration_s", 5.0);
	value_set_str(r, "stop_reason", stop_reason);
	struct value *t = value_obj_set(r, "target", value_obj());
	value_set_int(t, "pid", 4242);
	value_set_str(t, "comm", "burner");
	value_set_str(t, "exe", "/usr/bin/burner");
	value_set_int(r, "ncpus", 4);
	return r;
}

/* As the recipe loader hands them over: text. */
static struct value *high_cpu_thresholds(void)
{
	static const char *const kv[] = {
		"busy_cpu_pct", "50", "idle_cpu_pct", "5", "kernel_share_pct", "50",
		"runq_p99_warn_us", "5000", "runq_p99_crit_us", "50000",
		"nonvoluntary_per_s_warn", "200", "psi_some_pct_warn", "20", "steal_pct_warn", "10",
		"shallow_stack_frames", "2", "shallow_stack_pct", "70", "top_n", "10",
	};
	struct value *t = value_obj();
	for (size_t i = 0; i < ARRAY_LEN(kv); i += 2)
		value_set_str(t, kv[i], kv[i + 1]);
	return t;
}

/* A quiet run queue and a few syscalls, for cases about something else. */
static void add_background(struct value *res)
{
	static const int64_t calm[] = { 0, 1, 400, 2, 3, 120, 4, 7, 30 };
	value_obj_set(res, "runq", runq(3, calm, 9));
	struct value *s = value_obj_set(res, "syscalls", syscalls());
	add_syscall(s, "write", 1, 500, 2500000, 0);
	add_syscall(s, "futex", 202, 120, 900000, 3);
}

/* ---- running ---------------------------------------------------------------------------- */

/* A source as the caller of verdict_run hands it over: bytes read once, with a path. */
static void source_of_text(struct source_file *f, const char *path, const char *text, size_t len)
{
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(path);
	f->data = xmalloc(len + 1);
	memcpy(f->data, text, len);
	f->data[len] = '\0';
	f->len = len;
}

static void source_of_file(struct source_file *f, const char *rel)
{
	char *path = src(rel);
	size_t len;
	char *data = read_file(path, &len);
	if (!data)
		fail_msg("cannot read %s", path);
	source_of_text(f, path, data, len);
	free(data);
	free(path);
}

static void source_drop(struct source_file *f)
{
	free(f->path);
	free(f->data);
}

static int lua_name(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 4 && strcmp(d->d_name + n - 4, ".lua") == 0;
}

/* The libraries of a directory in name order, as the engine reads them (NULL dir: none). */
static struct source_file *libs_of(const char *rel_dir, size_t *n)
{
	*n = 0;
	if (!rel_dir)
		return NULL;
	char *dir = src(rel_dir);
	struct dirent **names;
	int k = scandir(dir, &names, lua_name, alphasort);
	if (k < 0)
		fail_msg("cannot list %s", dir);
	struct source_file *libs = xcalloc((size_t)k + 1, sizeof(*libs));
	for (int i = 0; i < k; i++) {
		char *rel = xasprintf("%s/%s", rel_dir, names[i]->d_name);
		source_of_file(&libs[i], rel);
		free(rel);
		free(names[i]);
	}
	free(names);
	free(dir);
	*n = (size_t)k;
	return libs;
}

struct outcome {
	int rc;
	struct value *verdicts, *report, *ruled_out, *metrics;
	struct diag_err err;
};

static void outcome_free(struct outcome *o)
{
	value_free(o->verdicts);
	value_free(o->report);
	value_free(o->ruled_out);
	value_free(o->metrics);
}

static int run_into(int (*runner)(const struct verdict_input *, struct verdict_answer *,
				  struct diag_err *),
		    const struct verdict_input *in, struct outcome *o)
{
	struct verdict_answer a;
	o->rc = runner(in, &a, &o->err);
	o->verdicts = a.verdicts;
	o->report = a.report;
	o->ruled_out = a.ruled_out;
	o->metrics = a.metrics;
	return o->rc;
}

static char *json_of(const struct value *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (v)
		value_write_json(v, f, -1);
	fclose(f);
	return buf;
}

/* Runs in a child (verdict_run), and, unless only_child, in this process too: both must give
 * the same answer or the same error (so LeakSanitizer sees the conversion's paths as well). */
static void run_input(const struct verdict_input *in, bool only_child, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	run_into(verdict_run, in, o);
	if (only_child)
		return;
	struct outcome p = { 0 };
	run_into(verdict_run_inprocess, in, &p);
	if (p.rc != o->rc)
		fail_msg("child: %d (%s), in process: %d (%s)", o->rc, o->err.msg, p.rc, p.err.msg);
	if (o->rc) {
		assert_string_equal(o->err.msg, p.err.msg);
	} else {
		char *a = json_of(o->verdicts), *b = json_of(p.verdicts);
		assert_string_equal(a, b);
		free(a);
		free(b);
		a = json_of(o->report);
		b = json_of(p.report);
		assert_string_equal(a, b);
		free(a);
		free(b);
		a = json_of(o->ruled_out);
		b = json_of(p.ruled_out);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
	outcome_free(&p);
}

static unsigned run_max_ms; /* wall clock for run_lua; 0 = the default */

static void run_lua(const char *rel_lua, const char *rel_lib, const struct value *results,
		    const struct value *thresholds, const struct value *run, size_t max_instr,
		    size_t max_mem, struct outcome *o)
{
	struct source_file lua;
	size_t n_libs;
	source_of_file(&lua, rel_lua);
	struct source_file *libs = libs_of(rel_lib, &n_libs);
	struct verdict_input in = { .lua = &lua, .libs = libs, .n_libs = n_libs, .results = results,
				    .thresholds = thresholds, .run = run, .max_ms = run_max_ms,
				    .max_instructions = max_instr, .max_memory_bytes = max_mem };
	run_input(&in, false, o);
	source_drop(&lua);
	for (size_t i = 0; i < n_libs; i++)
		source_drop(&libs[i]);
	free(libs);
}

/* Runs a snippet given as text, named "inline.lua", with diag.lua loaded. */
static void run_text(const char *text, const struct value *results, struct verdict_input *in,
		     bool only_child, struct outcome *o)
{
	struct source_file lua;
	size_t n_libs;
	source_of_text(&lua, "inline.lua", text, strlen(text));
	struct source_file *libs = libs_of("lua/lib", &n_libs);
	in->lua = &lua;
	in->libs = libs;
	in->n_libs = n_libs;
	in->results = results;
	run_input(in, only_child, o);
	source_drop(&lua);
	for (size_t i = 0; i < n_libs; i++)
		source_drop(&libs[i]);
	free(libs);
}


/* Runs lua/high-cpu.lua with the default limits, or max_instr; takes ownership of results, run. */
static void high_cpu_limited(struct value *results, struct value *run, size_t max_instr,
			     struct outcome *o)
{
	assert_recorded_shape("recipes/high-cpu.yaml", results);
	struct value *th = high_cpu_thresholds();
	run_lua("lua/high-cpu.lua", "lua/lib", results, th, run, max_instr, 0, o);
	if (o->rc != 0)
		fail_msg("high-cpu.lua failed: %s", o->err.msg);
	value_free(th);
	value_free(results);
	value_free(run);
}

static void high_cpu(struct value *results, struct value *run, struct outcome *o)
{
	high_cpu_limited(results, run, 0, o);
}

static const struct value *verdict(const struct outcome *o, const char *id)
{
	for (size_t i = 0; i < o->verdicts->arr.len; i++)
		if (strcmp(value_get_str(o->verdicts->arr.items[i], "id"), id) == 0)
			return o->verdicts->arr.items[i];
	return NULL;
}

static const char *id_at(const struct outcome *o, size_t i)
{
	assert_true(i < o->verdicts->arr.len);
	return value_get_str(o->verdicts->arr.items[i], "id");
}

/* Does any string under v contain needle? */
static bool mentions(const struct value *v, const char *needle)
{
	switch (v->type) {
	case V_STR: return strstr(v->s, needle) != NULL;
	case V_ARR:
		for (size_t i = 0; i < v->arr.len; i++)
			if (mentions(v->arr.items[i], needle))
				return true;
		return false;
	case V_OBJ:
		for (size_t i = 0; i < v->obj.len; i++)
			if (mentions(v->obj.vals[i], needle))
				return true;
		return false;
	default: return false;
	}
}

static void assert_mentions(const struct value *v, const char *needle)
{
	if (!mentions(v, needle)) {
		value_write_json(v, stderr, 2);
		fail_msg("expected to find \"%s\"", needle);
	}
}

static void assert_contains(const char *haystack, const char *needle)
{
	if (!haystack || !strstr(haystack, needle))
		fail_msg("\"%s\" does not contain \"%s\"", haystack ? haystack : "(null)", needle);
}

static void print_verdicts(const char *name, const struct outcome *o)
{
	if (!getenv("VERBOSE"))
		return;
	fprintf(stderr, "---- %s\n", name);
	value_write_json(o->verdicts, stderr, 2);
	fputc('\n', stderr);
}

/* ---- high-cpu on recorded results ------------------------------------------------------- */

static void test_user_bound(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(500, 10));
	stack(p, 360, false, FRAMES("burn_hot", "run_loop", "main", "__libc_start_call_main",
				    "__libc_start_main", "_start"), NOFRAMES);
	stack(p, 80, false, FRAMES("crunch", "run_loop", "main", "__libc_start_main", "_start"),
	      NOFRAMES);
	stack(p, 50, false, FRAMES("__memmove_avx_unaligned", "burn_hot", "run_loop", "main",
				   "__libc_start_main", "_start"), NOFRAMES);
	stack(p, 10, true, FRAMES("__write", "flush_log", "main", "_start"),
	      FRAMES("copy_user_enhanced_fast_string", "vfs_write", "ksys_write", "do_syscall_64",
		     "entry_SYSCALL_64_after_hwframe"));
	value_obj_set(res, "context", context(99.2, 0.98, 10, 40));
	add_background(res);

	struct outcome o;
	high_cpu(res, run_info("duration"), &o);
	print_verdicts("user-bound", &o);

	assert_int_equal(o.verdicts->arr.len, 1);
	assert_string_equal(id_at(&o, 0), "cpu-bound-user");
	const struct value *v = verdict(&o, "cpu-bound-user");
	assert_string_equal(value_get_str(v, "severity"), "critical"); /* 99% CPU, 98% user */
	assert_string_equal(value_get_str(v, "title"),
			    "CPU-bound in user code: 72% of samples in burn_hot()");
	assert_mentions(value_get(v, "evidence"), "burn_hot() 72%, crunch() 16%");
	assert_mentions(value_get(v, "evidence"), "(72% of samples): _start → __libc_start_main → "
			"__libc_start_call_main → main → run_loop → burn_hot");
	assert_mentions(value_get(v, "evidence"), "98% in user code, 2.0% in the kernel");
	assert_mentions(value_get(v, "next_steps"), "perf annotate burn_hot");
	assert_int_equal(verdicts_worst(o.verdicts), SEV_CRITICAL);

	/* report: sections in the documented order, the top self function first */
	assert_int_equal(o.report->arr.len, 5);
	const struct value *top = o.report->arr.items[0];
	assert_string_equal(value_get_str(top, "kind"), "table");
	assert_string_equal(value_get_str(top, "title"), "Top functions (self)");
	const struct value *row = value_get(top, "rows")->arr.items[0];
	assert_string_equal(row->arr.items[0]->s, "burn_hot");
	assert_int_equal(row->arr.items[1]->i, 360);
	assert_string_equal(value_get_str(o.report->arr.items[3], "kind"), "histogram");
	const struct value *sc = o.report->arr.items[4];
	assert_string_equal(value_get_str(sc, "title"), "Syscalls");
	assert_string_equal(value_get(sc, "rows")->arr.items[0]->arr.items[2]->s, "100/s");
	outcome_free(&o);
}

/* A debug hint as stacks.c gives one for a stripped file (see stacks.h); package NULL: no owner
 * known, build_id NULL: the file has none. */
static void debug_hint(struct value *prof, const char *file, const char *path, int64_t self,
		       int64_t bias, const char *build_id, const char *package, const char *version)
{
	struct value *hints = (struct value *)value_get(prof, "debug_hints");
	if (!hints)
		hints = value_obj_set(prof, "debug_hints", value_arr());
	struct value *h = value_arr_push(hints, value_obj());
	value_set_str(h, "file", file);
	value_set_str(h, "path", path);
	value_set_int(h, "self_weight", self);
	value_set_int(h, "vaddr_bias", bias);
	if (build_id) {
		char *dp = xasprintf("/usr/lib/debug/.build-id/%.2s/%s.debug", build_id, build_id + 2);
		value_set_str(h, "build_id", build_id);
		value_set_str(h, "debug_path", dp);
		free(dp);
	}
	if (package) {
		char *dbg = xasprintf("%s-dbgsym", package);
		value_set_str(h, "package", package);
		value_set_str(h, "package_version", version);
		value_set_str(h, "dbgsym_package", dbg);
		free(dbg);
	}
}

/* xz compressing, its work in Debian's stripped liblzma5 (recorded: frames file+0xSTART). */
static struct value *stripped_xz(const char *package, const char *build_id, int64_t bias)
{
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(280, 20));
	stack(p, 160, false, FRAMES("liblzma.so.5.4.1+0x16880", "liblzma.so.5.4.1+0x15f00",
				    "liblzma.so.5.4.1+0x190b0", "[unknown]"), NOFRAMES);
	stack(p, 55, false, FRAMES("liblzma.so.5.4.1+0x15ae0", "liblzma.so.5.4.1+0x190b0", "[unknown]"),
	      NOFRAMES);
	stack(p, 45, false, FRAMES("liblzma.so.5.4.1+0x172d0", "liblzma.so.5.4.1+0x190b0", "[unknown]"),
	      NOFRAMES);
	stack(p, 20, true, FRAMES("xz+0x5a20", "[unknown]"), FRAMES("copy_user_enhanced_fast_string",
								      "vfs_read", "ksys_read"));
	debug_hint(p, "liblzma.so.5.4.1", "/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1", 260, bias,
		   build_id, package, "5.4.1-1");
	debug_hint(p, "xz", "/usr/bin/xz", 0, 0, "5c48e42c8ad3eed8999c902eb605ba0ff33b295b",
		   package ? "xz-utils" : NULL, "5.4.1-1");
	value_obj_set(res, "context", context(96.0, 0.9, 10, 40));
	add_background(res);
	return res;
}

/* Stripped code: the hint names the package that owns the file and its -dbgsym package, the
 * build-id path it installs; perf and objdump name the file and the address, never an empty
 * symbol. Without a package, the build-id to fetch; without either, the generic advice. */
static void test_user_bound_stripped(void **state)
{
	(void)state;
	const char *id = "72a44fc3edc93188d045e65d92d28d50e373dbcb";
	struct outcome o;
	high_cpu(stripped_xz("liblzma5", id, 0), run_info("duration"), &o);
	print_verdicts("user-bound-stripped", &o);
	const struct value *v = verdict(&o, "cpu-bound-user");
	assert_non_null(v);
	assert_string_equal(value_get_str(v, "title"), "CPU-bound in user code: 57% of samples in an "
			    "unsymbolized function (liblzma.so.5.4.1+0x16880)");
	const struct value *steps = value_get(v, "next_steps");
	assert_mentions(steps, "apt install liblzma5-dbgsym=5.4.1-1");
	assert_mentions(steps, "(package liblzma5 5.4.1-1)");
	assert_mentions(steps, "/usr/lib/debug/.build-id/72/a44fc3edc93188d045e65d92d28d50e373dbcb.debug");
	assert_mentions(steps, "perf annotate --stdio --dsos liblzma.so.5.4.1");
	assert_mentions(steps, "objdump -d --start-address=0x16880 --stop-address=0x16c80 "
			"/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1");
	assert_false(mentions(steps, "perf annotate ,"));
	for (size_t i = 0; i < steps->arr.len; i++) { /* no step ends in an empty symbol */
		const char *t = steps->arr.items[i]->s;
		size_t n = strlen(t);
		assert_false(n >= 14 && !strcmp(t + n - 14, "perf annotate "));
	}
	assert_false(mentions(steps, "the -dbgsym / -debuginfo package"));
	outcome_free(&o);

	/* no installed package owns it (another root, a file of its own): the build-id to fetch;
	 * the address objdump shows is the offset plus the file's bias */
	high_cpu(stripped_xz(NULL, id, 0x1000), run_info("duration"), &o);
	steps = value_get(verdict(&o, "cpu-bound-user"), "next_steps");
	assert_mentions(steps, "build-id 72a44fc3edc93188d045e65d92d28d50e373dbcb");
	assert_mentions(steps, "debuginfod-find debuginfo 72a44fc3edc93188d045e65d92d28d50e373dbcb");
	assert_mentions(steps, "/usr/lib/debug/.build-id/72/a44fc3edc93188d045e65d92d28d50e373dbcb.debug");
	assert_mentions(steps, "objdump -d --start-address=0x17880 ");
	assert_false(mentions(steps, "apt install"));
	outcome_free(&o);

	/* neither: the generic advice, still naming the file */
	high_cpu(stripped_xz(NULL, NULL, 0), run_info("duration"), &o);
	steps = value_get(verdict(&o, "cpu-bound-user"), "next_steps");
	assert_mentions(steps, "Install debug symbols for /usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1 "
			"(the -dbgsym / -debuginfo package)");
	assert_mentions(steps, "--dsos liblzma.so.5.4.1");
	outcome_free(&o);
}

static void test_kernel_bound(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(500, 425));
	stack(p, 300, true, FRAMES("getppid", "spin", "main", "__libc_start_main", "_start"),
	      FRAMES("__x64_sys_getppid", "do_syscall_64", "entry_SYSCALL_64_after_hwframe"));
	stack(p, 125, true, FRAMES("getppid", "spin", "main", "__libc_start_main", "_start"),
	      FRAMES("syscall_exit_to_user_mode", "do_syscall_64", "entry_SYSCALL_64_after_hwframe"));
	stack(p, 75, false, FRAMES("spin", "main", "__libc_start_main", "_start"), NOFRAMES);
	value_obj_set(res, "context", context(99.5, 0.15, 5, 30));
	static const int64_t calm[] = { 0, 1, 300 };
	value_obj_set(res, "runq", runq(1, calm, 1));
	struct value *s = value_obj_set(res, "syscalls", syscalls());
	add_syscall(s, "getppid", 110, 10000000, 950000000, 0);
	add_syscall(s, "write", 1, 25, 100000, 0);

	struct outcome o;
	high_cpu(res, run_info("duration"), &o);
	print_verdicts("kernel-bound", &o);

	assert_string_equal(id_at(&o, 0), "cpu-bound-kernel");
	const struct value *v = verdict(&o, "cpu-bound-kernel");
	assert_string_equal(value_get_str(v, "severity"), "critical");
	assert_string_equal(value_get_str(v, "title"),
			    "CPU-bound in the kernel: 85% of samples, mostly getppid() at 2M/s");
	assert_mentions(value_get(v, "evidence"),
			"getppid() 10M calls (2M/s, avg 95 ns, 950 ms total, 60% of CPU samples)");
	assert_mentions(value_get(v, "evidence"), "__x64_sys_getppid() 60%");
	assert_mentions(value_get(v, "evidence"), "Entered from user code (85% of samples): "
			"_start → __libc_start_main → main → spin → getppid");
	assert_mentions(value_get(v, "next_steps"), "call it once and cache the value");
	assert_null(verdict(&o, "cpu-bound-user"));
	outcome_free(&o);
}

/* The default syscall probe only counts: the verdict still names the syscall, its rate and its
 * share of CPU samples (from the kernel stacks), and invents no timing. */
static void test_kernel_bound_counts_only(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(400, 320));
	stack(p, 240, true, FRAMES("write", "log_line", "main"),
	      FRAMES("write_null", "vfs_write", "ksys_write", "do_syscall_64"));
	stack(p, 80, true, FRAMES("write", "log_line", "main"),
	      FRAMES("syscall_exit_to_user_mode", "do_syscall_64"));
	stack(p, 80, false, FRAMES("log_line", "main"), NOFRAMES);
	value_obj_set(res, "context", context(99.0, 0.2, 5, 30));
	struct value *s = value_obj_set(res, "syscalls", syscalls_of(false));
	add_syscall(s, "write", 1, 12000000, 0, 0);

	struct outcome o;
	high_cpu(res, run_info("duration"), &o);
	assert_string_equal(id_at(&o, 0), "cpu-bound-kernel");
	const struct value *v = verdict(&o, "cpu-bound-kernel");
	assert_mentions(value_get(v, "evidence"), "write() 12M calls (2.4M/s, 60% of CPU samples)");
	outcome_free(&o);
}

static void test_not_busy(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(2, 0));
	stack(p, 1, false, FRAMES("handle_tick", "event_loop", "main", "_start"), NOFRAMES);
	stack(p, 1, false, FRAMES("parse_config", "main", "_start"), NOFRAMES);
	value_obj_set(res, "context", context(0.1, 0.5, 1250, 1));
	add_background(res);

	struct outcome o;
	high_cpu(res, run_info("duration"), &o);
	print_verdicts("not-busy", &o);

	assert_int_equal(o.verdicts->arr.len, 1);
	const struct value *v = verdict(&o, "not-busy");
	assert_non_null(v);
	assert_string_equal(value_get_str(v, "severity"), "info");
	assert_string_equal(value_get_str(v, "title"),
			    "Not CPU-bound: the process used 0.1% of one CPU during the 5.0 s window");
	assert_mentions(value_get(v, "evidence"), "2 CPU samples at 99 Hz");
	assert_mentions(value_get(v, "evidence"), "250 voluntary context switches/s");
	assert_mentions(value_get(v, "next_steps"), "off-CPU");
	/* it must not blame a function */
	for (size_t i = 0; i < o.verdicts->arr.len; i++) {
		assert_false(mentions(o.verdicts->arr.items[i], "handle_tick"));
		assert_false(mentions(o.verdicts->arr.items[i], "parse_config"));
	}
	assert_int_equal(verdicts_worst(o.verdicts), SEV_INFO);
	outcome_free(&o);
}

static void test_starved(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(150, 20));
	stack(p, 130, false, FRAMES("serve", "worker", "start_thread", "clone3"), NOFRAMES);
	stack(p, 20, true, FRAMES("read", "serve", "worker", "start_thread", "clone3"),
	      FRAMES("tcp_recvmsg", "sock_read_iter", "vfs_read", "do_syscall_64"));
	value_obj_set(res, "context", context(30.0, 0.85, 100, 2000));
	struct value *psi = (struct value *)value_get(value_get(res, "context"), "psi");
	value_set_int(psi, "some_total_us", 2250000); /* stalled 45% of the 5 s window */
	value_set_num(psi, "some_pct", 45.0);
	/* p99: rank 990 falls in [65536, 131071] at (990-985)/15 → 87381 us */
	static const int64_t slow[] = { 1024, 2047, 985, 65536, 131071, 15 };
	value_obj_set(res, "runq", runq(2, slow, 120000));
	struct value *s = value_obj_set(res, "syscalls", syscalls());
	add_syscall(s, "read", 0, 3000, 9000000, 0);

	struct outcome o;
	high_cpu(res, run_info("duration"), &o);
	print_verdicts("starved", &o);

	assert_string_equal(id_at(&o, 0), "cpu-starved");
	const struct value *v = verdict(&o, "cpu-starved");
	assert_string_equal(value_get_str(v, "severity"), "critical");
	assert_string_equal(value_get_str(v, "title"),
			    "Starved of CPU: run-queue p99 87.4 ms (critical above 50 ms)");
	assert_mentions(value_get(v, "evidence"), "400 involuntary context switches/s");
	assert_mentions(value_get(v, "evidence"), "stalled 45% of the 5.0 s window");
	assert_mentions(value_get(v, "next_steps"), "cpu.stat");
	assert_mentions(value_get(v, "next_steps"), "taskset -cp 4242");
	outcome_free(&o);
}

/* A single-threaded loop on a VM whose hypervisor took half the machine's CPU time: the kernel
 * charges the loop 44% of a CPU (stolen time is nobody's), its clock samples say it was on a CPU
 * 88% of the window. Recorded from a CI machine (t_forks.sh): before steal was read, the verdict
 * was a moderate "busy" and the loop was never called CPU-bound. */
static struct value *stolen_loop(double cpu_pct, double steal_pct)
{
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(436, 14));
	stack(p, 400, false, FRAMES("short_job", "main", "__libc_start_call_main"), NOFRAMES);
	stack(p, 22, false, FRAMES("clock_gettime", "short_job", "main", "__libc_start_call_main"), NOFRAMES);
	stack(p, 14, true, FRAMES("short_job", "main", "__libc_start_call_main"),
	      FRAMES("irqentry_exit_to_user_mode", "asm_sysvec_reschedule_ipi"));
	struct value *c = value_obj_set(res, "context", context(cpu_pct, 0.97, 120, 4));
	value_set_num(c, "steal_pct", steal_pct);
	add_background(res);
	return res;
}

static void test_steal(void **state)
{
	(void)state;
	struct outcome o;
	high_cpu(stolen_loop(44.0, 50.0), run_info("duration"), &o);
	print_verdicts("steal", &o);
	assert_string_equal(id_at(&o, 0), "cpu-bound-user");
	const struct value *v = verdict(&o, "cpu-bound-user");
	assert_string_equal(value_get_str(v, "severity"), "warning"); /* 88%: not saturated */
	assert_contains(value_get_str(v, "title"), "in short_job()");
	assert_mentions(value_get(v, "evidence"), "CPU use 88% of one CPU over 5.0 s by on-CPU samples; the kernel charged 44%");
	assert_mentions(value_get(v, "evidence"), "the hypervisor stole 50%");
	v = verdict(&o, "cpu-starved");
	assert_non_null(v);
	assert_string_equal(value_get_str(v, "title"), "The hypervisor took 50% of this machine's CPU time (steal)");
	assert_mentions(value_get(v, "next_steps"), "CPUCreditBalance");
	outcome_free(&o);

	/* control: the same loop on a machine with no steal: charged and sampled agree */
	high_cpu(stolen_loop(88.0, 0.0), run_info("duration"), &o);
	print_verdicts("steal control", &o);
	assert_string_equal(id_at(&o, 0), "cpu-bound-user");
	assert_null(verdict(&o, "cpu-starved"));
	assert_mentions(o.ruled_out, "no CPU time stolen by a hypervisor");
	v = verdict(&o, "cpu-bound-user");
	assert_false(mentions(value_get(v, "evidence"), "on-CPU samples"));
	outcome_free(&o);

	/* steal under its threshold: the kernel's figure stands (44%: busy, not CPU-bound) */
	high_cpu(stolen_loop(44.0, 5.0), run_info("duration"), &o);
	print_verdicts("steal below threshold", &o);
	assert_null(verdict(&o, "cpu-bound-user"));
	assert_null(verdict(&o, "cpu-starved"));
	assert_non_null(verdict(&o, "busy"));
	outcome_free(&o);
}

static void test_missing_frame_pointers(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(495, 5));
	stack(p, 300, false, FRAMES("hash_block"), NOFRAMES);
	stack(p, 150, false, FRAMES("hash_block", "[unknown]"), NOFRAMES);
	stack(p, 40, false, FRAMES("compress", "main", "__libc_start_main", "_start"), NOFRAMES);
	stack(p, 5, true, FRAMES("write"), FRAMES("vfs_write", "do_syscall_64"));
	value_obj_set(res, "context", context(97.0, 0.99, 5, 20));
	add_background(res);

	struct value *res_dwarf = value_copy(res); /* high_cpu takes res */
	value_set_str((struct value *)value_get(res_dwarf, "profile"), "user_unwind", "dwarf");
	struct outcome o;
	high_cpu(res, run_info("duration"), &o);
	print_verdicts("frame pointers", &o);

	const struct value *v = verdict(&o, "missing-frame-pointers");
	assert_non_null(v);
	assert_string_equal(value_get_str(v, "severity"), "warning");
	assert_contains(value_get_str(v, "title"), "92% of user-mode samples have 2 frames or fewer");
	assert_mentions(value_get(v, "evidence"), "450 of 490 user-mode samples");
	assert_mentions(value_get(v, "next_steps"), "-fno-omit-frame-pointer");
	const struct value *u = verdict(&o, "cpu-bound-user");
	assert_non_null(u);
	assert_contains(value_get_str(u, "title"), "hash_block()");
	assert_mentions(value_get(u, "evidence"), "see missing-frame-pointers");
	assert_mentions(value_get(v, "next_steps"), "--param unwind=dwarf");
	outcome_free(&o);

	/* the same stacks unwound with DWARF: truncated even so, no advice to use DWARF */
	high_cpu(res_dwarf, run_info("duration"), &o);
	v = verdict(&o, "missing-frame-pointers");
	assert_non_null(v);
	assert_contains(value_get_str(v, "title"), "even with DWARF unwinding");
	assert_mentions(value_get(v, "evidence"), "Unwound with DWARF");
	assert_false(mentions(value_get(v, "next_steps"), "unwind=dwarf"));
	outcome_free(&o);
}

/* ---- JIT code: Node and a JVM ------------------------------------------------------------ */

/* A profile of a JIT runtime: `hot` samples in leaf under callers (NULL-terminated), 10 more in
 * another JIT frame and 5 in the kernel; jit: the names a perf map gave (NULL-terminated, may be
 * empty); runtime NULL: not known (a set of processes); entries 0: no perf map. */
static struct value *jit_results(const char *leaf, const char *const *callers, int64_t hot,
				 const char *const *jit, const char *runtime, int64_t entries,
				 const char *jvm_perfmap)
{
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(hot + 15, 5));
	const char *user[16] = { leaf };
	size_t n = 1;
	for (; callers[n - 1] && n < 15; n++)
		user[n] = callers[n - 1];
	user[n] = NULL;
	stack(p, hot, false, user, NOFRAMES);
	user[0] = "[unknown]";
	stack(p, 10, false, user, NOFRAMES);
	stack(p, 5, true, FRAMES("write"), FRAMES("vfs_write", "do_syscall_64"));
	if (jit[0])
		value_obj_set(p, "jit_frames", frames(jit));
	if (runtime)
		value_set_str(p, "runtime", runtime);
	if (entries)
		value_set_int(p, "perf_map_entries", entries);
	if (jvm_perfmap)
		value_set_str(p, "jvm_perfmap", jvm_perfmap);
	value_obj_set(res, "context", context(98.0, 0.99, 5, 20));
	add_background(res);
	return res;
}

#define V8_CALLERS                                                                                 \
	FRAMES("Builtins_InterpreterEntryTrampoline", "Builtins_JSEntryTrampoline", "Builtins_JSEntry", \
	       "node::Start(int, char**)", "main", "__libc_start_call_main")

static void test_jit_node(void **state)
{
	(void)state;
	struct outcome o;
	const struct value *v;

	/* --perf-basic-prof: the perf map's name is a named JS function, in JS terms */
	high_cpu(jit_results("JS:*checksumRows /srv/app.js:12:3", V8_CALLERS, 450,
			     FRAMES("JS:*checksumRows /srv/app.js:12:3"), "node", 1200, NULL),
		 run_info("duration"), &o);
	print_verdicts("node with a perf map", &o);
	v = verdict(&o, "cpu-bound-user");
	assert_non_null(v);
	assert_string_equal(value_get_str(v, "title"), "CPU-bound in user code: 97% of samples in JS "
			    "function checksumRows() at /srv/app.js:12:3");
	assert_mentions(value_get(v, "evidence"), "JS function checksumRows() at /srv/app.js:12:3 97%");
	assert_mentions(value_get(v, "next_steps"), "node --cpu-prof");
	assert_mentions(value_get(v, "next_steps"), "--interpreted-frames-native-stack");
	assert_false(mentions(value_get(v, "next_steps"), "dbgsym"));
	assert_false(mentions(value_get(v, "next_steps"), "perf annotate"));
	outcome_free(&o);

	/* older V8's names (LazyCompile:), an anonymous function */
	high_cpu(jit_results("LazyCompile:~handle /srv/x.js:3", V8_CALLERS, 450,
			     FRAMES("LazyCompile:~handle /srv/x.js:3", "JS:~ /srv/x.js:1:1"), "node",
			     10, NULL),
		 run_info("duration"), &o);
	assert_contains(value_get_str(verdict(&o, "cpu-bound-user"), "title"),
			"in JS function handle() at /srv/x.js:3");
	outcome_free(&o);
	high_cpu(jit_results("JS:~ /srv/x.js:1:1", V8_CALLERS, 450, FRAMES("JS:~ /srv/x.js:1:1"),
			     "node", 10, NULL),
		 run_info("duration"), &o);
	assert_contains(value_get_str(verdict(&o, "cpu-bound-user"), "title"),
			"in JS function (anonymous)() at /srv/x.js:1:1");
	outcome_free(&o);

	/* no perf map: node's flags, never debug symbols */
	high_cpu(jit_results("[unknown]", V8_CALLERS, 450, NOFRAMES, "node", 0, NULL),
		 run_info("duration"), &o);
	print_verdicts("node without a perf map", &o);
	v = verdict(&o, "cpu-bound-user");
	assert_non_null(v);
	assert_contains(value_get_str(v, "title"), "JIT-compiled JavaScript without a perf map ([unknown])");
	assert_string_equal(value_get(v, "next_steps")->arr.items[0]->s,
			    "Restart node with --perf-basic-prof-only-functions (or --perf-basic-prof) so "
			    "that V8 writes /tmp/perf-4242.map, then re-run diagnose high-cpu --pid 4242: JS "
			    "functions are then named (debug symbols cannot name JIT code)");
	assert_mentions(value_get(v, "next_steps"), "--interpreted-frames-native-stack");
	assert_false(mentions(value_get(v, "next_steps"), "dbgsym"));
	outcome_free(&o);

	/* the runtime unknown to the engine (a set): V8's builtins among the frames say Node */
	high_cpu(jit_results("[unknown]", V8_CALLERS, 450, NOFRAMES, NULL, 0, NULL),
		 run_info("duration"), &o);
	v = verdict(&o, "cpu-bound-user");
	assert_mentions(value_get(v, "next_steps"), "--perf-basic-prof");
	assert_false(mentions(value_get(v, "next_steps"), "dbgsym"));
	outcome_free(&o);

	/* native code without symbols, no runtime: still debug symbols */
	high_cpu(jit_results("app+0x1a2b", FRAMES("main", "__libc_start_call_main"), 450, NOFRAMES,
			     NULL, 0, NULL),
		 run_info("duration"), &o);
	v = verdict(&o, "cpu-bound-user");
	assert_contains(value_get_str(v, "title"), "an unsymbolized function (app+0x1a2b)");
	assert_mentions(value_get(v, "next_steps"), "-dbgsym");
	outcome_free(&o);
}

static void test_jit_jvm(void **state)
{
	(void)state;
	struct outcome o;
	const struct value *v;
	const char *const *none = NOFRAMES; /* JIT code without frame pointers: one frame */

	/* no perf map: jcmd, the param that runs it, PreserveFramePointer; no debug symbols */
	high_cpu(jit_results("[unknown]", none, 450, NOFRAMES, "jvm", 0, NULL), run_info("duration"), &o);
	print_verdicts("jvm without a perf map", &o);
	v = verdict(&o, "cpu-bound-user");
	assert_non_null(v);
	assert_contains(value_get_str(v, "title"), "JIT-compiled Java without a perf map ([unknown])");
	assert_mentions(value_get(v, "next_steps"), "jcmd 4242 Compiler.perfmap (JDK 17+, as the JVM's user)");
	assert_mentions(value_get(v, "next_steps"), "diagnose high-cpu --pid 4242 --param jvm_perfmap=yes");
	assert_mentions(value_get(v, "next_steps"), "-XX:+PreserveFramePointer");
	assert_false(mentions(value_get(v, "next_steps"), "dbgsym"));
	v = verdict(&o, "missing-frame-pointers");
	assert_non_null(v);
	assert_contains(value_get(v, "next_steps")->arr.items[0]->s, "-XX:+PreserveFramePointer");
	outcome_free(&o);

	/* jcmd run by diagnose: the method named in Java terms, and the run said */
	const char *ran = "ran: /usr/lib/jvm/java-17-openjdk-amd64/bin/jcmd 4242 Compiler.perfmap as "
			  "uid 1000 gid 1000";
	high_cpu(jit_results("int HotRows.checksumRows(int[])", none, 450,
			     FRAMES("int HotRows.checksumRows(int[])", "Interpreter"), "jvm", 290, ran),
		 run_info("duration"), &o);
	print_verdicts("jvm with jcmd's perf map", &o);
	v = verdict(&o, "cpu-bound-user");
	assert_non_null(v);
	assert_string_equal(value_get_str(v, "title"), "CPU-bound in user code: 97% of samples in Java "
			    "method HotRows.checksumRows(int[])");
	assert_mentions(value_get(v, "evidence"), "At the end of the window diagnose ran "
			"/usr/lib/jvm/java-17-openjdk-amd64/bin/jcmd 4242 Compiler.perfmap as uid 1000 gid "
			"1000 (--param jvm_perfmap=yes); the perf map read after it has 290 entries");
	assert_mentions(value_get(v, "next_steps"), "async-profiler");
	assert_false(mentions(value_get(v, "next_steps"), "dbgsym"));
	outcome_free(&o);

	/* jcmd failed: why, and the way by hand */
	high_cpu(jit_results("[unknown]", none, 450, NOFRAMES, "jvm", 0,
			     "failed: no jcmd to trust: neither the JDK's own nor /usr/bin/jcmd"),
		 run_info("duration"), &o);
	v = verdict(&o, "cpu-bound-user");
	assert_mentions(value_get(v, "evidence"), "jcmd Compiler.perfmap failed: no jcmd to trust");
	assert_mentions(value_get(v, "next_steps"), "run jcmd 4242 Compiler.perfmap by hand");
	outcome_free(&o);

	/* a perf map written before the code was compiled */
	high_cpu(jit_results("[unknown]", none, 450, NOFRAMES, "jvm", 50, NULL), run_info("duration"), &o);
	v = verdict(&o, "cpu-bound-user");
	assert_mentions(value_get(v, "next_steps"), "does not cover this code (written before it was "
			"compiled): re-run with --param jvm_perfmap=yes");
	outcome_free(&o);
}

static void test_missing_probes(void **state)
{
	(void)state;
	/* only the /proc context: busy, nothing to attribute with */
	struct value *res = value_obj();
	value_obj_set(res, "context", context(97.0, 0.9, 5, 20));
	struct outcome o;
	high_cpu(res, run_info("target-exited"), &o);
	print_verdicts("missing probes", &o);
	const struct value *v = verdict(&o, "incomplete-data");
	assert_non_null(v);
	assert_string_equal(value_get_str(v, "severity"), "warning");
	assert_contains(value_get_str(v, "title"), "profile missing");
	assert_contains(value_get_str(v, "title"), "target exited");
	assert_mentions(value_get(v, "evidence"), "runq: no results");
	assert_non_null(verdict(&o, "busy"));
	assert_null(verdict(&o, "cpu-bound-user"));
	outcome_free(&o);

	/* nothing at all */
	high_cpu(value_obj(), run_info("signal"), &o);
	assert_non_null(verdict(&o, "inconclusive"));
	assert_contains(value_get_str(verdict(&o, "incomplete-data"), "title"), "interrupted");
	outcome_free(&o);

	/* a profile with lost stacks and no syscalls: still attributed, and says what is partial */
	res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(100, 0));
	value_set_int(p, "lost_stacks", 30);
	stack(p, 100, false, FRAMES("burn_hot", "main", "_start", "x"), NOFRAMES);
	value_obj_set(res, "context", context(95.0, 1.0, 1, 1));
	high_cpu(res, run_info("duration"), &o);
	assert_string_equal(id_at(&o, 0), "cpu-bound-user");
	v = verdict(&o, "incomplete-data");
	assert_string_equal(value_get_str(v, "severity"), "warning");
	assert_contains(value_get_str(v, "title"), "30 stacks lost");
	assert_contains(value_get_str(v, "title"), "syscalls missing");
	outcome_free(&o);
}

/* 16384 stacks (the probe's default cap), 24 user + 8 kernel frames each: must fit in a fifth
 * of the default instruction budget (about 5 M are used), so 100-frame stacks fit too. */
static void test_large_profile(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(0, 0));
	int64_t samples = 0, kernel = 0;
	char names[32][32];
	for (int i = 0; i < 16384; i++) {
		const char *u[25], *k[9];
		for (int f = 0; f < 24; f++) {
			snprintf(names[f], sizeof(names[f]), "fn_%d_%d", f, (i * 7 + f) % 97);
			u[f] = names[f];
		}
		u[24] = NULL;
		for (int f = 0; f < 8; f++)
			k[f] = f == 0 ? "kfn" : "do_syscall_64";
		k[8] = NULL;
		bool in_kernel = i % 5 == 0;
		stack(p, 16384 - i, in_kernel, u, in_kernel ? k : NOFRAMES);
		samples += 16384 - i;
		kernel += in_kernel ? 16384 - i : 0;
	}
	value_set_int(p, "samples", samples);
	value_set_int(p, "user_samples", samples - kernel);
	value_set_int(p, "kernel_samples", kernel);
	value_obj_set(res, "context", context(390.0, 0.8, 5, 20));
	add_background(res);

	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	struct outcome o;
	run_max_ms = 60000; /* about 1.3 s here, 2 s with sanitizers: no deadline on a loaded box */
	high_cpu_limited(res, run_info("duration"), 10u * 1000 * 1000, &o);
	run_max_ms = 0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (getenv("VERBOSE"))
		fprintf(stderr, "large profile: %.0f ms\n",
			(b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
	assert_string_equal(id_at(&o, 0), "cpu-bound-user");
	outcome_free(&o);
}

/* ---- diag.lua and the proxies --------------------------------------------------------------- */

static const struct value *num_field(const struct value *obj, const char *key)
{
	const struct value *v = value_get(obj, key);
	if (!v)
		fail_msg("no field %s", key);
	return v;
}

static double num(const struct value *obj, const char *key)
{
	const struct value *v = num_field(obj, key);
	assert_true(v->type == V_INT || v->type == V_NUM);
	return v->type == V_INT ? (double)v->i : v->n;
}

static void test_diag_helpers(void **state)
{
	(void)state;
	struct value *res = value_obj();
	static const int64_t h[] = { 0, 1, 10, 16, 31, 80, 1024, 2047, 10 };
	value_obj_set(res, "hist", runq(3, h, 2000));
	struct value *obj = value_obj_set(res, "obj", value_obj());
	value_set_int(obj, "a", 1);
	value_set_int(obj, "b", 2);
	value_set_int(obj, "c", 3);
	struct value *arr = value_obj_set(res, "arr", value_arr());
	for (int i = 1; i <= 4; i++)
		value_arr_push(arr, value_int(i * 10));
	struct value *strs = value_obj_set(res, "strs", value_arr());
	value_arr_push(strs, value_str("x"));
	value_arr_push(strs, value_str("y"));
	struct value *th = value_obj();
	value_set_str(th, "n_int", "50");
	value_set_str(th, "n_float", "2.5");
	value_set_str(th, "s", "abc");

	struct outcome o;
	run_lua("tests/unit/lua/diag_helpers.lua", "lua/lib", res, th, NULL, 0, 0, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	const struct value *r = o.report->arr.items[0];

	assert_float_equal(num(r, "p0_one"), 4.0, 1e-9);
	assert_float_equal(num(r, "p50_one"), 5.5, 1e-9);
	assert_float_equal(num(r, "p99_one"), 6.97, 1e-9);
	assert_float_equal(num(r, "p100_one"), 7.0, 1e-9);
	assert_float_equal(num(r, "p50_split"), 1.0, 1e-9);
	assert_float_equal(num(r, "p75_split"), 2.5, 1e-9);
	assert_float_equal(num(r, "p99_split"), 2.98, 1e-9);
	/* 100 samples: p50 rank 50 is the 40th of 80 in [16,31]; p99 rank 99 the 9th of 10 in [1024,2047] */
	assert_float_equal(num(r, "p50_hist"), 16 + 15 * 40.0 / 80, 1e-9);
	assert_float_equal(num(r, "p99_hist"), 1024 + 1023 * 9.0 / 10, 1e-9);
	assert_int_equal(num_field(r, "total_hist")->i, 100);
	assert_true(num_field(r, "empty_is_nil")->b);

	static const char *const fmt[] = { "950", "12.3k", "2.1M", "1M", "2.5", "915k", "318 ms", "512 ns", "1.5 us",
					   "80.2 ms", "2.50 s", "87.4 ms", "72%", "3.4%", "<0.1%",
					   "0%", "2M/s", "n/a", "burn_hot()", "libc.so.6+0x1a2b",
					   "bpf_prog_1_x [bpf]" };
	const struct value *f = num_field(r, "fmt");
	assert_int_equal(f->arr.len, ARRAY_LEN(fmt));
	for (size_t i = 0; i < ARRAY_LEN(fmt); i++)
		assert_string_equal(f->arr.items[i]->s, fmt[i]);

	assert_string_equal(value_get_str(r, "top"), "b,a,c");
	assert_string_equal(value_get_str(r, "path"), "main → mid → leaf");
	assert_string_equal(value_get_str(r, "long_path"), "f5 → … → f2 → f1");
	assert_float_equal(num(r, "pct"), 25.0, 1e-9);
	assert_float_equal(num(r, "pct_zero"), 0.0, 1e-9);
	assert_float_equal(num(r, "rate"), 2.5, 1e-9);
	assert_string_equal(value_get_str(r, "cpu_one"), "user 1.20 s, system 0.30 s");
	assert_string_equal(value_get_str(r, "cpu_set"),
			    "user 0.00 s, system 0.05 s, and 2.72 s in 147 short-lived processes (forked by the "
			    "set, exited or exec'd away before a /proc reading)");
	/* proxies: pairs in insertion order, # and ipairs, identity, table.concat */
	assert_string_equal(value_get_str(r, "keys"), "a,b,c");
	assert_int_equal(num_field(r, "len")->i, 4);
	assert_int_equal(num_field(r, "sum")->i, 100);
	assert_true(num_field(r, "same")->b);
	assert_string_equal(value_get_str(r, "concat"), "x+y");
	/* thresholds typed from text */
	assert_int_equal(num_field(r, "th_int")->type, V_INT);
	assert_int_equal(num_field(r, "th_int")->i, 50);
	assert_int_equal(num_field(r, "th_float")->type, V_NUM);
	assert_float_equal(num_field(r, "th_float")->n, 2.5, 0);
	assert_string_equal(value_get_str(r, "th_str"), "abc");

	outcome_free(&o);
	value_free(res);
	value_free(th);
}

static void test_libs_in_name_order(void **state)
{
	(void)state;
	struct outcome o;
	run_lua("tests/unit/lua/uses_libs.lua", "tests/unit/lua/libs", NULL, NULL, NULL, 0, 0, &o);
	assert_int_equal(o.rc, 0);
	assert_string_equal(value_get_str(o.verdicts->arr.items[0], "title"), "42");
	outcome_free(&o);

	/* the libraries run in the order given: bb.lua alone cannot see aa's global */
	struct source_file lua, bb;
	source_of_file(&lua, "tests/unit/lua/uses_libs.lua");
	source_of_file(&bb, "tests/unit/lua/libs/bb.lua");
	struct verdict_input in = { .lua = &lua, .libs = &bb, .n_libs = 1 };
	run_input(&in, false, &o);
	assert_int_equal(o.rc, -1);
	assert_int_equal(o.err.code, DIAG_EXIT_RUNTIME);
	assert_contains(o.err.msg, "bb.lua:");
	source_drop(&lua);
	source_drop(&bb);
}

/* ---- the sandbox ------------------------------------------------------------------------- */

static struct value *sample_results(void)
{
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(10, 0));
	stack(p, 10, false, FRAMES("a", "main"), NOFRAMES);
	return res;
}

/* Runs a fixture in one mode; expects an error containing each needle (NULL-terminated). */
static void expect_error(const char *fixture, const char *mode, size_t max_instr, ...)
{
	struct value *res = sample_results(), *th = value_obj();
	value_set_str(th, "mode", mode);
	char *rel = xasprintf("tests/unit/lua/%s", fixture);
	struct outcome o;
	run_lua(rel, "lua/lib", res, th, NULL, max_instr, 8u << 20, &o);
	if (o.rc != -1)
		fail_msg("mode %s: expected an error, got success", mode);
	assert_int_equal(o.err.code, DIAG_EXIT_RUNTIME);
	assert_null(o.verdicts);
	assert_null(o.report);
	va_list ap;
	va_start(ap, max_instr);
	for (const char *needle; (needle = va_arg(ap, const char *));)
		if (!strstr(o.err.msg, needle))
			fail_msg("mode %s: \"%s\" does not contain \"%s\"", mode, o.err.msg, needle);
	va_end(ap);
	free(rel);
	value_free(res);
	value_free(th);
}

static void test_sandbox_no_escape(void **state)
{
	(void)state;
	expect_error("hostile.lua", "os", 0, "hostile.lua:6:", "global 'os'", NULL);
	expect_error("hostile.lua", "io", 0, "hostile.lua:7:", "global 'io'", NULL);
	expect_error("hostile.lua", "debug", 0, "global 'debug'", NULL);
	expect_error("hostile.lua", "dump", 0, "hostile.lua:9:", "field 'dump'", NULL);
	expect_error("hostile.lua", "load", 0, "global 'load'", NULL);
	expect_error("hostile.lua", "dofile", 0, "global 'dofile'", NULL);
	expect_error("hostile.lua", "require", 0, "global 'require'", NULL);
	expect_error("hostile.lua", "collectgarbage", 0, "global 'collectgarbage'", NULL);
	expect_error("hostile.lua", "error_table", 0, "error object is a table value", NULL);
	if (access("/tmp/diag-pwned", F_OK) == 0)
		fail_msg("os.execute ran");
}

static void test_sandbox_limits(void **state)
{
	(void)state;
	expect_error("hostile.lua", "loop", 1000000, "hostile.lua:14: instruction limit exceeded",
		     NULL);
	expect_error("hostile.lua", "pcall_loop", 1000000, "instruction limit exceeded", NULL);
	expect_error("hostile.lua", "membomb", 0, "hostile.lua: memory limit exceeded", NULL);
	expect_error("hostile.lua", "bigrep", 0, "memory limit exceeded", NULL);

	/* Lua runs finalizers with hooks off: a looping one would hang lua_close */
	expect_error("hostile.lua", "gc_loop", 0, "__gc metamethods are not allowed", NULL);
	/* these must come back normally */
	static const char *const survive[] = { "gc_late", "empty_rep" };
	for (size_t i = 0; i < ARRAY_LEN(survive); i++) {
		struct value *th = value_obj();
		value_set_str(th, "mode", survive[i]);
		struct outcome o;
		run_lua("tests/unit/lua/hostile.lua", "lua/lib", NULL, th, NULL, 1000000, 0, &o);
		if (o.rc)
			fail_msg("%s: %s", survive[i], o.err.msg);
		assert_int_equal(o.verdicts->arr.len, 0);
		outcome_free(&o);
		value_free(th);
	}
}

static void test_results_read_only(void **state)
{
	(void)state;
	expect_error("hostile.lua", "write_top", 0, "hostile.lua:20:", "read-only", NULL);
	expect_error("hostile.lua", "write_nested", 0, "hostile.lua:21:", "read-only", NULL);
	expect_error("hostile.lua", "write_array", 0, "read-only", NULL);
	expect_error("hostile.lua", "rawset", 0, "global 'rawset'", NULL);
	expect_error("hostile.lua", "setmetatable", 0, "protected metatable", NULL);
	expect_error("hostile.lua", "table_insert", 0, "read-only", NULL);

	struct value *res = sample_results(), *th = value_obj();
	value_set_str(th, "mode", "getmetatable");
	struct outcome o;
	run_lua("tests/unit/lua/hostile.lua", "lua/lib", res, th, NULL, 0, 0, &o);
	assert_int_equal(o.rc, 0);
	assert_string_equal(value_get_str(o.verdicts->arr.items[0], "title"), "read-only");
	outcome_free(&o);
	value_free(res);
	value_free(th);
}

static void test_answer_checked(void **state)
{
	(void)state;
	expect_error("bad_return.lua", "not_table", 0, "must return a table", "got number", NULL);
	expect_error("bad_return.lua", "no_verdicts", 0, "verdicts: missing", NULL);
	expect_error("bad_return.lua", "verdicts_object", 0, "verdicts: expected an array", NULL);
	expect_error("bad_return.lua", "no_severity", 0, "verdicts[2].severity: missing", NULL);
	expect_error("bad_return.lua", "bad_severity", 0,
		     "verdicts[1].severity: \"fatal\" is not one of ok|info|warning|critical", NULL);
	expect_error("bad_return.lua", "evidence_number", 0,
		     "verdicts[2].evidence: item 2: expected a string, got a number", NULL);
	expect_error("bad_return.lua", "no_next_steps", 0, "verdicts[1].next_steps: missing", NULL);
	expect_error("bad_return.lua", "report_function", 0,
		     "report[1].f: cannot use a function value", NULL);
	expect_error("bad_return.lua", "report_cycle", 0, "nested too deeply", NULL);
	expect_error("bad_return.lua", "report_mixed", 0, "report[1].rows: a table mixes", NULL);
	expect_error("bad_return.lua", "report_no_kind", 0, "report[1].kind: missing", NULL);
}

static void test_sorted_and_values(void **state)
{
	(void)state;
	struct value *res = sample_results(), *th = value_obj();
	value_set_str(th, "mode", "sort");
	struct outcome o;
	run_lua("tests/unit/lua/bad_return.lua", NULL, res, th, NULL, 0, 0, &o);
	assert_int_equal(o.rc, 0);
	static const char *const order[] = { "b", "d", "c", "a", "e" }; /* stable, worst first */
	assert_int_equal(o.verdicts->arr.len, 5);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(id_at(&o, i), order[i]);
	/* keys in contract order */
	const struct value *v = o.verdicts->arr.items[0];
	assert_string_equal(v->obj.keys[0], "id");
	assert_string_equal(v->obj.keys[4], "next_steps");
	assert_int_equal(o.report->arr.len, 0);
	assert_int_equal(verdicts_worst(o.verdicts), SEV_CRITICAL);
	outcome_free(&o);

	value_set_str(th, "mode", "values");
	run_lua("tests/unit/lua/bad_return.lua", NULL, res, th, NULL, 0, 0, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	const struct value *r = o.report->arr.items[0];
	assert_string_equal(r->obj.keys[0], "kind"); /* kind first, then by name */
	assert_int_equal(num_field(r, "int")->type, V_INT);
	assert_int_equal(num_field(r, "neg")->i, -3);
	assert_int_equal(num_field(r, "float")->type, V_NUM);
	assert_int_equal(num_field(r, "whole_float")->type, V_NUM);
	assert_int_equal(num_field(r, "flag")->type, V_BOOL);
	assert_int_equal(num_field(r, "empty")->type, V_ARR);
	const struct value *nested = num_field(r, "nested");
	assert_int_equal(nested->arr.len, 2);
	assert_int_equal(nested->arr.items[1]->arr.items[0]->i, 3);
	/* a read-only result handed back is copied as is */
	assert_int_equal(value_get_num(num_field(r, "raw"), "samples", 0), 10);
	assert_string_equal(value_get(num_field(r, "raw"), "stacks")->arr.items[0]->obj.keys[0], "weight");
	outcome_free(&o);
	value_free(res);
	value_free(th);
}

static void test_syntax_and_loading(void **state)
{
	(void)state;
	expect_error("syntax.lua", "x", 0, "syntax.lua:3:", "unexpected symbol near '='", NULL);

	struct source_file f;
	struct diag_err err = { 0 };
	source_of_file(&f, "tests/unit/lua/syntax.lua");
	assert_int_equal(verdict_check_syntax(&f, &err), -1);
	assert_int_equal(err.code, DIAG_EXIT_USAGE);
	assert_contains(err.msg, "syntax.lua:3:");
	source_drop(&f);
	source_of_file(&f, "lua/high-cpu.lua");
	assert_int_equal(verdict_check_syntax(&f, &err), 0);
	source_drop(&f);
	source_of_file(&f, "lua/lib/diag.lua");
	assert_int_equal(verdict_check_syntax(&f, &err), 0);
	source_drop(&f);

	/* binary chunks are refused, even though nothing in the sandbox could produce one */
	source_of_text(&f, "binary.lua", "\x1bLua\x54\x00", 6);
	struct verdict_input in = { .lua = &f };
	struct outcome o;
	run_input(&in, false, &o);
	assert_int_equal(o.rc, -1);
	assert_contains(o.err.msg, "attempt to load a binary chunk");
	assert_int_equal(verdict_check_syntax(&f, &err), -1);
	source_drop(&f);

	/* the chunk runs from the bytes given, whatever the path says */
	source_of_text(&f, "/no/such/file.lua", "return { verdicts = {} }", 24);
	in.lua = &f;
	run_input(&in, false, &o);
	assert_int_equal(o.rc, 0);
	outcome_free(&o);
	source_drop(&f);
}

/* ---- bounds: the answer's size, time inside C calls --------------------------------------- */

/* Results of about n_stacks * 12 nodes, like a real profile's. */
static struct value *big_results(int n_stacks)
{
	struct value *res = value_obj();
	struct value *p = value_obj_set(res, "profile", profile(n_stacks, 0));
	for (int i = 0; i < n_stacks; i++)
		stack(p, 1, false, FRAMES("leaf", "mid", "main", "__libc_start_main", "_start"),
		      NOFRAMES);
	return res;
}

static long maxrss_kib(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return ru.ru_maxrss;
}

/* Fails unless no child of this process is left (none running, none unreaped). */
static void assert_no_child(void)
{
	errno = 0;
	pid_t r = waitpid(-1, NULL, WNOHANG);
	if (r != -1 || errno != ECHILD)
		fail_msg("a child process was left behind (waitpid: %d)", (int)r);
}

static void expect_text_error(const char *text, const struct value *results,
			      struct verdict_input *in, bool only_child, const char *needle)
{
	struct outcome o;
	run_text(text, results, in, only_child, &o);
	if (o.rc != -1)
		fail_msg("expected an error containing \"%s\", got success", needle);
	assert_int_equal(o.err.code, DIAG_EXIT_RUNTIME);
	assert_null(o.verdicts);
	assert_null(o.report);
	assert_null(o.ruled_out);
	assert_contains(o.err.msg, needle);
	assert_null(strchr(o.err.msg, '\n'));
	assert_no_child();
}

static void test_answer_budget(void **state)
{
	(void)state;
	struct value *res = big_results(2000); /* about 26,000 nodes */
	long self0 = maxrss_kib(RUSAGE_SELF);
	struct verdict_input in = { 0 };

	/* shared subtables: 4^12 tables once expanded */
	expect_text_error("local a = {}\n"
			  "for i = 1, 12 do a = { a, a, a, a } end\n"
			  "return { verdicts = {}, report = { { kind = 'text', dag = a } } }\n",
			  res, &in, false, "inline.lua: report[1].dag[1][1]");
	expect_text_error("local a = {}\n"
			  "for i = 1, 12 do a = { a, a, a, a } end\n"
			  "return { verdicts = {}, report = { { kind = 'text', dag = a } } }\n",
			  res, &in, false, "result too large (over 200000 nodes)");
	/* the read-only results, 2000 times */
	expect_text_error("local t = {}\n"
			  "for i = 1, 2000 do t[i] = results end\n"
			  "return { verdicts = {}, report = { t } }\n",
			  res, &in, false, "inline.lua: report[1][");
	expect_text_error("local t = {}\n"
			  "for i = 1, 2000 do t[i] = results end\n"
			  "return { verdicts = {}, report = { t } }\n",
			  res, &in, false, "]: result too large (over 200000 nodes)");
	/* the verdicts count too */
	expect_text_error("local e = {}\n"
			  "for i = 1, 200 do e[i] = results.profile end\n"
			  "return { verdicts = { { id = 'x', severity = 'ok', title = 't', evidence = e,\n"
			  "  next_steps = {} } } }\n",
			  res, &in, false, "inline.lua: verdicts[1].evidence[");
	/* text: one 1 MiB string, 100 times */
	expect_text_error("local s = ('x'):rep(1 << 20)\n"
			  "local t = {}\n"
			  "for i = 1, 100 do t[i] = s end\n"
			  "return { verdicts = {}, report = { { kind = 'text', lines = t } } }\n",
			  res, &in, false, "report[1].lines[16]: result too large (over 16777216 bytes of text)");
	/* keys are text too */
	expect_text_error("local t = {}\n"
			  "for i = 1, 20 do t[('k'):rep(1 << 20) .. i] = 1 end\n"
			  "return { verdicts = {}, report = { { kind = 'text', t = t } } }\n",
			  res, &in, false, "bytes of text");

	/* bounded memory: neither this process nor a child grew by anything near the expansion */
	long self1 = maxrss_kib(RUSAGE_SELF), child = maxrss_kib(RUSAGE_CHILDREN);
	if (self1 - self0 > 256 * 1024 || child > self1 + 256 * 1024)
		fail_msg("max RSS grew from %ld to %ld KiB (children: %ld KiB)", self0, self1, child);

	/* a caller's smaller budget */
	in.max_nodes = 10;
	expect_text_error("return { verdicts = {}, report = { { kind = 'text', lines = "
			  "{ 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j' } } } }",
			  res, &in, false, "report[1].lines: result too large (over 10 nodes)");
	struct outcome o;
	run_text("return { verdicts = {}, report = { { kind = 'text', lines = { 'a', 'b', 'c' } } } }",
		 res, &in, false, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	outcome_free(&o);
	in.max_nodes = 0;
	in.max_text_bytes = 8;
	expect_text_error("return { verdicts = {}, report = { { kind = 'text', s = '123456789' } } }",
			  res, &in, false, "report[1].s: result too large (over 8 bytes of text)");
	value_free(res);
}

/* ruled_out: what the snippet checked and found fine, {id, text} in its order; optional. */
#define RO_VERDICT "verdicts = { { id = 'x', severity = 'ok', title = 't', evidence = {}, next_steps = {} } }"

static void test_ruled_out(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct verdict_input in = { 0 };
	struct outcome o;

	/* kept, in the snippet's order, through the child and in this process alike */
	run_text("return { " RO_VERDICT ", ruled_out = {\n"
		 "  { id = 'cpu-throttling', text = 'not throttled: 0 ms of 5.0 s' },\n"
		 "  { text = 'run queue p99 40 us', id = 'cpu-starvation' },\n"
		 "  { id = 'a-1', text = 'x\\1y' } } }", res, &in, false, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	assert_int_equal(o.ruled_out->arr.len, 3);
	const struct value *r0 = o.ruled_out->arr.items[0], *r1 = o.ruled_out->arr.items[1];
	assert_string_equal(value_get_str(r0, "id"), "cpu-throttling");
	assert_string_equal(value_get_str(r0, "text"), "not throttled: 0 ms of 5.0 s");
	assert_string_equal(r1->obj.keys[0], "id"); /* rebuilt: id, then text */
	assert_string_equal(value_get_str(r1, "id"), "cpu-starvation");
	assert_string_equal(value_get_str(o.ruled_out->arr.items[2], "text"), "x\001y");
	outcome_free(&o);

	/* absent, or empty: an empty array */
	run_text("return { " RO_VERDICT " }", res, &in, false, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.ruled_out->type, V_ARR);
	assert_int_equal(o.ruled_out->arr.len, 0);
	outcome_free(&o);
	run_text("return { " RO_VERDICT ", ruled_out = {} }", res, &in, false, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.ruled_out->arr.len, 0);
	outcome_free(&o);

	/* wrong shapes: one line naming the item and the field */
	expect_text_error("return { " RO_VERDICT ", ruled_out = 'none' }", res, &in, false,
			  "inline.lua: ruled_out: expected an array of { id =, text = }, got a string");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { id = 'a', text = 'b' } }", res, &in,
			  false, "inline.lua: ruled_out: expected an array of { id =, text = }, got a table "
			  "with named fields");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { 'cpu' } }", res, &in, false,
			  "inline.lua: ruled_out[1]: expected a table { id =, text = }, got a string");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = 'b' },\n"
			  "  { id = 'b', text = 'c' }, { id = 'c', text = 4 } } }", res, &in, false,
			  "inline.lua: ruled_out[3].text: expected a string, got a number");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { text = 'b' } } }", res, &in, false,
			  "inline.lua: ruled_out[1].id: missing");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a' } } }", res, &in, false,
			  "inline.lua: ruled_out[1].text: missing");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = '' } } }", res, &in,
			  false, "inline.lua: ruled_out[1].text: empty");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'CPU throttling', text = 'b' } } }",
			  res, &in, false, "inline.lua: ruled_out[1].id: \"CPU throttling\" is not an id "
			  "([a-z0-9-]+, at most 64)");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = ('a'):rep(65), text = 'b' } } }",
			  res, &in, false, "ruled_out[1].id:");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = 'b\\nc' } } }", res,
			  &in, false, "inline.lua: ruled_out[1].text: must be one line");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', txt = 'b' } } }", res, &in,
			  false, "inline.lua: ruled_out[1]: unknown key \"txt\" (expected id, text)");
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = string.len } } }", res,
			  &in, false, "inline.lua: ruled_out[1].text: cannot use a function value");

	/* within the answer's budget like the rest */
	expect_text_error("local t = {}\n"
			  "for i = 1, 100000 do t[i] = { id = 'a', text = 'b' } end\n"
			  "return { " RO_VERDICT ", ruled_out = t }", res, &in, false,
			  "inline.lua: ruled_out[");
	expect_text_error("local t = {}\n"
			  "for i = 1, 100000 do t[i] = { id = 'a', text = 'b' } end\n"
			  "return { " RO_VERDICT ", ruled_out = t }", res, &in, false,
			  "result too large (over 200000 nodes)");
	in.max_text_bytes = 64;
	expect_text_error("return { " RO_VERDICT ", ruled_out = { { id = 'a', text = ('x'):rep(100) } } }",
			  res, &in, false, "ruled_out[1].text: result too large (over 64 bytes of text)");
	value_free(res);
}

/* metrics: the run's key figures, built by diag.answer's a.metric or returned as they are;
 * through the child and in this process alike; wrong names, values and help refused naming the
 * item. */
static void test_metrics(void **state)
{
	(void)state;
	struct value *res = value_obj();
	struct verdict_input in = { 0 };
	struct outcome o;
	run_text("return { " RO_VERDICT ", metrics = {\n"
		 "  { name = 'runq_latency_p99_seconds', value = 0.0021, help = 'run-queue p99' },\n"
		 "  { help = 'share', value = 1, name = 'cpu_hottest_function_ratio' } } }", res, &in, false, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	assert_int_equal(o.metrics->arr.len, 2);
	assert_string_equal(value_get_str(o.metrics->arr.items[0], "name"), "runq_latency_p99_seconds");
	assert_true(value_get_num(o.metrics->arr.items[0], "value", 0) == 0.0021);
	assert_string_equal(o.metrics->arr.items[1]->obj.keys[0], "name"); /* rebuilt: name, value, help */
	assert_true(value_get_num(o.metrics->arr.items[1], "value", 0) == 1);
	outcome_free(&o);
	run_text("return { " RO_VERDICT " }", res, &in, false, &o);
	assert_int_equal(o.rc, 0);
	assert_int_equal(o.metrics->type, V_ARR);
	assert_int_equal(o.metrics->arr.len, 0);
	outcome_free(&o);

	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'runq p99', value = 1, help = 'x' } } }",
			  res, &in, false, "inline.lua: metrics[1].name: \"runq p99\" is not a metric name");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'runq_p99_us', value = 1, help = 'x' } } }",
			  res, &in, false, "metrics[1].name: \"runq_p99_us\" is not a metric name");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'a_ratio', value = 'high', help = 'x' } } }",
			  res, &in, false, "inline.lua: metrics[1].value: expected a finite number, got string");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'a_ratio', value = 1, help = 'x\\ny' } } }",
			  res, &in, false, "inline.lua: metrics[1].help: expected one line");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'a_ratio', value = 1, help = 'x', unit = 'y' } } }",
			  res, &in, false, "inline.lua: metrics[1]: unknown key \"unit\"");
	expect_text_error("return { " RO_VERDICT ", metrics = { { name = 'a_ratio', value = 1, help = 'x' },\n"
			  "  { name = 'a_ratio', value = 2, help = 'y' } } }", res, &in, false,
			  "inline.lua: metrics[2].name: \"a_ratio\" given twice");
	expect_text_error("return { " RO_VERDICT ", metrics = { name = 'a_ratio' } }", res, &in, false,
			  "inline.lua: metrics: expected an array");
	value_free(res);
}

static void test_time_limits(void **state)
{
	(void)state;
	struct value *res = sample_results();
	struct verdict_input in = { .max_instructions = 20000, .max_ms = 300 };
	static const char *const slow[] = {
		/* 16 MiB copied per call, a few instructions per loop */
		"local s = ('x'):rep(1 << 20)\nwhile true do local t = s:rep(16) end",
		/* a million __index calls per instruction */
		"while true do table.unpack(results.profile.stacks, 1, 999000) end",
		/* backtracking: minutes inside one call */
		"return string.find(('a'):rep(60), ('a*'):rep(7) .. 'b')",
	};
	for (size_t i = 0; i < ARRAY_LEN(slow); i++)
		expect_text_error(slow[i], res, &in, true,
				  "inline.lua: verdict phase over its time limit of 300 ms (killed)");

	/* signals the caller holds stay held in the child, which is killed all the same */
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &old);
	expect_text_error(slow[2], res, &in, true, "over its time limit of 300 ms (killed)");
	sigprocmask(SIG_SETMASK, &old, NULL);

	/* the instruction limit still ends a plain loop, with its own message */
	in.max_ms = 0;
	expect_text_error("while true do end", res, &in, false,
			  "inline.lua:1: instruction limit exceeded");
	value_free(res);
}

/* Sends sig to the first child of this process's main thread that shows up. */
struct killer {
	int sig;
	pid_t victim;
};

static void *kill_first_child(void *arg)
{
	struct killer *k = arg;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	for (int tries = 0; tries < 4000 && !k->victim; tries++) {
		FILE *f = fopen(path, "r");
		int pid = 0;
		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		if (pid > 0) {
			usleep(50 * 1000); /* let it reach the snippet */
			kill(pid, k->sig);
			k->victim = pid;
		} else {
			usleep(1000);
		}
	}
	return NULL;
}

/* A child ended by a signal (here sent from outside, as RLIMIT_CPU or the OOM killer would) is
 * a clean error naming it. */
static void test_child_killed(void **state)
{
	(void)state;
	char children[64];
	snprintf(children, sizeof(children), "/proc/self/task/%d/children", (int)getpid());
	if (access(children, R_OK)) /* CONFIG_PROC_CHILDREN */
		skip();
	struct killer k = { .sig = SIGXCPU };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, kill_first_child, &k), 0);
	struct verdict_input in = { .max_ms = 20000 };
	expect_text_error("return string.find(('a'):rep(60), ('a*'):rep(7) .. 'b')", NULL, &in, true,
			  "inline.lua: verdict phase killed by SIGXCPU (over its CPU time limit)");
	pthread_join(t, NULL);
	assert_true(k.victim > 0);
}

/* What comes back through the pipe is what the snippet returned. */
static void test_answer_through_child(void **state)
{
	(void)state;
	struct verdict_input in = { 0 };
	struct outcome o;
	run_text("return { verdicts = { { id = 'b', severity = 'info', title = 'x\\1y\\127z',\n"
		 "  evidence = { '\\255\\254 not UTF-8', 'caf\\195\\169', 'lock\\0at 0x10\\0' },\n"
		 "  next_steps = {} } },\n"
		 "  report = { { kind = 'text', third = 0.1 + 0.2, whole = 2.0, big = 1e300,\n"
		 "    int = math.mininteger, inf = 1/0, s = 'a\\0b' } } }",
		 NULL, &in, true, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	const struct value *v = o.verdicts->arr.items[0];
	assert_string_equal(value_get_str(v, "title"), "x\001y\177z");
	assert_string_equal(value_get(v, "evidence")->arr.items[0]->s, "\377\376 not UTF-8");
	assert_string_equal(value_get(v, "evidence")->arr.items[1]->s, "caf\303\251");
	/* a NUL does not cut the string: it comes back as the visible \x00, the rest kept */
	assert_string_equal(value_get(v, "evidence")->arr.items[2]->s, "lock\\x00at 0x10\\x00");
	const struct value *r = o.report->arr.items[0];
	assert_int_equal(value_get(r, "third")->type, V_NUM);
	assert_true(value_get(r, "third")->n == 0.1 + 0.2); /* exact, not %.6g */
	assert_int_equal(value_get(r, "whole")->type, V_NUM);
	assert_true(value_get(r, "big")->n == 1e300);
	assert_int_equal(value_get(r, "int")->type, V_INT);
	assert_true(value_get(r, "int")->i == INT64_MIN);
	assert_int_equal(value_get(r, "inf")->type, V_NULL); /* as the JSON report writes it */
	assert_string_equal(value_get_str(r, "s"), "a\\x00b"); /* not cut at the NUL, as in process */
	outcome_free(&o);
	assert_no_child();

	/* 16 levels of tables come back, 17 do not (report, section, then t) */
	run_text("local t = {} for i = 1, 13 do t = { t } end\n"
		 "return { verdicts = {}, report = { { kind = 'x', t = t } } }", NULL, &in, false, &o);
	if (o.rc)
		fail_msg("%s", o.err.msg);
	outcome_free(&o);
	expect_text_error("local t = {} for i = 1, 14 do t = { t } end\n"
			  "return { verdicts = {}, report = { { kind = 'x', t = t } } }", NULL, &in, false,
			  "inline.lua: report[1].t[1][1][1][1][1][1][1][1][1][1][1][1][1][1]: "
			  "tables nested too deeply");

	/* errors are one line, in the child as in process */
	expect_text_error("error('first\\nsecond\\27[31m')", NULL, &in, false, "first?second?[31m");
	expect_text_error("error('\\0x\\0y', 0)", NULL, &in, false, " x y");
	expect_text_error("error('', 0)", NULL, &in, false, "inline.lua: error with an empty message");
	/* keys must be C strings */
	expect_text_error("return { verdicts = {}, report = { { kind = 'x', ['a\\0b'] = 1 } } }", NULL,
			  &in, false, "report[1]: a key holds a NUL byte");
}

/* The child started before its results exist (as the engine does when the window opens): it
 * answers on the results handed to it later, as verdict_run does; one cancelled is gone; one
 * stuck before the results arrive (a library's load in one C call) is killed at the deadline
 * counted from verdict_finish, and results larger than a pipe's buffer do not block the parent. */
static void test_started_early(void **state)
{
	(void)state;
	const char *text = "return { verdicts = { { id = 'n', severity = 'info', title = 'stacks ' .. "
			   "#results.profile.stacks .. ' run ' .. run.recipe .. ' mode ' .. thresholds.mode,"
			   " evidence = {}, next_steps = {} } } }";
	struct source_file lua;
	source_of_text(&lua, "inline.lua", text, strlen(text));
	struct value *th = value_obj();
	value_set_str(th, "mode", "user");
	struct verdict_input in = { .lua = &lua, .thresholds = th };
	struct value *res = sample_results(), *run = value_obj();
	value_set_str(run, "recipe", "high-cpu");

	struct verdict_child ch;
	struct verdict_answer a;
	struct diag_err err = { 0 };
	assert_int_equal(verdict_start(&in, &ch, &err), 0);
	usleep(100 * 1000); /* the collection */
	if (verdict_finish(&ch, res, run, &a, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(value_get_str(a.verdicts->arr.items[0], "title"), "stacks 1 run high-cpu mode user");
	verdict_answer_free(&a);
	assert_no_child();

	/* cancelled: killed and reaped */
	assert_int_equal(verdict_start(&in, &ch, &err), 0);
	verdict_cancel(&ch);
	assert_no_child();

	/* ended before its results came (the OOM killer, an operator): the results written to no
	 * one, its end said */
	assert_int_equal(verdict_start(&in, &ch, &err), 0);
	kill(ch.pid, SIGKILL);
	/* dead before the write (its pipe without a reader): the write's SIGPIPE must not reach this
	 * process, whose disposition is the default one */
	siginfo_t dead;
	assert_int_equal(waitid(P_PID, (id_t)ch.pid, &dead, WEXITED | WNOWAIT), 0);
	assert_int_equal(verdict_finish(&ch, res, run, &a, &err), -1);
	assert_contains(err.msg, "inline.lua: verdict phase killed by SIGKILL");
	assert_null(a.verdicts);
	assert_no_child();

	/* never started: an error, nothing killed, no descriptor closed */
	struct verdict_child none = VERDICT_CHILD_NONE;
	assert_int_equal(verdict_finish(&none, res, run, &a, &err), -1);
	assert_contains(err.msg, "not started");
	verdict_cancel(&none);

	/* a snippet that does not compile: the error comes with the answer, not before */
	struct source_file bad;
	source_of_text(&bad, "inline.lua", "return {", 8);
	struct verdict_input bad_in = { .lua = &bad };
	assert_int_equal(verdict_start(&bad_in, &ch, &err), 0);
	assert_int_equal(verdict_finish(&ch, res, run, &a, &err), -1);
	assert_contains(err.msg, "inline.lua:1:");
	assert_null(a.verdicts);
	assert_no_child();
	source_drop(&bad);

	/* a library stuck in one C call while it loads; 1 MiB of results to write meanwhile */
	struct source_file lib;
	const char *stuck = "local found = string.find(('a'):rep(60), ('a*'):rep(7) .. 'b')\nreturn {}";
	source_of_text(&lib, "lua/lib/stuck.lua", stuck, strlen(stuck));
	struct verdict_input slow_in = { .lua = &lua, .libs = &lib, .n_libs = 1, .max_ms = 300 };
	struct value *big = value_obj();
	char *blob = xmalloc(1u << 20);
	memset(blob, 'x', (1u << 20) - 1);
	blob[(1u << 20) - 1] = 0;
	value_set_str(big, "blob", blob);
	free(blob);
	assert_int_equal(verdict_start(&slow_in, &ch, &err), 0);
	assert_int_equal(verdict_finish(&ch, big, run, &a, &err), -1);
	assert_contains(err.msg, "inline.lua: verdict phase over its time limit of 300 ms (killed)");
	assert_no_child();
	source_drop(&lib);

	value_free(big);
	value_free(res);
	value_free(run);
	value_free(th);
	source_drop(&lua);
}

static void test_severity_names(void **state)
{
	(void)state;
	int ok;
	assert_int_equal(severity_parse("warning", &ok), SEV_WARNING);
	assert_true(ok);
	severity_parse("fatal", &ok);
	assert_false(ok);
	assert_string_equal(severity_name(SEV_CRITICAL), "critical");
	assert_int_equal(verdicts_worst(NULL), SEV_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_user_bound),
		cmocka_unit_test(test_user_bound_stripped),
		cmocka_unit_test(test_kernel_bound),
		cmocka_unit_test(test_kernel_bound_counts_only),
		cmocka_unit_test(test_not_busy),
		cmocka_unit_test(test_starved),
		cmocka_unit_test(test_steal),
		cmocka_unit_test(test_missing_frame_pointers),
		cmocka_unit_test(test_jit_node),
		cmocka_unit_test(test_jit_jvm),
		cmocka_unit_test(test_missing_probes),
		cmocka_unit_test(test_large_profile),
		cmocka_unit_test(test_diag_helpers),
		cmocka_unit_test(test_libs_in_name_order),
		cmocka_unit_test(test_sandbox_no_escape),
		cmocka_unit_test(test_sandbox_limits),
		cmocka_unit_test(test_results_read_only),
		cmocka_unit_test(test_answer_checked),
		cmocka_unit_test(test_sorted_and_values),
		cmocka_unit_test(test_syntax_and_loading),
		cmocka_unit_test(test_answer_budget),
		cmocka_unit_test(test_ruled_out),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_time_limits),
		cmocka_unit_test(test_child_killed),
		cmocka_unit_test(test_answer_through_child),
		cmocka_unit_test(test_started_early),
		cmocka_unit_test(test_severity_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
