/* floor.c — loads a BPF object (tests/bench/floor.bpf.o), attaches every program in it, prints "ready", and waits for stdin to
 * close. Benchmark helper only. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: floor OBJECT\n");
		return 2;
	}
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "floor: cannot load %s\n", argv[1]);
		return 1;
	}
	struct bpf_link *links[8] = { 0 };
	struct bpf_program *prog;
	int n = 0;
	bpf_object__for_each_program(prog, obj) {
		if (n == 8 || !(links[n++] = bpf_program__attach(prog))) {
			fprintf(stderr, "floor: cannot attach %s\n", bpf_program__name(prog));
			return 1;
		}
	}
	/* FLOOR_STATS=1: also turn on BPF run-time statistics, to price them. */
	int stats_fd = getenv("FLOOR_STATS") ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	printf("ready\n");
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	for (int i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	if (stats_fd >= 0)
		close(stats_fd);
	bpf_object__close(obj);
	return 0;
}
