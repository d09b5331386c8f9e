/* heap_refs.h — which of a running process's heap blocks some word of its memory points into: a
 * block no word points to is unreferenced, the evidence of a leak (valgrind's "definitely lost",
 * found conservatively in production, for the allocations probe).
 *
 * Owns: choosing the memory that can hold a pointer (the private writable mappings: [heap],
 * [stack]s, anonymous ones, a file's .data and .bss, memfds), reading only its pages present in
 * memory (/proc/PID/pagemap first: an absent page read through /proc/PID/mem would be faulted in,
 * a swapped one swapped in), every aligned 8-byte word of them compared to the blocks (interior
 * pointers count, a word inside the block itself does not), where each pointing word lies (a
 * root, unlisted heap, another block), what is reachable from what, and saying what was not
 * scanned.
 * Every read of the target goes through the caller's tfile reader (its helper processes, its
 * deadline, its stop descriptor): a target holding its memory map's lock stalls a helper, never us.
 * The deadline and the stop descriptor are also looked at while what was read is scanned (every
 * HEAP_REFS_CHECK_WORDS words): the scan ends within a chunk, said as a stop.
 * Must not: read the target other than through tfile, read a page that is not present, read
 * shared or device mappings, write to the target, stop it, or judge what is a leak (the recipe's
 * Lua does, from the counts and the `complete` flag).
 *
 * Where each pointing word lies says what the reference is worth (heap_ref_block.from): outside
 * the heap (a stack, a global in a file's .data or .bss, an anonymous mapping holding none of the
 * listed blocks: a root), in heap memory that is in none of the listed blocks (a block the caller
 * does not know of: one its sampling skipped, one allocated before it looked), or in another
 * listed block (an edge, kept for heap_refs_reach). The heap is "[heap]" and every mapping that
 * holds a listed block. heap_refs_reach then marks, valgrind's way: reachable from a root
 * (in use), reachable only from unlisted heap memory (not known: an unlisted block may itself be
 * lost — a sampled leak's head is usually unlisted), or from neither (lost, directly or through
 * lost blocks only, cycles included).
 *
 * The blocks are whatever the caller's list says, and a target's own allocator may report any:
 * the work a word costs is bounded whatever they are (a few binary searches), not by how many
 * blocks lie around the address it holds. Where more than HEAP_REFS_MAX_DEPTH listed blocks lie
 * over one address (not a heap's shape: a few stale entries at most), those the index cannot
 * place are not decided: marked as pointed to from unlisted heap memory (not known, never
 * lost), and so is every block a word inside one of them points to; the stats count them and
 * `why` says so.
 *
 * Conservative, as valgrind's leak check is: a word that looks like a pointer is one (a stale
 * value, an integer that happens to fall in a block): blocks may be reported reachable that
 * leaked (under-reporting). What could make a block that is in use look lost (over-reporting),
 * and what the caller should do about it:
 * - The target runs while it is scanned: a pointer moved from a word not read yet to one read
 *   already is missed. Count a block lost only when a second scan agrees.
 * - A pointer held only in a register of a running thread, only by the kernel (epoll_event's
 *   data, io_uring's user_data, a timer's sigev_value), only in a shared mapping (shared_bytes) or
 *   in a form that is not the address (tagged, compressed, XOR-ed, an offset) is not seen.
 * - A block freed between the list and the scan (its address reused or unmapped): list the
 *   blocks still outstanding after the scan.
 * And the other way: an allocator's own metadata may point to the blocks it handed out (jemalloc's
 * extent of a large allocation points at its start): such blocks are always reachable.
 */
#ifndef DIAG_HEAP_REFS_H
#define DIAG_HEAP_REFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target/tfile.h"
#include "common/util.h"

/* What points into a block (heap_ref_block.from, a set): words outside it in ... */
enum {
	HEAP_FROM_ROOT = 1,  /* ... memory outside the heap: a stack, a global, an anonymous mapping
			      * that holds none of the listed blocks */
	HEAP_FROM_HEAP = 2,  /* ... heap memory in none of the listed blocks (or an edge past
			      * HEAP_REFS_MAX_EDGES: its holder not kept; or a block not decided, or a
			      * word inside one: see HEAP_REFS_MAX_DEPTH) */
	HEAP_FROM_BLOCK = 4, /* ... another listed block: an edge */
};

/* What a block is reachable from (heap_refs_reach). */
enum heap_reach {
	HEAP_REACH_NONE = 0, /* lost: no root, no unlisted heap memory leads to it */
	HEAP_REACH_HEAP = 1, /* only from unlisted heap memory: not known */
	HEAP_REACH_ROOT = 2, /* from a root: in use */
};

/* One heap block of the target: [addr, addr + size) (size 0 counts as one byte). */
struct heap_ref_block {
	uint64_t addr, size;
	uint8_t from; /* set by heap_refs_scan: HEAP_FROM_* (0: no word outside it points into it) */
};

