/* folded.c — folded stacks, one line a stack, for flamegraph.pl and the tools that read its
 * format, and which probe's stacks the stack outputs show (see report.h).
 * Must not: write a frame or comm raw: the target controls them (write_folded_name).
 */
#include "report/report.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

/* A frame or comm as one field of a folded line: ';' (the frame separator) and ' ' (the count
 * separator) become '_' as flamegraph.pl users expect; each byte of what utf8_char_unsafe names
 * (controls, bidirectional controls, ...) and each byte that is not UTF-8 becomes "\xNN", so a
 * name cannot start a new line, carry a raw control or reorder the line. */
static void write_folded_name(const char *s, FILE *out)
{
	for (const char *c = s; *c;) {
		unsigned char b = (unsigned char)*c;
		size_t n = utf8_char_len(c);
		if (utf8_char_unsafe(c, n)) {
			for (size_t i = 0; i < (n ? n : 1); i++)
				fprintf(out, "\\x%02x", (unsigned char)c[i]);
			c += n ? n : 1;
			continue;
		}
		if (b == ';' || b == ' ')
			fputc('_', out);
		else
			fwrite(c, 1, n, out);
		c += n;
	}
}

static void write_frames_root_first(const struct value *frames, const char *suffix, FILE *out)
{
	if (!frames || frames->type != V_ARR)
		return;
	for (size_t i = frames->arr.len; i-- > 0;) {
		if (frames->arr.items[i]->type != V_STR)
			continue;
		fputc(';', out);
		write_folded_name(frames->arr.items[i]->s, out);
		fputs(suffix, out);
	}
}

const struct value *report_stack_probe(const struct value *results, const char *probe_id,
				       const char **id_out)
{
	if (!results || results->type != V_OBJ)
		return NULL;
	for (size_t p = 0; p < results->obj.len; p++) {
		if (probe_id && strcmp(results->obj.keys[p], probe_id) != 0)
			continue;
		const struct value *stacks = value_get(results->obj.vals[p], "stacks");
		if (stacks && stacks->type == V_ARR) {
			if (id_out)
				*id_out = results->obj.keys[p];
			return results->obj.vals[p];
		}
		if (probe_id)
			return NULL;
	}
	return NULL;
}

int report_write_folded(const struct value *results, const char *probe_id, FILE *out)
{
	const struct value *stacks = value_get(report_stack_probe(results, probe_id, NULL), "stacks");
	if (!stacks)
		return -1;
	for (size_t i = 0; i < stacks->arr.len; i++) {
		const struct value *s = stacks->arr.items[i];
		const char *comm = value_get_str(s, "comm"), *tag = value_get_str(s, "tag");
		const struct value *w = value_get(s, "weight");
		write_folded_name(comm ? comm : "?", out);
		if (tag) {
			fputs(";[", out);
			write_folded_name(tag, out);
			fputc(']', out);
		}
		write_frames_root_first(value_get(s, "user"), "", out);
		write_frames_root_first(value_get(s, "kernel"), "_[k]", out);
		if (w && w->type == V_INT)
			fprintf(out, " %" PRId64 "\n", w->i);
		else
			fprintf(out, " %.0f\n", value_get_num(s, "weight", 0));
	}
	return (int)stacks->arr.len;
}
