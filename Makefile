# Makefile — builds build/diagnose: engine/probes/*.bpf.c → CO-RE objects → skeletons (bpftool) → engine.
# Nothing is compiled at run time; the BPF bytes are inside the binary.
#
#   make            build build/diagnose (installs missing Debian packages first when root)
#   make test-recipes  replay the recorded incidents against their .expect files (diagnose test)
#   make check      build, then unit tests (cmocka), recipe lint, fuzz smoke, end-to-end tests
#                   on the kernel (E2E_TESTS="t_a t_b": those only)
#   make check SAN=1  with ASan + UBSan, in build-san/: unit, lint and the e2e tests of SAN_E2E_TESTS
#                   (E2E_TESTS=all: every e2e test)
#   make demo       run `diagnose high-cpu` on the bundled CPU-burning workload
#   make bench      benchmark against bpftrace and libbpf-tools, side by side
#   make bench-servers  what each recipe costs a real server's throughput and latency
#   make install PREFIX=/usr/local

# The binary finds its recipes from its own path (PREFIX/bin -> PREFIX/share/diagnose): nothing
# about PREFIX is compiled in, so `make install PREFIX=/x` works whatever was built before.
PREFIX ?= /usr/local
SHAREDIR := $(PREFIX)/share/diagnose
# zsh completion: a directory of zsh's default $fpath (Debian's: site-functions under
# /usr/local, vendor-completions for the distribution's own /usr).
ZSH_COMPDIR ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/share/zsh/vendor-completions,$(PREFIX)/share/zsh/site-functions)
SAN ?= 0

ifeq ($(SAN),1)
BUILD ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD ?= build
SANFLAGS :=
endif

CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= llvm-strip
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

