/* ehframe.h — where the functions of an ELF file start and end when it has no symbols for them.
 *
 * Owns: the function ranges [start, end) (link-time addresses) of the FDEs of a file's .eh_frame,
 * found through the binary-search table of its .eh_frame_hdr (PT_GNU_EH_FRAME) and read by
 * elfutils libdw (dwarf_cfi_addrframe, dwarf_frame_info): what lets a stripped binary's samples
 * be grouped by function ("file+0xSTART", the function's entry).
 * Must not: parse CFI itself (libdw does), guess a range no FDE gives, or print.
 */
#ifndef DIAG_EHFRAME_H
#define DIAG_EHFRAME_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct fde_range {
	uint64_t start, end;
};

/* The FDE ranges of elf, sorted by start and disjoint, into *out (malloc'ed; NULL when none).
 * Returns how many; 0 when the file has no .eh_frame_hdr table in the encoding linkers write
 * (version 1, a udata4 count, datarel|sdata4 entries) or the table is outside the file. At most
 * EHFRAME_MAX_FDES are read, for at most EHFRAME_MAX_NS (libLLVM's 95,000 FDEs take ~0.3 s). */
#define EHFRAME_MAX_FDES ((size_t)1 << 22)
#define EHFRAME_MAX_NS (1500ull * 1000 * 1000)
size_t ehframe_ranges(Elf *elf, struct fde_range **out);

#endif
