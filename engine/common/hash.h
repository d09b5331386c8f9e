/* hash.h — the hash of the engine's tables whose keys a target chooses (symbol and file names,
 * comms, JIT names, statement texts, stacks, addresses): SipHash-2-4 (Aumasson and Bernstein,
 * "SipHash: a fast short-input PRF", 2012) keyed with a random key of the process's, so that no
 * one outside the process can compute which keys collide and make a table's lookups walk.
 *
 * Owns: the process's key (16 bytes from getrandom(2), drawn once, at the first hash, by
 * pthread_once: shared by every thread, inherited by forked children), and the hash, one call or
 * streamed over several fields.
 * Must not: be used where a hash must be the same in another process or run (a file's identity,
 * anything written out): it differs in each; or be what an output's order rests on (tables are
 * walked in the order their entries were added, or sorted by something else than the hash).
 *
 *	struct hash_state h;
 *	hash_init(&h);
 *	hash_u64(&h, tgid);
 *	hash_str(&h, comm);
 *	hash_update(&h, ips, n * sizeof(*ips));
 *	uint64_t v = hash_final(&h);
 */
#ifndef DIAG_HASH_H
#define DIAG_HASH_H

#include <stddef.h>
#include <stdint.h>

struct hash_state {
	uint64_t v0, v1, v2, v3;
	uint64_t tail; /* the bytes not compressed yet (fewer than 8), little-endian */
	uint64_t len;  /* bytes hashed so far */
};

/* Starts a hash with the process's key. */
void hash_init(struct hash_state *s);
/* Starts a hash with the given key (tests: the reference vectors). */
void hash_init_key(struct hash_state *s, const uint8_t key[16]);
/* Adds n bytes. */
void hash_update(struct hash_state *s, const void *p, size_t n);
/* Adds a string and its terminating NUL (consecutive strings stay apart: "ab","c" != "a","bc"). */
void hash_str(struct hash_state *s, const char *str);
/* Adds 8 bytes: v, little-endian. */
void hash_u64(struct hash_state *s, uint64_t v);
/* The hash of what was added (s is left as it was: more may be added). */
uint64_t hash_final(const struct hash_state *s);

/* The hash of n bytes with the process's key. */
uint64_t hash_mem(const void *p, size_t n);

#endif
