/* tp_btf.h — programs attached by BTF id to a raw tracepoint (SEC("tp_btf/NAME")), loaded with
 * the id of the kernel's typedef btf_trace_NAME as the run read it once (kernel_btf.h).
 *
 * libbpf 1.1 finds that id itself: it parses the kernel's whole BTF for every object holding
 * such a program (11 MB and ~10 ms each: most of runqlat's peak RSS, and three times the latency
 * recipe's). It cannot be handed the id, and parses the BTF for any program of type TRACING
 * before it asks. So this registers a handler of its own for the "tp_btf" sections (libbpf's
 * custom handlers come before its own): such a program opens as a RAW_TRACEPOINT program (which
 * wants no BTF), and at its load, in the handler's prepare callback, becomes TRACING /
 * BPF_TRACE_RAW_TP with the kernel's id — what libbpf's own handler loads; it attaches as
 * libbpf's does (bpf_program__attach_trace).
 *
 * Owns: the handler, registered once for the process before any object opens; the ids (the
 * kernel's: they do not change while the process lives, so the table is the process's), learned
 * from a run's read of the kernel's BTF or, for one it did not learn, by reading it then.
 * Must not: know a probe, or attach but through libbpf.
 */
#ifndef DIAG_TP_BTF_H
#define DIAG_TP_BTF_H

#include <stdint.h>

struct kernel_btf;
struct bpf_program;
struct bpf_link;

/* Registers the handler (once; later calls do nothing). Before any object with tp_btf programs
 * opens: PROBE_BPF_SKELETON calls it. */
void tp_btf_install(void);
/* Learns the id of every tracepoint's btf_trace_ typedef in k (one pass), for the loads. */
void tp_btf_learn(const struct kernel_btf *k);
/* The kernel's id of btf_trace_NAME for tracepoint NAME: > 0, or -errno (-ESRCH: none). */
int tp_btf_id(const char *tracepoint);
/* Attaches any program where its section says, a tp_btf one included: libbpf's
 * bpf_program__attach, except for a program this handler loaded (attached by
 * bpf_program__attach_trace, whatever libbpf kept of its section handler). */
struct bpf_link *tp_btf_attach(const struct bpf_program *prog);

#endif
