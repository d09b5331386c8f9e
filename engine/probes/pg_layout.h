/* pg_layout.h — what pg_activity reads of a PostgreSQL server's shared memory, per major
 * version (13 to 17, x86-64): where the fields are in PgBackendStatus, PGPROC, PROC_HDR and
 * dynahash's HASHHDR, the layouts every one of those versions shares (PGShmemHeader,
 * ShmemIndexEnt, LOCK, PROCLOCK), and PostgreSQL's words for what it finds there (backend
 * types, states, wait events, lock modes, the version string).
 *
 * Owns: the tables (derived from each version's headers: sources and method in pg_layout.c;
 * tests/unit/test_pg_activity.c checks the row of every version whose headers are on the
 * machine, postgresql-server-dev-15 at least, against offsetof), and pure decoding functions.
 * Must not: read anything (pg_activity.c does, through tfile), allocate, or hold state.
 */
#ifndef DIAG_PG_LAYOUT_H
#define DIAG_PG_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* PGShmemHeader (storage/pg_shmem.h), the same in 13-17 */
#define PG_SHMEM_MAGIC 679834894
#define PG_SHMEM_HDR_MAGIC 0
#define PG_SHMEM_HDR_CREATOR 4
#define PG_SHMEM_HDR_TOTALSIZE 8
#define PG_SHMEM_HDR_INDEX 32
#define PG_SHMEM_HDR_SIZE 56
/* ShmemIndexEnt (storage/shmem.h) after its HASHELEMENT (utils/hsearch.h), 13-17 */
#define PG_HASH_ELEMENT_SIZE 16 /* link, hashvalue; MAXALIGNed */
#define PG_SHMEM_INDEX_KEYSIZE 48
#define PG_SHMEM_INDEX_LOCATION 48
#define PG_SHMEM_INDEX_SIZE 56
#define PG_SHMEM_INDEX_ENT_SIZE 72
/* LOCK and PROCLOCK (storage/lock.h), 13-17: a SHM_QUEUE until 15, a dlist from 16, both a
 * {prev, next} pair pointing at the neighbours' link fields */
#define PG_LOCK_TAG 0
#define PG_LOCKTAG_SIZE 16 /* field1..3 uint32, field4 uint16, type uint8, method uint8 */
#define PG_LOCK_PROCLOCKS 24
#define PG_PROCLOCK_MYPROC 8
#define PG_PROCLOCK_GROUPLEADER 16
#define PG_PROCLOCK_HOLDMASK 24
#define PG_PROCLOCK_LOCKLINK 32
#define PG_PROCLOCK_SIZE 64

struct pg_layout {
	int major;
	/* PgBackendStatus (utils/backend_status.h; 13: pgstat.h) */
	uint32_t st_size, st_changecount, st_procpid, st_backend_type, st_proc_start, st_xact_start,
		st_activity_start, st_state_start, st_databaseid, st_state, st_activity_raw;
	/* PGPROC (storage/proc.h) */
	uint32_t proc_size, proc_pid, proc_wait_event_info, proc_wait_lock, proc_wait_lock_mode;
	/* PROC_HDR (storage/proc.h) */
	uint32_t hdr_all_procs, hdr_all_proc_count;
	/* HASHHDR (utils/hash/dynahash.c: no header has it); the directory follows it */
	uint32_t hash_size, hash_dsize, hash_nsegs, hash_max_bucket, hash_keysize, hash_entrysize,
		hash_ssize, hash_sshift;
	/* BackendType (miscadmin.h) as pg_stat_activity.backend_type names it */
	const char *const *backend_types;
	size_t n_backend_types;
};

/* The layout of a major version; NULL when it is not known. */
const struct pg_layout *pg_layout_of(int major);
/* The versions known, lowest and highest. */
#define PG_LAYOUT_MIN_MAJOR 13
#define PG_LAYOUT_MAX_MAJOR 17

/* The server's version from the bytes of its binary (PG_VERSION_STR, "PostgreSQL 15.20 (Debian
 * 15.20-0+deb12u1) on x86_64-pc-linux-gnu, compiled by ..."): true with *major and the version
 * ("15.20", "17beta1") in ver; false when buf holds no such string. buf need not be terminated. */
bool pg_version_find(const char *buf, size_t len, int *major, char *ver, size_t ver_len);

/* BackendState (st_state) as pg_stat_activity.state names it; "" for STATE_UNDEFINED. */
const char *pg_state_name(int state);
/* A state in which the backend has a statement or a transaction open (pg_activity's in-flight):
 * active, fastpath function call, idle in transaction (aborted). */
bool pg_state_in_flight(int state);
/* A state in which it runs a statement: active, fastpath function call. */
bool pg_state_active(int state);
const char *pg_backend_type_name(const struct pg_layout *l, int type);

/* wait_event_info as pg_stat_activity shows it: its type (NULL for 0: not waiting) and name
 * ("transactionid", "ClientRead", "WALWrite"; "extension" or "unknown" where the version's
 * tables have none). */
const char *pg_wait_type(uint32_t info);
const char *pg_wait_event(int major, uint32_t info);
#define PG_WAIT_CLASS_LOCK 0x03000000u

/* The lock mode's name (pg_locks.mode), and the modes it conflicts with (LOCKBIT_ON(m) bits),
 * both PostgreSQL's default lock method's (lock.c's LockConflicts; advisory locks share it). */
const char *pg_lock_mode_name(int mode);
uint32_t pg_lock_conflicts(int mode);
/* LockTagType as pg_locks.locktype names it ("unknown" past the version's table). */
const char *pg_lock_type_name(int major, int type);

#endif