/* A word of listed block `from` points into listed block `to` (the caller's indexes). */
struct heap_ref_edge {
	uint32_t from, to;
};
/* The edges one scan found: zeroed by the caller, filled by heap_refs_scan, freed by
 * heap_refs_edges_free. */
struct heap_ref_edges {
	struct heap_ref_edge *v;
	size_t n, cap;
	uint64_t dropped; /* edges past HEAP_REFS_MAX_EDGES: their targets marked HEAP_FROM_HEAP */
};
#define HEAP_REFS_MAX_EDGES ((size_t)1 << 20) /* 8 MiB */
/* Listed blocks over one address that the scan tells apart: a word is looked up by one binary
 * search per layer of non-overlapping blocks, at most this many layers; a block that would need
 * one more is not decided (HEAP_FROM_HEAP). A heap's blocks fill one layer, stale entries over
 * them the next few. */
#define HEAP_REFS_MAX_DEPTH 8

struct heap_scan_stats {
	uint64_t scanned_bytes;    /* resident private writable memory read and scanned */
	uint64_t mappings;         /* private writable mappings examined */
	uint64_t swapped_bytes;    /* their pages swapped out: not read (reading would swap them in) */
	uint64_t zero_bytes;       /* their pages mapping the zero page: not read (all zeros) */
	uint64_t shared_bytes;     /* shared writable mappings (rw-s): not scanned */
	uint64_t device_bytes;     /* private writable mappings of /dev, /sys or /proc files: not read */
	uint64_t unread_bytes;     /* present pages whose read failed (the mapping went away) */
	uint64_t capped_bytes;     /* present pages over max_scan_bytes: not read */
	uint64_t unexamined_bytes; /* mappings (their size) whose pages were not even listed: a stop,
				    * the deadline, a stall, or HEAP_REFS_MAX_ENTRY_PAGES */
	uint64_t referenced;       /* blocks some word outside them points into (the undecided ones
				    * counted too) */
	uint64_t undecided;        /* blocks not decided: over HEAP_REFS_MAX_DEPTH others at an address
				    * (marked HEAP_FROM_HEAP: not known) */
	uint64_t looked_up;        /* words that passed the filters and were looked up among the blocks */
	uint64_t index_steps;      /* the scan's work: index entries examined for them (binary search
				    * probes, a cursor's steps) */
	uint64_t stopped_at;       /* where a stop (the deadline, a stop signal, a stall) cut the scan:
				    * the first address not scanned; 0: none did */
	bool complete;             /* every page that could hold a pointer was scanned: no swapped,
				    * device, unread, capped or unexamined bytes */
	char why[160];             /* when not complete, or blocks were not decided: one line saying
				    * what was not scanned or decided */
	uint64_t elapsed_ns;
};

/* Memory is read in chunks of this size (each a round trip to a helper of the reader). */
#define HEAP_REFS_CHUNK_BYTES ((size_t)4 << 20)
/* Words scanned between two looks at the reader's deadline and stop descriptor (besides those
 * before each read): 128 KiB, a millisecond on a heap, tens at most (a word's work is bounded). */
#define HEAP_REFS_CHECK_WORDS ((size_t)1 << 14)
/* On kernels without PAGEMAP_SCAN (before 6.7) the page tables are listed by reading 8 bytes of
 * /proc/PID/pagemap per page of a mapping, present or not (measured: 4 ns a page): at most this
 * many pages a scan, 1 TiB of mappings with 4 KiB pages, about a second (a sanitizer's shadow
 * reserves terabytes). */
#define HEAP_REFS_MAX_ENTRY_PAGES ((uint64_t)1 << 28)

/* Sets blocks[i].from for the n blocks of process pid (any order; they are not reordered) and
 * appends the edges between them to *edges, reading at most max_scan_bytes of its memory (0: no
 * cap; the reader's deadline bounds the scan either way). With st->complete false, a block not
 * marked may be referenced from what was not scanned. The reads are not counted in the reader's TFILE_MAX_READER_BYTES. Returns 0 with *st,
 * or -1 with err (code: enum tfile_fail) when nothing could be scanned (the process is gone, not
 * ours to read, its maps or page tables unreadable, the reader past its deadline or stopped). */
int heap_refs_scan(struct tfile_reader *r, int pid, struct heap_ref_block *blocks, size_t n,
		   uint64_t max_scan_bytes, struct heap_scan_stats *st, struct heap_ref_edges *edges,
		   struct diag_err *err);

/* From one scan's marks and edges, reach[i] (enum heap_reach) for each of the n blocks: a root
 * wins over unlisted heap memory; what neither leads to is lost. */
void heap_refs_reach(const struct heap_ref_block *blocks, size_t n, const struct heap_ref_edges *edges,
		     uint8_t *reach);

void heap_refs_edges_free(struct heap_ref_edges *edges);

#endif
