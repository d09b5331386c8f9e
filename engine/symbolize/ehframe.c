/* ehframe.c — function ranges from .eh_frame FDEs (see ehframe.h).
 *
 * Owns: reading the .eh_frame_hdr search table (bounded by the segment and the file) for the
 * start of every FDE, and asking libdw for each FDE's range.
 * Must not: decode CFI instructions or pointer encodings beyond the table header (libdw does the
 * FDEs), print, or hold state; nor let a hostile file (a CIE whose rows every FDE shares, runs of
 * CFI no-ops) keep it busy: at most EHFRAME_MAX_NS of work per file, after which the remaining
 * FDEs get no range (their code stays "file+0xOFF", never a wrong name).
 */
#include "symbolize/ehframe.h"

#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define PE_UDATA4 0x03
#define PE_SDATA4 0x0b
#define PE_DATAREL 0x30

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int range_cmp(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The end of the FDE starting at loc (loc when none does). libdw gives the range of one row of
 * the CFA table at a time (dwarf_frame_info), the last row ending where the FDE ends: walk the
 * rows, each from the end of the one before, until an address no row starts at (no FDE covers
 * it) or limit, the next FDE's start in the table (rows run on seamlessly into an adjacent FDE). At most EHFRAME_MAX_ROWS
 * rows: a longer function ends at the last row read (its remaining rows go unnamed). */
#define EHFRAME_MAX_ROWS 4096
static Dwarf_Addr fde_end(Dwarf_CFI *cfi, Dwarf_Addr loc, Dwarf_Addr limit, uint64_t deadline)
{
	Dwarf_Addr at = loc;
	for (int rows = 0; rows < EHFRAME_MAX_ROWS && at < limit; rows++) {
		if ((rows & 63) == 63 && mono_ns() > deadline)
			return loc; /* out of time: this FDE gets no range */
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr start, end;
		int ok = dwarf_cfi_addrframe(cfi, at, &frame) == 0 &&
			 dwarf_frame_info(frame, &start, &end, NULL) >= 0;
		free(frame);
		/* libdw may hand back a row that began before `at` (rows with the same rules
		 * run together): what matters is that it covers `at` and ends after it. */
		if (!ok || start > at || end <= at)
			break;
		at = end;
	}
	return at < limit ? at : limit;
}

size_t ehframe_ranges(Elf *elf, struct fde_range **out)
{
	GElf_Ehdr eh;
	size_t nph, file_size = 0;
	const unsigned char *raw;
	*out = NULL;
	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_DATA] != ELFDATA2LSB || elf_getphdrnum(elf, &nph) ||
	    !(raw = (const unsigned char *)elf_rawfile(elf, &file_size)))
		return 0;
	GElf_Phdr ph = { 0 };
	int found = 0;
	for (size_t i = 0; i < nph && !found; i++)
		found = gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME;
	if (!found || ph.p_offset > file_size || ph.p_filesz > file_size - ph.p_offset || ph.p_filesz < 12)
		return 0;
	const unsigned char *hdr = raw + ph.p_offset;
	/* version, eh_frame_ptr encoding (a 4-byte one), count encoding, table encoding */
	if (hdr[0] != 1 || ((hdr[1] & 0x0f) != PE_UDATA4 && (hdr[1] & 0x0f) != PE_SDATA4) ||
	    hdr[2] != PE_UDATA4 || hdr[3] != (PE_DATAREL | PE_SDATA4))
		return 0;
	size_t count = le32(hdr + 8);
	if (count > (ph.p_filesz - 12) / 8)
		count = (ph.p_filesz - 12) / 8;
	if (count > EHFRAME_MAX_FDES)
		count = EHFRAME_MAX_FDES;
	Dwarf_CFI *cfi = count ? dwarf_getcfi_elf(elf) : NULL;
	if (!cfi)
		return 0;
	struct fde_range *r = xmalloc(count * sizeof(*r));
	size_t n = 0;
	uint64_t deadline = mono_ns() + EHFRAME_MAX_NS;
	for (size_t i = 0; i < count && ((i & 255) || mono_ns() <= deadline); i++) {
		Dwarf_Addr loc = ph.p_vaddr + (uint64_t)(int64_t)(int32_t)le32(hdr + 12 + 8 * i);
		Dwarf_Addr next = i + 1 < count
				? ph.p_vaddr + (uint64_t)(int64_t)(int32_t)le32(hdr + 12 + 8 * (i + 1))
				: UINT64_MAX;
		Dwarf_Addr end = fde_end(cfi, loc, next > loc ? next : UINT64_MAX, deadline);
		if (end > loc)
			r[n++] = (struct fde_range){ loc, end };
	}
	dwarf_cfi_end(cfi);
	qsort(r, n, sizeof(*r), range_cmp);
	size_t k = 0; /* disjoint: a range overlapping the one before is dropped, not trimmed (its
		       * start would no longer be a function's entry) */
	for (size_t i = 0; i < n; i++)
		if (!k || r[i].start >= r[k - 1].end)
			r[k++] = r[i];
	if (!k) {
		free(r);
		return 0;
	}
	*out = r;
	return k;
}
