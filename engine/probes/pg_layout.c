/* pg_layout.c — PostgreSQL's shared-memory layouts per major version, and its words for what
 * pg_activity reads there (see pg_layout.h).
 *
 * Owns: the tables. Each row was derived from that version's own headers, compiled (offsetof,
 * sizeof on x86-64 with the platform's pg_config.h): 13 from PostgreSQL 13.1's source tree,
 * 14 from 14.13's, 15 from 15.15's and Debian 12's postgresql-server-dev-15 (15.x), 16 from
 * 16.0's, 17 from 17.4's. HASHHDR is dynahash.c's own struct, compiled from that file's
 * definition the same way (13 still has `ffactor`, gone in 14). tests/unit/test_pg_activity.c
 * checks every row whose headers are on the machine against them (tests/unit/pglayout.mk).
 * The backend types are BackendType's members in each version's order (miscadmin.h) under
 * GetBackendTypeDesc's names; states and lock modes are the same in every version.
 * Must not: read anything, allocate, or hold state.
 */
#include "probes/pg_layout.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "probes/pg_wait_names.h"
#include "common/util.h"

static const char *const types_13[] = {
	"",
	"autovacuum launcher",
	"autovacuum worker",
	"client backend",
	"background worker",
	"background writer",
	"checkpointer",
	"startup",
	"walreceiver",
	"walsender",
	"walwriter",
	"archiver",
	"stats collector",
	"logger",
};
static const char *const types_15[] = {
	/* 15: the stats collector is gone */
	"",
	"autovacuum launcher",
	"autovacuum worker",
	"client backend",
	"background worker",
	"background writer",
	"checkpointer",
	"startup",
	"walreceiver",
	"walsender",
	"walwriter",
	"archiver",
	"logger",
};
static const char *const types_16[] = {
	/* 16: sorted, and the standalone backend */
	"",
	"archiver",
	"autovacuum launcher",
	"autovacuum worker",
	"client backend",
	"background worker",
	"background writer",
	"checkpointer",
	"logger",
	"standalone backend",
	"startup",
	"walreceiver",
	"walsender",
	"walwriter",
};
static const char *const types_17[] = {
	/* 17: backends first, then the auxiliary processes */
	"",
	"client backend",
	"autovacuum launcher",
	"autovacuum worker",
	"background worker",
	"walsender",
	"slotsync worker",
	"standalone backend",
	"archiver",
	"background writer",
	"checkpointer",
	"startup",
	"walreceiver",
	"walsummarizer",
	"walwriter",
	"logger",
};

/* PgBackendStatus is the same from 14 to 17; 13 has no st_query_id at its end. */
#define STATUS(size)                                                                             \
	.st_size = size, .st_changecount = 0, .st_procpid = 4, .st_backend_type = 8,             \
	.st_proc_start = 16, .st_xact_start = 24, .st_activity_start = 32, .st_state_start = 40, \
	.st_databaseid = 48, .st_state = 232, .st_activity_raw = 248
#define HASHHDR(size, ssize, sshift)                                                     \
	.hash_size = size, .hash_dsize = 768, .hash_nsegs = 776, .hash_max_bucket = 784, \
	.hash_keysize = 800, .hash_entrysize = 808, .hash_ssize = ssize, .hash_sshift = sshift

