/* pprof.c — one probe's stacks as a gzip'd pprof profile (see pprof.h).
 *
 * The profile is built as protobuf-c messages (profile.pb-c.h, generated at build time from
 * proto/profile.proto) that live in a few arrays owned by struct builder, packed into one buffer,
 * then deflated with a gzip header. Location ids equal function ids: a frame is only a name here
 * (no addresses survive symbolization), so one function has one location.
 */
#include "report/pprof.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "common/hash.h"
#include "profile.pb-c.h"

enum { MAP_USER = 1, MAP_KERNEL = 2 };

struct builder {
	/* strings: table plus an open-addressing index (slot: string index + 1, 0 empty) */
	char **strs;
	size_t n_strs, cap_strs;
	uint32_t *slots;
	size_t n_slots;
	/* functions and their locations, ids 1..n_funcs; func_of_str[string index] = id or 0 */
	Perftools__Profiles__Function *funcs;
	Perftools__Profiles__Location *locs;
	Perftools__Profiles__Line *lines;
	Perftools__Profiles__Line **line_ptrs;
	size_t n_funcs, cap_funcs;
	uint64_t *func_of_str;
	size_t cap_func_of_str;
};

/* Keyed (hash.h): the strings are the target's frame and file names. */
static uint64_t str_hash(const char *s)
{
	return hash_mem(s, strlen(s));
}

