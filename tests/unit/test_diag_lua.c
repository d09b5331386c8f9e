/* test_diag_lua.c — the shared Lua libraries (lua/lib/diag.lua, lua/lib/waits.lua) as the snippets
 * use them.
 * Owns the checks that: a threshold the recipe lacks is an error naming it, and every threshold a snippet
 * reads is declared in its recipe's YAML; the one set of formats; severities and lines; the one
 * wait classification and own-frame skipping latency and triage share; and the ruled-out items
 * the snippets return, only on data that was collected. No root, no BPF: small snippets run in
 * this process with the libraries a real run loads (verdict_run_inprocess).
 * Must not: test one recipe's verdicts (test_RECIPE_lua.c do).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/json_parse.h"
#include "plan/plan.h"
#include "recorded_verdicts.h"
#include "recipe/source.h"
#include "verdict/verdict.h"

static const char *const RECIPES[] = { "high-cpu", "io-saturation", "latency", "memory-growth",
				       "network-errors", "triage" };

/* text run as "inline.lua" with recipes/RECIPE.yaml's libraries and thresholds and run
 * {recipe = RECIPE} (and what fill_run adds, when not NULL); rc, and the first report section
 * (the snippets below return one). */
static int run_inline_with(const char *recipe, const char *text, void (*fill_run)(struct value *run),
			   struct value **section, struct diag_err *err)
{
	struct bundle b;
	char *rel = xasprintf("recipes/%s.yaml", recipe), *path = srcdir_path(rel);
	struct plan_args args = { .check_target = false };
	if (bundle_load(path, false, &args, &b, err))
		fail_msg("%s", err->msg);
	struct source_file lua = { .path = xstrdup("inline.lua"), .data = xstrdup(text), .len = strlen(text) };
	struct value *results = value_obj(), *run = value_obj();
	struct verdict_answer answer = { 0 };
	value_set_str(run, "recipe", recipe);
	if (fill_run)
		fill_run(run);
	struct verdict_input in = { .lua = &lua, .libs = b.src.libs, .n_libs = b.src.n_libs,
				    .results = results, .thresholds = b.plan->thresholds, .run = run };
	int rc = verdict_run_inprocess(&in, &answer, err);
	*section = NULL;
	if (rc == 0 && answer.report->arr.len > 0)
		*section = value_copy(answer.report->arr.items[0]);
	verdict_answer_free(&answer);
	value_free(results);
	value_free(run);
	free(lua.path);
	free(lua.data);
	bundle_free(&b);
	free(path);
	free(rel);
	return rc;
}

static int run_inline(const char *recipe, const char *text, struct value **section, struct diag_err *err)
{
	return run_inline_with(recipe, text, NULL, section, err);
}

/* The values section of a snippet that must succeed (fill_run: NULL, or what run gets). */
static struct value *values_of_run(const char *recipe, const char *text, void (*fill_run)(struct value *run))
{
	struct value *section;
	struct diag_err err = { 0 };
	if (run_inline_with(recipe, text, fill_run, &section, &err))
		fail_msg("%s", err.msg);
	assert_non_null(section);
	return section;
}

static struct value *values_of(const char *recipe, const char *text)
{
	return values_of_run(recipe, text, NULL);
}

static void assert_fails_with(const char *recipe, const char *text, const char *want)
{
	struct value *section = NULL;
	struct diag_err err = { 0 };
	if (run_inline(recipe, text, &section, &err) == 0)
		fail_msg("accepted: %s", text);
	if (!strstr(err.msg, want))
		fail_msg("%s (want %s)", err.msg, want);
	value_free(section);
}

/* ---- thresholds ------------------------------------------------------------------------------ */

static void test_threshold_missing(void **state)
{
	(void)state;
	/* a declared one is the YAML's number */
	struct value *v = values_of("latency",
		"return { verdicts = {}, report = { { kind = 'values', warn = diag.threshold('cause_pct_warn') } } }");
	assert_int_equal(value_get_num(v, "warn", -1), 10);
	value_free(v);
	/* one the recipe does not declare: an error naming it and the YAML, at the snippet's line */
	assert_fails_with("latency", "local x = 1\nlocal t = diag.threshold('no_such_threshold')\nreturn { verdicts = {} }",
			  "inline.lua:2: threshold \"no_such_threshold\" is missing: declare it under thresholds: in recipes/latency.yaml");
}

