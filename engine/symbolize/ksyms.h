/* ksyms.h — turning kernel instruction addresses into function names.
 *
 * Owns: kernel symbols from /proc/kallsyms (or a file of its format), and looking an address up
 * in them.
 * Must not: guess. An address no symbol contains has no name (NULL), never a neighbour's.
 */
#ifndef DIAG_KSYMS_H
#define DIAG_KSYMS_H

#include <stdint.h>

#include "common/util.h"

struct ksyms;

/* Loads kallsyms (path NULL = /proc/kallsyms). Addresses all zero (kptr_restrict) is an error. */
struct ksyms *ksyms_load(const char *path, struct diag_err *err);
/* Function containing addr, or NULL. *offset (may be NULL) gets addr - symbol start.
 * Module functions are named "function [module]". */
const char *ksyms_lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset);
void ksyms_free(struct ksyms *ks);

#endif
