# ngx_llm build.  `make` builds the module, the CLI and the unit tests;
# `make run` serves the default model on 127.0.0.1:8080; `make test` runs everything.

SHELL       := /bin/bash
BUILD       := build
NGINX_SRC   ?= /usr/share/nginx/src
NGINX_BIN   ?= /usr/sbin/nginx
MODULE      := $(BUILD)/ngx_http_llm_module.so
CLI         := $(BUILD)/llm
PORT        ?= 8080
JOBS        ?= $(shell nproc)
NGX_CC_OPT  ?= -g -O2 -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIC $(EXTRA_CFLAGS)

CC          ?= cc
OPT         ?= -O2
CFLAGS_CORE := -std=gnu11 $(OPT) -g -fPIC -pthread -Wall -Wextra -Werror \
               -Wno-unused-parameter -Isrc -I. $(EXTRA_CFLAGS)
LDLIBS      := -ljansson -lpcre2-8 -lopenblas -lm -lpthread $(EXTRA_LDFLAGS)

CORE_DIRS   := src/core src/api src/chat src/parsers src/grammar src/engine kernels/cpu
CORE_SRCS   := $(wildcard $(addsuffix /*.c,$(CORE_DIRS)))
CORE_HDRS   := $(wildcard $(addsuffix /*.h,$(CORE_DIRS)))
CORE_OBJS   := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
CORE_LIB    := $(BUILD)/libllmcore.a
CLI_SRCS    := $(wildcard src/cli/*.c)
GLUE_SRCS   := $(wildcard src/ngx_http_llm_*.c src/*.h)
UNIT_SRCS   := $(wildcard t/unit/test_*.c)
UNIT_BINS   := $(UNIT_SRCS:t/unit/%.c=$(BUILD)/unit/%)

DEPS_BUILD  := nginx-core nginx-dev libjansson-dev libpcre2-dev libopenblas-dev build-essential
# test tools: command or perl module -> Debian package that provides it
DEPS_TEST   := cmd:curl=curl cmd:prove=perl cmd:node=nodejs cmd:npm=npm \
               pm:IPC::Run=libipc-run-perl pm:LWP::UserAgent=libwww-perl \
               pm:URI=liburi-perl pm:JSON::PP=perl

.PHONY: all deps deps-test module cli unit run stop test test-unit test-nginx test-node bench bench-scale soak clean guarantee

all: deps module cli unit

# ---- dependencies (Debian) ----
deps:
	@missing=""; for p in $(DEPS_BUILD); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

deps-test: deps
	@missing=""; for d in $(DEPS_TEST); do \
	  what=$${d%%=*}; pkg=$${d#*=}; \
	  case $$what in \
	    cmd:*) command -v $${what#cmd:} >/dev/null 2>&1 || missing="$$missing $$pkg";; \
	    pm:*)  perl -M$${what#pm:} -e1 >/dev/null 2>&1 || missing="$$missing $$pkg";; \
	  esac; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# ---- engine core as a static library (CLI and unit tests link it) ----
$(BUILD)/obj/%.o: %.c $(CORE_HDRS) src/core/llm_ir.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_CORE) -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	@rm -f $@
	ar rcs $@ $^

cli: $(CLI)
$(CLI): $(CLI_SRCS) $(CORE_LIB) $(CORE_HDRS)
	$(CC) $(CFLAGS_CORE) -Isrc/cli $(CLI_SRCS) $(CORE_LIB) $(LDLIBS) -o $@

BENCH_BINS  := $(BUILD)/bench/grammar
$(BUILD)/bench/%: t/bench/%.c $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_CORE) $< $(CORE_LIB) $(LDLIBS) -o $@

unit: $(UNIT_BINS)
$(BUILD)/unit/%: t/unit/%.c t/unit/tap.h $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_CORE) -It/unit $< $(CORE_LIB) $(LDLIBS) -o $@

# ---- nginx module ----
# The nginx tree is configured once per set of source files (config globs them).
$(BUILD)/nginx/.srclist: FORCE
	@mkdir -p $(BUILD)/nginx
	@echo "$(CORE_SRCS) $(GLUE_SRCS) $(CORE_HDRS) $(NGINX_SRC)" > $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@

$(BUILD)/nginx/objs/Makefile: $(BUILD)/nginx/.srclist config Makefile
	@rm -rf $(BUILD)/nginx/src $(BUILD)/nginx/auto $(BUILD)/nginx/objs
	cp -r $(NGINX_SRC)/. $(BUILD)/nginx/
	cd $(BUILD)/nginx && if [ -f conf_flags ]; then \
	    . ./conf_flags && ./configure "$${NGX_CONF_FLAGS[@]}" --with-cc-opt="$(NGX_CC_OPT)" --add-dynamic-module=$(CURDIR) >configure.log; \
	  else \
	    ./configure --with-compat --with-threads --with-http_v2_module --with-cc-opt="$(NGX_CC_OPT)" --add-dynamic-module=$(CURDIR) >configure.log; \
	  fi || (tail -20 $(BUILD)/nginx/configure.log; exit 1)

module: $(MODULE)
$(MODULE): $(BUILD)/nginx/objs/Makefile $(CORE_SRCS) $(CORE_HDRS) $(GLUE_SRCS)
	$(MAKE) -C $(BUILD)/nginx -f objs/Makefile -j$(JOBS) modules
	cp $(BUILD)/nginx/objs/ngx_http_llm_module.so $@.tmp && mv $@.tmp $@   # a new inode: running nginx keeps its mapping

FORCE:

# ---- run ----
run: all
	@bash conf/run.sh $(PORT)

stop:
	@bash conf/run.sh stop

# ---- tests ----
test: deps-test all
	@bash t/run-all.sh

test-unit: unit
	prove -e '' $(UNIT_BINS)

test-nginx: module
	TEST_NGINX_BINARY=$(NGINX_BIN) TEST_NGINX_LOAD_MODULES=$(CURDIR)/$(MODULE) prove -I t/lib t/*.t

# The structured-output guarantee at scale: every native format x 22 tool
# schemas x temperature 1.0 and 1.5, GUARANTEE_RUNS times each (make test
# runs a sample of the same test).
GUARANTEE_RUNS ?= 10
guarantee: unit
	@bash t/fetch-tokenizers.sh >/dev/null
	@echo "hermes llama3_json mistral deepseek_v3 harmony json_schema" | tr ' ' '\n' | \
	  xargs -P$(JOBS) -I{} sh -c 'LLM_GUARANTEE_RUNS=$(GUARANTEE_RUNS) LLM_GUARANTEE_ONLY={} \
	    $(BUILD)/unit/test_guarantee > $(BUILD)/guarantee-{}.tap 2>&1; grep -h "^# \|^not ok" $(BUILD)/guarantee-{}.tap'

bench: all $(BENCH_BINS)
	@bash t/bench/run.sh

# the multi-node part of make bench alone (t/bench/scale.pl)
bench-scale: all
	perl -I t/lib t/bench/scale.pl

soak: all
	@bash t/bench/soak.sh

clean:
	rm -rf $(BUILD) runtime t/servroot*

# ---- hardening: sanitizers, fuzzers, memcheck (t/asan, t/fuzz, t/valgrind) ----
# Each builds in its own directory so build/ is left alone; see t/README.md "Sanitizers".
SAN_FLAGS    := -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all
ASAN_BUILD   ?= build-asan
FUZZ_BUILD   ?= build-fuzz
VG_BUILD     ?= build-vg
FUZZ_SECONDS ?= 60

.PHONY: asan-build test-asan fuzz valgrind
asan-build:
	$(MAKE) -j$(JOBS) BUILD=$(ASAN_BUILD) OPT=-O1 EXTRA_CFLAGS="$(SAN_FLAGS)" EXTRA_LDFLAGS="$(SAN_FLAGS)" \
	    NGX_CC_OPT="-g -O1 -fPIC $(SAN_FLAGS)" cli unit module

test-asan: deps-test asan-build
	bash t/asan/run.sh $(ASAN_BUILD)

fuzz:
	bash t/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

valgrind: deps-test
	$(MAKE) -j$(JOBS) BUILD=$(VG_BUILD) OPT="-O1 -fno-omit-frame-pointer" NGX_CC_OPT="-g -O1 -fPIC" cli unit module
	bash t/valgrind/run.sh $(VG_BUILD)
