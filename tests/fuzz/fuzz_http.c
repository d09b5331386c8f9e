/* fuzz_http.c — libFuzzer harness for the request-head parser of `diagnose watch`'s metrics
 * endpoint (httpd_parse_head, engine/watch/httpd.c: what httpd_service runs on the bytes every
 * local client sends).
 *
 * Each input is what a client sends. Contract: no crash, undefined behaviour or read past the
 * input's length (an exact-size heap copy); the answer is the one a naive reading of the format
 * gives (below, written apart from httpd.c's): the head ends at its first empty line (CRLF CRLF
 * or LF LF) within HTTPD_HEAD_MAX bytes, PARTIAL before it while fewer than HTTPD_HEAD_MAX bytes
 * came, TOO_LARGE after that; BAD_METHOD exactly when the head does not start "GET "; METRICS
 * exactly when the path is "/metrics" (ended by a blank, '?', CR, LF or NUL); and the head read
 * in pieces reads as it does whole: every prefix shorter than the head PARTIAL, every longer one
 * the same answer (the cut points tried: just before and at the head's end, and one the input's
 * first byte picks).
 *
 * Build and run: make fuzz FUZZ_TARGET=http (see tests/fuzz/README.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "watch/httpd.h"

#define FUZZ_NAME "fuzz_http"
#include "fuzz.h"

/* The reference: byte by byte, as the format says. */
static enum httpd_head naive(const unsigned char *b, size_t len, size_t *head_len)
{
	size_t n = len < HTTPD_HEAD_MAX ? len : HTTPD_HEAD_MAX, end = 0;
	for (size_t e = 2; e <= n && !end; e++)
		if ((b[e - 2] == '\n' && b[e - 1] == '\n') ||
		    (e >= 4 && b[e - 4] == '\r' && b[e - 3] == '\n' && b[e - 2] == '\r' && b[e - 1] == '\n'))
			end = e;
	*head_len = end;
	if (!end)
		return len >= HTTPD_HEAD_MAX ? HTTPD_HEAD_TOO_LARGE : HTTPD_HEAD_PARTIAL;
	if (!(end >= 4 && b[0] == 'G' && b[1] == 'E' && b[2] == 'T' && b[3] == ' '))
		return HTTPD_HEAD_BAD_METHOD;
	size_t i = 4;
	while (i < end && b[i] != ' ' && b[i] != '?' && b[i] != '\r' && b[i] != '\n' && b[i] != '\0')
		i++;
	return i - 4 == 8 && !memcmp(b + 4, "/metrics", 8) ? HTTPD_HEAD_METRICS : HTTPD_HEAD_NOT_FOUND;
}

/* The parser on an exact-size copy of data's first len bytes. */
static enum httpd_head parse(const uint8_t *data, size_t len, size_t *head_len)
{
	char *copy = malloc(len ? len : 1);
	CHECK(copy);
	if (len)
		memcpy(copy, data, len);
	enum httpd_head r = httpd_parse_head(copy, len, head_len);
	free(copy);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t head_len, want_len;
	enum httpd_head got = parse(data, size, &head_len);
	enum httpd_head want = naive(data, size, &want_len);
	CHECK(got == want);
	CHECK(head_len == want_len);
	CHECK(head_len <= size && head_len <= HTTPD_HEAD_MAX);
	CHECK((head_len == 0) == (got == HTTPD_HEAD_PARTIAL || got == HTTPD_HEAD_TOO_LARGE));
	size_t cuts[3] = { head_len ? head_len - 1 : 0, head_len, size ? (size_t)data[0] * size / 256 : 0 };
	for (size_t i = 0; i < 3; i++) {
		size_t k = cuts[i] <= size ? cuts[i] : size, hk;
		enum httpd_head gk = parse(data, k, &hk);
		if (head_len && k >= head_len)
			CHECK(gk == got && hk == head_len);
		else if (k < HTTPD_HEAD_MAX)
			CHECK(gk == HTTPD_HEAD_PARTIAL && hk == 0);
		else
			CHECK(gk == HTTPD_HEAD_TOO_LARGE);
	}
	return 0;
}
