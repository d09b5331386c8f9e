/* usdt_attach.c — the file USDT probes live in, and attaching to their sites (usdt_attach.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "probes/runtime.h"
#include "target/procfs.h"
#include "target/target.h"
#include "target/tfile.h"
#include "probes/usdt_attach.h"

const char *usdt_check_binary(const char *binary)
{
	if (!binary)
		return "missing: \"target\", \"lib:NAME\" or an absolute path";
	if (strcmp(binary, "target") == 0)
		return NULL;
	if (strncmp(binary, "lib:", 4) == 0) {
		const char *n = binary + 4;
		if (!*n || strlen(n) > 128 || strchr(n, '/'))
			return "lib:NAME needs the start of a library's file name (lib:libpython3.11), no '/'";
		return NULL;
	}
	if (binary[0] != '/')
		return "expected \"target\" (the target's executable), \"lib:NAME\" (a library the "
		       "target maps) or an absolute path";
	if (strlen(binary) >= PATH_MAX)
		return "path too long";
	return NULL;
}

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n >= USDT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

const char *usdt_check_probe_name(const char *text)
{
	const char *colon = strchr(text, ':');
	if (!colon || !name_ok(text, (size_t)(colon - text)) || !name_ok(colon + 1, strlen(colon + 1)))
		return "expected \"provider:name\" as readelf -n or diagnose show --usdt prints them "
		       "(postgresql:query__start), each part letters, digits and _";
	return NULL;
}

/* The run's one process whose files name the binary: --pid's, or a set's first. */
static int target_pid_of(const struct probe *p)
{
	if (p->cfg.filter.pid > 0)
		return p->cfg.filter.pid;
	if (p->cfg.filter.pid_set && p->cfg.filter.target)
		return target_first_pid(p->cfg.filter.target);
	return 0;
}

/* The target's executable ("target") or the first library whose name starts with lib (the
 * "lib:" form): its mapping read from /proc/PID/maps, into *src (path in path_buf). */
static int find_mapping(struct tfile_reader *r, int pid, const char *lib, struct tfile_src *src,
			char *path_buf, size_t path_len, struct diag_err *err)
{
	char exe[PATH_MAX] = "";
	if (!lib) { /* readlink never touches the file system the file is on: it cannot stall */
		char link[64];
		snprintf(link, sizeof(link), "/proc/%d/exe", pid);
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);
		if (n <= 0)
			return diag_fail(err, DIAG_EXIT_USAGE, "process %d: cannot read its executable's name (%s)",
					 pid, n < 0 ? strerror(errno) : "empty");
		exe[n] = '\0';
	}
	char *maps = tfile_read_proc(r, pid, "maps", TFILE_MAX_TEXT_BYTES, NULL, err);
	if (!maps) {
		err->code = DIAG_EXIT_USAGE;
		return -1;
	}
	int rc = -1;
	char *cursor = maps;
	for (char *line; (line = procfs_next_line(&cursor));) {
		struct procfs_maps_line m;
		if (procfs_parse_maps_line(line, &m) || !m.exec || m.path[0] != '/')
			continue;
		if (lib) {
			const char *base = strrchr(m.path, '/') + 1;
			size_t n = strlen(lib);
			if (strncmp(base, lib, n) != 0 || (base[n] && base[n] != '.' && base[n] != '-'))
				continue;
		} else if (strcmp(m.path, exe) != 0) {
			continue;
		}
		if (strlen(m.path) >= path_len)
			continue;
		snprintf(path_buf, path_len, "%s", m.path);
		*src = (struct tfile_src){ .pid = pid, .start = m.start, .end = m.end, .path = path_buf,
					   .dev = (uint64_t)m.major << 32 | m.minor, .ino = m.inode };
		rc = 0;
		break;
	}
	free(maps);
	if (rc)
		diag_fail(err, DIAG_ERR_NOT_APPLICABLE, lib ? "process %d maps no executable file named %s*"
						    : "process %d: its executable is not among its mappings",
			  pid, lib ? lib : "");
	return rc;
}

int usdt_binary_open_for(struct usdt_binary *b, struct probe *p, const char *binary,
			 uint32_t max_specs, struct diag_err *err)
{
	return usdt_binary_open(b, p->files, binary, target_pid_of(p),
				p->cfg.filter.pid > 0 ? p->cfg.filter.pid : -1, max_specs, err);
}

