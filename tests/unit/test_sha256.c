/* test_sha256.c — the digest every approval rests on (engine/common/sha256.c): the FIPS 180-2
 * test vectors (appendix B: "abc", the 448-bit message, one million 'a'), the empty message, the
 * lengths around a block's padding boundary (55, 56, 64 bytes: one block or two), and a file's
 * hash equal to its bytes' hash. No root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sha256.h"

static void assert_hash(const void *data, size_t len, const char *want)
{
	char got[SHA256_HEX_LEN];
	memset(got, 'x', sizeof(got));
	sha256_hex(data, len, got);
	assert_string_equal(got, want);
}

static void test_fips_vectors(void **state)
{
	(void)state;
	assert_hash("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	assert_hash(two_blocks, strlen(two_blocks),
		    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	size_t million = 1000000;
	char *a = malloc(million);
	assert_non_null(a);
	memset(a, 'a', million);
	assert_hash(a, million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
	assert_hash("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* The padding boundary: 55 bytes fit one block with the length, 56 need two. */
static void test_block_boundaries(void **state)
{
	(void)state;
	char buf[64];
	memset(buf, 'a', sizeof(buf));
	assert_hash(buf, 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	assert_hash(buf, 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	assert_hash(buf, 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

static void test_file(void **state)
{
	(void)state;
	char path[] = "/tmp/test_sha256.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	char got[SHA256_HEX_LEN];
	assert_int_equal(sha256_file_hex(path, got), 0);
	assert_string_equal(got, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	unlink(path);
	assert_int_equal(sha256_file_hex(path, got), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fips_vectors),
		cmocka_unit_test(test_block_boundaries),
		cmocka_unit_test(test_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