/* Every diag.threshold("NAME") a snippet reads is declared in its recipe's YAML. */
static void test_thresholds_declared(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(RECIPES) / sizeof(RECIPES[0]); i++) {
		struct bundle b;
		struct diag_err err = { 0 };
		char *rel = xasprintf("recipes/%s.yaml", RECIPES[i]), *path = srcdir_path(rel);
		if (bundle_load(path, false, NULL, &b, &err))
			fail_msg("%s", err.msg);
		const char *text = b.src.lua.data, *at = text;
		unsigned n = 0;
		while ((at = strstr(at, "diag.threshold(\""))) {
			at += strlen("diag.threshold(\"");
			const char *end = strchr(at, '"');
			assert_non_null(end);
			char *name = xasprintf("%.*s", (int)(end - at), at);
			if (!recipe_kv_find(b.recipe->thresholds, b.recipe->n_thresholds, name))
				fail_msg("%s reads threshold %s, which recipes/%s.yaml does not declare", b.src.lua.path,
					 name, RECIPES[i]);
			free(name);
			n++;
		}
		if (n == 0)
			fail_msg("%s reads no threshold through diag.threshold", b.src.lua.path);
		/* and no snippet keeps a default of its own */
		assert_null(strstr(text, "diag.number("));
		bundle_free(&b);
		free(path);
		free(rel);
	}
}

/* ---- formats, severities, lines ------------------------------------------------------------- */

static void assert_list(const struct value *section, const char *key, const char *const *want, size_t n)
{
	const struct value *got = value_get(section, key);
	assert_non_null(got);
	assert_int_equal(got->arr.len, n);
	for (size_t i = 0; i < n; i++)
		if (got->arr.items[i]->type != V_STR || strcmp(got->arr.items[i]->s, want[i]))
			fail_msg("%s[%zu]: %s, want %s", key, i, got->arr.items[i]->type == V_STR ? got->arr.items[i]->s : "?", want[i]);
}

static void test_formats(void **state)
{
	(void)state;
	struct value *v = values_of("memory-growth",
		"local l = diag.lines('first', nil)\n"
		"l:add('100% literal'):add(nil):add('%d%% formatted', 5)\n"
		"l:extend({ 'x', 'y' })\n"
		"return { verdicts = {}, report = { { kind = 'values',\n"
		"  bytes = { diag.fmt_bytes(512), diag.fmt_bytes(1536), diag.fmt_bytes(4096), diag.fmt_bytes(3.2e6),\n"
		"    diag.fmt_bytes(5e9), diag.fmt_bytes(-2048), diag.fmt_bytes(nil), diag.fmt_byte_rate(2097152),\n"
		"    diag.fmt_byte_rate(nil) },\n"
		"  spans = { diag.fmt_s(90), diag.fmt_s(1500), diag.fmt_s(9000), diag.fmt_s(nil) },\n"
		"  times = { diag.fmt_ns(512), diag.fmt_ns(1500), diag.fmt_ns(80200000), diag.fmt_ns(2.5e9), diag.fmt_us(40) },\n"
		"  counts = { diag.fmt_count(950), diag.fmt_count(12345), diag.fmt_rate(2000000), diag.fmt_pct(72.4), diag.fmt_pct(0.01) },\n"
		"  severities = { diag.severity_at(5, 10, 40) or 'none', diag.severity_at(10, 10, 40), diag.severity_at(40, 10, 40),\n"
		"    diag.severity_at(99, 10) , diag.worse('info', 'warning'), diag.worse('critical', 'warning'), diag.worse(nil, 'ok') },\n"
		"  order = (function()\n"
		"    local out = {}\n"
		"    for _, v in ipairs(diag.worst_first({ diag.verdict('a', 'info', '', {}, {}), diag.verdict('b', 'critical', '', {}, {}),\n"
		"        diag.verdict('c', 'info', '', {}, {}), diag.verdict('d', 'warning', '', {}, {}) })) do out[#out + 1] = v.id end\n"
		"    return out end)(),\n"
		"  lines = l,\n"
		"} } }");
	static const char *const bytes[] = { "512 B", "1.5 KiB", "4 KiB", "3.1 MiB", "4.7 GiB", "-2 KiB", "n/a",
					     "2 MiB/s", "n/a" };
	assert_list(v, "bytes", bytes, 9);
	static const char *const spans[] = { "90 s", "25.0 min", "2.5 h", "n/a" };
	assert_list(v, "spans", spans, 4);
	static const char *const times[] = { "512 ns", "1.5 us", "80.2 ms", "2.50 s", "40 us" };
	assert_list(v, "times", times, 5);
	static const char *const counts[] = { "950", "12.3k", "2M/s", "72%", "<0.1%" };
	assert_list(v, "counts", counts, 5);
	static const char *const sev[] = { "none", "warning", "critical", "warning", "warning", "critical", "ok" };
	assert_list(v, "severities", sev, 7);
	static const char *const order[] = { "b", "d", "a", "c" }; /* worst first, equal ones in order */
	assert_list(v, "order", order, 4);
	static const char *const lines[] = { "first", "100% literal", "5% formatted", "x", "y" };
	assert_list(v, "lines", lines, 5);
	value_free(v);
}