static void slots_grow(struct builder *b)
{
	size_t n = b->n_slots ? 2 * b->n_slots : 256;
	uint32_t *s = xcalloc(n, sizeof(*s));
	for (size_t i = 0; i < b->n_strs; i++) {
		size_t j = str_hash(b->strs[i]) & (n - 1);
		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(b->slots);
	b->slots = s;
	b->n_slots = n;
}

/* The string's index in the table, adding a copy of it the first time. */
static int64_t intern(struct builder *b, const char *s)
{
	if (2 * (b->n_strs + 1) > b->n_slots)
		slots_grow(b);
	size_t j = str_hash(s) & (b->n_slots - 1);
	for (; b->slots[j]; j = (j + 1) & (b->n_slots - 1))
		if (strcmp(b->strs[b->slots[j] - 1], s) == 0)
			return b->slots[j] - 1;
	if (b->n_strs == b->cap_strs) {
		b->cap_strs = b->cap_strs ? 2 * b->cap_strs : 64;
		b->strs = xrealloc(b->strs, b->cap_strs * sizeof(*b->strs));
	}
	b->strs[b->n_strs] = xstrdup(s);
	b->slots[j] = (uint32_t)b->n_strs + 1;
	return (int64_t)b->n_strs++;
}

/* s with each byte of what utf8_char_unsafe names (controls, bidirectional controls, ...) and
 * each byte that is not UTF-8 as "\xNN", then suffix. */
static char *clean_name(const char *s, const char *suffix)
{
	char *out = xmalloc(4 * strlen(s) + strlen(suffix) + 1), *o = out;
	while (*s) {
		size_t n = utf8_char_len(s);
		if (utf8_char_unsafe(s, n)) {
			for (size_t i = 0; i < (n ? n : 1); i++)
				o += sprintf(o, "\\x%02x", (unsigned char)s[i]);
			s += n ? n : 1;
			continue;
		}
		memcpy(o, s, n);
		o += n;
		s += n;
	}
	strcpy(o, suffix);
	return out;
}

/* The location id of a frame, adding its function and location the first time. */
static uint64_t frame_location(struct builder *b, const char *raw, bool kernel)
{
	char *name = clean_name(raw, kernel ? " [k]" : "");
	int64_t si = intern(b, name);
	free(name);
	if ((size_t)si >= b->cap_func_of_str) {
		size_t n = b->cap_func_of_str ? 2 * b->cap_func_of_str : 256;
		while (n <= (size_t)si)
			n *= 2;
		b->func_of_str = xrealloc(b->func_of_str, n * sizeof(*b->func_of_str));
		memset(b->func_of_str + b->cap_func_of_str, 0,
		       (n - b->cap_func_of_str) * sizeof(*b->func_of_str));
		b->cap_func_of_str = n;
	}
	if (b->func_of_str[si])
		return b->func_of_str[si];
	if (b->n_funcs == b->cap_funcs) {
		b->cap_funcs = b->cap_funcs ? 2 * b->cap_funcs : 64;
		b->funcs = xrealloc(b->funcs, b->cap_funcs * sizeof(*b->funcs));
		b->locs = xrealloc(b->locs, b->cap_funcs * sizeof(*b->locs));
		b->lines = xrealloc(b->lines, b->cap_funcs * sizeof(*b->lines));
		b->line_ptrs = xrealloc(b->line_ptrs, b->cap_funcs * sizeof(*b->line_ptrs));
	}
	size_t i = b->n_funcs++;
	uint64_t id = i + 1;
	char *sys = clean_name(raw, "");
	int64_t sys_i = intern(b, sys);
	free(sys);
	perftools__profiles__function__init(&b->funcs[i]);
	b->funcs[i].id = id;
	b->funcs[i].name = si;
	b->funcs[i].system_name = sys_i;
	perftools__profiles__line__init(&b->lines[i]);
	b->lines[i].function_id = id;
	perftools__profiles__location__init(&b->locs[i]);
	b->locs[i].id = id;
	b->locs[i].mapping_id = kernel ? MAP_KERNEL : MAP_USER;
	/* line points into b->lines, which may move: set when packing */
	b->func_of_str[si] = id;
	return id;
}

static size_t push_frames(struct builder *b, const struct value *frames, bool kernel,
			  uint64_t *ids, size_t n)
{
	if (!frames || frames->type != V_ARR)
		return n;
	for (size_t i = 0; i < frames->arr.len; i++)
		if (frames->arr.items[i]->type == V_STR)
			ids[n++] = frame_location(b, frames->arr.items[i]->s, kernel);
	return n;
}

static size_t frames_len(const struct value *frames)
{
	return frames && frames->type == V_ARR ? frames->arr.len : 0;
}

static int64_t parse_time_ns(const char *iso)
{
	struct tm tm = { 0 };
	if (!iso)
		return 0;
	const char *end = strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		return 0;
	time_t t = timegm(&tm);
	return t < 0 ? 0 : (int64_t)t * 1000000000;
}

size_t pprof_encode(const struct value *probe_res, const struct pprof_info *info, uint8_t **buf,
		    size_t *len)
{
	struct builder b = { 0 };
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	intern(&b, ""); /* string_table[0] */

	const char *unit = value_get_str(probe_res, "stack_unit");
	if (!unit)
		unit = "samples";
	Perftools__Profiles__ValueType vt[2], *vtp[2];
	size_t n_vt = 0;
	if (strcmp(unit, "samples") != 0) {
		perftools__profiles__value_type__init(&vt[n_vt]);
		vt[n_vt].type = intern(&b, "events");
		vt[n_vt++].unit = intern(&b, "count");
	}
	perftools__profiles__value_type__init(&vt[n_vt]);
	if (strcmp(unit, "samples") == 0) {
		vt[n_vt].type = intern(&b, "samples");
		vt[n_vt].unit = intern(&b, "count");
	} else if (strcmp(unit, "ns") == 0) {
		vt[n_vt].type = intern(&b, "time");
		vt[n_vt].unit = intern(&b, "nanoseconds");
	} else if (strcmp(unit, "bytes") == 0) {
		vt[n_vt].type = intern(&b, "space");
		vt[n_vt].unit = intern(&b, "bytes");
	} else {
		char *u = clean_name(unit, "");
		vt[n_vt].type = intern(&b, "weight");
		vt[n_vt].unit = intern(&b, u);
		free(u);
	}
	p.default_sample_type = vt[n_vt].type;
	n_vt++;
	for (size_t i = 0; i < n_vt; i++)
		vtp[i] = &vt[i];
	p.sample_type = vtp;
	p.n_sample_type = n_vt;

	Perftools__Profiles__Mapping maps[2], *mapp[2];
	for (int i = 0; i < 2; i++) {
		perftools__profiles__mapping__init(&maps[i]);
		maps[i].id = (uint64_t)i + 1;
		maps[i].has_functions = true;
		const char *file = i == 1 ? "[kernel.kallsyms]"
				   : info && info->user_file ? info->user_file : "[user]";
		char *f = clean_name(file, "");
		maps[i].filename = intern(&b, f);
		free(f);
		mapp[i] = &maps[i];
	}
	p.mapping = mapp;
	p.n_mapping = 2;

	const struct value *stacks = value_get(probe_res, "stacks");
	size_t n = stacks && stacks->type == V_ARR ? stacks->arr.len : 0;
	Perftools__Profiles__Sample *samples = xcalloc(n ? n : 1, sizeof(*samples));
	Perftools__Profiles__Sample **sample_ptrs = xcalloc(n ? n : 1, sizeof(*sample_ptrs));
	Perftools__Profiles__Label *labels = xcalloc(2 * (n ? n : 1), sizeof(*labels));
	Perftools__Profiles__Label **label_ptrs = xcalloc(2 * (n ? n : 1), sizeof(*label_ptrs));
	int64_t *values = xcalloc(2 * (n ? n : 1), sizeof(*values));
	uint64_t **loc_ids = xcalloc(n ? n : 1, sizeof(*loc_ids));
	int64_t k_comm = intern(&b, "comm"), k_tag = intern(&b, "tag");
	size_t ns = 0;
	for (size_t i = 0; i < n; i++) {
		const struct value *s = stacks->arr.items[i];
		const struct value *user = value_get(s, "user"), *kern = value_get(s, "kernel");
		Perftools__Profiles__Sample *sm = &samples[ns];
		perftools__profiles__sample__init(sm);
		loc_ids[ns] = xcalloc(frames_len(user) + frames_len(kern) + 1, sizeof(uint64_t));
		size_t nl = push_frames(&b, kern, true, loc_ids[ns], 0);
		nl = push_frames(&b, user, false, loc_ids[ns], nl);
		sm->location_id = loc_ids[ns];
		sm->n_location_id = nl;
		double w = value_get_num(s, "weight", 0), c = value_get_num(s, "count", 0);
		int64_t *v = &values[2 * ns];
		if (n_vt == 2)
			v[0] = (int64_t)llround(c);
		v[n_vt - 1] = (int64_t)llround(w);
		sm->value = v;
		sm->n_value = n_vt;
		Perftools__Profiles__Label *l = &labels[2 * ns];
		Perftools__Profiles__Label **lp = &label_ptrs[2 * ns];
		const char *comm = value_get_str(s, "comm"), *tag = value_get_str(s, "tag");
		const char *lv[2] = { comm, tag && *tag ? tag : NULL };
		int64_t lk[2] = { k_comm, k_tag };
		for (int j = 0; j < 2; j++) {
			if (!lv[j])
				continue;
			perftools__profiles__label__init(&l[sm->n_label]);
			char *cv = clean_name(lv[j], "");
			l[sm->n_label].key = lk[j];
			l[sm->n_label].str = intern(&b, cv);
			free(cv);
			lp[sm->n_label] = &l[sm->n_label];
			sm->n_label++;
		}
		sm->label = sm->n_label ? lp : NULL;
		sample_ptrs[ns++] = sm;
	}
	p.sample = sample_ptrs;
	p.n_sample = ns;

	Perftools__Profiles__Function **func_ptrs = xcalloc(b.n_funcs + 1, sizeof(*func_ptrs));
	Perftools__Profiles__Location **loc_ptrs = xcalloc(b.n_funcs + 1, sizeof(*loc_ptrs));
	for (size_t i = 0; i < b.n_funcs; i++) {
		b.line_ptrs[i] = &b.lines[i];
		b.locs[i].line = &b.line_ptrs[i];
		b.locs[i].n_line = 1;
		func_ptrs[i] = &b.funcs[i];
		loc_ptrs[i] = &b.locs[i];
	}
	p.function = func_ptrs;
	p.n_function = b.n_funcs;
	p.location = loc_ptrs;
	p.n_location = b.n_funcs;

	int64_t comment = 0;
	if (info && info->comment) {
		char *c = clean_name(info->comment, "");
		comment = intern(&b, c);
		free(c);
		p.comment = &comment;
		p.n_comment = 1;
	}
	if (info) {
		p.time_nanos = parse_time_ns(info->started_at);
		if (info->duration_s > 0)
			p.duration_nanos = (int64_t)llround(info->duration_s * 1e9);
	}
	p.string_table = b.strs;
	p.n_string_table = b.n_strs;

	*len = perftools__profiles__profile__get_packed_size(&p);
	*buf = xmalloc(*len ? *len : 1);
	perftools__profiles__profile__pack(&p, *buf);

	for (size_t i = 0; i < ns; i++)
		free(loc_ids[i]);
	free(loc_ids);
	free(values);
	free(label_ptrs);
	free(labels);
	free(sample_ptrs);
	free(samples);
	free(func_ptrs);
	free(loc_ptrs);
	for (size_t i = 0; i < b.n_strs; i++)
		free(b.strs[i]);
	free(b.strs);
	free(b.slots);
	free(b.funcs);
	free(b.locs);
	free(b.lines);
	free(b.line_ptrs);
	free(b.func_of_str);
	return ns;
}

int pprof_write(const struct value *probe_res, const struct pprof_info *info, FILE *out,
		struct diag_err *err)
{
	uint8_t *buf;
	size_t len;
	size_t ns = pprof_encode(probe_res, info, &buf, &len);
	z_stream z = { 0 };
	/* windowBits 15 + 16: a gzip header and trailer around the deflate stream */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(buf);
		return diag_fail(err, DIAG_EXIT_RUNTIME, "pprof: zlib: cannot start compressing");
	}
	unsigned char chunk[16384];
	z.next_in = buf;
	int zrc = Z_OK;
	size_t left = len;
	do {
		/* avail_in is 32 bits: feed at most 1 GiB at a time */
		if (z.avail_in == 0 && left) {
			uInt take = left > (1u << 30) ? (1u << 30) : (uInt)left;
			z.avail_in = take;
			left -= take;
		}
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		zrc = deflate(&z, left ? Z_NO_FLUSH : Z_FINISH);
		if (zrc == Z_STREAM_ERROR)
			break;
		fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out);
	} while (zrc != Z_STREAM_END);
	deflateEnd(&z);
	free(buf);
	if (zrc != Z_STREAM_END)
		return diag_fail(err, DIAG_EXIT_RUNTIME, "pprof: zlib: compressing failed");
	return (int)ns;
}
