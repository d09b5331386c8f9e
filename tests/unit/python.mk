# python.mk — tests/unit/fixtures/pylayout.c built against every CPython's headers on the machine
# (Debian's python3.11-dev, which make deps installs; pyenv's 3.12 and 3.13 where they are), into
# $(BUILD)/fixtures/pylayout_3.MINOR: tests/unit/test_python.c checks python.c's table with them.
PYLAYOUT_INCS := $(wildcard /usr/include/python3.1[1-3] /root/.pyenv/versions/3.1[1-3].*/include/python3.1[1-3])
PYLAYOUT_BINS := $(foreach inc,$(PYLAYOUT_INCS),$(BUILD)/fixtures/pylayout_$(subst /,_,$(inc)))

define PYLAYOUT_RULE
$(BUILD)/fixtures/pylayout_$(subst /,_,$(1)): tests/unit/fixtures/pylayout.c | $(DEPS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(CC) -O0 -w -I$(1) -I$(1)/internal -o $$@ $$<
endef
$(foreach inc,$(PYLAYOUT_INCS),$(eval $(call PYLAYOUT_RULE,$(inc))))

UNIT_FIXTURES += $(PYLAYOUT_BINS)
