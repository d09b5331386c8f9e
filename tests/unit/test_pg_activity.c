/* test_pg_activity.c — what pg_activity knows of PostgreSQL (engine/probes/pg_layout.c,
 * pg_wait_names.c): the layout table against the offsetof()s of every PostgreSQL server's headers
 * on the machine (tests/unit/pglayout.mk's pglayout_NN fixtures; Debian 12's
 * postgresql-server-dev-15 at least, which make deps installs), the constants every version
 * shares, wait events, lock tags and modes named as the headers' values say; the version found
 * in a binary's bytes (and not in look-alikes); each version's tables complete and in order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_path.h"
#include "probes/pg_layout.h"
#include "probes/pg_wait_names.h"

/* One pglayout fixture's output against the table. */
static void check_fixture(const char *path)
{
	char cmd[PATH_MAX + 400];
	snprintf(cmd, sizeof(cmd), "'%s'", path);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	char name[64], text[64];
	unsigned long value;
	const struct pg_layout *l = NULL;
	int major = 0;
	size_t checked = 0;
	while (fscanf(f, "%63s", name) == 1) {
		if (!strcmp(name, "wait")) {
			assert_int_equal(fscanf(f, "%lu %63s", &value, text), 2);
			char got[160];
			snprintf(got, sizeof(got), "%s:%s", pg_wait_type((uint32_t)value),
				 pg_wait_event(major, (uint32_t)value));
			if (strcmp(got, text))
				fail_msg("%s: wait_event_info 0x%08lx is %s, the table says %s",
					 path, value, text, got);
			checked++;
			continue;
		}
		if (!strcmp(name, "mode")) {
			assert_int_equal(fscanf(f, "%lu %63s", &value, text), 2);
			assert_string_equal(pg_lock_mode_name((int)value), text);
			checked++;
			continue;
		}
		assert_int_equal(fscanf(f, "%lu", &value), 1);
		if (!strcmp(name, "major")) {
			major = (int)value;
			if (!(l = pg_layout_of(major)))
				fail_msg("%s: PostgreSQL %d has headers here but no layout in the table",
					 path, major);
			continue;
		}
		assert_non_null(l);
		const struct {
			const char *name;
			unsigned long have;
		} fields[] = {
			{ "st_size", l->st_size },
			{ "st_changecount", l->st_changecount },
			{ "st_procpid", l->st_procpid },
			{ "st_backend_type", l->st_backend_type },
			{ "st_proc_start", l->st_proc_start },
			{ "st_xact_start", l->st_xact_start },
			{ "st_activity_start", l->st_activity_start },
			{ "st_state_start", l->st_state_start },
			{ "st_databaseid", l->st_databaseid },
			{ "st_state", l->st_state },
			{ "st_activity_raw", l->st_activity_raw },
			{ "proc_size", l->proc_size },
			{ "proc_pid", l->proc_pid },
			{ "proc_wait_event_info", l->proc_wait_event_info },
			{ "proc_wait_lock", l->proc_wait_lock },
			{ "proc_wait_lock_mode", l->proc_wait_lock_mode },
			{ "hdr_all_procs", l->hdr_all_procs },
			{ "hdr_all_proc_count", l->hdr_all_proc_count },
			{ "PG_SHMEM_MAGIC", PG_SHMEM_MAGIC },
			{ "PG_SHMEM_HDR_MAGIC", PG_SHMEM_HDR_MAGIC },
			{ "PG_SHMEM_HDR_CREATOR", PG_SHMEM_HDR_CREATOR },
			{ "PG_SHMEM_HDR_TOTALSIZE", PG_SHMEM_HDR_TOTALSIZE },
			{ "PG_SHMEM_HDR_INDEX", PG_SHMEM_HDR_INDEX },
			{ "PG_SHMEM_HDR_SIZE", PG_SHMEM_HDR_SIZE },
			{ "PG_HASH_ELEMENT_SIZE", PG_HASH_ELEMENT_SIZE },
			{ "PG_SHMEM_INDEX_KEYSIZE", PG_SHMEM_INDEX_KEYSIZE },
			{ "PG_SHMEM_INDEX_LOCATION", PG_SHMEM_INDEX_LOCATION },
			{ "PG_SHMEM_INDEX_SIZE", PG_SHMEM_INDEX_SIZE },
			{ "PG_SHMEM_INDEX_ENT_SIZE", PG_SHMEM_INDEX_ENT_SIZE },
			{ "PG_LOCK_TAG", PG_LOCK_TAG },
			{ "PG_LOCKTAG_SIZE", PG_LOCKTAG_SIZE },
			{ "PG_LOCK_PROCLOCKS", PG_LOCK_PROCLOCKS },
			{ "PG_PROCLOCK_MYPROC", PG_PROCLOCK_MYPROC },
			{ "PG_PROCLOCK_GROUPLEADER", PG_PROCLOCK_GROUPLEADER },
			{ "PG_PROCLOCK_HOLDMASK", PG_PROCLOCK_HOLDMASK },
			{ "PG_PROCLOCK_LOCKLINK", PG_PROCLOCK_LOCKLINK },
			{ "PG_PROCLOCK_SIZE", PG_PROCLOCK_SIZE },
			{ "locktag_type", 14 }, /* pg_activity.c reads the tag's type at byte 14 */
			{ "locktag_field4", 12 }, /* and field4 at 12 */
		};
		bool known = false;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (!strcmp(fields[i].name, name)) {
				known = true;
				if (fields[i].have != value)
					fail_msg("%s: PostgreSQL %d: %s is %lu in its headers, %lu in the table",
						 path, major, name, value, fields[i].have);
				checked++;
			}
		if (!known)
			fail_msg("%s: %s is not checked", path, name);
	}
	assert_int_equal(pclose(f), 0);
	assert_true(checked >= 50);
}