/* ---- the wait classification and the target's own frames ------------------------------------ */

static void test_wait_classification(void **state)
{
	(void)state;
	struct value *v = values_of("latency",
		"local function c(tag, kernel, user, count, weight, from, unwind)\n"
		"  return waits.classify({ tag = tag, kernel = kernel, user = user, count = count or 1, weight = weight or 1000,\n"
		"    user_from = from }, unwind)\n"
		"end\n"
		"local own1, caller1 = waits.own_frame({ '__lll_lock_wait', 'pthread_mutex_lock', 'handle_request', 'main' })\n"
		"local own2, caller2 = waits.own_frame({ 'fsync', 'journal_write', 'journal_run', 'start_thread' })\n"
		"local own3 = waits.own_frame({ 'read', 'epoll_wait', 'libc.so.6+0x1a2b', '[unknown]' })\n"
		"return { verdicts = {}, report = { { kind = 'values', classes = {\n"
		"  c('runnable', {}, {}),\n"
		"  c('sleeping', { 'do_sys_poll' }, { 'poll', '__libc_res_nsend', 'getaddrinfo', 'lookup' }),\n"
		"  c('uninterruptible', { 'filemap_fault', 'exc_page_fault' }, { 'scan' }),\n"
		"  c('uninterruptible', { 'io_schedule', 'blk_mq_get_tag' }, { 'fsync' }),\n"
		"  c('sleeping', { 'futex_wait_queue', 'futex_wait' }, { '__lll_lock_wait', 'pthread_mutex_lock', 'work' }),\n"
		"  c('sleeping', { 'futex_wait' }, { 'pthread_cond_wait', 'pool_get' }),\n"
		"  c('sleeping', { 'futex_wait' }, { 'syscall' }, 10, 1e9),\n"
		"  c('sleeping', { 'futex_wait' }, { 'syscall' }, 10, 1e6),\n"
		"  c('sleeping', { 'futex_wait' }, { 'syscall' }, 10, 1e6, nil, 'dwarf'),\n"
		"  c('sleeping', { 'futex_wait' }, { 'syscall' }, 10, 1e6, 'dwarf', 'dwarf'),\n"
		"  c('sleeping', { 'ep_poll', 'do_epoll_wait' }, { 'epoll_wait' }),\n"
		"  c('sleeping', { 'sk_wait_data', 'tcp_recvmsg' }, { 'recv' }),\n"
		"  c('sleeping', { 'do_nanosleep', 'hrtimer_nanosleep' }, { 'clock_nanosleep' }),\n"
		"  c('sleeping', { 'folio_wait_bit' }, {}),\n"
		"  c('sleeping', { 'schedule', 'kthread' }, {}),\n"
		"}, own = { own1 or 'nil', caller1 or 'nil', own2 or 'nil', caller2 or 'nil', own3 or 'nil' } } } }");
	static const char *const classes[] = { "runnable", "resolve", "fault", "disk", "lock", "work-wait",
					       "work-wait", "futex", "other", "futex", "work-wait", "peer",
					       "sleep", "disk", "other" };
	assert_list(v, "classes", classes, sizeof(classes) / sizeof(classes[0]));
	/* the target's own code: past the lock and I/O wrappers; main is no caller worth naming */
	static const char *const own[] = { "handle_request", "nil", "journal_write", "journal_run", "nil" };
	assert_list(v, "own", own, 5);
	value_free(v);
}

