/* hash.c — SipHash-2-4 with the process's random key (hash.h).
 *
 * Owns: the key (its one piece of global state: drawn once, never changed after) and the hash.
 * Must not: print, fail (a key that cannot be drawn from the kernel is made from what the
 * process can see: clocks, ids, addresses that ASLR placed), or block for long (getrandom is
 * asked not to wait for the entropy pool; /dev/urandom never does).
 *
 * Written from the paper's description (section 2): the state v0..v3 from the key and the four
 * constants; each 8-byte little-endian word m compressed by v3 ^= m, two SipRounds, v0 ^= m; the
 * last word the remaining bytes with the length's low byte on top; then v2 ^= 0xff, four
 * SipRounds, and v0 ^ v1 ^ v2 ^ v3. tests/unit/test_hash.c checks the reference vectors.
 */
#include "common/hash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint8_t process_key[16];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#define SIPROUND(s)                          \
	do {                                 \
		(s)->v0 += (s)->v1;          \
		(s)->v1 = rotl((s)->v1, 13); \
		(s)->v1 ^= (s)->v0;          \
		(s)->v0 = rotl((s)->v0, 32); \
		(s)->v2 += (s)->v3;          \
		(s)->v3 = rotl((s)->v3, 16); \
		(s)->v3 ^= (s)->v2;          \
		(s)->v0 += (s)->v3;          \
		(s)->v3 = rotl((s)->v3, 21); \
		(s)->v3 ^= (s)->v0;          \
		(s)->v2 += (s)->v1;          \
		(s)->v1 = rotl((s)->v1, 17); \
		(s)->v1 ^= (s)->v2;          \
		(s)->v2 = rotl((s)->v2, 32); \
	} while (0)

static inline void compress(struct hash_state *s, uint64_t m)
{
	s->v3 ^= m;
	SIPROUND(s);
	SIPROUND(s);
	s->v0 ^= m;
}

/* Fills buf from getrandom(2) (not waiting for the pool), else /dev/urandom: whether it did. */
static bool random_bytes(uint8_t *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t k = getrandom(buf + got, len - got, GRND_NONBLOCK);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	if (got == len)
		return true;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	got = 0;
	while (got < len) {
		ssize_t k = read(fd, buf + got, len - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	return got == len;
}

static void key_init(void)
{
	if (random_bytes(process_key, sizeof(process_key)))
		return;
	/* no randomness from the kernel (a seccomp filter, no /dev): what differs between processes
	 * and that a target cannot read, hashed under a fixed key */
	struct timespec mono, real;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	uint64_t seen[] = { (uint64_t)mono.tv_sec,  (uint64_t)mono.tv_nsec, (uint64_t)real.tv_sec,
			    (uint64_t)real.tv_nsec, (uint64_t)getpid(),     (uintptr_t)&mono,
			    (uintptr_t)&key_init,   (uintptr_t)&errno };
	static const uint8_t fixed[16] = "diagnose-hashkey";
	struct hash_state h;
	hash_init_key(&h, fixed);
	hash_update(&h, seen, sizeof(seen));
	uint64_t k0 = hash_final(&h);
	hash_u64(&h, k0);
	uint64_t k1 = hash_final(&h);
	for (int i = 0; i < 8; i++) {
		process_key[i] = (uint8_t)(k0 >> (8 * i));
		process_key[8 + i] = (uint8_t)(k1 >> (8 * i));
	}
}

void hash_init_key(struct hash_state *s, const uint8_t key[16])
{
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	s->v0 = k0 ^ 0x736f6d6570736575ull;
	s->v1 = k1 ^ 0x646f72616e646f6dull;
	s->v2 = k0 ^ 0x6c7967656e657261ull;
	s->v3 = k1 ^ 0x7465646279746573ull;
	s->tail = 0;
	s->len = 0;
}

void hash_init(struct hash_state *s)
{
	pthread_once(&key_once, key_init);
	hash_init_key(s, process_key);
}

void hash_update(struct hash_state *s, const void *p, size_t n)
{
	const uint8_t *b = p;
	unsigned have = (unsigned)(s->len & 7);
	s->len += n;
	while (have && n) { /* the tail first */
		s->tail |= (uint64_t)*b++ << (8 * have);
		n--;
		if (++have == 8) {
			compress(s, s->tail);
			s->tail = 0;
			have = 0;
		}
	}
	for (; n >= 8; b += 8, n -= 8)
		compress(s, load_le64(b));
	for (unsigned i = 0; i < n; i++)
		s->tail |= (uint64_t)b[i] << (8 * (have + i));
}

void hash_str(struct hash_state *s, const char *str)
{
	hash_update(s, str, strlen(str) + 1);
}

void hash_u64(struct hash_state *s, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	hash_update(s, b, sizeof(b));
}

uint64_t hash_final(const struct hash_state *s)
{
	struct hash_state t = *s;
	compress(&t, t.tail | (t.len & 0xff) << 56);
	t.v2 ^= 0xff;
	SIPROUND(&t);
	SIPROUND(&t);
	SIPROUND(&t);
	SIPROUND(&t);
	return t.v0 ^ t.v1 ^ t.v2 ^ t.v3;
}

uint64_t hash_mem(const void *p, size_t n)
{
	struct hash_state s;
	hash_init(&s);
	hash_update(&s, p, n);
	return hash_final(&s);
}
