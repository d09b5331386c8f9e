/* schema.c — a recipe's fixed schema, and the schema applied to its document (document.h).
 * Contract: schema.h.
 *
 * Owns: the fields a recipe may have, declared with libcyaml's schema macros (libcyaml's header
 * only), and applying them to the document in libcyaml's order and with its number parsing, so
 * that libcyaml never parses the text again: unknown keys, missing required fields, wrong types,
 * too long or too many, each an error at its line; then strict number text (decimal only).
 * Must not: read YAML text (document.c has), check the semantic rules (recipe.c), print, or keep
 * global state.
 */
#include "recipe/schema.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cyaml/cyaml.h>

/* ---- fixed schema (libcyaml's schema format; schema_apply below reads a document by it) --- */

#define STR(key, flags, type, member, max) \
	CYAML_FIELD_STRING_PTR(key, (flags) | CYAML_FLAG_POINTER, type, member, 1, max)
#define OPT CYAML_FLAG_OPTIONAL
#define REQ CYAML_FLAG_DEFAULT

static const cyaml_schema_field_t filter_fields[] = {
	STR("pid", OPT, struct recipe_filters, pid, 16),
	STR("tid", OPT, struct recipe_filters, tid, 16),
	STR("comm", OPT, struct recipe_filters, comm, 15), /* TASK_COMM_LEN - 1 */
	STR("cgroup", OPT, struct recipe_filters, cgroup, 4096),
	STR("device", OPT, struct recipe_filters, device, 64),
	STR("local_port", OPT, struct recipe_filters, local_port, 16),
	STR("remote_port", OPT, struct recipe_filters, remote_port, 16),
	STR("remote_addr", OPT, struct recipe_filters, remote_addr, 64),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t attach_entry = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 1, 64),
};

/* `when:` of a probe, read as an enum into a 1-byte field. */
static const cyaml_strval_t when_values[] = { { "always", RECIPE_WHEN_ALWAYS },
					      { "target", RECIPE_WHEN_TARGET },
					      { "host", RECIPE_WHEN_HOST } };

static const cyaml_schema_field_t probe_fields[] = {
	STR("id", REQ, struct recipe_probe, id, 64),
	STR("kind", REQ, struct recipe_probe, kind, 64),
	CYAML_FIELD_ENUM("when", OPT | CYAML_FLAG_STRICT, struct recipe_probe, when, when_values,
			 CYAML_ARRAY_LEN(when_values)),
	CYAML_FIELD_MAPPING("filters", OPT, struct recipe_probe, filters, filter_fields),
	CYAML_FIELD_SEQUENCE_COUNT("attach", OPT | CYAML_FLAG_POINTER, struct recipe_probe, attach,
				   n_attach, &attach_entry, 0, 8),
	CYAML_FIELD_IGNORE("options", OPT), /* free-form: read from the libyaml document */
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t probe_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct recipe_probe, probe_fields),
};

/* `degrade: sample` sets the (1-byte) bool; `refuse` is the default. */
static const cyaml_strval_t degrade_values[] = { { "refuse", 0 }, { "sample", 1 } };

static const cyaml_schema_field_t budget_fields[] = {
	CYAML_FIELD_UINT("max_duration_s", REQ, struct recipe_budgets, max_duration_s),
	CYAML_FIELD_UINT("max_sample_hz", REQ, struct recipe_budgets, max_sample_hz),
	CYAML_FIELD_UINT("max_events_per_s", OPT, struct recipe_budgets, max_events_per_s),
	CYAML_FIELD_FLOAT("max_cpu_pct", REQ, struct recipe_budgets, max_cpu_pct),
	CYAML_FIELD_UINT("max_map_bytes", REQ, struct recipe_budgets, max_map_bytes),
	CYAML_FIELD_ENUM("degrade", OPT | CYAML_FLAG_STRICT, struct recipe_budgets, degrade_sample,
			 degrade_values, 2),
	CYAML_FIELD_UINT("preflight_ms", OPT, struct recipe_budgets, preflight_ms),
	CYAML_FIELD_UINT("max_chain_depth", OPT, struct recipe_budgets, max_chain_depth),
	CYAML_FIELD_UINT("max_chain_duration_s", OPT, struct recipe_budgets, max_chain_duration_s),
	CYAML_FIELD_END,
};