/* The wait table through the user frames, innermost runtime frame first: real Debian 12 stacks
 * (the names of runtime_stacks.h, leaf first). */
static void test_runtime_wait_classification(void **state)
{
	(void)state;
	struct value *v = values_of("latency",
		"local EPOLL, FUTEX = { 'ep_poll', 'do_epoll_wait' }, { 'futex_wait', 'do_futex' }\n"
		"local function c(kernel, user, count, weight)\n"
		"  local name, m = waits.classify({ tag = 'sleeping', kernel = kernel, user = user, count = count or 1,\n"
		"    weight = weight or 1000, user_from = { 'dwarf' } }, 'dwarf')\n"
		"  return name .. (m and (': ' .. waits.describe(m)) or '')\n"
		"end\n"
		"return { verdicts = {}, report = { { kind = 'values', classes = {\n"
		"  c(EPOLL, { 'epoll_wait', 'WaitEventSetWait', 'WaitLatch', 'ProcSleep', 'postgres+0x45d8a0', 'LockAcquireExtended', 'XactLockTableWait', 'heap_update', 'PostgresMain' }),\n"
		"  c(EPOLL, { 'epoll_wait', 'WaitEventSetWait', 'secure_read', 'postgres+0x34b3c0', 'pq_getbyte', 'PostgresMain' }),\n"
		"  c(EPOLL, { 'epoll_wait', 'WaitEventSetWait', 'secure_read', 'pq_recvbuf', 'pq_getbyte', 'SocketBackend', 'ReadCommand', 'PostgresMain' }),\n"
		"  c(FUTEX, { 'sem_wait', 'PGSemaphoreLock', 'LWLockAcquire', 'ProcSleep', 'postgres+0x45d8a0', 'LockAcquireExtended' }),\n"
		"  c(EPOLL, { 'epoll_wait', 'WaitEventSetWait', 'WaitLatch', 'postgres+0x3e58ca', 'StartAutoVacLauncher' }),\n"
		"  c(EPOLL, { 'epoll_wait', 'WaitEventSetWait', 'WaitLatch', 'postgres+0x454765' }),\n"
		"  c({ 'do_select' }, { 'select', 'pg_usleep', 'vacuum_delay_point', 'heap_vacuum_rel' }),\n"
		"  c(EPOLL, { 'epoll_wait', 'nginx+0x5a3e0', 'ngx_process_events_and_timers', 'nginx+0x5c1f0' }),\n"
		"  c(EPOLL, { 'epoll_wait', 'aeProcessEvents', 'aeMain', 'main' }),\n"
		"  c(FUTEX, { 'pthread_cond_wait', 'Parker::park(bool, long)', 'Unsafe_Park', '[unknown]' }, 1000, 1e8),\n"
		"  c(FUTEX, { 'pthread_cond_wait', 'Parker::park(bool, long)', 'Unsafe_Park', '[unknown]' }, 10, 1e9),\n"
		"  c(FUTEX, { 'pthread_cond_wait', 'ObjectMonitor::EnterI(JavaThread*)', 'ObjectMonitor::enter(JavaThread*)', 'ObjectSynchronizer::enter(Handle, BasicLock*, JavaThread*)' }),\n"
		"  c(FUTEX, { 'pthread_cond_timedwait', 'python3.11+0xf92c0', 'PyEval_RestoreThread', '_PyEval_EvalFrameDefault' }),\n"
		"  c(FUTEX, { 'pthread_cond_timedwait', 'take_gil', 'PyEval_RestoreThread' }),\n"
		"  c(FUTEX, { 'pthread_cond_timedwait', 'python3.11+0x1', 'python3.11+0x2', 'python3.11+0x3', '_PyEval_EvalFrameDefault' }),\n"
		"  c(EPOLL, { 'epoll_wait', 'uv__io_poll', 'uv_run', 'node::SpinEventLoop' }),\n"
		"  c(FUTEX, { 'runtime.futex', 'runtime.futexsleep', 'runtime.notesleep', 'runtime.stopm', 'runtime.findRunnable' }),\n"
		"  c(FUTEX, { '__lll_lock_wait', 'pthread_mutex_lock', 'handle_request', 'worker', 'start_thread' }),\n"
		"  c(FUTEX, { 'pthread_cond_wait', 'worker', 'start_thread' }),\n"
		"} } } }");
	static const char *const classes[] = {
		"lock: a heavyweight lock (row or transaction) in LockAcquireExtended ← XactLockTableWait",
		"work-wait: the client's next command (the backend is idle in its session) in secure_read ← pq_getbyte",
		"work-wait: the client's next command (the backend is idle in its session) in secure_read ← pq_recvbuf",
		"lock: an LWLock (a shared-memory lock: buffer mapping, WAL insertion, a lock-manager partition) in LWLockAcquire ← ProcSleep",
		"work-wait: work (a background process's main loop: its timer or a signal) in StartAutoVacLauncher",
		"latch: its latch (a signal from another process, or a timeout) in WaitEventSetWait ← WaitLatch",
		"sleep: the cost-based vacuum delay (vacuum_cost_delay, autovacuum_vacuum_cost_delay) in vacuum_delay_point ← heap_vacuum_rel",
		"event-loop: events (the worker's event loop) in ngx_process_events_and_timers",
		"event-loop: events (Redis's event loop) in aeProcessEvents ← aeMain",
		"park: LockSupport.park (a java.util.concurrent lock or condition) in Parker::park ← Unsafe_Park",
		"work-wait: LockSupport.park (a java.util.concurrent lock or condition) in Parker::park ← Unsafe_Park",
		"lock: a Java monitor (synchronized) in ObjectMonitor::EnterI ← ObjectMonitor::enter",
		"gil: the GIL (take_gil) in PyEval_RestoreThread ← _PyEval_EvalFrameDefault",
		"gil: the GIL (take_gil) in PyEval_RestoreThread", /* the timed wait under it, innermost */
		"work-wait", /* a condition wait four frames from the eval loop: not the GIL's */
		"event-loop: events (libuv's event loop) in uv__io_poll ← uv_run",
		"work-wait: goroutines to run (an idle M parked by the scheduler) in runtime.stopm ← runtime.findRunnable",
		"lock", /* our own workloads: the C library's wrappers, as before */
		"work-wait",
	};
	assert_list(v, "classes", classes, sizeof(classes) / sizeof(classes[0]));
	value_free(v);
}

