/* symbench.c — times the engine's symbolization (engine/symbolize/ksyms.c and usyms.c, linked
 * as diagnose links it) of N unique user addresses of a live process: part 4 of
 * tests/bench/bench.py. Benchmark helper only.
 *
 * The addresses are spread evenly over the process's file-backed executable mappings (every
 * r-xp line of /proc/PID/maps, in proportion to its size), so they fall in as many different
 * functions of the binary and its libraries as N allows; each is symbolized as a return address
 * (usyms_symbolize_ret: what every frame but a stack's leaf goes through). Timed: ksyms_load
 * (/proc/kallsyms, as a run loads it), usyms_new + usyms_snapshot (reads maps and loads every
 * mapped ELF file: symbols, debug files, demangling, .eh_frame ranges), the N lookups, and the N
 * lookups again (warm). Given a file of hex addresses instead of N (the unique addresses of a
 * perf recording of the same process), those are symbolized: user ones as above, kernel ones
 * (>= 0xffff800000000000) in kallsyms, both within the lookup times. Prints one JSON object on stdout, with how many addresses got a symbol's
 * name, an .eh_frame function entry, and in how many distinct functions they fell.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symbolize/ksyms.h"
#include "symbolize/usyms.h"

static const char *volatile sink;

struct range {
	uint64_t start, end;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: symbench PID N|ADDRESS-FILE\n");
		return 2;
	}
	int pid = atoi(argv[1]);
	FILE *given = fopen(argv[2], "r");
	size_t n = given ? 0 : strtoul(argv[2], NULL, 10);
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f || (n == 0 && !given)) {
		fprintf(stderr, "symbench: cannot read %s\n", path);
		return 1;
	}
	struct range *r = NULL;
	size_t nr = 0;
	uint64_t total = 0;
	while (fgets(line, sizeof(line), f)) {
		uint64_t s, e;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %n", &s, &e, perms,
			   &name_at) < 3 || perms[2] != 'x' || line[name_at] != '/')
			continue;
		r = realloc(r, (nr + 1) * sizeof(*r));
		r[nr++] = (struct range){ s, e };
		total += e - s;
	}
	fclose(f);
	if (!nr || (!given && total < n)) {
		fprintf(stderr, "symbench: %zu executable mappings, %" PRIu64 " bytes: too few\n", nr, total);
		return 1;
	}
	uint64_t *addrs = NULL;
	size_t nk = 0; /* kernel addresses: at the end of addrs[], looked up in kallsyms */
	if (given) { /* one hex address a line, unique, ascending */
		size_t cap = 0;
		uint64_t a;
		while (fscanf(given, "%" SCNx64, &a) == 1) {
			if (n + nk == cap)
				addrs = realloc(addrs, (cap = cap ? 2 * cap : 4096) * sizeof(*addrs));
			if (a >= 0xffff800000000000ull)
				addrs[n + nk++] = a;
			else { /* keep user addresses first */
				if (nk)
					addrs[n + nk] = addrs[n];
				addrs[n++] = a;
			}
		}
		fclose(given);
	} else {
		addrs = malloc(n * sizeof(*addrs));
		uint64_t step = total / n, seen = 0; /* bytes of the ranges before r[k] */
		size_t k = 0;
		for (size_t i = 0; i < n; i++) { /* the i-th step of the concatenated ranges, +1: a return address */
			uint64_t at = (uint64_t)i * step + step / 2;
			while (k < nr && at >= seen + (r[k].end - r[k].start))
				seen += r[k].end - r[k].start, k++;
			addrs[i] = r[k].start + (at - seen) + 1;
		}
	}

	struct diag_err err = { 0 };
	double t0 = now_ms();
	struct ksyms *ks = ksyms_load(NULL, &err);
	double t1 = now_ms();
	struct usyms *us = usyms_new(pid);
	if (usyms_snapshot(us, &err)) {
		fprintf(stderr, "symbench: %s\n", err.msg);
		return 1;
	}
	double t2 = now_ms();
	char buf[USYM_NAME_MAX], prev[USYM_NAME_MAX] = "";
	size_t named = 0, fde = 0, functions = 0;
	for (size_t i = 0; i < n; i++) {
		enum usym_source src = USYM_SRC_NONE;
		int ok = usyms_symbolize_ret(us, addrs[i], buf, sizeof(buf), &src) == 1;
		named += ok;
		fde += src == USYM_SRC_FDE;
		/* the addresses ascend and a function is contiguous: a new name is a new function */
		if ((ok || src == USYM_SRC_FDE) && strcmp(buf, prev)) {
			functions++;
			memcpy(prev, buf, sizeof(prev));
		}
	}
	size_t knamed = 0;
	for (size_t i = n; i < n + nk; i++)
		knamed += ks && ksyms_lookup(ks, addrs[i], NULL);
	double t3 = now_ms();
	for (size_t i = 0; i < n; i++)
		usyms_symbolize_ret(us, addrs[i], buf, sizeof(buf), NULL);
	for (size_t i = n; i < n + nk; i++)
		sink = ks ? ksyms_lookup(ks, addrs[i], NULL) : NULL;
	double t4 = now_ms();
	printf("{\"addresses\": %zu, \"kernel_addresses\": %zu, \"kernel_named\": %zu, "
	       "\"mappings\": %zu, \"named\": %zu, \"fde\": %zu, \"functions\": %zu, "
	       "\"ksyms_ms\": %.3f, \"snapshot_ms\": %.3f, \"lookup_ms\": %.3f, \"lookup_warm_ms\": %.3f}\n",
	       n, nk, knamed, nr, named, fde, functions, t1 - t0, t2 - t1, t3 - t2, t4 - t3);
	usyms_free(us);
	ksyms_free(ks);
	free(addrs);
	free(r);
	return 0;
}