VERSION := 0.1.0
# The engine's folders are its floors (docs/architecture.md#floors); an include names its folder
# ("common/value.h"), so engine/ is the one include directory (the build's generated headers
# aside: skeletons, the probe list, syscall names, the pprof messages).
ENGINE_INCLUDES := -Iengine
ENGINE_HDRS := $(wildcard engine/*/*.h)
# The BPF side includes the headers both sides share (engine/abi/) and its probe's layouts
# (engine/probes/NAME.h), by their folders too.
BPF_INCLUDES := -Iengine
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fno-omit-frame-pointer $(SANFLAGS) \
	  -I$(BUILD) -I$(BUILD)/bpf -I$(BUILD)/proto $(ENGINE_INCLUDES) -I/usr/include/lua5.4 \
	  -DDIAG_VERSION='"$(VERSION)"'
LDFLAGS += $(SANFLAGS)
# libdw: .eh_frame function ranges (engine/symbolize/ehframe.c), CFI and DWARF unwinding
# (engine/symbolize/unwind.c); libiberty (static, PIC in Debian): the
# C++/Rust demangler (engine/symbolize/demangle.c); protobuf-c: the pprof profile (engine/report/pprof.c);
# nettle: SHA-256 (engine/common/sha256.c); jansson: the JSON reader (engine/common/json_parse.c).
LDLIBS := -lbpf -ldw -lelf -lz -lyaml -llua5.4 -liberty -lprotobuf-c -lnettle -ljansson -lm \
	  -lpthread

# A probe's BPF program sits beside its engine side (engine/probes/X.bpf.c, X.h, X.c); the
# process-set tracker's beside its own (engine/session/procset.bpf.c).
BPF_SRCS := $(wildcard engine/probes/*.bpf.c) engine/session/procset.bpf.c
BPF_NAMES := $(patsubst %.bpf.c,%,$(notdir $(BPF_SRCS)))
BPF_OBJS := $(patsubst %,$(BUILD)/bpf/%.bpf.o,$(BPF_NAMES))
BPF_SKELS := $(patsubst %,$(BUILD)/bpf/%.skel.h,$(BPF_NAMES))

ENGINE_SRCS := $(filter-out %.bpf.c,$(wildcard engine/*/*.c))
# The pprof messages (proto/profile.proto), compiled by protoc-c into $(BUILD)/proto.
PROTO_C := $(BUILD)/proto/profile.pb-c.c
PROTO_H := $(BUILD)/proto/profile.pb-c.h
ENGINE_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(ENGINE_SRCS)) $(BUILD)/proto/profile.pb-c.o
LIB_OBJS := $(filter-out $(BUILD)/engine/cli/main.o,$(ENGINE_OBJS))
# A probe kind is a file of engine/probes/ that defines probe_kind_NAME (helper files may sit there).
PROBE_SRCS := $(sort $(filter-out %.bpf.c,$(wildcard engine/probes/*.c)))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOAD_CXX_SRCS := $(wildcard tests/workloads/*.cpp)
WORKLOADS := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(WORKLOAD_SRCS)) \
	     $(patsubst tests/workloads/%.cpp,$(BUILD)/workloads/%,$(WORKLOAD_CXX_SRCS)) \
	     $(BUILD)/workloads/cpu_burner_stripped $(BUILD)/workloads/mem_leaker_je \
	     $(BUILD)/workloads/mem_leaker_tc $(BUILD)/workloads/mem_leaker_mi

DEPS_STAMP := $(BUILD)/.deps-ok

.PHONY: all check check-build check-kernel unit lint test-recipes e2e demo bench bench-servers install clean deps fuzz fuzz-smoke
# Keep generated skeletons and objects: they are inputs of several targets.
.SECONDARY:
all: $(BUILD)/diagnose $(WORKLOADS)

deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/install-deps.sh
	@mkdir -p $(BUILD)
	@scripts/install-deps.sh
	@touch $@

# --- BPF: object → skeleton -------------------------------------------------------------------
# The objects must not depend on where the tree is checked out: approvals pin their hashes.
vpath %.bpf.c engine/probes engine/session
$(BUILD)/bpf/%.bpf.o: %.bpf.c $(wildcard engine/abi/*.h engine/probes/*.h) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(BPF_INCLUDES) -Wall -Werror \
		-fdebug-prefix-map=$(CURDIR)=. -c $< -o $@.tmp
	$(LLVM_STRIP) -g $@.tmp -o $@ && rm -f $@.tmp

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

# The probe catalog is the files of engine/probes/ that define their kind (probe_kind_NAME in
# NAME.c): adding a probe adds no line elsewhere.
$(BUILD)/catalog_list.h: $(PROBE_SRCS) Makefile
	@mkdir -p $(dir $@)
	@{ echo '/* generated by make from the files in engine/probes/ */'; \
	   for f in $(PROBE_SRCS); do n=$$(basename $$f .c); \
	     if grep -q "^const struct probe_kind probe_kind_$$n = " $$f; then echo "PROBE_KIND($$n)"; fi; \
	   done; } > $@.tmp
	@cmp -s $@.tmp $@ 2>/dev/null && rm -f $@.tmp || mv $@.tmp $@

# Syscall number → name, from the C library's headers for this architecture (build time only).
$(BUILD)/syscall_names.h: | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	@{ echo '/* generated by make from <sys/syscall.h> */'; \
	   echo 'static const char *const syscall_names[] = {'; \
	   echo '#include <sys/syscall.h>' | $(CC) -dM -E - | \
	     awk '$$1 == "#define" && $$2 ~ /^__NR_/ && $$3 ~ /^[0-9]+$$/ { printf "\t[%s] = \"%s\",\n", $$3, substr($$2, 6) }' | sort; \
	   echo '};'; } > $@.tmp && mv $@.tmp $@

# --- pprof messages: proto/*.proto → protobuf-c code ------------------------------------------
$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/proto
	protoc-c --proto_path=proto --c_out=$(BUILD)/proto $<

$(BUILD)/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h
	$(CC) $(CFLAGS) -c $< -o $@

# --- engine -----------------------------------------------------------------------------------
# -MMD: every header an object really includes (engine/probes/*.h layouts shared with the BPF side too) is
# a dependency, so a changed struct never links against a stale object.
$(BUILD)/engine/%.o: engine/%.c $(ENGINE_HDRS) $(BPF_SKELS) $(BUILD)/catalog_list.h \
		     $(BUILD)/syscall_names.h $(PROTO_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
-include $(ENGINE_OBJS:.o=.d)

$(BUILD)/diagnose: $(ENGINE_OBJS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# --- tests ------------------------------------------------------------------------------------
$(BUILD)/tests/%: tests/unit/%.c $(LIB_OBJS) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(LDLIBS) -lcmocka

# Workloads are built with frame pointers and symbols, as a well-built service would be. clang,
# because gcc 12 drops the frame pointer of leaf functions even with -mno-omit-leaf-frame-pointer,
# which hides the leaf's caller from a frame-pointer unwinder.
$(BUILD)/workloads/%: tests/workloads/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -Wall -Wextra -Werror -o $@ $< -lpthread

# The FUSE server of tests/e2e/t_hostile.sh (a file system that stops answering): libfuse3.
$(BUILD)/workloads/stallfs: tests/workloads/stallfs.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -O1 -g -Wall -Wextra -Werror $$(pkg-config --cflags fuse3) -o $@ $< $$(pkg-config --libs fuse3)

# C++ workloads (demangling): built by g++, as a distribution's C++ code is.
$(BUILD)/workloads/%: tests/workloads/%.cpp | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	g++ -O1 -g -fno-omit-frame-pointer -fno-inline -Wall -Wextra -Werror -o $@ $<

# The same leaker linked with jemalloc (libjemalloc-dev), as a service built against it is: its
# malloc and free stay undefined in the binary and bind to libjemalloc.so.2 at run time, no
# LD_PRELOAD.
$(BUILD)/workloads/mem_leaker_je: tests/workloads/mem_leaker.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -Wall -Wextra -Werror -o $@ $< -ljemalloc -lpthread

# And against tcmalloc (libgoogle-perftools-dev) and mimalloc (libmimalloc-dev), the other two
# allocators a service links instead of glibc's.
$(BUILD)/workloads/mem_leaker_tc: tests/workloads/mem_leaker.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -Wall -Wextra -Werror -o $@ $< -ltcmalloc -lpthread

$(BUILD)/workloads/mem_leaker_mi: tests/workloads/mem_leaker.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -Wall -Wextra -Werror -o $@ $< -lmimalloc -lpthread

# The same CPU burner as a distribution ships binaries: no .symtab, no .dynsym names of its own.
$(BUILD)/workloads/cpu_burner_stripped: $(BUILD)/workloads/cpu_burner
	strip --strip-all -o $@ $<

# Per-test build rules (fixtures such as ELF files) live next to the tests.
-include $(wildcard tests/unit/*.mk)

unit: $(UNIT_BINS) $(UNIT_FIXTURES)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; DIAG_SRCDIR=$(CURDIR) BUILD=$(BUILD) $$t; done

# The recipe checks a pull request must pass: lint, and the approvals lock still matching. And the
# engine's: every call that opens, stats or resolves a path is placed in tests/target-paths.allow
# (a target's files go through tfile.c only); no include climbs a floor of docs/architecture.md's
# table, goes sideways or leaves out its folder, and no files include each other in a circle;
# each check shown first to catch a planted violation.
lint: $(BUILD)/diagnose
	@scripts/ci-recipes.sh $(BUILD)/diagnose
	@echo "== paths the engine opens (scripts/check-target-paths.py)"
	@python3 scripts/check-target-paths.py --selftest && python3 scripts/check-target-paths.py
	@echo "== the engine's floors (scripts/check-floors.py)"
	@python3 scripts/check-floors.py --selftest && python3 scripts/check-floors.py

# The recorded incidents replayed against their expectations (RECIPE/NAME.expect), for a recipe
# author: no root, no BPF. `make lint` runs it too.
test-recipes: $(BUILD)/diagnose
	@DIAGNOSE_RECIPES=$(CURDIR)/recipes $(BUILD)/diagnose test --dir tests/fixtures/reports

# The names the e2e release checks call ours (tests/e2e/lib.sh): every program of every BPF
# object and the doctor's, derived so that a new probe's programs are checked without a line here.
$(BUILD)/bpf/prog_names: $(BPF_OBJS) $(ENGINE_SRCS) tests/e2e/bpf_ours.py
	@python3 tests/e2e/bpf_ours.py names $(CURDIR) $(BUILD) > $@.tmp && mv $@.tmp $@

# E2E_TESTS="t_a t_b.sh": only those e2e tests; all: every tests/e2e/t_*.sh. The sanitizer pass
# repeats the tests whose C code takes what users and targets give and where memory errors would
# hide: recipes, Lua, arguments and budgets (t_bad_input, t_errors), reports read back (t_replay),
# locks, policies and swapped files (t_trust), unwinding and symbolizing target binaries
# (t_unwind, t_symbols), JIT runtimes' perf maps and the jcmd run for a JVM (t_jit), their USDT notes (t_usdt), the outputs written from their names (t_outputs), every probe kind's
# results (t_shapes), process sets that fork and exec (t_forks), and every way a run ends
# (t_stop). Its fuzz smoke is not repeated: the fuzz targets are ASan + UBSan builds whatever
# SAN says, and the first pass ran them.
SAN_E2E_TESTS := t_bad_input t_errors t_replay t_trust t_unwind t_symbols t_jit t_usdt t_outputs t_shapes t_forks t_stop
ifeq ($(SAN),1)
E2E_TESTS ?= $(SAN_E2E_TESTS)
CHECK_FUZZ :=
else
E2E_TESTS ?= all
CHECK_FUZZ := fuzz-smoke
endif

e2e: all $(UNIT_FIXTURES) $(BUILD)/bpf/prog_names # t_unwind.sh runs the fixtures of tests/unit/unwind.mk
	@BUILD=$(BUILD) E2E_TESTS="$(filter-out all,$(E2E_TESTS))" tests/e2e/run.sh

# check builds everything its stages run first, on every CPU (check-build, below the fuzz
# targets it needs), then runs the stages one at a time (the e2e tests measure CPU shares), each
# timed (scripts/check.sh).
NPROC := $(shell nproc 2>/dev/null || echo 1)
check:
	@MAKE="$(MAKE)" scripts/check.sh "$(if $(filter 1,$(SAN)),SAN=1)" $(NPROC) unit lint $(CHECK_FUZZ) e2e

# check-kernel boots a Debian kernel (KERNEL=6.1: Debian 12's linux-image-cloud-amd64; 6.1-rt:
# its linux-image-rt-amd64; 5.10: Debian 11's and 6.12: Debian 13's cloud images, through an apt
# configuration of the harness's own) in a QEMU guest and runs the smoke set of every recipe there
# (scripts/kernel-guest/run.sh, tests/kernel/smoke.sh; logs in build/kernels/KERNEL/logs/).
KERNEL ?= 6.1
check-kernel: all $(BUILD)/tests/test_core_btf
	@BUILD=$(BUILD) scripts/kernel-guest/run.sh $(KERNEL)

demo: all
	@BUILD=$(BUILD) scripts/demo.sh

$(BUILD)/bench/floor.bpf.o: tests/bench/floor.bpf.c engine/abi/vmlinux.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(BPF_INCLUDES) -Wall -Werror -c $< -o $@

$(BUILD)/bench/floor: tests/bench/floor.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $< -lbpf -lelf -lz

# Part 4 (symbolization): the engine's symbols code, linked as the unit tests link it.
$(BUILD)/bench/symbench: tests/bench/symbench.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB_OBJS) $(LDFLAGS) $(LDLIBS)

# Part 3 (stack unwinding) runs on the -fomit-frame-pointer fixture of tests/unit/unwind.mk.
bench: all $(BUILD)/bench/floor $(BUILD)/bench/floor.bpf.o $(BUILD)/bench/symbench $(UNWFIX)/nofp_main
	@BUILD=$(BUILD) python3 tests/bench/bench.py

# PostgreSQL, Redis, nginx and a Python HTTP service, each started privately from Debian's
# packages, under pgbench, redis-benchmark and wrk, with each recipe and without (also `make bench`
# part E). BENCH_SERVERS=postgres,redis,nginx,python,watch BENCH_RECIPES=... BENCH_SERVER_ALTS=3
# BENCH_WATCH_S=600 (about 80 minutes); writes $(BUILD)/bench/servers.md.
bench-servers: all
	@BUILD=$(BUILD) python3 tests/bench/servers.py

# --- fuzzing: libFuzzer + ASan + UBSan (tests/fuzz/README.md) ----------------------------------
# Targets: recipe (the recipe loader), verdict (a Lua snippet through the sandbox and the bounded
# conversion back to C), json (the JSON reader), lock (the approvals lock parser), http (the
# metrics endpoint's request-head parser), prom (the Prometheus exposition writer). `make fuzz`
# runs FUZZ_TARGET (default: recipe) for FUZZ_TIME seconds, its corpus kept in
# $(BUILD)/fuzz/corpus-TARGET; `fuzz-smoke` (part of check) runs each target FUZZ_SMOKE_TIME
# seconds on a fresh copy of its seeds. A crash leaves its input in $(BUILD)/fuzz/TARGET-*
# (smoke: $(BUILD)/fuzz/smoke/TARGET/crashes/) and fails the target.
FUZZ_TIME ?= 300
FUZZ_SMOKE_TIME ?= 10
FUZZ_TARGET ?= recipe
FUZZ_TARGETS := recipe verdict json lock http prom
FUZZ_COMMON := -timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1
FUZZ_FLAGS_recipe := -dict=tests/fuzz/recipe.dict -max_len=65536
FUZZ_FLAGS_verdict := -dict=tests/fuzz/lua.dict -max_len=4096
FUZZ_FLAGS_json := -dict=tests/fuzz/json.dict -max_len=65536
FUZZ_FLAGS_lock := -dict=tests/fuzz/lock.dict -max_len=65536
FUZZ_FLAGS_http := -dict=tests/fuzz/http.dict -max_len=9000
FUZZ_FLAGS_prom := -dict=tests/fuzz/prom.dict -max_len=4096
FUZZ_SEEDS_recipe = $(wildcard recipes/*.yaml tests/fuzz/seeds/*.yaml) $(shell find tests/recipes -name '*.yaml' 2>/dev/null)
FUZZ_SEEDS_verdict = $(wildcard tests/fuzz/seeds/lua/*.lua tests/unit/lua/*.lua)
FUZZ_SEEDS_json = $(wildcard tests/fuzz/seeds/json/*.json)
FUZZ_SEEDS_lock = $(wildcard recipes/approved.lock tests/fuzz/seeds/lock/*.lock)
FUZZ_SEEDS_http = $(wildcard tests/fuzz/seeds/http/*)
FUZZ_SEEDS_prom = $(wildcard tests/fuzz/seeds/prom/*)

# The recipe loader and what it links: load.c, the recipe's document (document.c), its schema
# (schema.c) and its data (recipe.c), and util.c (recipe_find.c, the search path, is not the
# loader's and is not linked), and libyaml (libcyaml's header only: its schema format).
FUZZ_RECIPE_SRCS := engine/recipe/load.c engine/recipe/document.c engine/recipe/schema.c \
		    engine/recipe/recipe.c engine/common/util.c
$(BUILD)/fuzz/fuzz_recipe: tests/fuzz/fuzz_recipe.c $(FUZZ_RECIPE_SRCS) $(wildcard engine/recipe/*.h) \
			   engine/common/util.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fno-omit-frame-pointer \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $(ENGINE_INCLUDES) \
		-o $@ tests/fuzz/fuzz_recipe.c $(FUZZ_RECIPE_SRCS) -lyaml

# The other targets link engine objects built with clang and the fuzzer's coverage instrumentation.
FUZZ_CFLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fno-omit-frame-pointer \
	       -fno-sanitize-recover=undefined -I$(BUILD) -I$(BUILD)/bpf -I$(BUILD)/proto $(ENGINE_INCLUDES) \
	       -I/usr/include/lua5.4 -DDIAG_VERSION='"$(VERSION)"'
FUZZ_LIB_OBJS := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(filter-out engine/cli/main.c,$(ENGINE_SRCS)) $(PROTO_C))
fuzz_objs = $(patsubst %,$(BUILD)/fuzz/obj/engine/%.o,$(1))

$(BUILD)/fuzz/obj/%.o: %.c $(ENGINE_HDRS) $(BPF_SKELS) $(BUILD)/catalog_list.h \
		       $(BUILD)/syscall_names.h $(PROTO_H) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

$(BUILD)/fuzz/fuzz_verdict: tests/fuzz/fuzz_verdict.c $(call fuzz_objs,verdict/verdict verdict/snippet verdict/sandbox verdict/lua_value verdict/answer common/json_parse common/value common/util)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $^ -llua5.4 -ljansson -lm

$(BUILD)/fuzz/fuzz_json: tests/fuzz/fuzz_json.c $(call fuzz_objs,common/json_parse common/value common/util)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $^ -ljansson -lm

$(BUILD)/fuzz/fuzz_lock: tests/fuzz/fuzz_lock.c $(FUZZ_LIB_OBJS)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $^ $(LDLIBS)

$(BUILD)/fuzz/fuzz_http: tests/fuzz/fuzz_http.c $(call fuzz_objs,watch/httpd common/util)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $^ -lm

$(BUILD)/fuzz/fuzz_prom: tests/fuzz/fuzz_prom.c tests/unit/prom_check.h $(call fuzz_objs,watch/prom common/util)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -Itests/unit -o $@ $(filter-out %.h,$^) -lm

# Seeds get unique names: several directories hold files of the same name. $(1): corpus
# directory, $(2): the seed files.
define fuzz_seed
	@mkdir -p $(1)
	@for f in $(2); do cp "$$f" "$(1)/$$(echo "$$f" | tr / _)"; done
endef

fuzz: $(BUILD)/fuzz/fuzz_$(FUZZ_TARGET)
	$(call fuzz_seed,$(BUILD)/fuzz/corpus-$(FUZZ_TARGET),$(FUZZ_SEEDS_$(FUZZ_TARGET)))
	$(BUILD)/fuzz/fuzz_$(FUZZ_TARGET) $(FUZZ_COMMON) $(FUZZ_FLAGS_$(FUZZ_TARGET)) \
		-max_total_time=$(FUZZ_TIME) -artifact_prefix=$(BUILD)/fuzz/$(FUZZ_TARGET)- \
		$(BUILD)/fuzz/corpus-$(FUZZ_TARGET)

# One target's smoke run ($(1): its name); the blank line ends the recipe line for $(foreach).
define fuzz_smoke_one
	@rm -rf $(BUILD)/fuzz/smoke/$(1) && mkdir -p $(BUILD)/fuzz/smoke/$(1)/crashes
	$(call fuzz_seed,$(BUILD)/fuzz/smoke/$(1)/corpus,$(FUZZ_SEEDS_$(1)))
	@$(BUILD)/fuzz/fuzz_$(1) $(FUZZ_COMMON) $(FUZZ_FLAGS_$(1)) -max_total_time=$(FUZZ_SMOKE_TIME) \
		-artifact_prefix=$(BUILD)/fuzz/smoke/$(1)/crashes/ $(BUILD)/fuzz/smoke/$(1)/corpus \
		> $(BUILD)/fuzz/smoke/$(1)/log 2>&1 || \
		{ tail -n 60 $(BUILD)/fuzz/smoke/$(1)/log; \
		  echo "fuzz-smoke: $(1) FAILED, inputs in $(BUILD)/fuzz/smoke/$(1)/crashes/"; exit 1; }
	@grep -h '^stat::number_of_executed_units' $(BUILD)/fuzz/smoke/$(1)/log | \
		sed 's/.*: */fuzz-smoke: $(1) ok, executions: /'

endef

fuzz-smoke: $(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS))
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz_smoke_one,$(t)))

# Everything the stages of check run (.ci/run builds it with -j, then times each stage).
check-build: all $(UNIT_BINS) $(UNIT_FIXTURES) $(BUILD)/bpf/prog_names \
	     $(if $(CHECK_FUZZ),$(patsubst %,$(BUILD)/fuzz/fuzz_%,$(FUZZ_TARGETS)))

install: all
	install -D -m 0755 $(BUILD)/diagnose $(DESTDIR)$(PREFIX)/bin/diagnose
	install -d $(DESTDIR)$(SHAREDIR)/recipes $(DESTDIR)$(SHAREDIR)/lua/lib
	install -m 0644 recipes/*.yaml recipes/approved.lock $(DESTDIR)$(SHAREDIR)/recipes/
	install -m 0644 lua/*.lua $(DESTDIR)$(SHAREDIR)/lua/
	install -m 0644 lua/lib/*.lua $(DESTDIR)$(SHAREDIR)/lua/lib/
	install -D -m 0644 docs/diagnose.1 $(DESTDIR)$(PREFIX)/share/man/man1/diagnose.1
	install -D -m 0644 completion/diagnose.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/diagnose
	install -D -m 0644 completion/_diagnose $(DESTDIR)$(ZSH_COMPDIR)/_diagnose

clean:
	rm -rf build build-san
