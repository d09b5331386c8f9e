/* test_high_cpu_lua.c — lua/high-cpu.lua's verdicts on result trees built by hand: user- and
 * kernel-bound, not busy, starved, steal, missing frame pointers, JIT code (Node, a JVM), missing
 * probes, a large profile; each run in a child and in this process (verdict_harness.h).
 * Needs DIAG_SRCDIR (the repository root); no root, no BPF.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "verdict_harness.h"

/* ---- high-cpu's result trees, run and looked into -------------------------------------------- */

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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
