/* doctor_load.c — for `diagnose doctor`: loads one probe kind's real BPF object, as a run would
 * (its load op: open, size, relocate against this kernel's BTF, verify, trying its attach
 * variants in order) with every option at its default, then unloads it.
 *
 * Owns: the child process each load runs in (libbpf's messages go to a pipe there, so that the
 * parent can name the failing CO-RE relocation or program in one line without a global hook, and
 * the child's exit releases everything it loaded), and picking that line from libbpf's output.
 * Must not: attach a program, print (doctor.c does), or wait for a child without reading its
 * output first (a verifier log fills a pipe).
 */
#include "cli/doctor_load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan/catalog.h"
#include "kernel/kernel.h"
#include "target/tfile.h"
#include "common/util.h"

#define CHILD_OUTPUT_MAX 65536

/* In the child: the kind's load with default options for this process, its result on fd 2 as a
 * last line "LOADED variant" or "ERROR message". */
static int child_load(const struct probe_kind *k)
{
	struct probe p;
	probe_init_defaults(&p, k);
	p.priv = xcalloc(1, k->private_size ? k->private_size : 1);
	p.files = tfile_reader_new();
	kernel_set_libbpf_verbose(true);
	struct diag_err err = { 0 };
	int rc = k->load(&p, &err);
	if (rc == 0 && p.degraded)
		fprintf(stderr, "\nDEGRADED %s\n", p.degraded);
	if (rc == 0)
		fprintf(stderr, "\nLOADED %s\n", p.variant ? p.variant : "-");
	else
		fprintf(stderr, "\nERROR %s\n", err.msg);
	fflush(stderr);
	k->destroy(&p);
	tfile_reader_free(p.files);
	free(p.priv);
	return rc ? 1 : 0;
}

/* The first line of text that contains needle, copied without its newline ("" when none). */
static void line_with(const char *text, const char *needle, char *out, size_t n)
{
	const char *at = strstr(text, needle);
	out[0] = '\0';
	if (!at)
		return;
	if (*at == '\n')
		at++; /* a needle anchored at a line's start */
	const char *start = at;
	while (start > text && start[-1] != '\n')
		start--;
	size_t len = strcspn(start, "\n");
	snprintf(out, n, "%.*s", (int)len, start);
}

/* Why the load failed, from the child's output: "prog 'X': failed to resolve CO-RE relocation
 * ..." when libbpf names one, else the program that failed to load and the probe's own error. */
static void failure_line(const char *text, char *why, size_t n)
{
	char prog[256], relo[256], error[512];
	line_with(text, "BPF program load failed", prog, sizeof(prog));
	line_with(text, "failed to resolve CO-RE relocation", relo, sizeof(relo));
	line_with(text, "\nERROR ", error, sizeof(error));
	const char *q = strstr(prog, "prog '");
	char name[128] = "";
	if (q)
		snprintf(name, sizeof(name), "%.*s", (int)(strcspn(q + 6, "'") + 7), q);
	const char *r = strstr(relo, "failed to resolve");
	const char *e = error[0] ? error + strlen("ERROR ") : "the load failed (no message)";
	if (r)
		snprintf(why, n, "%s%s%s", name, name[0] ? ": " : "", r);
	else if (name[0])
		snprintf(why, n, "%s did not load: %s", name, e);
	else
		snprintf(why, n, "%s", e);
}

/* Reads everything fd gives until EOF, keeping the first CHILD_OUTPUT_MAX - 1 bytes. */
static char *read_all(int fd)
{
	char *buf = xcalloc(1, CHILD_OUTPUT_MAX);
	size_t len = 0;
	char sink[4096];
	for (;;) {
		char *to = len < CHILD_OUTPUT_MAX - 1 ? buf + len : sink;
		size_t room = len < CHILD_OUTPUT_MAX - 1 ? CHILD_OUTPUT_MAX - 1 - len : sizeof(sink);
		ssize_t got = read(fd, to, room);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (to != sink)
			len += (size_t)got;
	}
	return buf;
}

/* A kind with an option no default fills (func_latency's function) loads only from a recipe. */
static const char *required_option(const struct probe_kind *k)
{
	for (size_t i = 0; i < k->n_options; i++)
		if (k->options[i].type == OPT_STRING && !k->options[i].dflt_str)
			return k->options[i].name;
	return NULL;
}

enum kind_load doctor_load_kind(const struct probe_kind *k, char *variant, size_t variant_size,
				char *why, size_t why_size)
{
	variant[0] = why[0] = '\0';
	if (!k->bpf_bytes || !k->load) {
		snprintf(why, why_size, "no BPF object");
		return KIND_NOT_TRIED;
	}
	const char *needs = required_option(k);
	if (needs) {
		snprintf(why, why_size, "its object loads only with a recipe's `%s`: not tried", needs);
		return KIND_NOT_TRIED;
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0) {
		snprintf(why, why_size, "cannot make a pipe: %s", strerror(errno));
		return KIND_FAILED;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		snprintf(why, why_size, "cannot fork: %s", strerror(errno));
		return KIND_FAILED;
	}
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		_exit(child_load(k));
	}
	close(fds[1]);
	char *text = read_all(fds[0]);
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	char loaded[128], degraded[512];
	line_with(text, "\nLOADED ", loaded, sizeof(loaded));
	line_with(text, "\nDEGRADED ", degraded, sizeof(degraded));
	enum kind_load result = KIND_FAILED;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && loaded[0]) {
		snprintf(variant, variant_size, "%s", loaded + strlen("LOADED "));
		result = KIND_LOADED;
		if (degraded[0]) {
			snprintf(why, why_size, "%s", degraded + strlen("DEGRADED "));
			result = KIND_DEGRADED;
		}
	} else if (WIFSIGNALED(status)) {
		snprintf(why, why_size, "the load was killed by signal %d", WTERMSIG(status));
	} else {
		failure_line(text, why, why_size);
	}
	free(text);
	return result;
}
