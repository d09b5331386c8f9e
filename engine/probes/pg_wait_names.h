/* pg_wait_names.h — PostgreSQL's wait event names per major version (pg_wait_names.c, generated
 * by scripts/pg-wait-names.py from each version's sources).
 *
 * Owns: the tables' shape and their lookup by major version.
 * Must not: decode a wait_event_info (pg_layout.c does), or hold state.
 */
#ifndef DIAG_PG_WAIT_NAMES_H
#define DIAG_PG_WAIT_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

/* One wait event of the classes whose names are listed (Activity, Client, IPC, Timeout, IO). */
struct pg_wait_name {
	uint32_t info; /* wait_event_info: class << 24 | event */
	const char *name;
};

struct pg_wait_table {
	int major;
	const struct pg_wait_name *events; /* by info, ascending */
	size_t n_events;
	const char *const *tranches; /* LWLock tranche names by id ("": none with that id) */
	size_t n_tranches;
	unsigned first_user_tranche; /* LWTRANCHE_FIRST_USER_DEFINED: extensions' tranches from here */
	const char *const *locktags; /* LockTagType, as pg_locks.locktype names them */
	size_t n_locktags;
};

/* The tables of a major version; NULL when there are none. */
const struct pg_wait_table *pg_wait_table(int major);

#endif