static const struct pg_layout layouts[] = {
	{ .major = 13,
	  STATUS(424),
	  .proc_size = 856,
	  .proc_pid = 52,
	  .proc_wait_event_info = 684,
	  .proc_wait_lock = 96,
	  .proc_wait_lock_mode = 112,
	  .hdr_all_procs = 0,
	  .hdr_all_proc_count = 16,
	  HASHHDR(856, 840, 848),
	  .backend_types = types_13,
	  .n_backend_types = ARRAY_LEN(types_13) },
	{ .major = 14,
	  STATUS(432),
	  .proc_size = 880,
	  .proc_pid = 64,
	  .proc_wait_event_info = 712,
	  .proc_wait_lock = 112,
	  .proc_wait_lock_mode = 128,
	  .hdr_all_procs = 0,
	  .hdr_all_proc_count = 32,
	  HASHHDR(848, 832, 840),
	  .backend_types = types_13,
	  .n_backend_types = ARRAY_LEN(types_13) },
	{ .major = 15,
	  STATUS(432),
	  .proc_size = 880,
	  .proc_pid = 64,
	  .proc_wait_event_info = 712,
	  .proc_wait_lock = 112,
	  .proc_wait_lock_mode = 128,
	  .hdr_all_procs = 0,
	  .hdr_all_proc_count = 32,
	  HASHHDR(848, 832, 840),
	  .backend_types = types_15,
	  .n_backend_types = ARRAY_LEN(types_15) },
	{ .major = 16,
	  STATUS(432),
	  .proc_size = 880,
	  .proc_pid = 64,
	  .proc_wait_event_info = 712,
	  .proc_wait_lock = 112,
	  .proc_wait_lock_mode = 128,
	  .hdr_all_procs = 0,
	  .hdr_all_proc_count = 32,
	  HASHHDR(848, 832, 840),
	  .backend_types = types_16,
	  .n_backend_types = ARRAY_LEN(types_16) },
	{ .major = 17,
	  STATUS(432),
	  .proc_size = 888,
	  .proc_pid = 60,
	  .proc_wait_event_info = 712,
	  .proc_wait_lock = 112,
	  .proc_wait_lock_mode = 128,
	  .hdr_all_procs = 0,
	  .hdr_all_proc_count = 32,
	  HASHHDR(848, 832, 840),
	  .backend_types = types_17,
	  .n_backend_types = ARRAY_LEN(types_17) },
};

const struct pg_layout *pg_layout_of(int major)
{
	for (size_t i = 0; i < ARRAY_LEN(layouts); i++)
		if (layouts[i].major == major)
			return &layouts[i];
	return NULL;
}

/* "PostgreSQL " at the start of a string (after a NUL or at buf), a version after it, and the
 * rest of PG_VERSION_STR (" on ", ", compiled by ") before the string's end. */
bool pg_version_find(const char *buf, size_t len, int *major, char *ver, size_t ver_len)
{
	static const char lead[] = "PostgreSQL ";
	const size_t ll = sizeof(lead) - 1;
	for (const char *p = buf; p + ll < buf + len;) {
		const char *hit = memmem(p, (size_t)(buf + len - p), lead, ll);
		if (!hit)
			return false;
		p = hit + 1;
		if (hit != buf && hit[-1] != '\0')
			continue;
		const char *end = memchr(hit, '\0', (size_t)(buf + len - hit));
		if (!end || end - hit > 512)
			continue;
		const char *v = hit + ll;
		int m = 0;
		const char *d = v;
		while (d < end && isdigit((unsigned char)*d) && m < 1000)
			m = m * 10 + (*d++ - '0');
		if (d == v || m < 10 || m >= 1000)
			continue;
		if (!(*d == '.' || !strncmp(d, "devel", 5) || !strncmp(d, "beta", 4) ||
		      !strncmp(d, "rc", 2)))
			continue;
		size_t n = strcspn(v, " ");
		if (v + n > end)
			n = (size_t)(end - v);
		if (!memmem(v, (size_t)(end - v), " on ", 4) ||
		    !memmem(v, (size_t)(end - v), ", compiled by ", 14))
			continue;
		*major = m;
		snprintf(ver, ver_len, "%.*s", (int)(n < 32 ? n : 32), v);
		return true;
	}
	return false;
}

const char *pg_state_name(int state)
{
	static const char *const names[] = { "",
					     "idle",
					     "active",
					     "idle in transaction",
					     "fastpath function call",
					     "idle in transaction (aborted)",
					     "disabled" };
	return state >= 0 && (size_t)state < ARRAY_LEN(names) ? names[state] : "unknown";
}