/* An author's lua/lib/wait_table_NAME.lua (here its global, as the loader makes it) is matched
 * before the built-in entries; a bad entry is an error naming its file and index. */
static void test_wait_table_extended(void **state)
{
	(void)state;
	struct value *v = values_of("latency",
		"wait_table_myapp = { { runtime = 'myapp', fn = { 'queue_pop' }, class = 'idle', what = 'a job' },\n"
		"  { runtime = 'myapp', fn = { 'WaitLatch' }, under = { 'my_extension_wait' }, class = 'peer', what = 'the license server' } }\n"
		"local function c(user) local n, m = waits.classify({ tag = 'sleeping', kernel = { 'futex_wait' }, user = user, count = 1, weight = 1 }, 'dwarf')\n"
		"  return n .. (m and (': ' .. waits.describe(m)) or '') end\n"
		"return { verdicts = {}, report = { { kind = 'values', classes = {\n"
		"  c({ 'pthread_cond_wait', 'queue_pop', 'serve' }),\n"
		"  c({ 'epoll_wait', 'WaitEventSetWait', 'WaitLatch', 'my_extension_wait', 'ExecutorRun' }),\n"
		"} } } }");
	static const char *const classes[] = { "work-wait: a job in queue_pop ← serve",
					       "peer: the license server in my_extension_wait ← ExecutorRun" };
	assert_list(v, "classes", classes, 2);
	value_free(v);
	assert_fails_with("latency",
			  "wait_table_bad = { { runtime = 'x', fn = { 'f' }, class = 'slow', what = 'w' } }\n"
			  "waits.classify({ tag = 'sleeping', kernel = {}, user = { 'f' } })\nreturn { verdicts = {} }",
			  "wait_table_bad entry 1: class \"slow\" is not one of");
}

