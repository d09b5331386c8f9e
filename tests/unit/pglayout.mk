# pglayout.mk — tests/unit/fixtures/pglayout.c built against every PostgreSQL server's headers on
# the machine (Debian 12's postgresql-server-dev-15, which make deps installs; others where they
# are), into $(BUILD)/fixtures/pglayout_NN: tests/unit/test_pg_activity.c checks pg_layout.c's
# table with them.
PGLAYOUT_INCS := $(wildcard /usr/include/postgresql/1[3-7]/server)
PGLAYOUT_BINS := $(foreach inc,$(PGLAYOUT_INCS),$(BUILD)/fixtures/pglayout_$(word 4,$(subst /, ,$(inc))))

define PGLAYOUT_RULE
$(BUILD)/fixtures/pglayout_$(word 4,$(subst /, ,$(1))): tests/unit/fixtures/pglayout.c | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(CC) -O0 -w -I$(1) -o $$@ $$<
endef
$(foreach inc,$(PGLAYOUT_INCS),$(eval $(call PGLAYOUT_RULE,$(inc))))

UNIT_FIXTURES += $(PGLAYOUT_BINS)
