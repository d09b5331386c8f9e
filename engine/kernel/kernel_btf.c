/* kernel_btf.c — the running kernel's BTF read in place (see kernel_btf.h).
 *
 * Choices:
 * - Mapped when the kernel lets /sys/kernel/btf/vmlinux be mapped (read-only, private: 6.16+),
 *   read into memory otherwise (6.1). Either way the bytes are never written.
 * - One pass over the type section builds the index and checks that each record lies within it;
 *   a kind this reader does not know ends the pass with an error (its size is unknown), as
 *   libbpf's parser does.
 * - Names are checked when asked for (an offset inside the string section, which must end with
 *   a NUL), so a lookup never reads past it.
 */
#include "kernel/kernel_btf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/btf.h>

#define KERNEL_BTF_PATH "/sys/kernel/btf/vmlinux"

size_t kernel_btf_record_size(const struct btf_type *t)
{
	size_t vlen = BTF_INFO_VLEN(t->info), base = sizeof(struct btf_type);
	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return base + 4;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return base;
	case BTF_KIND_ARRAY:
		return base + sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return base + vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return base + vlen * sizeof(struct btf_enum);
	case BTF_KIND_ENUM64:
		return base + vlen * sizeof(struct btf_enum64);
	case BTF_KIND_FUNC_PROTO:
		return base + vlen * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return base + vlen * sizeof(struct btf_var_secinfo);
	default:
		return 0;
	}
}

/* The header, the sections and the index over k->data: 0, or -1 with err. */
static int index_types(struct kernel_btf *k, struct diag_err *err)
{
	struct btf_header h;
	if (k->size < sizeof(h))
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the kernel's BTF: %zu bytes, no header", k->size);
	memcpy(&h, k->data, sizeof(h));
	if (h.magic != BTF_MAGIC || h.version != BTF_VERSION)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the kernel's BTF: not BTF of this byte order "
				 "(magic %#x, version %u)", h.magic, h.version);
	size_t body = k->size - (h.hdr_len < k->size ? h.hdr_len : k->size);
	if (h.hdr_len < sizeof(h) || h.hdr_len > k->size || h.type_off > body || h.type_len > body - h.type_off ||
	    h.str_off > body || h.str_len > body - h.str_off || (h.hdr_len + h.type_off) % 4 || !h.str_len)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the kernel's BTF: sections out of bounds");
	k->types = k->data + h.hdr_len + h.type_off;
	k->types_len = h.type_len;
	k->strs = (const char *)k->data + h.hdr_len + h.str_off;
	k->strs_len = h.str_len;
	if (k->strs[k->strs_len - 1] != '\0')
		return diag_fail(err, DIAG_EXIT_RUNTIME, "the kernel's BTF: strings not terminated");
	size_t cap = 1 + h.type_len / sizeof(struct btf_type);
	k->start = xcalloc(cap, sizeof(*k->start));
	uint32_t n = 1;
	for (uint32_t at = 0; at < h.type_len;) {
		if (h.type_len - at < sizeof(struct btf_type))
			return diag_fail(err, DIAG_EXIT_RUNTIME, "the kernel's BTF: type %u cut short", n);
		const struct btf_type *t = (const struct btf_type *)(k->types + at);
		size_t size = kernel_btf_record_size(t);
		if (!size)
			return diag_fail(err, DIAG_EXIT_RUNTIME, "the kernel's BTF: type %u of unknown kind %u",
					 n, BTF_INFO_KIND(t->info));
		if (size > h.type_len - at)
			return diag_fail(err, DIAG_EXIT_RUNTIME, "the kernel's BTF: type %u cut short", n);
		k->start[n++] = at;
		at += (uint32_t)size;
	}
	k->n = n;
	return 0;
}

int kernel_btf_from_bytes(struct kernel_btf *k, const void *data, size_t size, struct diag_err *err)
{
	memset(k, 0, sizeof(*k));
	k->data = data;
	k->size = size;
	if (index_types(k, err)) {
		kernel_btf_close(k);
		return -1;
	}
	return 0;
}

/* Reads all of fd (size bytes, as stat says; sysfs files say theirs) into memory. */
static uint8_t *read_all(int fd, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return NULL;
	errno = 0;
	size_t got = read_full(fd, buf, size);
	if (got != size) {
		free(buf);
		errno = got < size ? EIO : errno;
		return NULL;
	}
	return buf;
}

int kernel_btf_open(struct kernel_btf *k, struct diag_err *err)
{
	memset(k, 0, sizeof(*k));
	int fd = open(KERNEL_BTF_PATH, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "reading %s: %s", KERNEL_BTF_PATH, strerror(e));
	}
	size_t size = (size_t)st.st_size;
	void *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	const uint8_t *data = map != MAP_FAILED ? map : read_all(fd, size);
	int e = errno;
	close(fd);
	if (!data)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "reading %s: %s", KERNEL_BTF_PATH, strerror(e));
	k->data = data;
	k->size = size;
	k->mapped = map != MAP_FAILED;
	k->owned = true;
	if (index_types(k, err)) {
		kernel_btf_close(k);
		return -1;
	}
	return 0;
}

void kernel_btf_close(struct kernel_btf *k)
{
	if (k->owned && k->mapped)
		munmap((void *)k->data, k->size);
	else if (k->owned)
		free((void *)k->data);
	free(k->start);
	memset(k, 0, sizeof(*k));
}

const struct btf_type *kernel_btf_type(const struct kernel_btf *k, uint32_t id)
{
	return id && id < k->n ? (const struct btf_type *)(k->types + k->start[id]) : NULL;
}

const char *kernel_btf_name(const struct kernel_btf *k, uint32_t off)
{
	return off < k->strs_len ? k->strs + off : NULL;
}

uint32_t kernel_btf_find(const struct kernel_btf *k, const char *name, unsigned kind)
{
	for (uint32_t id = 1; id < k->n; id++) {
		const struct btf_type *t = kernel_btf_type(k, id);
		const char *s;
		if (BTF_INFO_KIND(t->info) == kind && (s = kernel_btf_name(k, t->name_off)) && !strcmp(s, name))
			return id;
	}
	return 0;
}
