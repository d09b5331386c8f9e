# symbols.mk — ELF fixtures for tests/unit/test_symbols.c, built into $(BUILD)/fixtures/:
# a shared library, a PIE and a non-PIE executable using it, and stripped copies.
SYMFIX := $(BUILD)/fixtures
SYMFIX_CFLAGS := -O1 -g -fno-omit-frame-pointer -fno-inline -Wall -Wextra -Werror

$(SYMFIX)/libsymfix.so: tests/unit/fixtures/symfix_lib.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(SYMFIX_CFLAGS) -shared -fPIC -o $@ $<

$(SYMFIX)/symfix_pie: tests/unit/fixtures/symfix_main.c $(SYMFIX)/libsymfix.so | $(DEPS_STAMP)
	$(CC) $(SYMFIX_CFLAGS) -fPIE -pie -o $@ $< -L$(SYMFIX) -lsymfix -Wl,-rpath,'$$ORIGIN'

$(SYMFIX)/symfix_nopie: tests/unit/fixtures/symfix_main.c $(SYMFIX)/libsymfix.so | $(DEPS_STAMP)
	$(CC) $(SYMFIX_CFLAGS) -fno-pie -no-pie -o $@ $< -L$(SYMFIX) -lsymfix -Wl,-rpath,'$$ORIGIN'

$(SYMFIX)/symfix_pie_stripped: $(SYMFIX)/symfix_pie
	strip -o $@ $<

$(SYMFIX)/libsymfix_stripped.so: $(SYMFIX)/libsymfix.so
	strip -o $@ $<

UNIT_FIXTURES += $(SYMFIX)/libsymfix.so $(SYMFIX)/symfix_pie $(SYMFIX)/symfix_nopie \
		 $(SYMFIX)/symfix_pie_stripped $(SYMFIX)/libsymfix_stripped.so

# A library whose symbols are only in a separate debug file found by .gnu_debuglink (no build-id,
# so the CRC is what verifies it): the stripped file, and its debug file in .debug/.
$(SYMFIX)/libsymfix_nobid.so: tests/unit/fixtures/symfix_lib.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(SYMFIX_CFLAGS) -shared -fPIC -Wl,--build-id=none -o $@ $<

$(SYMFIX)/.debug/libsymfix_dbglink.debug: $(SYMFIX)/libsymfix_nobid.so
	@mkdir -p $(dir $@)
	objcopy --only-keep-debug $< $@

$(SYMFIX)/libsymfix_dbglink.so: $(SYMFIX)/libsymfix_nobid.so $(SYMFIX)/.debug/libsymfix_dbglink.debug
	strip --strip-all -o $@.tmp $<
	objcopy --add-gnu-debuglink=$(SYMFIX)/.debug/libsymfix_dbglink.debug $@.tmp $@ && rm -f $@.tmp

UNIT_FIXTURES += $(SYMFIX)/libsymfix_nobid.so $(SYMFIX)/.debug/libsymfix_dbglink.debug \
		 $(SYMFIX)/libsymfix_dbglink.so

# With build-ids: the stripped libsymfix.so whose .gnu_debuglink names its own debug file, and
# one whose debuglink names the debug file of another build (-O2: another build-id) with that
# file's CRC, so that only the build-id comparison can refuse it.
$(SYMFIX)/libsymfix_o2.so: tests/unit/fixtures/symfix_lib.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(SYMFIX_CFLAGS) -O2 -shared -fPIC -o $@ $<

$(SYMFIX)/dbg/libsymfix_right.debug: $(SYMFIX)/libsymfix.so
	@mkdir -p $(dir $@)
	objcopy --only-keep-debug $< $@

$(SYMFIX)/dbg/libsymfix_wrong.debug: $(SYMFIX)/libsymfix_o2.so
	@mkdir -p $(dir $@)
	objcopy --only-keep-debug $< $@

$(SYMFIX)/libsymfix_%link.so: $(SYMFIX)/libsymfix.so $(SYMFIX)/dbg/libsymfix_%.debug
	strip --strip-all -o $@.tmp $<
	objcopy --add-gnu-debuglink=$(SYMFIX)/dbg/libsymfix_$*.debug $@.tmp $@ && rm -f $@.tmp

UNIT_FIXTURES += $(SYMFIX)/dbg/libsymfix_right.debug $(SYMFIX)/dbg/libsymfix_wrong.debug \
		 $(SYMFIX)/libsymfix_rightlink.so $(SYMFIX)/libsymfix_wronglink.so

# A library of 20,000 functions with long names: its .symtab (~480 KB) and .strtab (~1.3 MB) are
# larger than the steps in which usyms gives a file's tables back as it reads them, so names are
# read on both sides of released pages (test_usyms_large_tables).
$(SYMFIX)/symmany.c: tests/unit/symbols.mk
	@mkdir -p $(dir $@)
	awk 'BEGIN { for (i = 0; i < 20000; i++) printf "int many_function_with_a_long_name_for_the_string_table_%05d(int x) { return x * %d + 1; }\n", i, i + 2 }' > $@

$(SYMFIX)/libsymmany.so: $(SYMFIX)/symmany.c | $(DEPS_STAMP)
	$(CC) -O0 -shared -fPIC -o $@ $<

UNIT_FIXTURES += $(SYMFIX)/libsymmany.so
