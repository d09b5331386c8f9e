/* diag_usdt.h — how a BPF program reads the arguments of a USDT probe site (SystemTap SDT notes:
 * PostgreSQL's query__start, Python's gc__start, ...), shared by the BPF side and the engine.
 *
 * Owns: the fetch plan of one site (struct diag_usdt_spec: per argument, a constant, a register,
 * or memory at a register or the instruction pointer plus an offset; its size and signedness), as
 * engine/symbolize/usdt.c writes it from the site's note and user space stores it in the probe's
 * `usdt_specs` array, the index being the uprobe's BPF cookie; and, on the BPF side (under
 * __BPF__), diag_usdt_spec() and diag_usdt_arg() that follow it.
 * Must not: know any provider's probes or what their arguments mean (the kinds that use it do).
 */
#ifndef DIAG_USDT_H
#define DIAG_USDT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define DIAG_USDT_MAX_ARGS 12 /* sys/sdt.h's limit */

enum diag_usdt_arg_kind {
	DIAG_USDT_ARG_NONE = 0,
	DIAG_USDT_ARG_CONST,     /* val_off is the value ("$8192") */
	DIAG_USDT_ARG_REG,       /* the register at reg_off of struct pt_regs ("%ebx") */
	DIAG_USDT_ARG_REG_DEREF, /* memory at that register + val_off ("-144(%rbp)") */
	DIAG_USDT_ARG_IP_DEREF,  /* memory at the site's address + val_off ("NBuffers(%rip)": the
				  * link-time distance from the site to the variable, so that the
				  * load address of the file cancels out) */
	DIAG_USDT_ARG_INDEX_DEREF, /* memory at reg + index_reg * scale + val_off
				    * ("8(%rax,%rdx,8)": an element of an array) */
};

struct diag_usdt_arg {
	__s64 val_off;
	__u16 reg_off;  /* offsetof(struct pt_regs, reg), the kernel's layout */
	__u8 kind;      /* enum diag_usdt_arg_kind */
	__u8 size;      /* 1, 2, 4 or 8 bytes */
	__u8 is_signed;
	__u8 index_off; /* INDEX_DEREF: offsetof(struct pt_regs, index register) */
	__u8 scale;     /* INDEX_DEREF: 1, 2, 4 or 8 */
	__u8 pad;
};

struct diag_usdt_spec {
	struct diag_usdt_arg args[DIAG_USDT_MAX_ARGS];
	__u32 nargs;
	__u32 probe; /* which of the kind's probes this site belongs to (the kind's own numbering) */
};

#ifdef __BPF__
/* The spec of the site that fired (the cookie is its index in the kind's usdt_specs array map,
 * which every kind using this header declares as below); NULL when there is none. */
#define DIAG_USDT_SPECS_MAP(max)                                                                  \
	struct {                                                                                  \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                                 \
		__uint(max_entries, max);                                                         \
		__type(key, __u32);                                                               \
		__type(value, struct diag_usdt_spec);                                             \
	} usdt_specs SEC(".maps")

static __always_inline const struct diag_usdt_spec *diag_usdt_spec(void *ctx, void *specs)
{
	__u32 idx = (__u32)bpf_get_attach_cookie(ctx);
	return bpf_map_lookup_elem(specs, &idx);
}

/* Argument i of the site, sized and sign-extended as the note says, in *out. 0, or -1 when the
 * site has no such argument or its memory could not be read. */
static __always_inline int diag_usdt_arg(struct pt_regs *ctx, const struct diag_usdt_spec *spec,
					 __u32 i, __s64 *out)
{
	if (i >= DIAG_USDT_MAX_ARGS || i >= spec->nargs)
		return -1;
	const struct diag_usdt_arg *a = &spec->args[i];
	__u64 v = 0;
	switch (a->kind) {
	case DIAG_USDT_ARG_CONST:
		*out = a->val_off;
		return 0;
	case DIAG_USDT_ARG_REG:
		if (bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + (a->reg_off & 0xff)))
			return -1;
		break;
	case DIAG_USDT_ARG_REG_DEREF:
		if (bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + (a->reg_off & 0xff)))
			return -1;
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(v + a->val_off)))
			return -1;
		break;
	case DIAG_USDT_ARG_INDEX_DEREF: {
		__u64 index = 0;
		if (bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + (a->reg_off & 0xff)) ||
		    bpf_probe_read_kernel(&index, sizeof(index), (char *)ctx + a->index_off))
			return -1;
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(v + index * (a->scale & 0xf) + a->val_off)))
			return -1;
		break;
	}
	case DIAG_USDT_ARG_IP_DEREF:
		v = PT_REGS_IP(ctx) + a->val_off;
		if (bpf_probe_read_user(&v, sizeof(v), (void *)v))
			return -1;
		break;
	default:
		return -1;
	}
	/* keep the low `size` bytes (little-endian: the value read first), sign-extended or not */
	__u32 shift = 64 - 8 * (a->size & 0xf);
	if (shift >= 64)
		shift = 0;
	v <<= shift;
	*out = a->is_signed ? ((__s64)v) >> shift : (__s64)(v >> shift);
	return 0;
}
#endif /* __BPF__ */

#endif
