/* filters.c — filter names, checks and resolution (see filters.h).
 * Must not: load BPF, or know any probe kind.
 */
#include "plan/filters.h"

#include "common/value.h"
#include "target/target.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static const struct {
	enum filter_bit bit;
	const char *name;
} names[] = {
	{ FILTER_PID, "pid" },
	{ FILTER_TID, "tid" },
	{ FILTER_COMM, "comm" },
	{ FILTER_CGROUP, "cgroup" },
	{ FILTER_DEVICE, "device" },
	{ FILTER_LOCAL_PORT, "local_port" },
	{ FILTER_REMOTE_PORT, "remote_port" },
	{ FILTER_REMOTE_ADDR, "remote_addr" },
};

const char *filter_name(enum filter_bit bit)
{
	for (size_t i = 0; i < ARRAY_LEN(names); i++)
		if (names[i].bit == bit)
			return names[i].name;
	return "?";
}

static int parse_id(const char *text, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || end == text || *end || v <= 0 || v > INT32_MAX)
		return -1;
	*out = (int)v;
	return 0;
}

int filters_parse_port(const char *text, uint16_t *port)
{
	int v;
	if (parse_id(text, &v) || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int filters_parse_addr(const char *text, struct filter_addr *addr)
{
	memset(addr, 0, sizeof(*addr));
	if (inet_pton(AF_INET, text, addr->bytes) == 1) {
		addr->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, addr->bytes) == 1) {
		addr->family = AF_INET6;
		return 0;
	}
	return -1;
}

int filters_parse_dev(const char *text, uint32_t *dev)
{
	unsigned major, minor;
	char tail;
	int n = sscanf(text, "%u:%u%c", &major, &minor, &tail);
	if (n < 2 || (n == 3 && tail != '\n') || major >= (1u << 12) || minor >= (1u << 20))
		return -1;
	*dev = major << 20 | minor; /* the kernel's MKDEV, what block tracepoints carry */
	return 0;
}

const char *filters_device_name(const char *text)
{
	if (strncmp(text, "/dev/", 5) == 0)
		text += 5;
	if (!*text || strchr(text, '/') || strcmp(text, ".") == 0 || strcmp(text, "..") == 0 ||
	    strlen(text) >= 32)
		return NULL;
	return text;
}

/* mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER" */
int filters_cgroup2_mount(const char *mountinfo, char *out, size_t len)
{
	for (const char *line = mountinfo; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t n = eol ? (size_t)(eol - line) : strlen(line);
		char buf[4096];
		if (n < sizeof(buf)) {
			memcpy(buf, line, n);
			buf[n] = '\0';
			char *sep = strstr(buf, " - ");
			char root[PATH_MAX], mnt[PATH_MAX], fstype[64];
			if (sep && sscanf(sep + 3, "%63s", fstype) == 1 && strcmp(fstype, "cgroup2") == 0 &&
			    sscanf(buf, "%*s %*s %*s %4095s %4095s", root, mnt) == 2) {
				/* octal escapes (\040 for a space) are left alone: no such mount point here */
				if ((size_t)snprintf(out, len, "%s", mnt) >= len)
					return -1;
				return 0;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return -1;
}

int filters_cgroup2_path(const char *proc_cgroup, char *out, size_t len)
{
	for (const char *line = proc_cgroup; line && *line;) {
		const char *eol = strchr(line, '\n');
		size_t n = eol ? (size_t)(eol - line) : strlen(line);
		if (n >= 3 && strncmp(line, "0::", 3) == 0) {
			if (n - 3 >= len)
				return -1;
			memcpy(out, line + 3, n - 3);
			out[n - 3] = '\0';
			return out[0] == '/' ? 0 : -1;
		}
		line = eol ? eol + 1 : NULL;
	}
	return -1;
}

/* A ".." path component. */
static bool has_dotdot(const char *path)
{
	for (const char *p = strstr(path, "/.."); p; p = strstr(p + 1, "/.."))
		if (p[3] == '/' || p[3] == '\0')
			return true;
	return false;
}

/* The cgroup v2 directory a filter names: "target" (the target's own cgroup), a path below the
 * v2 mount ("/system.slice/x.service"), or its full path (/sys/fs/cgroup/...). */
static int resolve_cgroup(const char *text, int target_pid, struct probe_filters *out,
			  struct diag_err *err)
{
	char mount[PATH_MAX], rel[PATH_MAX], path[PATH_MAX];
	char *info = read_file("/proc/self/mountinfo", NULL);
	int rc = info ? filters_cgroup2_mount(info, mount, sizeof(mount)) : -1;
	free(info);
	if (rc)
		return diag_fail(err, DIAG_EXIT_REFUSED, "filters.cgroup: no cgroup v2 hierarchy is mounted "
				 "(pure v2: /sys/fs/cgroup; hybrid: /sys/fs/cgroup/unified)");
	if (strcmp(text, "target") == 0) {
		char file[64];
		if (target_pid <= 0)
			return diag_fail(err, DIAG_EXIT_USAGE, "filters.cgroup: \"target\" needs --pid");
		snprintf(file, sizeof(file), "/proc/%d/cgroup", target_pid);
		char *cg = read_file(file, NULL);
		rc = cg ? filters_cgroup2_path(cg, rel, sizeof(rel)) : -1;
		free(cg);
		if (rc)
			return diag_fail(err, DIAG_EXIT_USAGE, "filters.cgroup: process %d has no cgroup v2 path in %s",
					 target_pid, file);
		text = rel;
	}
	if (text[0] != '/' || has_dotdot(text))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.cgroup: expected \"target\" or an absolute "
				 "path in the cgroup v2 hierarchy (e.g. /system.slice/nginx.service), got \"%s\"", text);
	/* A path under the v2 mount, or elsewhere in /sys/fs/cgroup (a v1 hierarchy: refused below
	 * with a clear message), is a filesystem path; anything else is relative to the v2 root. */
	size_t ml = strlen(mount);
	bool under_mount = (strncmp(text, mount, ml) == 0 && (text[ml] == '/' || text[ml] == '\0')) ||
			   strncmp(text, "/sys/fs/cgroup/", 15) == 0;
	if ((size_t)snprintf(path, sizeof(path), "%s%s", under_mount ? "" : mount,
			     strcmp(text, "/") == 0 ? "" : text) >= sizeof(path))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.cgroup: path too long");
	struct stat st;
	struct statfs sf;
	if (stat(path, &st))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.cgroup: no cgroup %s (%s)", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.cgroup: %s is not a directory", path);
	if (statfs(path, &sf) || sf.f_type != CGROUP2_SUPER_MAGIC)
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.cgroup: %s is not in the cgroup v2 hierarchy "
				 "(mounted at %s)", path, mount);
	out->cgroup_id = (uint64_t)st.st_ino; /* the kernfs node id: what the kernel reports */
	snprintf(out->cgroup_path, sizeof(out->cgroup_path), "%s", path);
	return 0;
}

static int resolve_device(const char *text, struct probe_filters *out, struct diag_err *err)
{
	const char *name = filters_device_name(text);
	char path[96];
	if (!name)
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.device: expected a block device name "
				 "(e.g. vda, nvme0n1, /dev/sdb), got \"%s\"", text);
	snprintf(path, sizeof(path), "/sys/class/block/%s/dev", name);
	char *dev = read_file(path, NULL);
	int rc = dev ? filters_parse_dev(dev, &out->dev) : -1;
	free(dev);
	if (rc)
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.device: no block device %s (see lsblk)", name);
	snprintf(out->device, sizeof(out->device), "%s", name);
	return 0;
}