/* The frame that names an allocation: past the allocator, its wrappers and generic helpers
 * (lua/lib/alloc_wrappers.lua), a C++ name with its parameters kept; an author's
 * alloc_wrappers_NAME entries skip their own pool; a bad entry names its file and index. */
static void test_alloc_wrappers(void **state)
{
	(void)state;
	struct value *v = values_of("memory-growth",
		"alloc_wrappers_myapp = { { runtime = 'myapp', kind = 'wrapper', fn = { 'pool_alloc*' } } }\n"
		"local function o(user) return heap.own_frame({ user = user }) or '-' end\n"
		"return { verdicts = {}, report = { { kind = 'values', classes = {\n"
		"  o({ 'operator new(unsigned long)', 'SessionStore::remember(Request const&)', 'main' }),\n"
		"  o({ 'zmalloc_usable', '_sdsnewlen', 'createStringObject', 'processMultibulkBuffer', 'processInputBuffer' }),\n"
		"  o({ 'zmalloc', 'dictAddRaw', 'dbAdd', 'setKey' }),\n"
		"  o({ 'malloc', 'xmalloc', 'parse_args', 'main' }),\n"
		"  o({ 'malloc', 'g_malloc0', 'g_hash_table_new_full', 'load_config' }),\n"
		"  o({ 'malloc', 'std::__new_allocator<Entry*>::allocate(unsigned long, void const*)', 'void std::vector<Entry*, std::allocator<Entry*> >::_M_realloc_insert<Entry* const&>(x)', 'Cache::put(Entry*)' }),\n"
		"  o({ 'malloc', 'pool_alloc_slow', 'handle' }),\n"
		"  o({ 'malloc', 'libfoo.so+0x1234', 'serve' }),\n"
		"  o({ 'je_malloc', 'mallocx' }),\n"
		"} } } }");
	static const char *const own[] = { "SessionStore::remember(Request const&)", "processMultibulkBuffer", "dbAdd",
					   "parse_args", "g_hash_table_new_full", "Cache::put(Entry*)", "handle", "serve", "-" };
	assert_list(v, "classes", own, sizeof(own) / sizeof(own[0]));
	value_free(v);
	assert_fails_with("memory-growth",
			  "alloc_wrappers_bad = { { runtime = 'x', fn = { 'f' }, kind = 'allocator' } }\n"
			  "heap.own_frame({ user = { 'f' } })\nreturn { verdicts = {} }",
			  "alloc_wrappers_bad entry 1: kind \"allocator\" is not one of wrapper, helper");
}

/* ---- ruled out ----------------------------------------------------------------------------------- */

