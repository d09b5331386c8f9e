# unwind.mk — fixtures for tests/unit/test_unwind.c and tests/e2e/t_unwind.sh, built into
# $(BUILD)/fixtures/ with gcc as distributions build: libleaf.so and leaf_main (-O2
# -fno-omit-frame-pointer: the leaf crc32_slice_update still pushes no frame), nofp_main (-O2
# -fomit-frame-pointer: no frame anywhere). The e2e test checks the leaf with objdump.
UNWFIX := $(BUILD)/fixtures
UNWFIX_CFLAGS := -O2 -g -Wall -Wextra -Werror

$(UNWFIX)/libleaf.so: tests/unit/fixtures/leaf_lib.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	gcc $(UNWFIX_CFLAGS) -fno-omit-frame-pointer -shared -fPIC -o $@ $<

$(UNWFIX)/leaf_main: tests/unit/fixtures/leaf_main.c $(UNWFIX)/libleaf.so | $(DEPS_STAMP)
	gcc $(UNWFIX_CFLAGS) -fno-omit-frame-pointer -o $@ $< -L$(UNWFIX) -lleaf -Wl,-rpath,'$$ORIGIN'

$(UNWFIX)/nofp_main: tests/unit/fixtures/nofp_main.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	gcc $(UNWFIX_CFLAGS) -fomit-frame-pointer -fasynchronous-unwind-tables -o $@ $<

UNIT_FIXTURES += $(UNWFIX)/libleaf.so $(UNWFIX)/leaf_main $(UNWFIX)/nofp_main
