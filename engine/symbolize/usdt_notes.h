/* usdt_notes.h — the statically defined tracepoints of an ELF file (USDT: SystemTap SDT notes, which
 * PostgreSQL, Python, the JVM, Node.js, MySQL and glibc carry): where each probe site is, the
 * semaphore that enables it, and how to fetch each of its arguments.
 *
 * Owns: reading the .note.stapsdt notes of an image tfile.c read (through libelf, every size
 * checked against its section: a note that overruns it or lacks its strings is skipped and
 * counted, never trusted), the .stapsdt.base adjustment (a prelinked file), turning addresses
 * into file offsets (where a uprobe and its reference counter go), and parsing the x86-64
 * argument specifications ("-4@%ebx", "8@-144(%rbp)", "4@(%r12)", "1@$0", "8@(%rax,%rdx,8)",
 * "-4@40+CheckpointStats(%rip)") into the fetch plans of diag_usdt.h, the variables %rip operands
 * name found in an index of the file's symbols that only names an operand can hold go in (shorter
 * than USDT_SYM_MAX), within caps on their count and bytes: a crafted table of long or many names
 * costs a bounded sort.
 * Must not: open files, attach anything, or print: errors are returned.
 */
#ifndef DIAG_USDT_NOTES_H
#define DIAG_USDT_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/diag_usdt.h"
#include "common/util.h"

#define USDT_NAME_MAX 64   /* a provider's or a probe's name, NUL included */
#define USDT_ARGS_TEXT_MAX 256
#define USDT_SYM_MAX 96     /* a symbol an operand names, NUL included (longer: refused) */
#define USDT_SYM_INDEX_MAX (4u << 20)        /* symbols indexed for the operands, at most */
#define USDT_SYM_INDEX_BYTES ((size_t)32 << 20) /* and their names' bytes (NULs included) */
#define USDT_MAX_SITES 4096 /* of one file (PostgreSQL 15: 71; a JVM: ~500) */

struct usdt_site {
	char provider[USDT_NAME_MAX], name[USDT_NAME_MAX];
	uint64_t vaddr;       /* the site's address as the file links it */
	uint64_t offset;      /* its file offset: where the uprobe goes */
	uint64_t sema_vaddr;  /* its semaphore (0: none) */
	uint64_t sema_offset; /* the semaphore's file offset: the uprobe's reference counter */
	char args_text[USDT_ARGS_TEXT_MAX]; /* as the note gives it ("" for none) */
	struct diag_usdt_spec spec;         /* the fetch plan, when args_ok */
	bool args_ok;         /* every argument can be fetched; else spec.nargs are, those first */
	char args_error[128]; /* why the arguments cannot be fetched, when !args_ok */
};

struct usdt_notes {
	struct usdt_site *sites;
	size_t n;
	size_t skipped; /* malformed notes, sites outside every loadable segment, beyond the cap */
	/* the index of the variables %rip operands name, built at the first such operand: */
	size_t sym_indexed;     /* symbols it holds (0: not built) */
	size_t sym_name_bytes;  /* their names' bytes, NULs included */
	size_t sym_too_long;    /* names no operand can name (USDT_SYM_MAX or longer): not indexed */
	size_t sym_cut;         /* symbols from the one that would pass USDT_SYM_INDEX_MAX or
				 * USDT_SYM_INDEX_BYTES to the end of its table: not looked at, nor
				 * .dynsym after .symtab (an operand naming one is not fetched, and
				 * says so) */
};

struct tfile_image;

/* The USDT sites of the ELF image (path: for messages). A file without notes gives n == 0.
 * -1 with err (DIAG_EXIT_USAGE) when the image is not a 64-bit x86-64 ELF file. */
int usdt_read_notes(struct tfile_image *img, const char *path, struct usdt_notes *out,
		    struct diag_err *err);
void usdt_notes_free(struct usdt_notes *n);

/* Sites of provider:name (provider NULL: any), in note order: their indexes into n->sites,
 * at most max; returns how many there are (may exceed max). */
size_t usdt_find(const struct usdt_notes *n, const char *provider, const char *name, size_t *idx,
		 size_t max);

/* ---- pure parsers (no files), exposed for the unit tests ---------------------------------- */

/* Looks a symbol up: its link-time address in *addr; false when there is none (or several). */
typedef bool (*usdt_sym_lookup)(void *arg, const char *name, uint64_t *addr);

/* Parses one site's argument text (space-separated "[-]SIZE@OPERAND") into spec; site_vaddr
 * makes %rip operands relative to the site. 0, or -1 with why (the offending argument named);
 * on -1, spec->nargs counts the arguments before it, which can still be fetched. */
int usdt_parse_args(const char *text, uint64_t site_vaddr, usdt_sym_lookup lookup, void *arg,
		    struct diag_usdt_spec *spec, char *why, size_t why_len);

/* offsetof(struct pt_regs, REG) for an x86-64 register name without '%' ("ebx", "r15d", "al",
 * "rip" is not one): -1 when unknown or not fetchable (the high bytes ah..dh). */
int usdt_x86_reg_offset(const char *name);

#endif
