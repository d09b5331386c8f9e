/* core_btf.h — the kernel's BTF cut down to what a run's BPF objects relocate against (CO-RE),
 * parsed once and handed to libbpf in place of the whole (bpf_object_open_opts.btf_custom_path).
 *
 * libbpf 1.1 parses /sys/kernel/btf/vmlinux for every object it loads: 5.5 MB read and copied
 * once more (11 MB of memory at its peak, most of a run's peak RSS), ~126k types searched by
 * name for each relocation, three to six times a run. Cut to the types the objects' relocations
 * start from and what they embed, it is ~100 KiB (all 20 objects on 6.18: 1,295 of 126,411
 * types), parsed in microseconds by each.
 *
 * Owns: reading each object's CO-RE relocations (.BTF.ext) for the names they start from, the
 * cut (which types, how: core_btf.c), and the memfd holding it.
 * Must not: load or open a BPF object, fail a run (a run without it reads the whole BTF, as
 * before), or be used for anything but CO-RE: a program that attaches by BTF id (tp_btf,
 * fentry) still makes libbpf read the kernel's own.
 */
#ifndef DIAG_CORE_BTF_H
#define DIAG_CORE_BTF_H

#include <stddef.h>

#include "util.h"

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

/* Cuts the kernel's BTF (/sys/kernel/btf/vmlinux) to what the n objects relocate against: 0
 * with *out, or -1 with err (and *out empty: fd -1, path ""). An object without CO-RE
 * relocations adds nothing. */
int core_btf_build(const struct core_btf_obj *objs, size_t n, struct core_btf *out, struct diag_err *err);

/* The same from a parsed kernel BTF (struct btf *), for the tests. */
struct btf;
int core_btf_build_from(const struct btf *kernel, const struct core_btf_obj *objs, size_t n,
			struct core_btf *out, struct diag_err *err);

void core_btf_close(struct core_btf *b);

#endif