int filters_resolve(const struct filter_text *t, unsigned honoured, int target_pid,
		    bool on_this_machine, struct probe_filters *out, struct diag_err *err)
{
	const struct { const char *text; enum filter_bit bit; } set[] = {
		{ t->pid, FILTER_PID }, { t->tid, FILTER_TID }, { t->comm, FILTER_COMM },
		{ t->cgroup, FILTER_CGROUP }, { t->device, FILTER_DEVICE },
		{ t->local_port, FILTER_LOCAL_PORT }, { t->remote_port, FILTER_REMOTE_PORT },
		{ t->remote_addr, FILTER_REMOTE_ADDR },
	};
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < ARRAY_LEN(set); i++)
		if (set[i].text && !(honoured & set[i].bit))
			return diag_fail(err, DIAG_EXIT_USAGE, "filters.%s: this probe kind does not support "
					 "this filter", filter_name(set[i].bit));
	if (t->pid) {
		if (strcmp(t->pid, "target") == 0) {
			if (target_pid <= 0 && on_this_machine)
				return diag_fail(err, DIAG_EXIT_USAGE, "filters.pid: \"target\" needs --pid");
			out->pid = target_pid;
		} else if (parse_id(t->pid, &out->pid)) {
			return diag_fail(err, DIAG_EXIT_USAGE, "filters.pid: expected \"target\" or a pid, got \"%s\"",
					 t->pid);
		}
	}
	if (t->tid && parse_id(t->tid, &out->tid))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.tid: expected a thread id, got \"%s\"", t->tid);
	if (t->comm) {
		if (!*t->comm || strlen(t->comm) > 15)
			return diag_fail(err, DIAG_EXIT_USAGE, "filters.comm: a thread name is 1 to 15 bytes, "
					 "got \"%s\"", t->comm);
		out->comm = t->comm;
	}
	if (t->cgroup && !on_this_machine && strcmp(t->cgroup, "target") && (t->cgroup[0] != '/' || has_dotdot(t->cgroup)))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.cgroup: expected \"target\" or an absolute "
				 "path in the cgroup v2 hierarchy, got \"%s\"", t->cgroup);
	if (t->cgroup && on_this_machine && resolve_cgroup(t->cgroup, target_pid, out, err))
		return -1;
	if (t->device && !filters_device_name(t->device))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.device: expected a block device name "
				 "(e.g. vda, nvme0n1, /dev/sdb), got \"%s\"", t->device);
	if (t->device && on_this_machine && resolve_device(t->device, out, err))
		return -1;
	if (t->local_port && filters_parse_port(t->local_port, &out->local_port))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.local_port: expected 1..65535, got \"%s\"", t->local_port);
	if (t->remote_port && filters_parse_port(t->remote_port, &out->remote_port))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.remote_port: expected 1..65535, got \"%s\"", t->remote_port);
	if (t->remote_addr && filters_parse_addr(t->remote_addr, &out->remote_addr))
		return diag_fail(err, DIAG_EXIT_USAGE, "filters.remote_addr: expected an IPv4 or IPv6 address, "
				 "got \"%s\"", t->remote_addr);
	return 0;
}

size_t filters_live_pids(const struct probe_filters *f, int *pids, size_t max)
{
	size_t n = 0;
	if (f->pid > 0 && max)
		pids[n++] = f->pid;
	for (size_t i = 0; f->pid_set && f->target && i < f->target->n_procs && n < max; i++)
		if (f->target->procs[i].alive)
			pids[n++] = f->target->procs[i].pid;
	return n;
}

void filters_to_value(const struct filter_text *t, const struct probe_filters *f, struct value *v)
{
	const char *const texts[] = { t->pid, t->tid, t->comm, t->cgroup, t->device, t->local_port,
				      t->remote_port, t->remote_addr };
	struct value *o = NULL;
	for (size_t i = 0; i < ARRAY_LEN(texts); i++) {
		if (!texts[i])
			continue;
		if (!o)
			o = value_obj_set(v, "filters", value_obj());
		value_set_str(o, names[i].name, texts[i]);
	}
	if (f->cgroup_id) {
		value_set_int(v, "cgroup_id", (int64_t)f->cgroup_id);
		value_set_str(v, "cgroup_path", f->cgroup_path);
	}
	if (f->dev)
		value_set_int(v, "dev", f->dev);
}