static void test_ruled_out_helper(void **state)
{
	(void)state;
	struct value *v = values_of("latency",
		"local a = diag.answer()\n"
		"a.add(diag.ruled_out('cpu-throttling', 'not throttled: %s of %.1f s', '0 ms', 5))\n"
		"a.add({ diag.verdict('x', 'warning', 't', {}, {}), diag.ruled_out('disk-io', 'not the disk') })\n"
		"a.add(nil)\n"
		"local r = a.result()\n"
		"return { verdicts = r.verdicts, report = { { kind = 'values', n = #r.ruled_out, id = r.ruled_out[1].id,\n"
		"  text = r.ruled_out[1].text, second = r.ruled_out[2].text, verdicts = #r.verdicts } } }");
	assert_int_equal(value_get_num(v, "n", 0), 2);
	assert_string_equal(value_get_str(v, "id"), "cpu-throttling");
	assert_string_equal(value_get_str(v, "text"), "not throttled: 0 ms of 5.0 s");
	assert_string_equal(value_get_str(v, "second"), "not the disk");
	assert_int_equal(value_get_num(v, "verdicts", 0), 1);
	value_free(v);
	assert_fails_with("latency", "return { verdicts = {}, x = diag.ruled_out('Not_Kebab', 'text') }",
			  "diag.ruled_out(\"Not_Kebab\"): the id is not a kebab-case hypothesis id");
	assert_fails_with("latency", "return { verdicts = {}, x = diag.ruled_out('disk-io', '') }",
			  "diag.ruled_out(\"disk-io\"): no text");
}

/* diag.why_missing: a probe with no results is said to have not loaded here (run.load_errors),
 * not to apply (run.not_applicable), or to have failed, in that order. */
static void skipped_probes(struct value *run)
{
	value_set_str(value_obj_set(run, "load_errors", value_obj()), "profile", "no PMU");
	struct value *na = value_obj_set(run, "not_applicable", value_obj());
	value_set_str(na, "profile", "not this");
	value_set_str(na, "lookups", "no libc");
}

static void test_why_missing(void **state)
{
	(void)state;
	struct value *v = values_of("high-cpu",
		"return { verdicts = {}, report = { { kind = 'values', before = diag.why_missing('profile') } } }");
	assert_string_equal(value_get_str(v, "before"), "the probe failed");
	value_free(v);
	v = values_of_run("high-cpu",
		"return { verdicts = {}, report = { { kind = 'values',\n"
		"  unloaded = diag.why_missing('profile'), na = diag.why_missing('lookups') } } }", skipped_probes);
	assert_string_equal(value_get_str(v, "unloaded"), "did not load here: no PMU");
	assert_string_equal(value_get_str(v, "na"), "not applicable: no libc");
	value_free(v);
}

/* a.metric: a figure not measured (nil, or the false that `x and y / n` gives when x is false: a
 * sleeping target's profile with no samples) exports nothing; NaN and a wrong name are errors. */
static void test_metric_helper(void **state)
{
	(void)state;
	struct value *v = values_of("high-cpu",
		"local a = diag.answer()\n"
		"local prof = { samples = 0 }\n"
		"a.metric('cpu_hottest_function_ratio', prof.samples > 0 and 1 / prof.samples, 'share')\n"
		"a.metric('cpu_usage_ratio', nil, 'cpu')\n"
		"a.metric('runq_latency_p99_seconds', 0.002, 'p99')\n"
		"local r = a.result()\n"
		"return { verdicts = r.verdicts, report = { { kind = 'values', n = #r.metrics, name = r.metrics[1].name } } }");
	assert_int_equal(value_get_num(v, "n", 0), 1);
	assert_string_equal(value_get_str(v, "name"), "runq_latency_p99_seconds");
	value_free(v);
	assert_fails_with("high-cpu", "local a = diag.answer() a.metric('x_ratio', 0 / 0, 'x') return a.result()",
			  "a.metric(\"x_ratio\"): the value is not a finite number");
	assert_fails_with("high-cpu", "local a = diag.answer() a.metric('x_ratio', 'high', 'x') return a.result()",
			  "a.metric(\"x_ratio\"): the value is not a finite number");
	assert_fails_with("high-cpu", "local a = diag.answer() a.metric('x_percent', 1, 'x') return a.result()",
			  "not a metric name ending in its unit");
}

/* Every item a kebab-case id and a line of text; no id both ruled out and a verdict. */
static void assert_ruled_out_well_formed(const struct recorded_answer *a, const char *what)
{
	assert_non_null(a->ruled_out);
	for (size_t i = 0; a->ruled_out->type == V_ARR && i < a->ruled_out->arr.len; i++) {
		const char *id = value_get_str(a->ruled_out->arr.items[i], "id");
		const char *text = value_get_str(a->ruled_out->arr.items[i], "text");
		if (!id || !text || !*text || strchr(text, '\n'))
			fail_msg("%s: ruled_out[%zu] is not {id, one line of text}", what, i);
		if (verdict_find(a->verdicts, id))
			fail_msg("%s: %s is both a verdict and ruled out", what, id);
	}
}

