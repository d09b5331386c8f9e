/* test_hash.c — the keyed hash of the engine's tables (engine/common/hash.c): SipHash-2-4 against
 * the reference vectors of its authors (key 00 01 .. 0f, the messages 00, 00 01, .. of 0 to 63
 * bytes; the 15-byte one is the paper's worked example), the same bytes streamed in pieces and as
 * fields, another key giving other hashes, and the process's key: two processes (this binary run
 * again) hash one string differently, so that no one outside a process can tell which names
 * collide in its tables. No root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/hash.h"

/* SipHash-2-4, key 00..0f, message 00..(i-1): vectors[i] (the reference implementation's
 * vectors.h, as 64-bit little-endian values). */
static const uint64_t vectors[64] = {
	0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull, 0x85676696d7fb7e2dull,
	0xcf2794e0277187b7ull, 0x18765564cd99a68dull, 0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull,
	0x93f5f5799a932462ull, 0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
	0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull, 0xa129ca6149be45e5ull,
	0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull, 0x4bc1b3f0968dd39cull, 0xbb6dc91da77961bdull,
	0xbed65cf21aa2ee98ull, 0xd0f2cbb02e3b67c7ull, 0x93536795e3a33e88ull, 0xa80c038ccd5ccec8ull,
	0xb8ad50c6f649af94ull, 0xbce192de8a85b8eaull, 0x17d835b85bbb15f3ull, 0x2f2e6163076bcfadull,
	0xde4daaaca71dc9a5ull, 0xa6a2506687956571ull, 0xad87a3535c49ef28ull, 0x32d892fad841c342ull,
	0x7127512f72f27cceull, 0xa7f32346f95978e3ull, 0x12e0b01abb051238ull, 0x15e034d40fa197aeull,
	0x314dffbe0815a3b4ull, 0x027990f029623981ull, 0xcadcd4e59ef40c4dull, 0x9abfd8766a33735cull,
	0x0e3ea96b5304a7d0ull, 0xad0c42d6fc585992ull, 0x187306c89bc215a9ull, 0xd4a60abcf3792b95ull,
	0xf935451de4f21df2ull, 0xa9538f0419755787ull, 0xdb9acddff56ca510ull, 0xd06c98cd5c0975ebull,
	0xe612a3cb9ecba951ull, 0xc766e62cfcadaf96ull, 0xee64435a9752fe72ull, 0xa192d576b245165aull,
	0x0a8787bf8ecb74b2ull, 0x81b3e73d20b49b6full, 0x7fa8220ba3b2eceaull, 0x245731c13ca42499ull,
	0xb78dbfaf3a8d83bdull, 0xea1ad565322a1a0bull, 0x60e61c23a3795013ull, 0x6606d7e446282b93ull,
	0x6ca4ecb15c5f91e1ull, 0x9f626da15c9625f3ull, 0xe51b38608ef25f57ull, 0x958a324ceb064572ull,
};

static uint8_t key[16], msg[64];

static int vectors_setup(void **state)
{
	(void)state;
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	return 0;
}

static uint64_t keyed(const uint8_t *k, const void *p, size_t n)
{
	struct hash_state s;
	hash_init_key(&s, k);
	hash_update(&s, p, n);
	return hash_final(&s);
}

static void test_vectors(void **state)
{
	(void)state;
	for (size_t len = 0; len < 64; len++)
		if (keyed(key, msg, len) != vectors[len])
			fail_msg("%zu bytes: %016" PRIx64 ", expected %016" PRIx64, len,
				 keyed(key, msg, len), vectors[len]);
}

/* Streamed in pieces of every size from 1 to 9 (across the 8-byte words), and hash_final in the
 * middle leaving the state as it was. */
static void test_streaming(void **state)
{
	(void)state;
	for (size_t piece = 1; piece <= 9; piece++) {
		struct hash_state s;
		hash_init_key(&s, key);
		size_t done = 0;
		while (done + piece < 64) {
			hash_update(&s, msg + done, piece);
			done += piece;
			assert_int_equal(hash_final(&s), vectors[done]);
		}
	}
	/* fields: hash_u64 is its 8 little-endian bytes, hash_str its bytes and the NUL */
	struct hash_state a, b;
	hash_init_key(&a, key);
	hash_u64(&a, 0x0706050403020100ull);
	hash_update(&a, msg + 8, 4);
	assert_int_equal(hash_final(&a), vectors[12]); /* 00..07, then 08..0b */
	hash_init_key(&a, key);
	hash_str(&a, "sk_buff");
	assert_int_equal(hash_final(&a), keyed(key, "sk_buff", sizeof("sk_buff")));
	hash_init_key(&a, key);
	hash_str(&a, "ab");
	hash_str(&a, "c");
	hash_init_key(&b, key);
	hash_str(&b, "a");
	hash_str(&b, "bc");
	assert_int_not_equal(hash_final(&a), hash_final(&b));
}

/* Another key, other hashes: the same bytes under keys one bit apart differ. */
static void test_other_key(void **state)
{
	(void)state;
	uint8_t other[16];
	memcpy(other, key, sizeof(other));
	other[15] ^= 1;
	for (size_t len = 0; len < 64; len++)
		assert_int_not_equal(keyed(other, msg, len), vectors[len]);
}

static uint64_t process_hash(const char *s)
{
	return hash_mem(s, strlen(s));
}

/* Two processes, two keys: this binary run again (--print-hash) hashes the same string otherwise
 * (equal by chance: 2^-64); within one process the hash is stable. */
static void test_process_key(void **state)
{
	(void)state;
	const char *name = "malloc";
	uint64_t mine = process_hash(name);
	assert_int_equal(process_hash(name), mine);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "/proc/%d/exe --print-hash %s", (int)getpid(), name);
	uint64_t theirs[2] = { 0, 0 };
	for (int i = 0; i < 2; i++) {
		FILE *f = popen(cmd, "r");
		assert_non_null(f);
		assert_int_equal(fscanf(f, "%" SCNx64, &theirs[i]), 1);
		assert_int_equal(pclose(f), 0);
		assert_int_not_equal(theirs[i], mine);
	}
	assert_int_not_equal(theirs[0], theirs[1]);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--print-hash")) {
		printf("%016" PRIx64 "\n", process_hash(argv[2]));
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_streaming),
		cmocka_unit_test(test_other_key),
		cmocka_unit_test(test_process_key),
	};
	return cmocka_run_group_tests(tests, vectors_setup, NULL);
}
