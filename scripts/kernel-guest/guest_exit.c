/* guest_exit.c — ends the QEMU guest of scripts/kernel-guest/run.sh with a status: writes it to
 * QEMU's isa-debug-exit port (0xf4), which makes QEMU exit with (status << 1) | 1.
 *
 * Owns: that one port write (Debian's cloud kernel has no /dev/port for a shell to do it).
 * Must not: be run outside such a guest (on real hardware port 0xf4 may be anything): it refuses
 * unless /proc/cmdline carries rdinit=/init, the guest's own init.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>

int main(int argc, char **argv)
{
	char cmdline[4096] = "";
	FILE *f = fopen("/proc/cmdline", "r");
	if (f) {
		if (!fgets(cmdline, sizeof(cmdline), f))
			cmdline[0] = '\0';
		fclose(f);
	}
	if (argc != 2 || !strstr(cmdline, "rdinit=/init")) {
		fprintf(stderr, "usage (in the check-kernel guest only): guest_exit STATUS\n");
		return 2;
	}
	if (ioperm(0xf4, 4, 1) != 0) {
		perror("guest_exit: ioperm 0xf4");
		return 1;
	}
	outl((unsigned)strtoul(argv[1], NULL, 0), 0xf4);
	return 1; /* only reached without the device */
}
