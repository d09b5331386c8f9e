# usdt.mk — the USDT fixture of tests/unit/test_usdt.c and tests/e2e/t_usdt.sh, built into
# $(BUILD)/fixtures/ with gcc -O2 as a distribution builds its binaries (sys/sdt.h from Debian's
# systemtap-sdt-dev).
USDTFIX := $(BUILD)/fixtures

$(USDTFIX)/usdt_app: tests/unit/fixtures/usdt_app.c tests/unit/fixtures/usdt_app_plain.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	gcc -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer -o $@ $^

UNIT_FIXTURES += $(USDTFIX)/usdt_app