static const cyaml_strval_t param_type_values[] = {
	{ "integer", PARAM_INTEGER }, { "string", PARAM_STRING }, { "symbol", PARAM_SYMBOL },
	{ "pid", PARAM_PID }, { "duration", PARAM_DURATION },
};

/* Defaults and bounds are read as text and parsed strictly in check_params. */
static const cyaml_schema_field_t param_fields[] = {
	STR("name", REQ, struct recipe_param, name, 32),
	CYAML_FIELD_ENUM("type", CYAML_FLAG_STRICT, struct recipe_param, type, param_type_values,
			 CYAML_ARRAY_LEN(param_type_values)),
	STR("default", OPT, struct recipe_param, dflt, 4096),
	STR("min", OPT, struct recipe_param, min, 32),
	STR("max", OPT, struct recipe_param, max, 32),
	STR("description", OPT, struct recipe_param, description, 1024),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t param_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct recipe_param, param_fields),
};

static const cyaml_schema_value_t next_param_entry = {
	CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 3, 4096),
};

static const cyaml_schema_field_t next_fields[] = {
	STR("verdict", REQ, struct recipe_next, verdict, 64),
	STR("recipe", REQ, struct recipe_next, recipe, 64),
	CYAML_FIELD_SEQUENCE_COUNT("params", OPT | CYAML_FLAG_POINTER, struct recipe_next, params,
				   n_params, &next_param_entry, 0, 32),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t next_entry = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, struct recipe_next, next_fields),
};

/* `target:` is read as an enum into a 1-byte field. */
static const cyaml_strval_t target_values[] = {
	{ "pid", RECIPE_TARGET_PID },
	{ "optional-pid", RECIPE_TARGET_PID_OPTIONAL },
	{ "processes", RECIPE_TARGET_PROCESSES },
	{ "optional-processes", RECIPE_TARGET_PROCESSES_OPTIONAL },
};

static const cyaml_schema_field_t recipe_fields[] = {
	STR("name", REQ, struct recipe, name, RECIPE_NAME_MAX),
	STR("symptom", REQ, struct recipe, symptom, 200),
	STR("summary", REQ, struct recipe, summary, 200),
	STR("description", OPT, struct recipe, description, 4096),
	STR("lua", REQ, struct recipe, lua, 255),
	CYAML_FIELD_ENUM("target", OPT | CYAML_FLAG_STRICT, struct recipe, target,
			 target_values, ARRAY_LEN(target_values)),
	CYAML_FIELD_UINT("duration_s", REQ, struct recipe, duration_s),
	CYAML_FIELD_MAPPING("budgets", REQ, struct recipe, budgets, budget_fields),
	CYAML_FIELD_SEQUENCE_COUNT("probes", CYAML_FLAG_POINTER, struct recipe, probes, n_probes,
				   &probe_entry, 1, PROBES_MAX),
	CYAML_FIELD_IGNORE("thresholds", OPT), /* free-form: read from the libyaml document */
	CYAML_FIELD_SEQUENCE_COUNT("params", OPT | CYAML_FLAG_POINTER, struct recipe, params, n_params,
				   &param_entry, 0, 32),
	CYAML_FIELD_SEQUENCE_COUNT("next", OPT | CYAML_FLAG_POINTER, struct recipe, next, n_next,
				   &next_entry, 0, 32),
	CYAML_FIELD_END,
};

static const cyaml_schema_value_t recipe_schema = {
	CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER, struct recipe, recipe_fields),
};

_Static_assert(sizeof(((struct recipe *)0)->target) == 1, "target is written by libcyaml as a 1-byte enum");
_Static_assert(sizeof(((struct recipe_probe *)0)->when) == 1, "when is written by libcyaml as a 1-byte enum");

/* ---- the fixed schema applied to the document ---------------------------------------------- */

