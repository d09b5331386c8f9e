/* sha256.c — SHA-256 by nettle (Debian's libnettle8: what GnuTLS, hence apt and wget, hash with;
 * its x86-64 code uses the SHA extensions where the processor has them). See sha256.h.
 * Owns: turning nettle's digest into the lowercase hex every caller compares and stores.
 * Must not: implement the hash itself (the hand-written one is gone: one vetted implementation
 * for the approval chain), allocate, or keep state between calls.
 */
#include "common/sha256.h"

#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"

void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN])
{
	struct sha256_ctx ctx;
	uint8_t digest[SHA256_DIGEST_SIZE];
	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, sizeof(digest), digest);
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < sizeof(digest); i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 0xf];
	}
	out[2 * sizeof(digest)] = '\0';
}

int sha256_file_hex(const char *path, char out[SHA256_HEX_LEN])
{
	size_t len;
	char *buf = read_file(path, &len);
	if (!buf)
		return -1;
	sha256_hex(buf, len, out);
	free(buf);
	return 0;
}
