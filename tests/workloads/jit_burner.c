/* jit_burner.c — test workload for JIT symbols: copies a small busy loop into an anonymous
 * executable mapping (as a JIT compiler does), names it "jit_hot_loop" in /tmp/perf-PID.map the
 * way Node --perf-basic-prof does, and calls it until killed. The caller removes the map file.
 * x86-64 only: exits 2 elsewhere.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
#if defined(__x86_64__)
	static const unsigned char code[] = {
		0xb9, 0x00, 0x00, 0x00, 0x01, /* mov ecx, 0x1000000 */
		0xff, 0xc9,                   /* 1: dec ecx */
		0x75, 0xfc,                   /* jnz 1b */
		0xc3,                         /* ret */
	};
	void *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem, code, sizeof(code));
	if (mprotect(mem, 4096, PROT_READ | PROT_EXEC))
		return 1;
	char path[64];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_hot_loop\n", (unsigned long)mem, sizeof(code));
	if (fclose(f))
		return 1;
	void (*fn)(void);
	memcpy(&fn, &mem, sizeof(fn));
	for (;;)
		fn();
#else
	return 2;
#endif
}