static struct recorded_answer answer_of(const char *recipe, const char *name)
{
	struct value *fx = trimmed_incident(recipe, name);
	struct recorded_answer a = recorded_answer(recipe, fx, NULL, false);
	value_free(fx);
	return a;
}

static void assert_text_has(const struct value *item, const char *text)
{
	assert_non_null(item);
	if (!strstr(value_get_str(item, "text"), text))
		fail_msg("%s: %s (want %s)", value_get_str(item, "id"), value_get_str(item, "text"), text);
}

static void test_ruled_out_returned(void **state)
{
	(void)state;
	/* latency on a lock: the lock is the verdict; the disk, peers and the CPU are ruled out */
	struct recorded_answer a = answer_of("latency", "lock");
	assert_ruled_out_well_formed(&a, "latency lock");
	assert_non_null(verdict_find(a.verdicts, "lock-contention"));
	assert_null(ruled_out_find(&a, "lock-contention"));
	assert_text_has(ruled_out_find(&a, "disk-io"), "not the disk: ");
	assert_text_has(ruled_out_find(&a, "waiting-on-peer"), "of the threads' time");
	assert_text_has(ruled_out_find(&a, "cpu-starved"), "not starved of CPU: runnable ");
	recorded_answer_free(&a);

	static const struct { const char *recipe, *name, *id, *text; } cases[] = {
		{ "triage", "idle", "cpu-bound", "not CPU-bound: CPU use " },
		{ "triage", "leak", "network-errors", "no network errors: " },
		{ "io-saturation", "logger", "sync-bound", "no process sync-bound: " },
		{ "io-saturation", "logger", "device-saturated", "no device saturated or slow: busiest " },
		{ "memory-growth", "churn", "leak", "no leak: " },
		{ "memory-growth", "churn", "memory-growth", "memory not growing: RSS " },
		{ "memory-growth", "host-fits", "working-set", "the working set fits: " },
		{ "network-errors", "clean-pid", "retransmits", "no loss: " },
		{ "network-errors", "clean-pid", "packet-drops", "no drop reason reached " },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		a = answer_of(cases[i].recipe, cases[i].name);
		assert_ruled_out_well_formed(&a, cases[i].name);
		assert_text_has(ruled_out_find(&a, cases[i].id), cases[i].text);
		recorded_answer_free(&a);
	}
}

/* A probe that produced nothing rules nothing out: without off-CPU stacks latency says where
 * the threads wait was not measured, and rules out no cause read from them. */
static void test_ruled_out_needs_data(void **state)
{
	(void)state;
	struct value *fx = trimmed_incident("latency", "lock");
	value_obj_drop((struct value *)value_get(fx, "results"), "offcpu");
	struct recorded_answer a = recorded_answer("latency", fx, NULL, false);
	assert_non_null(verdict_find(a.verdicts, "incomplete-data"));
	static const char *const from_offcpu[] = { "lock-contention", "disk-io", "page-faults", "waiting-on-peer",
						   "sleeping", "futex-wait" };
	for (size_t i = 0; i < sizeof(from_offcpu) / sizeof(from_offcpu[0]); i++)
		if (ruled_out_find(&a, from_offcpu[i]))
			fail_msg("%s ruled out without off-CPU stacks", from_offcpu[i]);
	recorded_answer_free(&a);
	value_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold_missing),
		cmocka_unit_test(test_thresholds_declared),
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_wait_classification),
		cmocka_unit_test(test_runtime_wait_classification),
		cmocka_unit_test(test_wait_table_extended),
		cmocka_unit_test(test_alloc_wrappers),
		cmocka_unit_test(test_ruled_out_helper),
		cmocka_unit_test(test_metric_helper),
		cmocka_unit_test(test_why_missing),
		cmocka_unit_test(test_ruled_out_returned),
		cmocka_unit_test(test_ruled_out_needs_data),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
