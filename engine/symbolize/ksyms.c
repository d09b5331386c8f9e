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
 * Names live in one arena, filled as the file is read in chunks (never whole: see ksyms_load).
 * The file lists the kernel's symbols in address order (each module's too): aliases of one
 * address are merged as they come, and the table is sorted only when an address goes back.
 */
#include "symbolize/ksyms.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/symbols.h"

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

/* Read in chunks, not whole: /proc/kallsyms is ~5 MB, of which the table keeps the text symbols'
 * names (~3 MB) and 16 bytes a symbol; a line longer than KSYMS_LINE_MAX (none is: the kernel's
 * names are at most 512 bytes) is skipped. */
#define KSYMS_CHUNK (64 << 10)
#define KSYMS_LINE_MAX 4096

/* The names, one after another, each '\0'-terminated. */
struct name_arena {
	char *p;
	size_t len, cap;
};

static uint32_t arena_put(struct name_arena *a, const char *name, size_t nlen, const char *mod, size_t mlen)
{
	size_t need = nlen + (mlen ? mlen + 1 : 0) + 1;
	if (a->len + need > a->cap) {
		while (a->len + need > a->cap)
			a->cap = a->cap ? a->cap * 2 : 256 << 10;
		a->p = xrealloc(a->p, a->cap);
	}
	uint32_t at = (uint32_t)a->len;
	memcpy(a->p + a->len, name, nlen);
	a->len += nlen;
	if (mlen) {
		a->p[a->len++] = ' ';
		memcpy(a->p + a->len, mod, mlen);
		a->len += mlen;
	}
	a->p[a->len++] = '\0';
	return at;
}

/* The table being read: the symbols so far, their names, and whether their addresses went back. */
struct ksyms_reading {
	struct ksyms *ks;
	size_t cap;
	struct name_arena names;
	bool unsorted;
};

/* One line of kallsyms, [line, eol): a text symbol is added (or replaces the alias of its
 * address just before it, when preferred); anything else is skipped. */
static void add_line(struct ksyms_reading *rd, const char *line, const char *eol)
{
	if (eol - line > KSYMS_LINE_MAX)
		return;
	char *q;
	uint64_t addr = strtoull(line, &q, 16);
	if (q == line || q + 3 > eol || q[0] != ' ' || q[2] != ' ')
		return;
	char type = q[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return;
	const char *name = q + 3, *tab = memchr(name, '\t', (size_t)(eol - name));
	size_t nlen = (size_t)((tab ? tab : eol) - name), mlen = tab ? (size_t)(eol - tab - 1) : 0;
	if (!nlen)
		return;
	uint32_t rank = is_end_marker(name, nlen)
				? KSYM_END_RANK
				: (uint32_t)leading_underscores(name) * 4 + (type == 'T' ? 0 : type == 't' ? 1 : 2);
	struct ksyms *ks = rd->ks;
	struct ksym sym = { .addr = addr, .size = rank,
			    .name = arena_put(&rd->names, name, nlen, tab ? tab + 1 : NULL, mlen) };
	if (ks->n && addr == ks->syms[ks->n - 1].addr && !rd->unsorted) {
		/* an alias of the last address: kept only when preferred (the sort's order) */
		if (ksym_cmp(&sym, &ks->syms[ks->n - 1], rd->names.p) < 0)
			ks->syms[ks->n - 1] = sym;
		return;
	}
	if (ks->n && addr < ks->syms[ks->n - 1].addr)
		rd->unsorted = true;
	if (ks->n == rd->cap)
		ks->syms = xrealloc(ks->syms, (rd->cap = rd->cap ? rd->cap * 2 : 65536) * sizeof(*ks->syms));
	ks->syms[ks->n++] = sym;
}

struct ksyms *ksyms_load(const char *path, struct diag_err *err)
{
	if (!path)
		path = "/proc/kallsyms";
	int fd = open_regular(path);
	if (fd < 0) {
		diag_fail(err, DIAG_EXIT_RUNTIME, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	struct ksyms_reading rd = { .ks = xcalloc(1, sizeof(struct ksyms)) };
	struct ksyms *ks = rd.ks;
	size_t have = 0;
	bool skipping = false; /* inside a line too long to keep */
	char *buf = xmalloc(KSYMS_CHUNK + KSYMS_LINE_MAX);
	for (;;) {
		ssize_t got = read(fd, buf + have, KSYMS_CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			diag_fail(err, DIAG_EXIT_RUNTIME, "cannot read %s: %s", path, strerror(errno));
			free(buf);
			free(rd.names.p);
			close(fd);
			ksyms_free(ks);
			return NULL;
		}
		have += (size_t)got;
		char *p = buf, *end = buf + have;
		for (char *nl; (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
			if (!skipping)
				add_line(&rd, p, nl);
			skipping = false;
		}
		if (got == 0) { /* the last line, without its newline */
			if (p < end && !skipping)
				add_line(&rd, p, end);
			break;
		}
		have = (size_t)(end - p);
		if (have >= KSYMS_LINE_MAX) { /* no newline in sight: dropped, to its end */
			skipping = true;
			have = 0;
		}
		memmove(buf, p, have);
	}
	close(fd);
	free(buf);
	ks->names = rd.names.p ? xrealloc(rd.names.p, rd.names.len) : xcalloc(1, 1);
	int nonzero = 0;
	for (size_t i = 0; i < ks->n && !nonzero; i++)
		nonzero = ks->syms[i].addr != 0;
	if (!ks->n || !nonzero) {
		diag_fail(err, DIAG_EXIT_RUNTIME,
			  ks->n ? "%s: kernel symbol addresses are hidden (all zero): needs "
				  "CAP_SYSLOG (root); see kernel.kptr_restrict"
				: "%s: no kernel text symbols",
			  path);
		ksyms_free(ks);
		return NULL;
	}
	if (rd.unsorted) /* (in order, the aliases were merged as they came) */
		sort_in_place(ks->syms, ks->n, sizeof(*ks->syms), ksym_cmp, ks->names);
	ks->syms = xrealloc(ks->syms, ks->n * sizeof(*ks->syms));
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