bool pg_state_in_flight(int state)
{
	return state == 2 || state == 3 || state == 4 || state == 5;
}

bool pg_state_active(int state)
{
	return state == 2 || state == 4;
}

const char *pg_backend_type_name(const struct pg_layout *l, int type)
{
	if (type <= 0 || (size_t)type >= l->n_backend_types)
		return "unknown";
	return l->backend_types[type];
}

const char *pg_wait_type(uint32_t info)
{
	if (!info)
		return NULL;
	switch (info & 0xFF000000u) {
	case 0x01000000u: return "LWLock";
	case PG_WAIT_CLASS_LOCK: return "Lock";
	case 0x04000000u: return "BufferPin";
	case 0x05000000u: return "Activity";
	case 0x06000000u: return "Client";
	case 0x07000000u: return "Extension";
	case 0x08000000u: return "IPC";
	case 0x09000000u: return "Timeout";
	case 0x0A000000u: return "IO";
	case 0x0B000000u: return "InjectionPoint";
	default: return "unknown";
	}
}

const char *pg_wait_event(int major, uint32_t info)
{
	const struct pg_wait_table *t = pg_wait_table(major);
	uint32_t cls = info & 0xFF000000u, id = info & 0xFFFFu;
	if (!info)
		return NULL;
	if (!t)
		return "unknown";
	switch (cls) {
	case 0x01000000u:
		if (id >= t->first_user_tranche)
			return "extension";
		return id < t->n_tranches && t->tranches[id][0] ? t->tranches[id] : "unknown";
	case PG_WAIT_CLASS_LOCK: return id < t->n_locktags ? t->locktags[id] : "unknown";
	case 0x04000000u: return "BufferPin";
	case 0x07000000u: return "Extension";
	case 0x0B000000u: return "InjectionPoint";
	default: break;
	}
	size_t lo = 0, hi = t->n_events;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->events[mid].info < info)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n_events && t->events[lo].info == info ? t->events[lo].name : "unknown";
}

const char *pg_lock_mode_name(int mode)
{
	static const char *const modes[] = { "NoLock",
					     "AccessShareLock",
					     "RowShareLock",
					     "RowExclusiveLock",
					     "ShareUpdateExclusiveLock",
					     "ShareLock",
					     "ShareRowExclusiveLock",
					     "ExclusiveLock",
					     "AccessExclusiveLock" };
	return mode >= 0 && (size_t)mode < ARRAY_LEN(modes) ? modes[mode] : "unknown";
}

uint32_t pg_lock_conflicts(int mode)
{
#define B(m) (1u << (m))
	static const uint32_t conflicts[] = {
		0,
		B(8),                             /* AccessShare: AccessExclusive */
		B(7) | B(8),                      /* RowShare: Exclusive and up */
		B(5) | B(6) | B(7) | B(8),        /* RowExclusive: Share and up */
		B(4) | B(5) | B(6) | B(7) | B(8), /* ShareUpdateExclusive: itself and up */
		B(3) | B(4) | B(6) | B(7) | B(8), /* Share: all but itself and the weak ones */
		B(3) | B(4) | B(5) | B(6) | B(7) | B(8),               /* ShareRowExclusive */
		B(2) | B(3) | B(4) | B(5) | B(6) | B(7) | B(8),        /* Exclusive */
		B(1) | B(2) | B(3) | B(4) | B(5) | B(6) | B(7) | B(8), /* AccessExclusive */
	};
#undef B
	return mode >= 0 && (size_t)mode < ARRAY_LEN(conflicts) ? conflicts[mode] : 0;
}

const char *pg_lock_type_name(int major, int type)
{
	const struct pg_wait_table *t = pg_wait_table(major);
	return t && type >= 0 && (size_t)type < t->n_locktags ? t->locktags[type] : "unknown";
}