/* The fields are those of libcyaml's schema tables above, applied here in document order, as
 * libcyaml would apply them to the same text: within a mapping each key in turn (unknown: an
 * error) and its value, then the first required field missing (in schema order); within a
 * sequence each entry in turn (one past the maximum: an error), then the minimum. The first
 * error ends the load. */
struct apply {
	struct loader *L;
	struct step s[PATH_MAX_STEPS]; /* where the value being read is */
	unsigned n;
};

static const cyaml_schema_field_t *schema_field(const cyaml_schema_value_t *v, const char *key,
						size_t key_len)
{
	if (!v || v->type != CYAML_MAPPING)
		return NULL;
	for (const cyaml_schema_field_t *f = v->mapping.fields; f->key; f++)
		if (strlen(f->key) == key_len && !memcmp(f->key, key, key_len))
			return f;
	return NULL;
}

static const char *type_name(const cyaml_schema_value_t *v)
{
	switch (v->type) {
	case CYAML_UINT: return "an unsigned integer";
	case CYAML_FLOAT: return "a number";
	case CYAML_STRING: return "a string";
	case CYAML_MAPPING: return "a mapping";
	case CYAML_SEQUENCE: return "a sequence";
	case CYAML_ENUM: /* `target`, a probe's `when`, `budgets.degrade` */
		if (v->enumeration.strings == when_values)
			return "\"always\", \"target\" or \"host\"";
		if (v->enumeration.strings == degrade_values)
			return "\"refuse\" or \"sample\"";
		return "\"pid\", \"optional-pid\", \"processes\" or \"optional-processes\"";
	default: return "another type";
	}
}

static bool push_step(struct apply *A, struct step step)
{
	if (A->n == PATH_MAX_STEPS)
		return false;
	A->s[A->n++] = step;
	return true;
}

