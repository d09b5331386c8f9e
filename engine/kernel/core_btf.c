/* core_btf.c — the kernel's BTF cut down to what a run's BPF objects relocate against (see
 * core_btf.h).
 *
 * Choices:
 * - The roots are the types the objects' CO-RE relocations start from (.BTF.ext's core_relo
 *   records: a local type, by its name without a ___flavour suffix): every kernel type of that
 *   name is kept whole. libbpf looks its candidates up by that name only.
 * - Kept whole with a root: what it embeds — members' types, array elements and indexes,
 *   typedefs and modifiers — as a field relocation walks only these (an access string never
 *   crosses a pointer). A struct or union reached through a pointer is kept as a shell: its
 *   name, kind and size, no members (CO-RE compares what a pointer points to by kind alone, and
 *   a pointer field's own type by kind). Everything else reached is small and kept as it is.
 * - Types only a kernel module defines are not searched for (libbpf searches modules when the
 *   kernel has no candidate; none of our objects relocates against a module's type).
 * - The kernel's BTF is read in place (kernel_btf.h: mapped, not copied) and the cut written as
 *   raw BTF by hand (header, the kept types with their names and references renumbered, their
 *   strings), into a memfd: libbpf parses it from its path at load, like a file.
 */
#include "kernel/core_btf.h"

#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "kernel/kernel_btf.h"
#include "common/strset.h"

/* .BTF.ext's header and its CO-RE relocation records (the kernel's UAPI btf_ext layout). */
struct ext_header {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len;
	uint32_t func_info_off, func_info_len, line_info_off, line_info_len;
	uint32_t core_relo_off, core_relo_len;
};
struct ext_core_relo {
	uint32_t insn_off, type_id, access_str_off, kind;
};
#define EXT_MAGIC 0xeB9F
#define RELO_TYPE_ID_LOCAL 6 /* BPF_CORE_TYPE_ID_LOCAL: needs no kernel type */

/* The length of name without its ___flavour suffix (libbpf's "essential" name). */
static size_t essential_len(const char *name)
{
	const char *f = strstr(name, "___");
	return f ? (size_t)(f - name) : strlen(name);
}

/* ---- the roots of one object ------------------------------------------------------------------ */

/* The section called name of the ELF image, or NULL. */
static const void *elf_section(const void *bytes, size_t size, const char *name, size_t *len)
{
	const Elf64_Ehdr *eh = bytes;
	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
	    (size - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum || eh->e_shstrndx >= eh->e_shnum)
		return NULL;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)((const char *)bytes + eh->e_shoff);
	const Elf64_Shdr *strs = &sh[eh->e_shstrndx];
	if (strs->sh_offset > size || strs->sh_size > size - strs->sh_offset)
		return NULL;
	const char *names = (const char *)bytes + strs->sh_offset;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_name >= strs->sh_size || strnlen(names + sh[i].sh_name, strs->sh_size - sh[i].sh_name) !=
								strlen(name) ||
		    strcmp(names + sh[i].sh_name, name))
			continue;
		if (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset)
			return NULL;
		*len = sh[i].sh_size;
		return (const char *)bytes + sh[i].sh_offset;
	}
	return NULL;
}

