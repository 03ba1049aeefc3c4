# gospan: zero-code OpenTelemetry tracing of Go services with eBPF.
#
#   make            build build/gospan (BPF objects, skeletons, offset tables embedded)
#   make deps       install what is missing (Debian packages, Python test packages)
#   make test       unit tests (cmocka) and end-to-end tests (pytest, real probes)
#   make demo       build, run the example service, attach, drive requests, show spans
#   make offsets    regenerate offsets/go_offsets.json from Go toolchains' DWARF
#   make fmt        clang-format the C sources
#
# Everything built goes under build/. V=1 shows the commands.

BUILD := build
OUTPUT := $(BUILD)

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CC ?= cc
CLANG ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config
PYTHON ?= python3
GO ?= go

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
MULTIARCH := $(shell $(CC) -dumpmachine 2>/dev/null)

PKGS := libbpf libelf libdw capstone libprotobuf-c libcurl libcjson zlib
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

OFFSETS_JSON := $(abspath offsets/go_offsets.json)

CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE $(PKG_CFLAGS) \
	-iquote exporter -I$(OUTPUT) -I$(OUTPUT)/proto -Ibpf/include
LDLIBS += $(PKG_LIBS) -lpthread

ifeq ($(SANITIZE),1)
override CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer
override LDFLAGS += -fsanitize=address,undefined
endif

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-I$(OUTPUT) -Ibpf/include -I/usr/include/$(MULTIARCH)

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
# The other architecture's BPF objects, built on every host so both stay compilable.
OTHER_ARCH := $(if $(filter x86,$(ARCH)),arm64,x86)
OTHER_BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/$(OTHER_ARCH)/%.bpf.o,$(BPF_SRCS))

PROTOS := $(shell find proto -name '*.proto' 2>/dev/null | sort)
PB_SRCS := $(patsubst proto/%.proto,$(OUTPUT)/proto/%.pb-c.c,$(PROTOS))
PB_HDRS := $(PB_SRCS:.c=.h)
PB_OBJS := $(PB_SRCS:.c=.o)

SRCS := $(wildcard exporter/*.c)
OBJS := $(patsubst exporter/%.c,$(OUTPUT)/obj/%.o,$(SRCS))
LIB_OBJS := $(filter-out $(OUTPUT)/obj/main.o,$(OBJS)) $(PB_OBJS)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/unit/%,$(UNIT_SRCS))

.PHONY: all deps test unit e2e demo offsets fmt clean bench
.DEFAULT_GOAL := all
# Keep intermediates (BPF objects, protobuf-c sources) so rebuilds stay incremental.
.SECONDARY:

all: $(OUTPUT)/gospan $(OTHER_BPF_OBJS)

# ---- dependencies -----------------------------------------------------------------------------

DEB_PKGS := clang llvm bpftool libbpf-dev libelf-dev libdw-dev libcapstone-dev libprotobuf-c-dev \
	protobuf-c-compiler libcurl4-openssl-dev libcjson-dev libcmocka-dev pkg-config make gcc \
	curl wrk iproute2 python3-pip golang-1.19 zlib1g-dev
PY_MODS := opentelemetry.proto:opentelemetry-proto pytest:pytest

deps:
	$(Q)missing=$$(for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing $$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "deps: need root to install: $$missing" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null \
			|| { echo "deps: apt-get install $$missing failed" >&2; exit 1; }; \
	fi
	$(Q)for m in $(PY_MODS); do \
		mod=$${m%%:*}; pkg=$${m#*:}; \
		$(PYTHON) -c "import $$mod" 2>/dev/null || { \
			echo "deps: installing Python package $$pkg"; \
			$(PYTHON) -m pip install -q --disable-pip-version-check $$pkg || exit 1; }; \
	done
	$(Q)command -v $(GO) >/dev/null || { echo "deps: Go is needed to build the example services" >&2; exit 1; }

# ---- BPF ------------------------------------------------------------------------------------

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/include/*.h) | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)llvm-strip -g $@

$(OUTPUT)/bpf/$(OTHER_ARCH)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/include/*.h)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(filter-out -D__TARGET_ARCH_$(ARCH),$(BPF_CFLAGS)) -D__TARGET_ARCH_$(OTHER_ARCH) \
		-c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# ---- protobuf-c -----------------------------------------------------------------------------

$(PB_SRCS) $(PB_HDRS) &: $(PROTOS) | $(OUTPUT)/proto
	$(call msg,PROTOC-C,$(PROTOS))
	$(Q)protoc-c --proto_path=proto --c_out=$(OUTPUT)/proto $(PROTOS)

$(OUTPUT)/proto/%.pb-c.o: $(OUTPUT)/proto/%.pb-c.c $(PB_HDRS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-unused-parameter -c $< -o $@

# ---- user space -----------------------------------------------------------------------------

$(OUTPUT)/obj/embed.o: override CFLAGS += -DOFFSETS_JSON='"$(OFFSETS_JSON)"'
$(OUTPUT)/obj/embed.o: $(OFFSETS_JSON)

$(OUTPUT)/obj/%.o: exporter/%.c $(wildcard exporter/*.h) $(wildcard bpf/include/*.h) $(SKELS) \
		$(PB_HDRS) | $(OUTPUT)/obj
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUTPUT)/libgospan.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUTPUT)/gospan: $(OUTPUT)/obj/main.o $(OUTPUT)/libgospan.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/bpf $(OUTPUT)/obj $(OUTPUT)/proto $(OUTPUT)/unit:
	$(Q)mkdir -p $@

# ---- tests ----------------------------------------------------------------------------------

$(OUTPUT)/unit/%: tests/unit/%.c tests/unit/helpers.h $(OUTPUT)/libgospan.a | $(OUTPUT)/unit
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -Itests/unit $< $(OUTPUT)/libgospan.a $(LDLIBS) -lcmocka -o $@

unit: $(UNIT_BINS)
	$(Q)fail=0; for t in $(UNIT_BINS); do \
		echo "== $$(basename $$t)"; \
		(cd tests/unit && GOSPAN_BUILD=$(abspath $(OUTPUT)) $(abspath .)/$$t) || fail=1; \
	done; exit $$fail

e2e: $(OUTPUT)/gospan
	$(Q)GOSPAN_BUILD=$(abspath $(OUTPUT)) $(PYTHON) -m pytest -ra tests/e2e $(PYTEST_ARGS)

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory unit
	$(Q)$(MAKE) --no-print-directory e2e

# ---- demo, offsets, formatting --------------------------------------------------------------

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)GOSPAN_BUILD=$(abspath $(OUTPUT)) examples/demo.sh

offsets:
	$(Q)cd offsets/gen && $(GO) run . -out $(OFFSETS_JSON)

fmt:
	$(Q)clang-format -i exporter/*.c exporter/*.h bpf/*.bpf.c bpf/include/*.h tests/unit/*.c tests/unit/*.h

clean:
	$(Q)rm -rf $(BUILD)

-include $(wildcard $(OUTPUT)/obj/*.d)
