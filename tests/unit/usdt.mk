# usdt.mk — the USDT fixtures of tests/unit/test_usdt.c and tests/e2e/t_usdt.sh, built into
# $(BUILD)/fixtures/ with gcc -O2 as a distribution builds its binaries (sys/sdt.h from Debian's
# systemtap-sdt-dev): usdt_app (two probes behind semaphores) and the library it links,
# libusdtapp.so (two probes without, one reading a variable of the library through %rip).
USDTFIX := $(BUILD)/fixtures

$(USDTFIX)/libusdtapp.so: tests/unit/fixtures/usdt_app_plain.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	gcc -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer -shared -fPIC -o $@ $<

$(USDTFIX)/usdt_app: tests/unit/fixtures/usdt_app.c $(USDTFIX)/libusdtapp.so | $(DEPS_STAMP)
	gcc -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer -fPIE -pie -o $@ $< -L$(USDTFIX) \
		-lusdtapp -Wl,-rpath,'$$ORIGIN'

UNIT_FIXTURES += $(USDTFIX)/libusdtapp.so $(USDTFIX)/usdt_app
