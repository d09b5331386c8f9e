/* uprobe_multi.c — multi-uprobe links (uprobe_multi.h).
 * Must not: load programs, resolve symbols, or hold global state.
 */
#include "kernel/uprobe_multi.h"

#include <errno.h>
#include <linux/btf.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BPF_LINK_CREATE_CMD 28   /* enum bpf_cmd's BPF_LINK_CREATE */
#define UPROBE_MULTI_RETURN 1u   /* BPF_F_UPROBE_MULTI_RETURN */

/* BPF_LINK_CREATE's attributes for a multi-uprobe link, as uapi 6.6 lays them out (a union of
 * that size, the rest zero). */
union link_create_attr {
	struct {
		uint32_t prog_fd, target_fd, attach_type, flags;
		struct {
			uint64_t path, offsets, ref_ctr_offsets, cookies;
			uint32_t cnt, flags, pid;
		} uprobe_multi;
	} lc;
	uint8_t size[144];
};

bool uprobe_multi_supported(const struct kernel_btf *k)
{
	if (!k)
		return false;
	uint32_t id = kernel_btf_find(k, "bpf_attach_type", BTF_KIND_ENUM);
	const struct btf_type *t = id ? kernel_btf_type(k, id) : NULL;
	if (!t)
		return false;
	const struct btf_enum *e = (const struct btf_enum *)(t + 1);
	for (uint32_t i = 0; i < BTF_INFO_VLEN(t->info); i++) {
		const char *name = kernel_btf_name(k, e[i].name_off);
		if (name && !strcmp(name, "BPF_TRACE_UPROBE_MULTI"))
			return e[i].val == UPROBE_MULTI_ATTACH_TYPE;
	}
	return false;
}

int uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets, const uint64_t *ref_ctr,
		      const uint64_t *cookies, size_t n, int pid, bool ret)
{
	if (!n || n > UPROBE_MULTI_MAX_SITES) {
		errno = EINVAL;
		return -1;
	}
	union link_create_attr a;
	memset(&a, 0, sizeof(a));
	a.lc.prog_fd = (uint32_t)prog_fd;
	a.lc.attach_type = UPROBE_MULTI_ATTACH_TYPE;
	a.lc.uprobe_multi.path = (uint64_t)(uintptr_t)path;
	a.lc.uprobe_multi.offsets = (uint64_t)(uintptr_t)offsets;
	a.lc.uprobe_multi.ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctr;
	a.lc.uprobe_multi.cookies = (uint64_t)(uintptr_t)cookies;
	a.lc.uprobe_multi.cnt = (uint32_t)n;
	a.lc.uprobe_multi.flags = ret ? UPROBE_MULTI_RETURN : 0;
	a.lc.uprobe_multi.pid = pid > 0 ? (uint32_t)pid : 0;
	return (int)syscall(SYS_bpf, BPF_LINK_CREATE_CMD, &a, sizeof(a));
}