/* Adds the names the object's CO-RE relocations start from: 0, or -1 with err. */
static int add_roots(const struct core_btf_obj *o, struct strset *roots, struct diag_err *err)
{
	size_t btf_len = 0, ext_len = 0;
	const void *btf_data = elf_section(o->bytes, o->size, ".BTF", &btf_len);
	const char *ext = elf_section(o->bytes, o->size, ".BTF.ext", &ext_len);
	if (!btf_data || !ext)
		return 0; /* no BTF, no relocations */
	struct ext_header h = { 0 };
	memcpy(&h, ext, ext_len < sizeof(h) ? ext_len : sizeof(h));
	if (h.magic != EXT_MAGIC || h.hdr_len > ext_len)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "a BPF object's .BTF.ext: bad header");
	if (h.hdr_len < offsetof(struct ext_header, core_relo_len) + sizeof(uint32_t) || !h.core_relo_len)
		return 0; /* no CO-RE relocations */
	const char *sec = ext + h.hdr_len + h.core_relo_off;
	size_t room = ext_len - h.hdr_len;
	if (h.core_relo_off > room || h.core_relo_len > room - h.core_relo_off || h.core_relo_len < 4)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "a BPF object's .BTF.ext: CO-RE records out of bounds");
	struct btf *local = btf__new(btf_data, (uint32_t)btf_len);
	if (!local)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "a BPF object's .BTF: %s", strerror(errno));
	uint32_t rec_size;
	memcpy(&rec_size, sec, 4);
	const char *p = sec + 4, *end = sec + h.core_relo_len;
	int rc = 0;
	if (rec_size < sizeof(struct ext_core_relo))
		rc = diag_fail(err, DIAG_EXIT_RUNTIME, "a BPF object's .BTF.ext: CO-RE records of %u bytes", rec_size);
	while (!rc && p + 8 <= end) {
		uint32_t num;
		memcpy(&num, p + 4, 4);
		p += 8;
		if ((size_t)(end - p) / rec_size < num) {
			rc = diag_fail(err, DIAG_EXIT_RUNTIME, "a BPF object's .BTF.ext: CO-RE records out of bounds");
			break;
		}
		for (uint32_t k = 0; k < num; k++, p += rec_size) {
			struct ext_core_relo r;
			memcpy(&r, p, sizeof(r));
			if (r.kind == RELO_TYPE_ID_LOCAL)
				continue;
			const struct btf_type *t = btf__type_by_id(local, r.type_id);
			const char *name = t ? btf__name_by_offset(local, t->name_off) : NULL;
			if (name && name[0])
				strset_add(roots, name, essential_len(name));
		}
	}
	btf__free(local);
	return rc;
}

/* ---- the cut ------------------------------------------------------------------------------------ */

enum keep { KEEP_NONE, KEEP_SHELL, KEEP_WHOLE };

struct cut {
	const struct kernel_btf *kernel;
	uint8_t *keep;   /* per kernel type id */
	uint32_t *todo;  /* (id << 1 | whole) */
	size_t n_todo, cap_todo;
};

static void want(struct cut *c, uint32_t id, enum keep level)
{
	if (!id || id >= c->kernel->n || c->keep[id] >= level)
		return;
	if (c->n_todo == c->cap_todo)
		c->todo = xrealloc(c->todo, (c->cap_todo = c->cap_todo ? c->cap_todo * 2 : 1024) * sizeof(*c->todo));
	c->todo[c->n_todo++] = id << 1 | (level == KEEP_WHOLE);
}

/* Keeps id at level, and what it needs: see the file's comment. */
static void keep_type(struct cut *c, uint32_t id, enum keep level)
{
	const struct btf_type *t = kernel_btf_type(c->kernel, id);
	if (!t || c->keep[id] >= level)
		return;
	bool composite = btf_is_struct(t) || btf_is_union(t);
	c->keep[id] = composite ? level : KEEP_WHOLE;
	if (composite) {
		if (level == KEEP_WHOLE) {
			const struct btf_member *m = btf_members(t);
			for (unsigned i = 0; i < btf_vlen(t); i++)
				want(c, m[i].type, KEEP_WHOLE);
		}
		return;
	}
	switch (btf_kind(t)) {
	case BTF_KIND_PTR:
		want(c, t->type, KEEP_SHELL);
		break;
	case BTF_KIND_ARRAY:
		want(c, btf_array(t)->type, level);
		want(c, btf_array(t)->index_type, level);
		break;
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
		want(c, t->type, level);
		break;
	case BTF_KIND_FUNC_PROTO: {
		want(c, t->type, KEEP_SHELL);
		const struct btf_param *pa = btf_params(t);
		for (unsigned i = 0; i < btf_vlen(t); i++)
			want(c, pa[i].type, KEEP_SHELL);
		break;
	}
	default: /* int, enum, enum64, float, fwd: leaves */
		break;
	}
}

/* Kinds a relocation may start from (not functions, variables, sections, tags). */
static bool root_kind(const struct btf_type *t)
{
	switch (btf_kind(t)) {
	case BTF_KIND_FUNC:
	case BTF_KIND_VAR:
	case BTF_KIND_DATASEC:
	case BTF_KIND_DECL_TAG:
		return false;
	default:
		return true;
	}
}