int usdt_binary_open(struct usdt_binary *b, struct tfile_reader *r, const char *binary,
		     int target, int attach_pid, uint32_t max_specs, struct diag_err *err)
{
	memset(b, 0, sizeof(*b));
	b->file_fd = -1;
	b->max_specs = max_specs;
	b->pid = attach_pid;
	const char *why = usdt_check_binary(binary);
	if (why)
		return diag_fail(err, DIAG_EXIT_USAGE, "binary: %s", why);
	struct tfile_src src = { 0 };
	if (binary[0] == '/') {
		snprintf(b->path, sizeof(b->path), "%s", binary);
		src = (struct tfile_src){ .path = b->path, .operator_path = true };
	} else {
		if (target <= 0)
			return diag_fail(err, DIAG_EXIT_USAGE, "binary: \"%s\" names a file of the "
					 "target, and there is none (filters: { pid: target } and --pid or "
					 "a set of processes)", binary);
		if (find_mapping(r, target, binary[0] == 'l' ? binary + 4 : NULL, &src, b->path,
				 sizeof(b->path), err))
			return -1;
	}
	struct tfile_image *img;
	if (tfile_read_elf(r, &src, TFILE_KEEP_FD, &img, err)) {
		err->code = DIAG_EXIT_USAGE;
		return diag_wrap(err, "cannot read the binary");
	}
	int rc = usdt_read_notes(img, b->path, &b->notes, err);
	b->file_fd = img->fd;
	img->fd = -1;
	tfile_image_free(img);
	if (rc) {
		usdt_binary_close(b);
		return -1;
	}
	snprintf(b->attach_path, sizeof(b->attach_path), "/proc/self/fd/%d", b->file_fd);
	return 0;
}

void usdt_binary_close(struct usdt_binary *b)
{
	if (b->file_fd >= 0)
		close(b->file_fd);
	b->file_fd = -1;
	usdt_notes_free(&b->notes);
}

size_t usdt_binary_sites(const struct usdt_binary *b, const char *provider, const char *name)
{
	return usdt_find(&b->notes, provider, name, NULL, 0);
}

int usdt_attach_probe(struct probe *p, struct usdt_binary *b, struct bpf_program *prog,
		      int specs_fd, const char *provider, const char *name, uint32_t probe_id,
		      uint32_t need_args, uint32_t *sites, struct diag_err *err)
{
	*sites = 0;
	for (size_t i = 0; i < b->notes.n; i++) {
		const struct usdt_site *s = &b->notes.sites[i];
		if (strcmp(s->name, name) != 0 || strcmp(s->provider, provider) != 0)
			continue;
		if (need_args == USDT_ALL_ARGS ? !s->args_ok : s->spec.nargs < need_args) {
			/* an argument it reads cannot be fetched */
			b->sites_unreadable++;
			continue;
		}
		if (b->next_spec >= b->max_specs) { /* the caller decides whether what is left matters */
			b->sites_over_slots++;
			continue;
		}
		struct diag_usdt_spec spec = s->spec;
		spec.probe = probe_id;
		uint32_t slot = b->next_spec;
		if (bpf_map_update_elem(specs_fd, &slot, &spec, BPF_ANY))
			return diag_fail(err, DIAG_EXIT_RUNTIME, "storing a USDT site's plan: %s",
					 strerror(errno));
		char what[PATH_MAX + 2 * USDT_NAME_MAX + 64];
		snprintf(what, sizeof(what), "a USDT probe %s:%s to %s (file offset 0x%" PRIx64 "%s)",
			 provider, name, b->path, s->offset, s->sema_offset ? ", with its semaphore" : "");
		if (s->sema_offset &&
		    access("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset", F_OK) != 0)
			return diag_fail(err, DIAG_EXIT_REFUSED, "%s:%s of %s is guarded by a semaphore, and "
					 "this kernel cannot raise it (uprobe ref_ctr_offset: Linux 4.20+): the "
					 "application would skip the probe", provider, name, b->path);
		struct uprobe_site site = { .prog = prog, .path = b->attach_path, .offset = s->offset,
					    .cookie = slot, .ref_ctr_offset = s->sema_offset, .pid = b->pid };
		if (probe_bpf_uprobe(p, &site, what, err))
			return -1;
		b->next_spec++;
		b->sites_attached++;
		(*sites)++;
	}
	return 0;
}

int usdt_lint_probe(const char *binary, const char *provider, const char *name, const char *done,
		    struct diag_err *err)
{
	if (!binary || binary[0] != '/' || access(binary, F_OK) != 0)
		return 0; /* not known here: the run checks it */
	struct tfile_reader *r = tfile_reader_new();
	struct usdt_binary b;
	int rc = 0;
	if (usdt_binary_open(&b, r, binary, 0, -1, 0, err)) {
		tfile_reader_free(r);
		return -1;
	}
	const char *missing = !usdt_binary_sites(&b, provider, name) ? name
			      : done && *done && !usdt_binary_sites(&b, provider, done) ? done : NULL;
	if (missing)
		rc = diag_fail(err, DIAG_EXIT_USAGE, "%s has no USDT probe %s:%s (diagnose show --usdt %s "
			       "lists those it has)", binary, provider, missing, binary);
	usdt_binary_close(&b);
	tfile_reader_free(r);
	return rc;
}
