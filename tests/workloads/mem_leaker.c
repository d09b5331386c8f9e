/* mem_leaker.c — a malloc-heavy process for diagnose memory-growth (tests/e2e/t_memory.sh).
 *
 * Usage: mem_leaker MODE [LEAK_KIB_PER_S [AFTER_S]]
 *   leak   heavy churn (handle_request: 8,000 malloc + free of 16..2048 bytes a second over a
 *          bounded working set of 2,048 blocks) and, beside it, remember_request leaking 1 KiB
 *          blocks at LEAK_KIB_PER_S (default 1024), each written in full and never freed (its
 *          pointer lost: kept only in a volatile last-block pointer, overwritten by the next one)
 *   grow   the same churn, and remember_request keeping the same 1 KiB copies at LEAK_KIB_PER_S
 *          reachable: each stored in a table of pointers that remember_request grows by realloc,
 *          doubling it when full (a cache with no bound: growth, not a leak; the table is 8 bytes
 *          more per copy, its old blocks freed by realloc as it moves)
 *   realloc the same churn, and append_log growing one buffer with realloc by 1 KiB a call at
 *          LEAK_KIB_PER_S, never shrunk (the blocks are young: each realloc moves it)
 *   churn  the churn alone: bounded working set, flat RSS (the healthy control)
 * AFTER_S (default 0): the leak (or growth) starts only after that many seconds of churn alone, a
 * fault that begins while a watcher looks (tests/e2e/t_watch.sh).
 * Paced against the monotonic clock every millisecond (a late wake-up catches up on at most 50 ms
 * of backlog: slowed down, it does less, as a service would; at most 1 GiB leaked); runs until
 * killed. Owns nothing else: it only allocates.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORKING_SET 2048
/* 8,000 a second: traced, its mallocs and frees trap at ~13 us a pair on the build VM (~5% of its
 * two CPUs), within memory-growth's max_cpu_pct with room; 20,000 (as it was) cost ~15%, at the
 * budget's edge, where the governor stopped the allocation probe a window in. */
#define CHURN_PER_S 8000.0
#define LEAK_BLOCK 1024
#define LEAK_MAX ((size_t)1 << 30)

static void *slots[WORKING_SET];
static uint32_t rng = 12345;
static void *volatile leaked_last;
static int keep_requests;  /* grow: remember_request's copies are kept in kept[] */
static char **kept;
static size_t kept_len, kept_cap;
static char *log_buf;
static size_t log_len;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* One request: replaces a random block of the working set (allocated, written, freed later). */
static void handle_request(void)
{
	uint32_t i = next_rand() % WORKING_SET;
	size_t size = 16 + next_rand() % 2033;
	free(slots[i]);
	slots[i] = malloc(size);
	if (slots[i])
		memset(slots[i], (int)i, size);
}

/* The leak: a copy of the request kept "for later" and never freed. In grow, the copy stays
 * reachable in kept[], grown here. */
static void remember_request(void)
{
	char *copy = malloc(LEAK_BLOCK);
	if (copy)
		memset(copy, 'r', LEAK_BLOCK);
	leaked_last = copy;
	if (!keep_requests || !copy)
		return;
	if (kept_len == kept_cap) {
		size_t cap = kept_cap ? 2 * kept_cap : 64;
		char **grown = realloc(kept, cap * sizeof(*kept));
		if (!grown) {
			free(copy);
			return;
		}
		kept = grown;
		kept_cap = cap;
	}
	kept[kept_len++] = copy;
}

/* The other leak: a log kept in one buffer that only grows. */
static void append_log(void)
{
	char *grown = realloc(log_buf, log_len + LEAK_BLOCK);
	if (!grown)
		return;
	memset(grown + log_len, 'l', LEAK_BLOCK);
	log_buf = grown;
	log_len += LEAK_BLOCK;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "leak") && strcmp(argv[1], "churn") && strcmp(argv[1], "realloc") &&
			 strcmp(argv[1], "grow"))) {
		fprintf(stderr, "usage: mem_leaker leak|grow|realloc|churn [LEAK_KIB_PER_S [AFTER_S]]\n");
		return 2;
	}
	int leak = strcmp(argv[1], "churn") != 0, log_grows = strcmp(argv[1], "realloc") == 0;
	keep_requests = strcmp(argv[1], "grow") == 0;
	double leak_per_s = (argc > 2 ? strtod(argv[2], NULL) : 1024.0) * 1024.0 / LEAK_BLOCK;
	double leak_after_s = argc > 3 ? strtod(argv[3], NULL) : 0;
	for (int i = 0; i < WORKING_SET; i++)
		handle_request();
	double start = now_s();
	size_t churned = 0, leaked = 0;
	for (;;) {
		double t = now_s() - start;
		size_t want = (size_t)(t * CHURN_PER_S);
		/* A service that falls behind (slowed by a tracer's traps) does not make up for the
		 * requests it missed once it is fast again: at most 50 ms of backlog is kept, so that the
		 * rate after a traced window is the rate during it, not a burst repaying the lag. */
		if (want > churned + (size_t)(CHURN_PER_S / 20))
			churned = want - (size_t)(CHURN_PER_S / 20);
		for (; churned < want; churned++)
			handle_request();
		if (leak && t >= leak_after_s) {
			size_t lwant = (size_t)((t - leak_after_s) * leak_per_s);
			if (lwant > leaked + (size_t)(leak_per_s / 20) + 1)
				leaked = lwant - (size_t)(leak_per_s / 20) - 1;
			for (; leaked < lwant && leaked * LEAK_BLOCK < LEAK_MAX; leaked++)
				log_grows ? append_log() : remember_request();
		}
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}
