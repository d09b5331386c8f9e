/* catalog.c — lookup of probe kinds; the list itself is generated from engine/probes/.
 * Must not: contain anything specific to one probe kind.
 */
#include "plan/catalog.h"

#include <string.h>
#include <unistd.h>

#define PROBE_KIND(n) extern const struct probe_kind probe_kind_##n;
#include "catalog_list.h"
#undef PROBE_KIND

static const struct probe_kind *const all_kinds[] = {
#define PROBE_KIND(n) &probe_kind_##n,
#include "catalog_list.h"
#undef PROBE_KIND
};

const struct probe_kind *catalog_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(all_kinds); i++)
		if (strcmp(all_kinds[i]->name, name) == 0)
			return all_kinds[i];
	return NULL;
}

const struct probe_kind *const *catalog_all(size_t *n)
{
	*n = ARRAY_LEN(all_kinds);
	return all_kinds;
}

int catalog_option_index(const struct probe_kind *kind, const char *name)
{
	for (size_t i = 0; i < kind->n_options; i++)
		if (strcmp(kind->options[i].name, name) == 0)
			return (int)i;
	return -1;
}

int catalog_option_with_role(const struct probe_kind *kind, enum option_role role)
{
	for (size_t i = 0; i < kind->n_options; i++)
		if (kind->options[i].role == role)
			return (int)i;
	return -1;
}

void probe_init_defaults(struct probe *p, const struct probe_kind *k)
{
	memset(p, 0, sizeof(*p));
	p->kind = k;
	p->cfg.id = k->name;
	p->cfg.variants = k->variants;
	p->cfg.filter.pid = getpid();
	p->cfg.filter.targets_fd = -1;
	for (size_t i = 0; i < k->n_options && i < PROBE_MAX_OPTIONS; i++) {
		p->cfg.opt[i] = k->options[i].dflt;
		p->cfg.str[i] = k->options[i].dflt_str;
	}
}