/* An error at A's path: the line of its last step, the path as text. */
static int fail_here(struct apply *A, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail_here(struct apply *A, const char *fmt, ...)
{
	char path[256], msg[512];
	unsigned line;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	doc_resolve(A->L, A->s, A->n, &line);
	doc_path_text(A->s, A->n, path, sizeof(path));
	return doc_fail_line(A->L, line, path, "%s", msg);
}

/* The value at A's path (node) is not what schema v takes. */
static int fail_value(struct apply *A, const cyaml_schema_value_t *v, const yaml_node_t *node)
{
	char q[64];
	if (v->type == CYAML_UINT && doc_scalar(node) && doc_digits(doc_scalar(node)))
		return fail_here(A, "%s is too large", doc_scalar(node));
	return fail_here(A, "expected %s, got %s", type_name(v), doc_describe(node, q, sizeof(q)));
}

/* Writes value into the size-byte unsigned integer at data. */
static void write_uint(uint8_t *data, uint32_t size, uint64_t value)
{
	uint8_t u8 = (uint8_t)value;
	uint16_t u16 = (uint16_t)value;
	uint32_t u32 = (uint32_t)value;
	memcpy(data, size == 1 ? (void *)&u8 : size == 2 ? (void *)&u16 : size == 4 ? (void *)&u32
									       : (void *)&value,
	       size);
}

/* A scalar of type v (text; its node for messages) into data. Numbers as libcyaml takes them
 * (strtoull base 0, strtod): strict_numbers refuses the text it should not have taken. */
static int apply_scalar(struct apply *A, const cyaml_schema_value_t *v, const yaml_node_t *node,
			uint8_t *data)
{
	const char *text = doc_scalar(node);
	char *end;
	switch (v->type) {
	case CYAML_STRING: {
		size_t n = strlen(text);
		if (n < v->string.min)
			return fail_here(A, "must not be empty");
		if (n > v->string.max)
			return fail_here(A, "too long (at most %u characters)", v->string.max);
		char *copy = xstrdup(text);
		memcpy(data, &copy, sizeof(copy));
		return 0;
	}
	case CYAML_UINT: {
		errno = 0;
		unsigned long long u = strtoull(text, &end, 0);
		uint64_t max = UINT64_MAX >> ((8 - v->data_size) * 8);
		if (end == text || errno == ERANGE || u > max)
			return fail_value(A, v, node);
		write_uint(data, v->data_size, u);
		return 0;
	}
	case CYAML_FLOAT: { /* double only: the schema has no float */
		double d = strtod(text, &end);
		if (end == text || v->data_size != sizeof(d))
			return fail_value(A, v, node);
		memcpy(data, &d, sizeof(d));
		return 0;
	}
	case CYAML_ENUM: /* CYAML_FLAG_STRICT, all of them: a listed name, exactly */
		for (uint32_t i = 0; i < v->enumeration.count; i++)
			if (!strcmp(text, v->enumeration.strings[i].str)) {
				write_uint(data, v->data_size, (uint64_t)v->enumeration.strings[i].val);
				return 0;
			}
		return fail_value(A, v, node);
	default:
		return fail_value(A, v, node);
	}
}

static int apply_value(struct apply *A, const cyaml_schema_value_t *v, yaml_node_t *node,
		       uint8_t *data, const cyaml_schema_field_t *field, uint8_t *parent);

/* The entries of sequence node into the array at data (a pointer to it), their count into the
 * count field of field in parent. */
static int apply_sequence(struct apply *A, const cyaml_schema_value_t *v, yaml_node_t *node,
			  uint8_t *data, const cyaml_schema_field_t *field, uint8_t *parent)
{
	yaml_node_item_t *items = node->data.sequence.items.start;
	uint32_t count = (uint32_t)(node->data.sequence.items.top - items), size = v->data_size;
	uint8_t *array = NULL;
	for (uint32_t i = 0; i < count; i++) {
		if (i == v->sequence.max)
			return fail_here(A, "at most %u entries are allowed", v->sequence.max);
		array = xrealloc(array, (size_t)(i + 1) * size);
		memset(array + (size_t)i * size, 0, size);
		memcpy(data, &array, sizeof(array));
		write_uint(parent + field->count_offset, field->count_size, i + 1);
		if (!push_step(A, (struct step){ .idx = i }))
			return fail_here(A, "nested too deeply");
		int rc = apply_value(A, v->sequence.entry, yaml_document_get_node(&A->L->doc, items[i]),
				     array + (size_t)i * size, NULL, NULL);
		A->n--;
		if (rc)
			return -1;
	}
	if (count < v->sequence.min)
		return fail_here(A, "needs at least %u entr%s", v->sequence.min,
				 v->sequence.min > 1 ? "ies" : "y");
	return 0;
}

/* The pairs of mapping node into the struct at data, by the fields of v. */
static int apply_mapping(struct apply *A, const cyaml_schema_value_t *v, yaml_node_t *node,
			 uint8_t *data)
{
	bool seen[32] = { false }; /* by field: the schema's mappings have at most 13 */
	const cyaml_schema_field_t *fields = v->mapping.fields;
	for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&A->L->doc, p->key);
		const char *key = doc_scalar(k); /* keys are scalars: doc_read refused the others */
		const cyaml_schema_field_t *f = schema_field(v, key, strlen(key));
		if (!push_step(A, (struct step){ .key = key, .key_len = strlen(key) }))
			return fail_here(A, "nested too deeply");
		if (!f) {
			char allowed[256] = "";
			for (const cyaml_schema_field_t *g = fields; g->key; g++)
				snprintf(allowed + strlen(allowed), sizeof(allowed) - strlen(allowed),
					 "%s%s", allowed[0] ? ", " : "", g->key);
			return fail_here(A, "unknown key (expected one of: %s)", allowed);
		}
		seen[f - fields] = true;
		int rc = f->value.type == CYAML_IGNORE
				 ? 0
				 : apply_value(A, &f->value,
					       yaml_document_get_node(&A->L->doc, p->value),
					       data + f->data_offset, f, data);
		A->n--;
		if (rc)
			return -1;
	}
	for (const cyaml_schema_field_t *f = fields; f->key; f++) {
		if ((f->value.flags & CYAML_FLAG_OPTIONAL) || seen[f - fields])
			continue;
		char path[256];
		unsigned line;
		doc_resolve(A->L, A->s, A->n, &line); /* the mapping's line: the field is not there */
		bool pushed = push_step(A, (struct step){ .key = f->key, .key_len = strlen(f->key) });
		doc_path_text(A->s, A->n, path, sizeof(path));
		A->n -= pushed;
		return doc_fail_line(A->L, line, path, "required field is missing");
	}
	return 0;
}

