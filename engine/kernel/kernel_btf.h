/* kernel_btf.h — the running kernel's BTF (/sys/kernel/btf/vmlinux), read in place: types by
 * id, names by offset, a type by name and kind.
 *
 * libbpf's btf__load_vmlinux_btf (1.1) reads the 5.5 MB file into memory and copies it once more
 * (11 MB at its peak, most of a run's peak RSS). Here the file is mapped read-only where the
 * kernel allows it (6.16+: the kernel's own pages, which count in no RSS), else read once; the
 * only thing built is an index of where each type starts (4 bytes a type: 0.5 MB on 6.18).
 *
 * Owns: mapping or reading the file, checking its header and that every type's record lies in
 * its section, the index. Must not: write to the types (they may be the kernel's pages), or cut,
 * load or attach anything (core_btf.c, tp_btf.c).
 */
#ifndef DIAG_KERNEL_BTF_H
#define DIAG_KERNEL_BTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

struct btf_type;

struct kernel_btf {
	const uint8_t *data; /* the whole file */
	size_t size;
	bool mapped;         /* data is a mapping (else owned, malloc'd) */
	bool owned;          /* data is ours to release (false: kernel_btf_from_bytes) */
	const uint8_t *types; /* the type section */
	uint32_t types_len;
	const char *strs;    /* the string section, NUL-terminated */
	uint32_t strs_len;
	uint32_t *start;     /* start[id]: offset of type id in the type section (id 1..n-1) */
	uint32_t n;          /* ids 0 (void) .. n-1 */
};

/* Maps (or reads) /sys/kernel/btf/vmlinux: 0, or -1 with err. */
int kernel_btf_open(struct kernel_btf *k, struct diag_err *err);
/* The same over BTF bytes the caller keeps alive (a file's, in the tests): 0, or -1 with err. */
int kernel_btf_from_bytes(struct kernel_btf *k, const void *data, size_t size, struct diag_err *err);
void kernel_btf_close(struct kernel_btf *k);

/* Type id (1..n-1), or NULL. */
const struct btf_type *kernel_btf_type(const struct kernel_btf *k, uint32_t id);
/* The string at offset off ("" for 0), or NULL past the section. */
const char *kernel_btf_name(const struct kernel_btf *k, uint32_t off);
/* The size in bytes of a type's record (struct btf_type and what follows it), 0 for a kind this
 * reader does not know. */
size_t kernel_btf_record_size(const struct btf_type *t);
/* The first type called name of that kind (BTF_KIND_*): its id, or 0 when there is none. */
uint32_t kernel_btf_find(const struct kernel_btf *k, const char *name, unsigned kind);

#endif
