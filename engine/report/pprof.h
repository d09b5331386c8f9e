/* pprof.h — one probe's stacks as a pprof profile (--pprof FILE.pb.gz): the public profile.proto
 * format (proto/profile.proto, encoded by protobuf-c) compressed with gzip (zlib), which go tool
 * pprof, Pyroscope, Parca and Grafana open.
 *
 * Owns: turning the stacks of ONE probe's results (stacks.h shape; report_stack_probe picks the
 * probe) into a profile: sample types and units from the probe's stack_unit ("samples" →
 * samples/count; "ns" → events/count + time/nanoseconds; "bytes" → events/count + space/bytes;
 * any other → events/count + weight/UNIT; the weight's type is the default), one sample per
 * stack (locations leaf first: kernel frames, then user frames), labels "comm" and "tag";
 * strings, functions and locations deduplicated; kernel frames told apart twice: their own
 * mapping ("[kernel.kallsyms]"; the user frames': the target's executable or "[user]") and a " [k]" suffix on the function name; names with bytes that
 * are not UTF-8 or control bytes written with those bytes as "\xNN" (proto3 strings are UTF-8).
 * Must not: pick the probe, open files, or interpret the stacks.
 */
#ifndef DIAG_PPROF_H
#define DIAG_PPROF_H

#include <stdint.h>
#include <stdio.h>

#include "common/util.h"
#include "common/value.h"

struct pprof_info {
	const char *comment;    /* e.g. "diagnose high-cpu, probe profile (cpu_profile)"; NULL: none */
	const char *started_at; /* "YYYY-MM-DDTHH:MM:SSZ" (the report's), or NULL */
	double duration_s;      /* collection time, 0 when unknown */
	const char *user_file;  /* the target's executable, names the user frames' mapping; NULL:
				 * "[user]" */
};

/* The encoded (not compressed) profile of probe_res in *buf (caller frees), its length in *len.
 * probe_res NULL or without stacks gives a profile with no samples. Returns the samples. */
size_t pprof_encode(const struct value *probe_res, const struct pprof_info *info, uint8_t **buf,
		    size_t *len);

/* pprof_encode, gzip'd, to out. Returns the samples written, or -1 with err set
 * (DIAG_EXIT_RUNTIME) when compressing fails; write errors show in ferror(out). */
int pprof_write(const struct value *probe_res, const struct pprof_info *info, FILE *out,
		struct diag_err *err);

#endif