/* The value at node into data by schema v: a pointer (CYAML_FLAG_POINTER) gets its own
 * allocation, written at data. field and parent: the field and struct holding a sequence, whose
 * count the sequence sets. */
static int apply_value(struct apply *A, const cyaml_schema_value_t *v, yaml_node_t *node,
		       uint8_t *data, const cyaml_schema_field_t *field, uint8_t *parent)
{
	yaml_node_type_t want = v->type == CYAML_MAPPING    ? YAML_MAPPING_NODE
				: v->type == CYAML_SEQUENCE ? YAML_SEQUENCE_NODE
							    : YAML_SCALAR_NODE;
	if (node->type != want)
		return fail_value(A, v, node);
	if (v->type == CYAML_SEQUENCE)
		return apply_sequence(A, v, node, data, field, parent);
	if (v->type != CYAML_MAPPING)
		return apply_scalar(A, v, node, data);
	if (v->flags & CYAML_FLAG_POINTER) {
		uint8_t *own = xcalloc(1, v->data_size);
		memcpy(data, &own, sizeof(own));
		data = own;
	}
	return apply_mapping(A, v, node, data);
}

int schema_apply(struct loader *L, struct recipe **out)
{
	struct apply A = { .L = L };
	return apply_value(&A, &recipe_schema, yaml_document_get_root_node(&L->doc), (uint8_t *)out,
			   NULL, NULL);
}

/* ---- strict numbers ------------------------------------------------------------------------ */

/* Numbers are decimal text: libcyaml would also take "5s", "0x10", "010" (octal) or "-1". */
static int strict_numbers(struct loader *L, yaml_node_t *node, const cyaml_schema_value_t *v,
			  char *path, size_t len)
{
	size_t o = strlen(path);
	const char *text = doc_scalar(node);
	char q[64];
	if (!node || !v)
		return 0;
	if (v->type == CYAML_UINT && text &&
	    (!doc_digits(text) || (text[0] == '0' && text[1])))
		return doc_fail_line(L, doc_line(node), path,
				     "expected an unsigned integer, got %s (decimal digits only)",
				     recipe_quote(q, sizeof(q), text));
	if (v->type == CYAML_FLOAT && text) {
		double d;
		if (!decimal_number(text, false, &d))
			return doc_fail_line(L, doc_line(node), path,
					     "expected a number, got %s (decimal notation only)",
					     recipe_quote(q, sizeof(q), text));
	}
	if (v->type == CYAML_SEQUENCE && node->type == YAML_SEQUENCE_NODE) {
		unsigned i = 0;
		for (yaml_node_item_t *it = node->data.sequence.items.start;
		     it < node->data.sequence.items.top; it++, i++) {
			snprintf(path + o, len - o, "[%u]", i);
			if (strict_numbers(L, yaml_document_get_node(&L->doc, *it),
					   v->sequence.entry, path, len))
				return -1;
		}
	}
	if (v->type == CYAML_MAPPING && node->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = node->data.mapping.pairs.start;
		     p < node->data.mapping.pairs.top; p++) {
			const char *k = doc_scalar(yaml_document_get_node(&L->doc, p->key));
			const cyaml_schema_field_t *f = k ? schema_field(v, k, strlen(k)) : NULL;
			if (!f)
				continue;
			snprintf(path + o, len - o, "%s%s", o ? "." : "", k);
			if (strict_numbers(L, yaml_document_get_node(&L->doc, p->value), &f->value,
					   path, len))
				return -1;
		}
	}
	path[o] = '\0';
	return 0;
}

int schema_strict_numbers(struct loader *L)
{
	char path[256] = "";
	return strict_numbers(L, yaml_document_get_root_node(&L->doc), &recipe_schema, path,
			      sizeof(path));
}
