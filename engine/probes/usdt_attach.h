/* usdt_attach.h — what every probe kind built on USDT probes shares (the generic `usdt` kind, the
 * PostgreSQL one): finding the file the probes live in, reading its sites once, and attaching a
 * program to the sites of a named probe with each site's fetch plan (diag_usdt.h) in the kind's
 * `usdt_specs` map, the plan's index as the uprobe's cookie and its semaphore as the uprobe's
 * reference counter (so that the application runs its probe code only while we listen).
 *
 * Owns: the `binary` option's forms and their resolution, the O_PATH descriptor of the very file
 * read (the uprobes go on it), the spec slots handed out, the count of sites attached.
 * Must not: know what any probe's arguments mean, or attach to every process when the run has one
 * target process (pid given: that process only).
 */
#ifndef DIAG_USDT_ATTACH_H
#define DIAG_USDT_ATTACH_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "symbolize/usdt_notes.h"
#include "common/util.h"

struct probe;
struct bpf_program;

struct usdt_binary {
	char path[PATH_MAX];  /* as the target maps it, or as the recipe names it */
	int file_fd;          /* O_PATH descriptor of the very file read (-1: none) */
	char attach_path[64]; /* /proc/self/fd/N of it */
	struct usdt_notes notes;
	int pid;              /* the process the uprobes are limited to; -1: every process */
	uint32_t next_spec;   /* the next free slot of the kind's usdt_specs map */
	uint32_t max_specs;
	uint32_t sites_attached, sites_unreadable; /* unreadable: arguments we cannot fetch */
	uint32_t sites_over_slots;                 /* not attached: the spec slots ran out */
};

/* NULL when `binary` is one of the forms: "target" (the target's executable), "lib:NAME" (the
 * first file the target maps executable whose name starts with NAME: "lib:libpython3.11"), or an
 * absolute path; else what is wrong (static text). */
const char *usdt_check_binary(const char *binary);
/* NULL when text is "provider:name" (each [A-Za-z0-9_]+, at most USDT_NAME_MAX - 1 bytes). */
const char *usdt_check_probe_name(const char *text);

struct tfile_reader;
/* Resolves and reads `binary` through reader r ("target" and "lib:" name files of process
 * target_pid); max_specs: the kind's usdt_specs entries; the uprobes will be limited to
 * attach_pid (-1: every process mapping the file). -1 with err (DIAG_EXIT_USAGE: no such file,
 * not ELF, no target), nothing left open. */
int usdt_binary_open(struct usdt_binary *b, struct tfile_reader *r, const char *binary,
		     int target_pid, int attach_pid, uint32_t max_specs, struct diag_err *err);
/* usdt_binary_open for a probe: its `binary` of the run's target (--pid's process, or a set's
 * first), the uprobes limited to --pid's process, else on every process (the BPF side filters). */
int usdt_binary_open_for(struct usdt_binary *b, struct probe *p, const char *binary,
			 uint32_t max_specs, struct diag_err *err);
void usdt_binary_close(struct usdt_binary *b);

/* How many sites provider:name has in the file (0: the file lacks the probe). */
size_t usdt_binary_sites(const struct usdt_binary *b, const char *provider, const char *name);

/* Attaches prog to every site of provider:name whose first need_args arguments (the ones the
 * program reads) can be fetched, with spec.probe = probe_id; the others are skipped and counted
 * (sites_unreadable), and so are sites beyond the spec slots (sites_over_slots). Sites: the count
 * attached (0 is not an error here: the caller decides). -1 with err when an attach fails. */
#define USDT_ALL_ARGS UINT32_MAX /* need_args: every argument of the site (their count varies) */
int usdt_attach_probe(struct probe *p, struct usdt_binary *b, struct bpf_program *prog,
		      int specs_fd, const char *provider, const char *name, uint32_t probe_id,
		      uint32_t need_args, uint32_t *sites, struct diag_err *err);

/* For a kind's `lint` op: when `binary` is an absolute path to a file on this machine, whether it
 * has provider:name (and provider:done when done is not NULL or ""). 0 when it does or the binary
 * is not known here (a path of another machine, "target", "lib:"); -1 with err otherwise. */
int usdt_lint_probe(const char *binary, const char *provider, const char *name, const char *done,
		    struct diag_err *err);

#endif
