/* usyms.h — turning user instruction addresses into function names.
 *
 * Owns: user symbols of one process from its /proc/PID/maps snapshots and the ELF symbol tables
 * of the mapped files (libelf, read once per cache that symbolizers may share): executables
 * (PIE or not), shared libraries, their separate debug files (debuginfo.h), C++ and Rust names
 * demangled (demangle.h), JIT code from the process's perf map (perfmap.h), and stripped code
 * grouped by the .eh_frame function it is in (ehframe.h); and the file offset of a function by
 * name (for uprobes).
 * Must not: guess. An address whose function cannot be known is rendered "module+0xSTART" (file
 * offset of the entry of the function an .eh_frame FDE says it is in), else "module+0xOFF" (file
 * offset of the address itself) or "[unknown]", never the name of a neighbouring symbol.
 */
#ifndef DIAG_USYMS_H
#define DIAG_USYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

struct usyms;
struct elf_cache;

/* The ELF files read for symbolizers that share them (one process's, or a set's: the processes of
 * one program map the same files, read once). Each symbolizer made in it holds a reference. */
struct tfile_reader;
struct tfile_image;
/* reader: how the files are read (tfile.h; shared, not owned); NULL: a reader of its own. */
struct elf_cache *elf_cache_new(struct tfile_reader *reader);
void elf_cache_release(struct elf_cache *c);
size_t elf_cache_files(const struct elf_cache *c); /* files seen so far */

/* A symbolizer for process pid. No I/O yet. */
struct usyms *usyms_new(int pid);
/* The same, reading its files into cache (NULL: a cache of its own). Not thread-safe across the
 * symbolizers of one cache: use them from one thread. */
struct usyms *usyms_new_in(int pid, struct elf_cache *cache);
/* Reads /proc/PID/maps and adds its file-backed executable mappings (call at start and at end of a
 * run; mappings seen in any snapshot are kept, the newest snapshot winning where they overlap),
 * then re-reads the process's perf map, if any. ELF files are opened through /proc/PID/map_files
 * (deleted or replaced files) or inside /proc/PID/root (another mount namespace) so that they
 * are read while the process is alive. Returns -1 (err set) if the maps cannot be read. */
int usyms_snapshot(struct usyms *us, struct diag_err *err);
/* The same from the text of a maps file (what usyms_snapshot reads): for tests, and for callers
 * that read the maps themselves. */
void usyms_snapshot_text(struct usyms *us, const char *maps);
/* For tests and for callers that know the layout: add a mapping by hand. */
void usyms_add_mapping(struct usyms *us, uint64_t start, uint64_t end, uint64_t file_offset,
		       const char *path);
/* A buffer of this size holds any name usyms_symbolize writes (demangled names longer than
 * this stay mangled; perf map names are cut shorter). */
#define USYM_NAME_MAX 1024

/* Writes the frame name for addr into buf: "function", "module+0xSTART" when the file has no
 * symbol for it but an .eh_frame FDE gives the function's entry, "module+0xOFF" when neither,
 * the perf map's name for code no file mapping covers (JIT), or "[unknown]". Returns 1 when a
 * real name was found (symbol or perf map), 0 otherwise. */
int usyms_symbolize(struct usyms *us, uint64_t addr, char *buf, size_t len);

/* Where a frame name came from. */
enum usym_source {
	USYM_SRC_NONE,      /* "[unknown]" or "module+0xOFF" */
	USYM_SRC_SYMTAB,    /* the mapped file's own .symtab or .dynsym */
	USYM_SRC_DEBUGINFO, /* its separate debug file (build-id or .gnu_debuglink) */
	USYM_SRC_PERFMAP,   /* /tmp/perf-PID.map (JIT code) */
	USYM_SRC_FDE,       /* "module+0xSTART": the function's entry, from .eh_frame */
};
/* usyms_symbolize, also telling where the name came from (*src; src may be NULL). */
int usyms_symbolize_src(struct usyms *us, uint64_t addr, char *buf, size_t len,
			enum usym_source *src);
/* The same for a return address (every frame of a stack but the sampled leaf): the function is
 * the one holding addr - 1, where the call is (a call to a noreturn function may end its
 * caller, so addr itself can be the next function's entry). "module+0xOFF" still shows addr. */
int usyms_symbolize_ret(struct usyms *us, uint64_t addr, char *buf, size_t len,
			enum usym_source *src);
void usyms_free(struct usyms *us);

/* The language runtime the process runs, from the files it maps (its snapshots so far): "jvm"
 * (libjvm.so), "node" (an executable or libnode.so named node or nodejs), or NULL. What a
 * report needs to say how its JIT code gets names. */
const char *usyms_runtime(const struct usyms *us);
/* The mapped file whose basename is base (the first one, in address order): its path as the
 * process names it and its "major:minor inode" (dev: major << 32 | minor). 0, or -1 when none. */
int usyms_mapped_file(const struct usyms *us, const char *base, const char **path, uint64_t *dev,
		      uint64_t *ino);
/* Entries of the process's perf map as last read (0: it has none, or none was readable). */
size_t usyms_perfmap_entries(const struct usyms *us);
/* The ELF file a frame points into, for a stripped one's hint (what would name it). */
struct usym_file {
	const char *path;     /* as the process maps it (valid while the symbolizer lives) */
	const char *base;     /* its base name, as "module+0xOFF" frames show it */
	const char *build_id; /* GNU build-id in hex; "" when it has none */
	int64_t vaddr_bias;   /* vaddr - file offset of its executable segment: OFF + this is the
			       * address objdump and perf show */
	bool in_our_root;     /* the same file (device and inode) is at path in our root: our
			       * package database speaks for it */
};
/* The loaded file mapped at addr (ret: a return address, as usyms_symbolize_ret): 0 and *out,
 * or -1 (no file mapping there, [vdso], not read). The first call for a file checks whether its
 * path in our root is the mapped file (one tfile_stat). */
int usyms_file_at(struct usyms *us, uint64_t addr, int ret, struct usym_file *out);

/* File offset of the defined function `name` (a sized STT_FUNC in .symtab or .dynsym) in the ELF
 * file at path (in our root; read by tfile.c, never blocking on it): where a uprobe goes. Fails (DIAG_EXIT_USAGE, err says why) when the file cannot
 * be read or is not ELF, or when the name is missing, ambiguous (several static functions),
 * only imported, not a function, an IFUNC, or of size 0. */
int elf_symbol_offset(const char *path, const char *name, uint64_t *offset, struct diag_err *err);
/* The same in an image read by tfile.c (uprobes go on the very file read); path: as shown. */
int elf_image_symbol_offset(struct tfile_image *img, const char *path, const char *name,
			    uint64_t *offset, struct diag_err *err);

#endif