static void test_layout_against_headers(void **state)
{
	(void)state;
	const char *dir = fixture_path("");
	if (!dir)
		fail_msg("no fixtures directory: run make");
	char base[PATH_MAX];
	snprintf(base, sizeof(base), "%s", dir);
	DIR *d = opendir(base);
	assert_non_null(d);
	size_t n = 0;
	bool have15 = false;
	for (struct dirent *de; (de = readdir(d));) {
		if (strncmp(de->d_name, "pglayout_", 9))
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
		check_fixture(path);
		have15 |= !strcmp(de->d_name, "pglayout_15");
		n++;
	}
	closedir(d);
	if (!have15)
		fail_msg("no pglayout fixture for /usr/include/postgresql/15/server (postgresql-server-dev-15): %zu others",
			 n);
}

static void test_version_string(void **state)
{
	(void)state;
	int major = 0;
	char ver[40];
	static const char bin[] = "garbage\0PostgreSQL JDBC\0PostgreSQL 9 on x\0"
				  "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)\n\0"
				  "PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu, "
				  "compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit\0tail";
	assert_true(pg_version_find(bin, sizeof(bin) - 1, &major, ver, sizeof(ver)));
	assert_int_equal(major, 15);
	assert_string_equal(ver, "15.20");
	static const char beta[] = "\0PostgreSQL 17beta1 on aarch64-unknown-linux-gnu, compiled by clang";
	assert_true(pg_version_find(beta, sizeof(beta), &major, ver, sizeof(ver)));
	assert_int_equal(major, 17);
	assert_string_equal(ver, "17beta1");
	/* inside another string, unterminated, without the rest of PG_VERSION_STR: not it */
	static const char inside[] = "xPostgreSQL 15.2 on x, compiled by y\0";
	assert_false(pg_version_find(inside, sizeof(inside) - 1, &major, ver, sizeof(ver)));
	static const char cut[] = "PostgreSQL 15.2 on x86_64, compiled by";
	assert_false(pg_version_find(cut, sizeof(cut) - 1, &major, ver, sizeof(ver)));
	static const char plain[] = "PostgreSQL 16.1\0";
	assert_false(pg_version_find(plain, sizeof(plain) - 1, &major, ver, sizeof(ver)));
	assert_false(pg_version_find("", 0, &major, ver, sizeof(ver)));
}

