/* show_usdt.c — `diagnose show --usdt BINARY [--pid PID] [--json]`: the USDT probes a binary
 * carries, as a recipe names them (provider:name), with their sites, semaphores and arguments,
 * and whether diagnose can fetch those arguments (and why not).
 *
 * Owns: reading the binary as a run would (tfile.c through usdt_attach.c: an absolute path, or
 * with --pid "target" / "lib:NAME" for the target's own files) and printing its sites grouped by
 * probe, text or JSON.
 * Must not: attach anything, or print a name from the file unescaped (report_put_text).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"
#include "cli/show_usdt.h"
#include "target/tfile.h"
#include "probes/usdt_attach.h"
#include "common/value.h"

/* The probes of the notes in first-seen order: index of each probe's first site. */
static size_t probe_firsts(const struct usdt_notes *n, size_t *first)
{
	size_t k = 0;
	for (size_t i = 0; i < n->n; i++) {
		bool seen = false;
		for (size_t j = 0; j < k && !seen; j++)
			seen = !strcmp(n->sites[first[j]].provider, n->sites[i].provider) &&
			       !strcmp(n->sites[first[j]].name, n->sites[i].name);
		if (!seen)
			first[k++] = i;
	}
	return k;
}

static bool same_probe(const struct usdt_site *a, const struct usdt_site *b)
{
	return !strcmp(a->provider, b->provider) && !strcmp(a->name, b->name);
}

static struct value *notes_value(const struct usdt_binary *b, const size_t *first, size_t nprobes)
{
	const struct usdt_notes *n = &b->notes;
	struct value *root = value_obj();
	value_set_str(root, "binary", b->path);
	value_set_int(root, "sites", (int64_t)n->n);
	value_set_int(root, "notes_skipped", (int64_t)n->skipped);
	struct value *arr = value_obj_set(root, "probes", value_arr());
	for (size_t k = 0; k < nprobes; k++) {
		const struct usdt_site *f = &n->sites[first[k]];
		struct value *p = value_arr_push(arr, value_obj());
		char name[2 * USDT_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%s:%s", f->provider, f->name);
		value_set_str(p, "probe", name);
		struct value *sites = value_obj_set(p, "sites", value_arr());
		for (size_t i = first[k]; i < n->n; i++) {
			const struct usdt_site *s = &n->sites[i];
			if (!same_probe(s, f))
				continue;
			struct value *v = value_arr_push(sites, value_obj());
			value_set_int(v, "offset", (int64_t)s->offset);
			value_set_bool(v, "semaphore", s->sema_vaddr != 0);
			value_set_str(v, "arguments", s->args_text);
			value_set_bool(v, "readable", s->args_ok);
			if (!s->args_ok)
				value_set_str(v, "why", s->args_error);
		}
	}
	return root;
}

static void print_text(const struct usdt_binary *b, const size_t *first, size_t nprobes)
{
	const struct usdt_notes *n = &b->notes;
	char line[PATH_MAX + 1024];
	snprintf(line, sizeof(line), "%s: %zu USDT probe%s, %zu site%s%s", b->path, nprobes,
		 nprobes == 1 ? "" : "s", n->n, n->n == 1 ? "" : "s",
		 n->skipped ? " (malformed notes skipped)" : "");
	report_put_text(stdout, line);
	putchar('\n');
	if (!nprobes)
		return;
	printf("  %-44s %5s  %-9s  %s\n", "probe (provider:name)", "sites", "semaphore", "arguments");
	for (size_t k = 0; k < nprobes; k++) {
		const struct usdt_site *f = &n->sites[first[k]];
		size_t sites = 0;
		bool sema = false, all_ok = true;
		for (size_t i = first[k]; i < n->n; i++)
			if (same_probe(&n->sites[i], f)) {
				sites++;
				sema |= n->sites[i].sema_vaddr != 0;
				all_ok &= n->sites[i].args_ok;
			}
		char name[2 * USDT_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%s:%s", f->provider, f->name);
		snprintf(line, sizeof(line), "  %-44s %5zu  %-9s  %s", name, sites, sema ? "yes" : "no",
			 f->args_text[0] ? f->args_text : "(none)");
		report_put_text(stdout, line);
		putchar('\n');
		if (!all_ok)
			for (size_t i = first[k]; i < n->n; i++)
				if (same_probe(&n->sites[i], f) && !n->sites[i].args_ok) {
					snprintf(line, sizeof(line), "      a site's arguments cannot be fetched: %s",
						 n->sites[i].args_error);
					report_put_text(stdout, line);
					putchar('\n');
				}
	}
}

int show_usdt(const char *binary, int pid, bool json, struct diag_err *err)
{
	char path[PATH_MAX];
	if (binary[0] != '/' && strcmp(binary, "target") && strncmp(binary, "lib:", 4)) {
		/* a path relative to where the operator is */
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(path, sizeof(path), "%s/%s", cwd, binary) >= (int)sizeof(path))
			return diag_fail(err, DIAG_EXIT_USAGE, "--usdt %s: path too long", binary);
		binary = path;
	}
	struct tfile_reader *r = tfile_reader_new();
	struct usdt_binary b;
	if (usdt_binary_open(&b, r, binary, pid, -1, 0, err)) {
		tfile_reader_free(r);
		return -1;
	}
	size_t *first = xcalloc(b.notes.n ? b.notes.n : 1, sizeof(*first));
	size_t nprobes = probe_firsts(&b.notes, first);
	if (json) {
		struct value *v = notes_value(&b, first, nprobes);
		value_write_json(v, stdout, 2);
		putchar('\n');
		value_free(v);
	} else {
		print_text(&b, first, nprobes);
	}
	free(first);
	usdt_binary_close(&b);
	tfile_reader_free(r);
	return 0;
}
