/* ksyms.c — kernel symbols (kallsyms).
 *
 * Owns: the sorted kernel symbol table and its lookups.
 * Must not: print, hold global state, or return the name of a symbol that does not contain the
 * address (no "nearest symbol" guessing).
 *
 * Choices: only t/T/w/W symbols. A symbol ends where the next one starts; the last symbol of a
 * module (or of the whole table) extends at most KSYM_TAIL bytes; the section end markers
 * (_etext, _einittext, *_text_end) cover nothing. Module symbols are named "name [mod]".
 * Symbols at the same address: the one with the fewest leading underscores wins, then global.
 * Names live in one arena: the file buffer itself, compacted in place.
 */
#include "ksyms.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

#define KSYM_TAIL (64 * 1024) /* how far the last symbol of a module may extend */
#define KSYM_END_RANK 0xffff  /* rank of section end markers: lose against any real symbol */

struct ksym {
	uint64_t addr;
	uint32_t size; /* while loading: rank (lower is preferred) */
	uint32_t name; /* offset into names */
};

struct ksyms {
	struct ksym *syms;
	size_t n;
	char *names;
};

static int is_end_marker(const char *name, size_t len)
{
	static const char suffix[] = "_text_end";
	size_t sl = sizeof(suffix) - 1;
	return (len == 6 && !memcmp(name, "_etext", 6)) ||
	       (len == 10 && !memcmp(name, "_einittext", 10)) ||
	       (len >= sl && !memcmp(name + len - sl, suffix, sl));
}

static int ksym_cmp(const void *a, const void *b, void *names)
{
	const struct ksym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return strcmp((char *)names + x->name, (char *)names + y->name);
}

/* Module part of a stored name ("[mod]"), or "" for the core kernel. */
static const char *ksym_module(const char *name)
{
	const char *sp = strchr(name, ' ');
	return sp ? sp + 1 : "";
}

struct ksyms *ksyms_load(const char *path, struct diag_err *err)
{
	if (!path)
		path = "/proc/kallsyms";
	size_t len;
	char *buf = read_file(path, &len);
	if (!buf) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	struct ksyms *ks = xcalloc(1, sizeof(*ks));
	size_t cap = 0, w = 0; /* w: write position of the name arena, always <= read position */
	int nonzero = 0;
	for (char *p = buf, *end = buf + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *eol = nl ? nl : end, *q;
		char *line = p;
		p = eol + 1;
		uint64_t addr = strtoull(line, &q, 16);
		if (q == line || q + 3 > eol || q[0] != ' ' || q[2] != ' ')
			continue;
		char type = q[1];
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		char *name = q + 3, *tab = memchr(name, '\t', (size_t)(eol - name));
		size_t nlen = (size_t)((tab ? tab : eol) - name), mlen = tab ? (size_t)(eol - tab - 1) : 0;
		if (!nlen)
			continue;
		uint32_t rank = is_end_marker(name, nlen)
					? KSYM_END_RANK
					: (uint32_t)leading_underscores(name) * 4 + (type == 'T' ? 0 : type == 't' ? 1 : 2);
		if (ks->n == cap)
			ks->syms = xrealloc(ks->syms, (cap = cap ? cap * 2 : 65536) * sizeof(*ks->syms));
		ks->syms[ks->n++] = (struct ksym){ .addr = addr, .size = rank, .name = (uint32_t)w };
		nonzero |= addr != 0;
		memmove(buf + w, name, nlen); /* the written name is shorter than its line: no clobber */
		w += nlen;
		if (mlen) {
			buf[w++] = ' ';
			memmove(buf + w, tab + 1, mlen);
			w += mlen;
		}
		buf[w++] = '\0';
	}
	ks->names = xrealloc(buf, w ? w : 1);
	if (!ks->n || !nonzero) {
		diag_fail(err, DIAG_EXIT_RUNTIME,
			  ks->n ? "%s: kernel symbol addresses are hidden (all zero): needs "
				  "CAP_SYSLOG (root); see kernel.kptr_restrict"
				: "%s: no kernel text symbols",
			  path);
		ksyms_free(ks);
		return NULL;
	}
	qsort_r(ks->syms, ks->n, sizeof(*ks->syms), ksym_cmp, ks->names);
	/* Keep the preferred symbol of each address; then each one ends where the next begins. */
	size_t k = 0;
	for (size_t i = 0; i < ks->n; i++)
		if (!k || ks->syms[i].addr != ks->syms[k - 1].addr)
			ks->syms[k++] = ks->syms[i];
	ks->n = k;
	for (size_t i = 0; i < k; i++) {
		struct ksym *s = &ks->syms[i];
		uint64_t size = KSYM_TAIL;
		if (s->size == KSYM_END_RANK)
			size = 0;
		else if (i + 1 < k) {
			uint64_t gap = s[1].addr - s->addr;
			int same = !strcmp(ksym_module(ks->names + s->name),
					   ksym_module(ks->names + s[1].name));
			size = same || gap < size ? gap : size;
		}
		s->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	}
	return ks;
}

const char *ksyms_lookup(const struct ksyms *ks, uint64_t addr, uint64_t *offset)
{
	if (!ks)
		return NULL;
	size_t after = upper_bound_u64(ks->syms, ks->n, sizeof(ks->syms[0]), offsetof(struct ksym, addr), addr);
	if (!after) /* below the first symbol */
		return NULL;
	const struct ksym *s = &ks->syms[after - 1];
	if (addr - s->addr >= s->size)
		return NULL;
	if (offset)
		*offset = addr - s->addr;
	return ks->names + s->name;
}

void ksyms_free(struct ksyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->names);
	free(ks);
}