/* Every version's tables: the events sorted (the lookup is a binary search), names set, the
 * names of every version's classes and what changed between them. */
static void test_tables(void **state)
{
	(void)state;
	for (int m = PG_LAYOUT_MIN_MAJOR; m <= PG_LAYOUT_MAX_MAJOR; m++) {
		const struct pg_wait_table *t = pg_wait_table(m);
		assert_non_null(t);
		assert_non_null(pg_layout_of(m));
		assert_true(t->n_events > 100);
		for (size_t i = 1; i < t->n_events; i++)
			assert_true(t->events[i - 1].info < t->events[i].info);
		assert_string_equal(pg_wait_event(m, 0x06000000u), "ClientRead");
		assert_string_equal(pg_wait_event(m, 0x05000000u), "ArchiverMain");
		assert_string_equal(pg_wait_event(m, 0x03000000u | 5), "transactionid");
		assert_string_equal(pg_wait_event(m, 0x01000000u | 1), "ShmemIndex");
		assert_string_equal(pg_wait_event(m, 0x01000000u | t->first_user_tranche), "extension");
		assert_string_equal(pg_wait_event(m, 0x0A00FFFFu), "unknown");
		assert_null(pg_wait_type(0));
		assert_null(pg_wait_event(m, 0));
		assert_string_equal(pg_backend_type_name(pg_layout_of(m), 0), "unknown");
	}
	/* the backend types moved: 16 sorted them, 17 put backends first */
	assert_string_equal(pg_backend_type_name(pg_layout_of(14), 3), "client backend");
	assert_string_equal(pg_backend_type_name(pg_layout_of(15), 12), "logger");
	assert_string_equal(pg_backend_type_name(pg_layout_of(16), 4), "client backend");
	assert_string_equal(pg_backend_type_name(pg_layout_of(17), 1), "client backend");
	assert_string_equal(pg_backend_type_name(pg_layout_of(17), 99), "unknown");
	/* 16 added applytransaction */
	assert_string_equal(pg_lock_type_name(15, 11), "unknown");
	assert_string_equal(pg_lock_type_name(16, 11), "applytransaction");
	assert_null(pg_layout_of(12));
	assert_null(pg_wait_table(18));
	assert_string_equal(pg_wait_event(12, 0x06000000u), "unknown");
}

static void test_states_and_conflicts(void **state)
{
	(void)state;
	assert_string_equal(pg_state_name(2), "active");
	assert_string_equal(pg_state_name(3), "idle in transaction");
	assert_string_equal(pg_state_name(0), "");
	assert_string_equal(pg_state_name(42), "unknown");
	assert_true(pg_state_in_flight(2) && pg_state_in_flight(3) && pg_state_in_flight(5));
	assert_false(pg_state_in_flight(1) || pg_state_in_flight(0) || pg_state_in_flight(6));
	assert_true(pg_state_active(2) && pg_state_active(4) && !pg_state_active(3));
	/* a row update waits for the holder's transaction in ShareLock: its ExclusiveLock conflicts */
	assert_true(pg_lock_conflicts(5) & (1u << 7));
	assert_false(pg_lock_conflicts(5) & (1u << 5)); /* ShareLock does not conflict with itself */
	assert_true(pg_lock_conflicts(1) == (1u << 8)); /* AccessShare: only AccessExclusive */
	for (int a = 1; a <= 8; a++)                    /* the table is symmetric */
		for (int b = 1; b <= 8; b++)
			assert_int_equal(!!(pg_lock_conflicts(a) & (1u << b)),
					 !!(pg_lock_conflicts(b) & (1u << a)));
	assert_int_equal(pg_lock_conflicts(9), 0);
	assert_string_equal(pg_lock_mode_name(9), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_against_headers),
		cmocka_unit_test(test_version_string),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_states_and_conflicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
