/* cpu_burner.c — demo and test workload: a toy request loop whose CPU goes to one known
 * function, compute_checksum(), reached through main → serve_requests → handle_request.
 * Runs until killed, or for argv[1] seconds (0: until killed). argv[2]: how many rounds
 * compute_checksum makes over each request (default 64, where it holds nearly all the CPU; 1 makes
 * it about as cheap as parse_headers: "the fix" of the differential flame graph test). argv[3]:
 * seconds to sleep first, idle, before serving (a fault that starts while `diagnose watch` looks:
 * tests/e2e/t_watch.sh). Built with frame pointers and without inlining
 * (see the Makefile) so its stacks are what a well-built service shows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;
static int rounds = 64;

__attribute__((noinline)) static uint64_t compute_checksum(const uint8_t *buf, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (int round = 0; round < rounds; round++)
		for (size_t i = 0; i < len; i++)
			h = (h ^ buf[i]) * 1099511628211ull;
	return h;
}

__attribute__((noinline)) static void parse_headers(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed >> (i % 56)) ^ (uint8_t)i;
}

__attribute__((noinline)) static void handle_request(uint64_t id)
{
	uint8_t payload[4096];
	parse_headers(payload, sizeof(payload), id * 2654435761u);
	sink += compute_checksum(payload, sizeof(payload));
}

__attribute__((noinline)) static void serve_requests(double seconds)
{
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (uint64_t id = 0;; id++) {
		handle_request(id);
		if (seconds > 0 && (id & 15) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 > seconds)
				return;
		}
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	if (argc > 2 && atoi(argv[2]) > 0)
		rounds = atoi(argv[2]);
	if (argc > 3 && atof(argv[3]) > 0) {
		double idle = atof(argv[3]);
		struct timespec ts = { (time_t)idle, (long)((idle - (double)(time_t)idle) * 1e9) };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	serve_requests(seconds);
	printf("%llu\n", (unsigned long long)sink);
	return 0;
}
