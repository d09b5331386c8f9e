/* floor.c — loads tests/bench/floor.bpf.o, attaches it, prints "ready", and waits for stdin to
 * close. Benchmark helper only. */
#include <bpf/libbpf.h>
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
	struct bpf_link *link =
		bpf_program__attach(bpf_object__find_program_by_name(obj, "floor_sys_enter"));
	if (!link) {
		fprintf(stderr, "floor: cannot attach\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	char c;
	while (read(0, &c, 1) > 0)
		;
	bpf_link__destroy(link);
	bpf_object__close(obj);
	return 0;
}