/* ---- writing the kept types as raw BTF ------------------------------------------------------- */

struct blob {
	uint8_t *bytes;
	size_t len, cap;
};

static void *blob_put(struct blob *b, const void *src, size_t len)
{
	if (b->len + len > b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16384;
		while (b->cap < b->len + len)
			b->cap *= 2;
		b->bytes = xrealloc(b->bytes, b->cap);
	}
	void *at = b->bytes + b->len;
	memcpy(at, src, len);
	b->len += len;
	return at;
}

/* The writer: types and strings of the cut, each kernel string copied once (the kernel's strings
 * are unique, so its offset is the key). */
struct writer {
	const struct kernel_btf *kernel;
	const uint32_t *new_id; /* per kernel id: its id in the cut, 0 when not kept */
	struct blob types, strs;
	uint32_t *str_key, *str_val; /* kernel offset + 1 -> cut offset (open addressing, at most
				      * half full: sized to the names the kept types can have) */
	size_t str_slots;
};

static uint32_t copy_str(struct writer *w, uint32_t off)
{
	if (!off)
		return 0;
	size_t j = ((off + 1) * 2654435761u) & (w->str_slots - 1);
	for (; w->str_key[j]; j = (j + 1) & (w->str_slots - 1))
		if (w->str_key[j] == off + 1)
			return w->str_val[j];
	const char *s = kernel_btf_name(w->kernel, off);
	uint32_t at = (uint32_t)w->strs.len;
	blob_put(&w->strs, s ? s : "", (s ? strlen(s) : 0) + 1);
	w->str_key[j] = off + 1, w->str_val[j] = at;
	return at;
}

static uint32_t renumber(const struct writer *w, uint32_t old)
{
	return old < w->kernel->n ? w->new_id[old] : 0;
}

/* Writes kernel type id as kept (a shell: name, kind, size; whole: its record with its names
 * and references made the cut's): 0, or -1 for a kind a cut cannot hold. */
static int write_type(struct writer *w, uint32_t id, enum keep level)
{
	const struct btf_type *t = kernel_btf_type(w->kernel, id);
	if (level == KEEP_SHELL) {
		struct btf_type shell = { .name_off = copy_str(w, t->name_off),
					  .info = (uint32_t)btf_kind(t) << 24, .size = t->size };
		blob_put(&w->types, &shell, sizeof(shell));
		return 0;
	}
	size_t at = w->types.len;
	blob_put(&w->types, t, kernel_btf_record_size(t));
	struct btf_type *m = (struct btf_type *)(w->types.bytes + at);
	m->name_off = copy_str(w, t->name_off);
	switch (btf_kind(m)) {
	case BTF_KIND_INT:
	case BTF_KIND_FLOAT:
	case BTF_KIND_FWD:
		break;
	case BTF_KIND_PTR:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
		m->type = renumber(w, m->type);
		break;
	case BTF_KIND_ARRAY:
		btf_array(m)->type = renumber(w, btf_array(m)->type);
		btf_array(m)->index_type = renumber(w, btf_array(m)->index_type);
		break;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		for (unsigned i = 0; i < btf_vlen(m); i++) {
			struct btf_member *f = btf_members(m) + i;
			f->name_off = copy_str(w, f->name_off);
			f->type = renumber(w, f->type);
		}
		break;
	case BTF_KIND_ENUM:
		for (unsigned i = 0; i < btf_vlen(m); i++)
			btf_enum(m)[i].name_off = copy_str(w, btf_enum(m)[i].name_off);
		break;
	case BTF_KIND_ENUM64:
		for (unsigned i = 0; i < btf_vlen(m); i++)
			btf_enum64(m)[i].name_off = copy_str(w, btf_enum64(m)[i].name_off);
		break;
	case BTF_KIND_FUNC_PROTO:
		m->type = renumber(w, m->type);
		for (unsigned i = 0; i < btf_vlen(m); i++) {
			btf_params(m)[i].name_off = copy_str(w, btf_params(m)[i].name_off);
			btf_params(m)[i].type = renumber(w, btf_params(m)[i].type);
		}
		break;
	default:
		return -1;
	}
	return 0;
}

