/* privilege.c — root, a user with capabilities, or a user (privilege.h).
 *
 * Owns: reading our credentials and capabilities (capget), the ptrace check by opening
 * /proc/PID/mem.
 * Must not: print, cache, or change our credentials.
 */
#include "common/privilege.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Our effective capabilities (two 32-bit words), or false when they cannot be read. */
static bool effective_caps(uint32_t eff[2])
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2] = { 0 };
	if (syscall(SYS_capget, &hdr, data) != 0)
		return false;
	eff[0] = data[0].effective;
	eff[1] = data[1].effective;
	return true;
}

enum privilege privilege_now(void)
{
	uid_t uid = getuid(), euid = geteuid();
	if (euid == 0)
		return uid == 0 ? PRIV_ROOT : PRIV_SETUID;
	uint32_t eff[2];
	return effective_caps(eff) && (eff[0] || eff[1]) ? PRIV_CAPS : PRIV_USER;
}

bool privilege_strict(void)
{
	return privilege_now() != PRIV_USER;
}

bool privilege_on_behalf_of_user(void)
{
	return privilege_now() == PRIV_CAPS;
}

bool privilege_ptrace_any(void)
{
	uint32_t eff[2];
	return effective_caps(eff) && (eff[CAP_SYS_PTRACE / 32] & (1u << (CAP_SYS_PTRACE % 32)));
}

bool privilege_can_ptrace(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}
