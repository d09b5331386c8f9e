/* perfmap.c — JIT symbols from perf map files (see perfmap.h).
 *
 * Owns: the parse (bounded lines and names), the sorted entry table with its name arena, and which
 * file is a process's perf map: /tmp/perf-NSPID.map inside its root, owned by it or root.
 * Must not: print, hold global state, open the file itself (tfile.c reads it: a regular file,
 * no symlink, on a worker that cannot stall us), trust it: names are cut at PERFMAP_MAX_NAME
 * bytes (the report writers escape them).
 */
#include "symbolize/perfmap.h"

#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target/tfile.h"
#include "common/util.h"

struct pm_entry {
	uint64_t start, end;
	size_t name, line; /* name: offset in names; line: order in the file (later wins) */
};

struct perfmap {
	struct pm_entry *e;
	size_t n;
	char *names;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Hex number at *p (optional 0x), advancing *p; -1 when there is none or it overflows. */
static int hex_u64(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	const char *digits = s;
	for (; s < end; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;
		if (d < 0)
			break;
		if (v >> 60)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	if (s == digits)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

struct perfmap *perfmap_parse(const char *text, size_t len, size_t max_lines)
{
	struct perfmap *pm = xcalloc(1, sizeof(*pm));
	size_t cap = 0, ncap = 0, nlen = 0, lines = 0;
	for (const char *p = text, *end = text + len; p < end && lines < max_lines; lines++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end, *q = p;
		p = nl ? nl + 1 : end;
		uint64_t start, size;
		if (hex_u64(&q, eol, &start) || q >= eol || *q++ != ' ' || hex_u64(&q, eol, &size) ||
		    q >= eol || *q++ != ' ' || !size || start + size < start || q >= eol)
			continue;
		size_t l = (size_t)(eol - q);
		if (l && q[l - 1] == '\r')
			l--;
		if (l > PERFMAP_MAX_NAME)
			l = PERFMAP_MAX_NAME;
		if (!l || memchr(q, '\0', l))
			continue;
		if (pm->n == cap)
			pm->e = xrealloc(pm->e, (cap = cap ? cap * 2 : 256) * sizeof(*pm->e));
		while (nlen + l + 1 > ncap)
			pm->names = xrealloc(pm->names, ncap = ncap ? ncap * 2 : 4096);
		memcpy(pm->names + nlen, q, l);
		pm->names[nlen + l] = '\0';
		pm->e[pm->n++] = (struct pm_entry){ start, start + size, nlen, lines };
		nlen += l + 1;
	}
	if (!pm->n)
		return pm;
	qsort(pm->e, pm->n, sizeof(*pm->e), entry_cmp);
	/* Disjoint, the later line winning: walk in start order, keeping a stack-free rule — an entry
	 * overlapping the kept one before it replaces it if later, else is trimmed or dropped. */
	size_t k = 0;
	for (size_t i = 0; i < pm->n; i++) {
		struct pm_entry cur = pm->e[i];
		while (k && cur.start < pm->e[k - 1].end) {
			struct pm_entry *prev = &pm->e[k - 1];
			if (cur.line > prev->line) { /* newer: the older one keeps its part before */
				if (prev->start < cur.start) {
					prev->end = cur.start;
					break;
				}
				k--;
			} else { /* older: only its part after the newer one */
				cur.start = prev->end;
				break;
			}
		}
		if (cur.start < cur.end)
			pm->e[k++] = cur;
	}
	pm->n = k;
	return pm;
}

/* The last number of the "NSpid:" line of /proc/PID/status (its pid where it lives), else pid. */
static int ns_pid(int pid)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	char *s = read_file(p, NULL), *line = s ? strstr(s, "\nNSpid:") : NULL;
	int ns = pid;
	if (line) {
		char *eol = strchr(line + 1, '\n'), *q = line + 7;
		for (;;) {
			char *e;
			long v = strtol(q, &e, 10);
			if (e == q || (eol && e > eol))
				break;
			if (v > 0 && v <= 0x3fffffff)
				ns = (int)v;
			q = e;
		}
	}
	free(s);
	return ns;
}

struct perfmap *perfmap_read(struct tfile_reader *r, int pid)
{
	char p[64];
	struct stat owner;
	snprintf(p, sizeof(p), "/proc/%d", pid);
	if (pid <= 0 || stat(p, &owner))
		return NULL;
	snprintf(p, sizeof(p), "/tmp/perf-%d.map", ns_pid(pid));
	/* its owner is checked before anything is read; a stall holds this process's file only */
	struct tfile_src src = { .pid = pid, .path = p, .resolve = RESOLVE_NO_SYMLINKS,
				 .dev = 1ull << 61 | (uint64_t)(unsigned)pid, .check_owner = true,
				 .owner = owner.st_uid };
	struct diag_err ignore;
	size_t len;
	char *text = tfile_read_text(r, &src, PERFMAP_MAX_BYTES, &len, NULL, &ignore);
	struct perfmap *pm = NULL;
	if (text)
		pm = perfmap_parse(text, len, PERFMAP_MAX_LINES);
	free(text);
	return pm;
}

const char *perfmap_lookup(const struct perfmap *pm, uint64_t addr)
{
	if (!pm)
		return NULL;
	size_t lo = 0, hi = pm->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pm->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= pm->e[lo - 1].end)
		return NULL;
	return pm->names + pm->e[lo - 1].name;
}

size_t perfmap_count(const struct perfmap *pm)
{
	return pm ? pm->n : 0;
}

void perfmap_free(struct perfmap *pm)
{
	if (!pm)
		return;
	free(pm->e);
	free(pm->names);
	free(pm);
}