/* The kept types as raw BTF (header, types, strings) written to fd: 0, or -1 with err. */
static int write_cut(const struct cut *c, int fd, size_t *bytes, struct diag_err *err)
{
	uint32_t n = c->kernel->n, next = 1;
	uint32_t *new_id = xcalloc(n, sizeof(*new_id));
	size_t names = 0; /* a type's name and its members', params' or values' at most */
	for (uint32_t id = 1; id < n; id++)
		if (c->keep[id]) {
			new_id[id] = next++;
			names += 1 + btf_vlen(kernel_btf_type(c->kernel, id));
		}
	struct writer w = { .kernel = c->kernel, .new_id = new_id, .str_slots = 64 };
	while (w.str_slots < 2 * names)
		w.str_slots *= 2;
	w.str_key = xcalloc(w.str_slots, sizeof(*w.str_key));
	w.str_val = xcalloc(w.str_slots, sizeof(*w.str_val));
	blob_put(&w.strs, "", 1);
	int rc = 0;
	for (uint32_t id = 1; id < n && !rc; id++)
		if (c->keep[id] && write_type(&w, id, c->keep[id]))
			rc = diag_fail(err, DIAG_EXIT_RUNTIME, "the kernel's type %u: kind %u kept in the cut", id,
				       btf_kind(kernel_btf_type(c->kernel, id)));
	struct btf_header h = { .magic = BTF_MAGIC, .version = BTF_VERSION, .hdr_len = sizeof(h),
				.type_off = 0, .type_len = (uint32_t)w.types.len,
				.str_off = (uint32_t)w.types.len, .str_len = (uint32_t)w.strs.len };
	const struct { const void *p; size_t len; } parts[] = {
		{ &h, sizeof(h) }, { w.types.bytes, w.types.len }, { w.strs.bytes, w.strs.len },
	};
	for (size_t i = 0; i < 3 && !rc; i++)
		if (write_full(fd, parts[i].p, parts[i].len) != parts[i].len)
			rc = diag_fail(err, DIAG_EXIT_RUNTIME, "writing the cut BTF: %s", strerror(errno));
	*bytes = sizeof(h) + w.types.len + w.strs.len;
	free(w.types.bytes);
	free(w.strs.bytes);
	free(w.str_key);
	free(w.str_val);
	free(new_id);
	return rc;
}

int core_btf_build(const struct kernel_btf *kernel, const struct core_btf_obj *objs, size_t n,
		   struct core_btf *out, struct diag_err *err)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	struct strset roots = { 0 };
	for (size_t i = 0; i < n; i++)
		if (add_roots(&objs[i], &roots, err)) {
			strset_free(&roots);
			return -1;
		}
	struct cut c = { .kernel = kernel, .keep = xcalloc(kernel->n ? kernel->n : 1, 1) };
	for (uint32_t id = 1; id < kernel->n; id++) {
		const struct btf_type *t = kernel_btf_type(kernel, id);
		const char *name = t->name_off ? kernel_btf_name(kernel, t->name_off) : NULL;
		if (name && name[0] && root_kind(t) && strset_has(&roots, name, essential_len(name)))
			want(&c, id, KEEP_WHOLE);
	}
	strset_free(&roots);
	while (c.n_todo) {
		uint32_t v = c.todo[--c.n_todo];
		keep_type(&c, v >> 1, v & 1 ? KEEP_WHOLE : KEEP_SHELL);
	}
	free(c.todo);
	unsigned kept = 0;
	for (uint32_t id = 1; id < kernel->n; id++)
		kept += c.keep[id] != KEEP_NONE;
	int fd = memfd_create("diagnose-core-btf", MFD_CLOEXEC);
	size_t bytes = 0;
	int rc = fd < 0 ? diag_fail(err, DIAG_EXIT_RUNTIME, "a memfd for the cut BTF: %s", strerror(errno))
			: write_cut(&c, fd, &bytes, err);
	free(c.keep);
	if (rc) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	out->fd = fd;
	snprintf(out->path, sizeof(out->path), "/proc/self/fd/%d", fd);
	out->types = kept;
	out->kernel_types = kernel->n ? kernel->n - 1 : 0;
	out->bytes = bytes;
	return 0;
}

void core_btf_close(struct core_btf *b)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	b->path[0] = '\0';
}
