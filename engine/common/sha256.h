/* sha256.h — SHA-256 (FIPS 180-4) of a buffer or a file, as lowercase hex (computed by nettle).
 * Owns: only the digest; used for the recipe hash in reports and for every approval.
 * Must not: allocate or keep state between calls.
 */
#ifndef DIAG_SHA256_H
#define DIAG_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 65 /* 64 hex digits + NUL */

void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN]);
/* Returns -1 (errno set) when the file cannot be read. */
int sha256_file_hex(const char *path, char out[SHA256_HEX_LEN]);

#endif
