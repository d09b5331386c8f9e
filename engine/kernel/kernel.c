/* kernel.c — privilege, BTF and tracefs checks; libbpf logging; BPF run-time stats.
 * Must not: print (except libbpf's own messages in verbose mode) or know about recipes.
 */
#include "kernel/kernel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static bool has_cap(const struct __user_cap_data_struct data[2], int cap)
{
	return data[cap / 32].effective & (1u << (cap % 32));
}

int kernel_check_privileges(struct diag_err *err)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2] = { 0 };
	if (syscall(SYS_capget, &hdr, data) != 0)
		return diag_fail(err, DIAG_EXIT_REFUSED, "cannot read capabilities: %s", strerror(errno));
	bool admin = has_cap(data, CAP_SYS_ADMIN);
	bool bpf = admin || has_cap(data, CAP_BPF);
	bool perfmon = admin || has_cap(data, CAP_PERFMON);
	if (bpf && perfmon)
		return 0;
	if (!bpf && !perfmon)
		return diag_fail(err, DIAG_EXIT_REFUSED,
				 "not root: missing CAP_BPF and CAP_PERFMON: run with sudo (or give the "
				 "binary cap_bpf,cap_perfmon+ep: then any local user runs the installed "
				 "recipes on the processes they could ptrace, docs/production.md"
				 "#running-with-capabilities)");
	return diag_fail(err, DIAG_EXIT_REFUSED, "missing %s: run with sudo (or grant it: "
			 "docs/production.md#running-with-capabilities)", bpf ? "CAP_PERFMON" : "CAP_BPF");
}

int kernel_check_btf(struct diag_err *err)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return 0;
	return diag_fail(err, DIAG_EXIT_REFUSED,
			 "kernel has no BTF (/sys/kernel/btf/vmlinux: %s); CO-RE probes need a kernel "
			 "built with CONFIG_DEBUG_INFO_BTF=y", strerror(errno));
}

/* 0 when dir is a tracefs we can read (its events/ is there), else the errno of looking
 * (EACCES: mounted, but its mode lets only root in). Our effective ids and capabilities count
 * (AT_EACCESS: access() would ask for the real uid's, without them). */
static int tracefs_at(const char *dir)
{
	char events[256];
	snprintf(events, sizeof(events), "%s/events", dir);
	if (faccessat(AT_FDCWD, events, R_OK | X_OK, AT_EACCESS) == 0)
		return 0;
	return errno == EACCES ? EACCES : ENOENT;
}

bool kernel_has_tracepoint(const char *tp)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[256];
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/%s", roots[i], tp);
		if (access(path, F_OK) == 0)
			return true;
	}
	return false;
}

int kernel_ensure_tracefs(bool *mounted_now, struct diag_err *err)
{
	*mounted_now = false;
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	int why[2];
	for (size_t i = 0; i < 2; i++)
		if ((why[i] = tracefs_at(roots[i])) == 0)
			return 0;
	if (why[0] == EACCES || why[1] == EACCES) {
		struct stat st;
		const char *at = roots[why[0] == EACCES ? 0 : 1];
		char mode[32] = "";
		if (stat(at, &st) == 0)
			snprintf(mode, sizeof(mode), " (mode %04o)", (unsigned)(st.st_mode & 07777));
		return diag_fail(err, DIAG_EXIT_REFUSED,
				 "tracefs at %s is not readable by uid %u%s: tracepoints need root, "
				 "CAP_DAC_READ_SEARCH beside CAP_BPF and CAP_PERFMON, or tracefs mounted "
				 "with mode=755", at, (unsigned)geteuid(), mode);
	}
	if (geteuid() != 0)
		return diag_fail(err, DIAG_EXIT_REFUSED, "tracefs is not mounted (/sys/kernel/tracing), "
				 "and mounting it takes root: mount -t tracefs tracefs /sys/kernel/tracing");
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0)
		return diag_fail(err, DIAG_EXIT_REFUSED,
				 "tracefs is not mounted and mounting it on /sys/kernel/tracing failed: %s",
				 strerror(errno));
	*mounted_now = true;
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static int libbpf_verbose(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	fputs("libbpf: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

void kernel_set_libbpf_verbose(bool verbose)
{
	libbpf_set_print(verbose ? libbpf_verbose : libbpf_quiet);
}

int kernel_enable_bpf_stats(void)
{
	return bpf_enable_stats(BPF_STATS_RUN_TIME);
}

bool kernel_bpf_stats_available(void)
{
	int fd = kernel_enable_bpf_stats();
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int kernel_prog_runtime(int prog_fd, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -1;
	*run_ns = info.run_time_ns;
	*run_cnt = info.run_cnt;
	return 0;
}
