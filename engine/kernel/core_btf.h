/* core_btf.h — the kernel's BTF cut down to what a run's BPF objects relocate against (CO-RE),
 * parsed once and handed to libbpf in place of the whole (bpf_object_open_opts.btf_custom_path).
 *
 * libbpf 1.1 parses /sys/kernel/btf/vmlinux for every object it loads: 5.5 MB read and copied
 * once more (11 MB of memory at its peak, most of a run's peak RSS), ~126k types searched by
 * name for each relocation, three to six times a run. The run reads it once, in place
 * (kernel_btf.h), and cuts it: to the types the objects' relocations start from and what they
 * embed, ~100 KiB (all 20 objects on 6.18: 1,295 of 126,411 types), parsed in microseconds by
 * each.
 *
 * Owns: reading each object's CO-RE relocations (.BTF.ext) for the names they start from, the
 * cut (which types, how: core_btf.c), and the memfd holding it.
 * Must not: load or open a BPF object, fail a run (a run without it reads the whole BTF, as
 * before), or be used for anything but CO-RE: the ids of tp_btf attach points are the kernel's
 * own (tp_btf.h), which the cut renumbers.
 */
#ifndef DIAG_CORE_BTF_H
#define DIAG_CORE_BTF_H

#include <stddef.h>

#include "common/util.h"

/* One BPF object's ELF bytes (a skeleton's NAME_bpf__elf_bytes). */
struct core_btf_obj {
	const void *bytes;
	size_t size;
};

struct core_btf {
	int fd;         /* the memfd holding the cut BTF (-1: none) */
	char path[40];  /* /proc/self/fd/N, for btf_custom_path ("" when none) */
	unsigned types; /* types kept, of kernel_types */
	unsigned kernel_types;
	size_t bytes; /* its size */
};

struct kernel_btf;
/* Cuts the kernel's BTF (kernel_btf.h) to what the n objects relocate against: 0 with *out, or
 * -1 with err (and *out empty: fd -1, path ""). An object without CO-RE relocations adds
 * nothing. */
int core_btf_build(const struct kernel_btf *kernel, const struct core_btf_obj *objs, size_t n,
		   struct core_btf *out, struct diag_err *err);

void core_btf_close(struct core_btf *b);

#endif
