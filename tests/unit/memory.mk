# memory.mk — fixtures for tests/e2e/t_memory.sh, built into $(BUILD)/fixtures/ with gcc as a
# distribution builds them: libmemleak.so (a leak in a shared library, -O2 -fPIC) and memleak_pie
# (a PIE calling it).
MEMFIX := $(BUILD)/fixtures

$(MEMFIX)/libmemleak.so: tests/unit/fixtures/memleak_lib.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	gcc -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer -shared -fPIC -o $@ $<

$(MEMFIX)/memleak_pie: tests/unit/fixtures/memleak_pie.c $(MEMFIX)/libmemleak.so | $(DEPS_STAMP)
	gcc -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer -fPIE -pie -o $@ $< -L$(MEMFIX) \
		-lmemleak -Wl,-rpath,'$$ORIGIN'

UNIT_FIXTURES += $(MEMFIX)/libmemleak.so $(MEMFIX)/memleak_pie
