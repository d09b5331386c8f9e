/* fuzz_lock.c — libFuzzer harness for the approvals lock parser (approval_lock_parse in
 * engine/trust/approval.c; parse only: nothing is read from disk or hashed).
 *
 * Each input is a lock file's bytes (an exact-size heap copy: the parser is given a length).
 * Contract: no crash, leak or undefined behaviour; on failure *out is NULL, err.code is
 * DIAG_EXIT_USAGE and the message is one line starting with the lock's name; on success every
 * entry has its recipe name, engine, approved_by, approved_at and a .yaml file, every item a
 * name and 64 hex digits, and the canonical text (approval_lock_format) parses back to the same
 * canonical text.
 *
 * Build and run: make fuzz FUZZ_TARGET=lock (see tests/fuzz/README.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trust/approval.h"

#define NAME "fuzz.lock"

#define FUZZ_NAME "fuzz_lock"
#include "fuzz.h"

static void check_lock(const struct approval_lock *lock)
{
	CHECK(lock->n == 0 || lock->entries);
	for (size_t i = 0; i < lock->n; i++) {
		const struct approval_entry *e = &lock->entries[i];
		CHECK(e->recipe && e->recipe[0]);
		CHECK(e->engine && e->approved_by && e->approved_at);
		CHECK(e->line > 0);
		CHECK(e->n_items >= 1 && e->items);
		if (i)
			CHECK(strcmp(lock->entries[i - 1].recipe, e->recipe) < 0);
		for (size_t k = 0; k < e->n_items; k++) {
			CHECK(e->items[k].name && e->items[k].name[0]);
			CHECK(strlen(e->items[k].sha256) == 64);
		}
		CHECK(approval_lock_find(lock, e->recipe) == e);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	if (size)
		memcpy(buf, data, size);

	struct approval_lock *lock = (struct approval_lock *)1;
	struct diag_err err = { 0 };
	int rc = approval_lock_parse(NAME, buf, size, &lock, &err);
	if (rc == 0) {
		CHECK(lock && lock != (struct approval_lock *)1);
		check_lock(lock);
		char *text = approval_lock_format(lock);
		struct approval_lock *again = NULL;
		struct diag_err err2 = { 0 };
		if (approval_lock_parse(NAME, text, strlen(text), &again, &err2))
			fprintf(stderr, "fuzz_lock: canonical text refused: %s\n", err2.msg);
		CHECK(again);
		char *text2 = approval_lock_format(again);
		CHECK(strcmp(text, text2) == 0);
		free(text);
		free(text2);
		approval_lock_free(again);
		approval_lock_free(lock);
	} else {
		CHECK(rc == -1);
		CHECK(lock == NULL);
		CHECK(err.code == DIAG_EXIT_USAGE);
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		CHECK(!strncmp(err.msg, NAME ":", strlen(NAME) + 1));
		/* One line, safe on a terminal: diag_fail turns every control byte it quotes into '?'. */
		for (const unsigned char *c = (const unsigned char *)err.msg; *c; c++)
			CHECK(*c >= 0x20 && *c != 0x7f);
	}
	free(buf);
	return 0;
}
