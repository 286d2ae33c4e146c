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
GLUE_SRCS   := $(wildcard src/ngx_http_llm_*.c src/*.h src/page/*)
UNIT_SRCS   := $(wildcard t/unit/test_*.c)
UNIT_BINS   := $(UNIT_SRCS:t/unit/%.c=$(BUILD)/unit/%)

DEPS_BUILD  := nginx-core nginx-dev libjansson-dev libpcre2-dev libopenblas-dev build-essential
# test tools: command or perl module -> Debian package that provides it
DEPS_TEST   := cmd:curl=curl cmd:prove=perl cmd:node=nodejs cmd:npm=npm \
               cmd:chromium-headless-shell=chromium-headless-shell fonts-dejavu-core \
               pm:IPC::Run=libipc-run-perl pm:LWP::UserAgent=libwww-perl \
               pm:URI=liburi-perl pm:JSON::PP=perl python3-numpy
# what openresty's test-nginx needs besides (make test-nginx-real)
DEPS_REAL   := pm:Test::Base=libtest-base-perl pm:Text::Diff=libtext-diff-perl \
               pm:List::MoreUtils=liblist-moreutils-perl pm:Test::LongString=libtest-longstring-perl \
               pm:HTTP::Response=libhttp-message-perl

.PHONY: all deps deps-test module cli unit run stop test test-unit test-nginx test-node bench bench-scale soak clean guarantee

all: module cli unit

# ---- dependencies (Debian) ----
# `make` builds with what is installed; `make deps` (which `make run` and
# `make test` call first) installs what is missing.  A list holds
# cmd:COMMAND=package, pm:Perl::Module=package or a package name.
# $(call install_missing,LIST)
define install_missing
	@missing=""; for d in $(1); do \
	  what=$${d%%=*}; pkg=$${d#*=}; \
	  case $$what in \
	    cmd:*) command -v $${what#cmd:} >/dev/null 2>&1 || missing="$$missing $$pkg";; \
	    pm:*)  perl -M$${what#pm:} -e1 >/dev/null 2>&1 || missing="$$missing $$pkg";; \
	    *)     dpkg-query -W -f='$${Status}' $$d 2>/dev/null | grep -q "ok installed" || missing="$$missing $$d";; \
	  esac; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEPS_BUILD))

deps-test: deps
	$(call install_missing,$(DEPS_TEST))

.PHONY: deps-test-real check-config check-cycles test-nginx-real

deps-test-real: deps-test
	$(call install_missing,$(DEPS_REAL))

# The nginx addon's file list (config) must name exactly the files the
# tree has, or a from-source nginx build would miss (or miss out on) one.
CONFIG_FILES := $(shell awk '/^llm_(srcs|deps)="/ {f = 1; next} f && /^"/ {f = 0} f {print $$1}' config)
TREE_FILES   := $(sort $(CORE_SRCS) $(CORE_HDRS) $(wildcard src/ngx_http_llm_*.[ch] src/page/*))

check-config:
	@unlisted="$(filter-out $(CONFIG_FILES),$(TREE_FILES))"; gone="$(filter-out $(TREE_FILES),$(CONFIG_FILES))"; \
	[ -z "$$unlisted" ] || echo "config: add to llm_srcs / llm_deps: $$unlisted" >&2; \
	[ -z "$$gone" ] || echo "config: listed but not in the tree: $$gone" >&2; \
	[ -z "$$unlisted$$gone" ]

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

BENCH_BINS  := $(BUILD)/bench/grammar $(BUILD)/bench/spec $(BUILD)/bench/families $(BUILD)/bench/qmatmul
$(BUILD)/bench/%: t/bench/%.c $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_CORE) $< $(CORE_LIB) $(LDLIBS) -o $@

unit: $(UNIT_BINS)
$(BUILD)/unit/%: t/unit/%.c t/unit/tap.h $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_CORE) -It/unit $< $(CORE_LIB) $(LDLIBS) -o $@

# ---- nginx module ----
# The nginx tree is configured once per config (which lists the sources)
# and nginx source tree.
$(BUILD)/nginx/.srclist: FORCE | check-config
	@mkdir -p $(BUILD)/nginx
	@echo "$(NGINX_SRC)" > $@.new
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
# Dependencies first, then the build (in this order also under -j).
run: deps
	@$(MAKE) --no-print-directory all
	@bash conf/run.sh $(PORT)

stop:
	@bash conf/run.sh stop

# ---- tests ----
test: deps-test
	@$(MAKE) --no-print-directory all check-cycles
	@bash t/run-all.sh

test-unit: unit
	@bash t/make-gguf-models.sh archs
	prove -e '' $(UNIT_BINS)

# No dependency cycles between files, below the glue and in it
# (t/check-cycles.pl reads what each object uses and defines).
check-cycles: $(CORE_LIB) $(MODULE)
	@perl t/check-cycles.pl $(CORE_OBJS) $(BUILD)/nginx/objs/addon/src/ngx_http_llm_*.o

# Agent clients from npm end to end (t/clients/agents.t; docs/clients.md):
# installs t/clients/package.json into t/clients/node_modules first.
.PHONY: clients
clients: deps-test module
	@top=$(CURDIR); . t/env.sh; prove -v -I t/lib t/clients/agents.t

# The .t files under the runner in t/lib (LLM_TESTS="t/011-chat.t ..." for some).
test-nginx: module
	@bash t/run-all.sh nginx $(LLM_TESTS)

# The same files under openresty's test-nginx (not part of `make test`: CI
# cannot fetch it).  TEST_NGINX_REAL=/path/to/test-nginx (a checkout).
test-nginx-real: deps-test-real
	@[ -n "$(TEST_NGINX_REAL)" ] || { echo "usage: make test-nginx-real TEST_NGINX_REAL=/path/to/test-nginx" >&2; exit 2; }
	@$(MAKE) --no-print-directory module
	@TEST_NGINX_REAL="$(TEST_NGINX_REAL)" bash t/run-all.sh real $(LLM_TESTS)

# The structured-output guarantee at scale: every native format x 22 tool
# schemas x temperature 1.0 and 1.5, GUARANTEE_RUNS times each (make test
# runs a sample of the same test).
GUARANTEE_RUNS ?= 10
guarantee: unit
	@bash t/fetch-tokenizers.sh >/dev/null
	@echo "hermes llama3_json mistral deepseek_v3 harmony qwen3_coder glm4 pythonic glm4_0414 json_schema" | tr ' ' '\n' | \
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

test-asan: deps-test
	@$(MAKE) --no-print-directory asan-build
	bash t/asan/run.sh $(ASAN_BUILD)

fuzz:
	bash t/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

valgrind: deps-test
	$(MAKE) -j$(JOBS) BUILD=$(VG_BUILD) OPT="-O1 -fno-omit-frame-pointer" NGX_CC_OPT="-g -O1 -fPIC" cli unit module
	bash t/valgrind/run.sh $(VG_BUILD)
