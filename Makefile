# gospan: zero-code OpenTelemetry tracing of Go services with eBPF.
#
#   make            build build/gospan (BPF objects, skeletons, offset tables embedded)
#   make deps       install what is missing (Debian packages, Python test packages, the Kafka
#                   broker the tests run)
#   make test       unit tests (cmocka) and end-to-end tests (pytest, real probes)
#   make compat     the grpc-go, data store (database/sql, pgx, go-redis, go-sql-driver/mysql),
#                   router (gin, echo, chi, gorilla/mux, httprouter), fasthttp (with Fiber) and
#                   Kafka (kafka-go, sarama, franz-go) release matrices; rewrites their sections
#                   of COMPATIBILITY.md
#   make demo       Jaeger, frontend calling backend (HTTP) and inventory (gRPC), the backend
#                   publishing orders to Kafka for the consumer, a gospan on each, requests;
#                   shows the traces and checks each request is one trace, through Kafka too
#   make compose-demo  the same from docker-compose.yml on a Docker engine (started if none
#                   runs), images built locally; checks the traces in Jaeger's container
#   make vm-test    a subset of the end-to-end tests in virtual machines (qemu, TCG), one per
#                   Debian kernel (5.10 to 6.12, lockdown, cgroup v1, arm64); VM_BOOTS=6.1 picks
#                   boots, VM_ARGS=--slice runs CI's slice (tests/vm/README.md)
#   make CROSS=arm64  build/arm64/gospan for arm64, against Debian's arm64 libraries unpacked
#                   into a sysroot (tests/vm/rootfs.py); what vm-test's arm64 boots run
#   make kube-test  gospan's DaemonSet and the example Collector (k8s_attributes) on a real
#                   single-node Kubernetes cluster built from source (not part of `make test`)
#   make offsets    regenerate the offset tables in offsets/ (Go, grpc-go, pgx, go-redis, lib/pq,
#                   go-sql-driver/mysql, gin, echo, chi, gorilla/mux, fasthttp, Fiber, kafka-go,
#                   sarama, franz-go) from the
#                   DWARF of probes built with each Go toolchain and each module release
#   make fmt        clang-format the C sources
#   make install    gospan, its docs, an example functions file and a systemd unit under
#                   $(DESTDIR)$(PREFIX) (PREFIX=/usr/local); make uninstall removes them
#   make STATIC=1   build/static/gospan, which carries libbpf, libelf, libdw, capstone,
#                   protobuf-c and cJSON inside: a host needs only libc, zlib and libcurl
#
# Everything built goes under build/. V=1 shows the commands.

BUILD := build
# A sanitized build (SANITIZE=1, below) and a static one (STATIC=1, below) each have a tree of
# their own, so that `make test SANITIZE=1` never mixes its objects with the normal build's.
ifeq ($(SANITIZE),1)
OUTPUT := $(BUILD)/asan
else ifeq ($(STATIC),1)
OUTPUT := $(BUILD)/static
else ifeq ($(CROSS),arm64)
OUTPUT := $(BUILD)/arm64
else
OUTPUT := $(BUILD)
endif

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

# CROSS=arm64: gospan for arm64 (into $(BUILD)/arm64), built here by clang against Debian's
# arm64 packages unpacked into a sysroot (tests/vm/rootfs.py, the arm64 VM boot's root, so the
# libraries it links with are those the guest loads). MULTIARCH stays this machine's: the BPF
# objects take only its uapi headers, as the other architecture's objects always have.
ifeq ($(CROSS),arm64)
SYSROOT := $(shell $(PYTHON) tests/vm/rootfs.py path)
ARCH := arm64
CC := $(CLANG) --target=aarch64-linux-gnu --sysroot=$(SYSROOT)
AR := llvm-ar
override LDFLAGS += -fuse-ld=lld
# In the command, not exported: make 4.3's $(shell) does not pass exported variables on.
PC_LIBDIR := $(SYSROOT)/usr/lib/aarch64-linux-gnu/pkgconfig:$(SYSROOT)/usr/share/pkgconfig
PKG_CONFIG := PKG_CONFIG_SYSROOT_DIR=$(SYSROOT) PKG_CONFIG_LIBDIR=$(PC_LIBDIR) pkg-config
DEB_PKGS += lld
endif

PKGS := libbpf libelf libdw capstone libprotobuf-c libcurl libcjson zlib
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
# capstone is not linked: exporter/analysis/disasm.c opens it while it analyses a target and closes it
# after, because once loaded its tables hold 5 MB of resident memory for the process's life. Its
# headers come from pkg-config, the name to open from the library a link would have used. The
# static build (STATIC=1, below) links it in all the same, and pays for it in memory.
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(filter-out capstone,$(PKGS)) 2>/dev/null)
CAPSTONE_SONAME = $(shell readelf -d $(shell $(PKG_CONFIG) --variable=libdir capstone \
	2>/dev/null)/libcapstone.so 2>/dev/null | sed -n 's/.*soname: \[\(.*\)\]/\1/p')

OFFSETS_DIR := $(abspath offsets)
# What exporter/analysis/embed.c builds in, and the -D flag that names their directory to it: the
# Go table and one table per module of GOSPAN_MODULE_TABLES (exporter/analysis/fields.h), each
# offsets/NAME_offsets.json.
EMBED_JSON := $(wildcard $(OFFSETS_DIR)/*_offsets.json)
EMBED_CFLAGS := -DOFFSETS_DIR='"$(OFFSETS_DIR)"'

CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE $(PKG_CFLAGS) \
	-iquote exporter -I$(OUTPUT) -I$(OUTPUT)/proto -Ibpf/include \
	-DCAPSTONE_SONAME='"$(CAPSTONE_SONAME)"'
LDLIBS += $(PKG_LIBS) -lpthread

ifeq ($(SANITIZE),1)
# No recovery: an undefined-behaviour report ends the program, so a test run cannot pass over it.
override CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
override LDFLAGS += -fsanitize=address,undefined
endif

# STATIC=1: libbpf, libelf, libdw (with the liblzma and libbz2 it reads compressed sections
# with), capstone, protobuf-c and cJSON are linked in from their .a files; libc, zlib and libcurl
# stay shared, libraries every host has and whose security updates (libcurl's TLS above all)
# should reach gospan without a rebuild. Debian ships no libcjson.a: cJSON is compiled here from
# Debian's source of the installed version (below, "static build").
# Memory: capstone's tables are relocated when gospan starts (it is PIE) and stay resident, which
# dlopen() and dlclose() avoid. Attached to examples/httpserver, VmRSS was 18.6 MB against 14.4 MB
# for build/gospan, the peak (VmHWM) 28.0 MB against 27.4 MB (the shared build's peak is while
# capstone is loaded); the same after 2,000 requests. Linked -no-pie it was 15.5 MB, peak 24.9 MB,
# but gospan's own code, which reads binaries and DWARF it does not control, would lose address
# randomisation: not done.
ifeq ($(STATIC),1)
STATIC_PKGS := libbpf libelf libdw capstone libprotobuf-c
CJSON_A = $(OUTPUT)/cjson/libcjson.a
PKG_LIBS = -Wl,-Bstatic $(filter-out -lz -lm -pthread -lpthread,$(shell $(PKG_CONFIG) --static \
	--libs $(STATIC_PKGS) 2>/dev/null)) -Wl,-Bdynamic $(CJSON_A) \
	$(shell $(PKG_CONFIG) --libs libcurl zlib 2>/dev/null) -lm
override CFLAGS += -DCAPSTONE_STATIC
endif

# BPF_EXTRA: more flags for the BPF objects (make bench builds a profiled gospan with it).
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-I$(OUTPUT) -Ibpf/include -I/usr/include/$(MULTIARCH) $(BPF_EXTRA)

# Each bpf/*.bpf.c compiles on its own (bpf/parts/); bpftool's static linker joins the parts into
# the objects user space loads, a skeleton each. BPF_LINK_<object> lists an object's parts, those
# that define maps first: libbpf 1.1's linker gives a map declared extern before its definition
# the wrong place in the object's BTF, and libbpf then cannot open the object. The uprobes make
# one object, whose programs share maps; the socket-layer writer (wire) is another, loaded only
# where the kernel has what it needs, and wire_maps is linked into both; the writer's Kafka part
# (kafka_wire) a third, loaded only once a traced process has a Kafka producer (its verification
# took seconds; since its decoders became global functions, 44k instructions and about 0.1 s).
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_LINKED := http wire kafka_wire
BPF_LINK_http := maps ring wire_maps go_map trace_context http grpc db functions go_runtime cputime \
	routes fasthttp kafka kafka_franz kafka_sarama
BPF_LINK_wire := wire_maps wire
BPF_LINK_kafka_wire := wire_maps kafka_wire
BPF_UNLINKED := $(filter-out $(foreach o,$(BPF_LINKED),$(BPF_LINK_$(o))),\
	$(patsubst bpf/%.bpf.c,%,$(BPF_SRCS)))
$(if $(BPF_UNLINKED),$(error bpf/$(firstword $(BPF_UNLINKED)).bpf.c is in no BPF_LINK_ list))
BPF_OBJS := $(patsubst %,$(OUTPUT)/bpf/%.bpf.o,$(BPF_LINKED))
SKELS := $(patsubst %,$(OUTPUT)/%.skel.h,$(BPF_LINKED))
# The other architecture's BPF objects, built on every host so both stay compilable.
OTHER_ARCH := $(if $(filter x86,$(ARCH)),arm64,x86)
OTHER_BPF_OBJS := $(patsubst %,$(OUTPUT)/bpf/$(OTHER_ARCH)/%.bpf.o,$(BPF_LINKED))

PROTOS := $(shell find proto -name '*.proto' 2>/dev/null | sort)
PB_SRCS := $(patsubst proto/%.proto,$(OUTPUT)/proto/%.pb-c.c,$(PROTOS))
PB_HDRS := $(PB_SRCS:.c=.h)
PB_OBJS := $(PB_SRCS:.c=.o)

# exporter/ holds main.c and one folder per part of the data path (docs/how-it-works.md):
# core/, analysis/, capture/, model/, export/. Sources include headers by part ("core/log.h").
PARTS := core analysis capture model export
SRCS := exporter/main.c $(foreach p,$(PARTS),$(wildcard exporter/$(p)/*.c))
HDRS := $(foreach p,$(PARTS),$(wildcard exporter/$(p)/*.h))
OBJS := $(patsubst exporter/%.c,$(OUTPUT)/obj/%.o,$(SRCS))
LIB_OBJS := $(filter-out $(OUTPUT)/obj/main.o,$(OBJS)) $(PB_OBJS)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/unit/%,$(UNIT_SRCS))

.PHONY: all deps test layering unit e2e demo compose-demo kube-test vm-test offsets fmt clean bench soak compat
.DEFAULT_GOAL := all
# Keep intermediates (BPF objects, protobuf-c sources) so rebuilds stay incremental.
.SECONDARY:

all: $(OUTPUT)/gospan $(OTHER_BPF_OBJS)

# ---- dependencies -----------------------------------------------------------------------------

DEB_PKGS := clang llvm bpftool libbpf-dev libelf-dev libdw-dev libcapstone-dev libprotobuf-c-dev \
	protobuf-c-compiler libcurl4-openssl-dev libcjson-dev libcmocka-dev pkg-config make gcc \
	curl wget wrk iproute2 python3-pip golang-1.19 zlib1g-dev gnuplot-nox util-linux \
	postgresql redis-server mariadb-server mariadb-client docker.io debootstrap \
	openjdk-17-jre-headless maven
PY_MODS := opentelemetry.proto:opentelemetry-proto pytest:pytest yaml:PyYAML jsonschema:jsonschema \
	prometheus_client:prometheus-client

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
	$(Q)$(PYTHON) tests/e2e/compose.py tool
	$(Q)$(PYTHON) tests/e2e/kafka.py fetch >/dev/null

# ---- BPF ------------------------------------------------------------------------------------

$(OUTPUT)/bpf/parts/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/include/*.h)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/bpf/$(OTHER_ARCH)/parts/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/include/*.h)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(filter-out -D__TARGET_ARCH_$(ARCH),$(BPF_CFLAGS)) -D__TARGET_ARCH_$(OTHER_ARCH) \
		-c $< -o $@

# The linker leaves the parts' DWARF out: the skeleton embeds the object without it.
$(foreach o,$(BPF_LINKED),$(eval $(OUTPUT)/bpf/$(o).bpf.o: \
	$(BPF_LINK_$(o):%=$(OUTPUT)/bpf/parts/%.bpf.o)))
$(foreach o,$(BPF_LINKED),$(eval $(OUTPUT)/bpf/$(OTHER_ARCH)/$(o).bpf.o: \
	$(BPF_LINK_$(o):%=$(OUTPUT)/bpf/$(OTHER_ARCH)/parts/%.bpf.o)))
$(BPF_OBJS) $(OTHER_BPF_OBJS):
	$(call msg,BPF-LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

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

$(OUTPUT)/obj/analysis/embed.o: override CFLAGS += $(EMBED_CFLAGS)
$(OUTPUT)/obj/analysis/embed.o: $(EMBED_JSON)

$(OUTPUT)/obj/%.o: exporter/%.c $(HDRS) $(wildcard bpf/include/*.h) $(SKELS) $(PB_HDRS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUTPUT)/libgospan.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(OUTPUT)/gospan: $(OUTPUT)/obj/main.o $(OUTPUT)/libgospan.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/bpf $(OUTPUT)/obj $(OUTPUT)/proto $(OUTPUT)/unit:
	$(Q)mkdir -p $@

ifeq ($(CROSS),arm64)
# The sysroot before anything is compiled against it (pkg-config reads it when a recipe runs).
$(SYSROOT)/.done:
	$(call msg,SYSROOT,$(SYSROOT))
	$(Q)$(PYTHON) tests/vm/rootfs.py make >/dev/null
$(OBJS) $(PB_OBJS): | $(SYSROOT)/.done
endif

# ---- tests ----------------------------------------------------------------------------------

$(OUTPUT)/unit/%: tests/unit/%.c tests/unit/helpers.h $(OUTPUT)/libgospan.a | $(OUTPUT)/unit
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -Itests/unit $< $(OUTPUT)/libgospan.a $(LDLIBS) -lcmocka -o $@

# test_probes has BPF rewrite a map entry right after a lookup, as a goroutine's probe may.
$(OUTPUT)/unit/test_probes: override LDFLAGS += -Wl,--wrap=bpf_map_lookup_elem

# bpf_back_edges.py: loops Linux 6.1's verifier refuses and this machine's newer one accepts.
unit: $(UNIT_BINS) $(BPF_OBJS) $(OTHER_BPF_OBJS)
	$(Q)fail=0; for t in $(UNIT_BINS); do \
		echo "== $$(basename $$t)"; \
		(cd tests/unit && GOSPAN_BUILD=$(abspath $(OUTPUT)) \
			$(abspath $(OUTPUT))/unit/$$(basename $$t)) || fail=1; \
	done; \
	echo "== bpf_back_edges"; \
	$(PYTHON) tests/bpf_back_edges.py $(BPF_OBJS) $(OTHER_BPF_OBJS) || fail=1; \
	exit $$fail

# The sanitized pass (SANITIZE=1) leaves out the Go, grpc-go, data store, router, fasthttp,
# kafka-go and sarama release matrices: they prove the offset tables and the binary readers on
# dozens of builds, which the first pass has done with the same code, and they would take CI past
# its half hour. It also leaves out what does not run the gospan under test, or runs no code of it that the
# rest does not: test_compose.py (its gospan is the one the Dockerfile builds in gospan's image),
# test_deploy.py (the deployment files), test_install.py (`make install` and what the binary asks of
# the host, checked on the static build) and test_sql_dialects.py (the SQL statement reader, which
# the unit tests and its fuzzer run sanitized) and test_demo.py (four gospans on the demo's
# services and a Kafka broker, whose paths test_distributed.py, test_datastores.py and
# test_kafka.py run sanitized; about a minute of CI, twice what it took before Kafka) and
# test_routers.py (five frameworks, plain and stripped PIE, 80 s: their user-space half is
# capture/routes.c, which its unit tests run sanitized, and the span path every test here runs) and
# test_kafka_harness.py (the Kafka broker and kafkamix alone, no gospan; 40 s).
# Every other end-to-end test runs against the sanitized gospan (test_datastores.py among them).
E2E_SKIP := $(if $(filter 1,$(SANITIZE)),--ignore=tests/e2e/test_go_versions.py \
	--ignore=tests/e2e/test_grpc_versions.py --ignore=tests/e2e/test_db_versions.py \
	--ignore=tests/e2e/test_fasthttp_versions.py --ignore=tests/e2e/test_router_versions.py \
	--ignore=tests/e2e/test_kafka_versions.py \
	--ignore=tests/e2e/test_compose.py --ignore=tests/e2e/test_deploy.py \
	--ignore=tests/e2e/test_install.py --ignore=tests/e2e/test_sql_dialects.py \
	--ignore=tests/e2e/test_demo.py --ignore=tests/e2e/test_routers.py \
	--ignore=tests/e2e/test_kafka_harness.py)

e2e: $(OUTPUT)/gospan
	$(Q)GOSPAN_BUILD=$(abspath $(OUTPUT)) $(PYTHON) -m pytest -ra tests/e2e $(E2E_SKIP) $(PYTEST_ARGS)

# exporter/'s parts depend on each other one way only, and no module includes itself round a loop.
layering:
	$(Q)$(PYTHON) tests/include_graph.py

test: deps
	$(Q)$(MAKE) --no-print-directory layering
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory unit
	$(Q)if [ "$$CI" = true ] && [ "$(SANITIZE)" != 1 ]; then \
		$(MAKE) --no-print-directory fuzz-smoke; fi
	$(Q)$(MAKE) --no-print-directory e2e

# The release matrices, with GOSPAN_COMPAT=1; each rewrites its section of COMPATIBILITY.md.
# - grpc-go (tests/e2e/test_grpc_versions.py): every minor from v1.50, with the installed Go and
#   the oldest Go each allows, plain, stripped and PIE. 222 cells: on two cores about 20 minutes
#   with the builds cached, up to an hour without (the builds take about 40 minutes of it).
# - data stores (tests/e2e/test_db_versions.py, cells in tests/e2e/db_matrix.py): database/sql
#   (lib/pq) built by every Go release of test_go_versions.py, and every pgx v5, go-redis v9 and
#   go-sql-driver/mysql minor (and each offset table layout's first and last release) with the
#   installed Go, plain, stripped and PIE, against a real PostgreSQL, Redis and MariaDB. 189
#   cells: on two cores 3 minutes with the builds cached; a first run builds them two at a time
#   beside the runs (96 of them took 23 minutes of build time, most of it pgx and go-redis PIE
#   builds; the 24 go-sql-driver/mysql cells built and ran in about 1.5 minutes).
# - routers (tests/e2e/test_router_versions.py, cells in tests/e2e/router_matrix.py): every minor
#   of gin, echo v4 and v5, chi v5 and gorilla/mux (and each offset table row's first and last
#   release) with the installed Go and the oldest Go each allows, plain, stripped and PIE. 270
#   cells: on two cores 5.5 minutes with the builds cached, 8 building every cell (with the
#   frameworks' packages in Go's build cache), 19 from a Go build cache without them.
# - kafka-go (tests/e2e/test_kafka_versions.py, cells in tests/e2e/kafka_matrix.py): every
#   release from v0.4.38 to v0.4.51 with the installed Go and the oldest Go each allows (and
#   kafkamix: Go 1.18), plain, stripped and PIE, each one trace through a real Kafka broker. 84
#   cells: on two cores other work was loading, 10 minutes with the builds cached (a cell's time
#   is mostly its gospan's start, about 5 s of kernel time loading the BPF programs); building
#   them one at a time took 9.6 minutes more.
# - sarama (tests/e2e/test_kafka_versions.py -k sarama, cells in kafka_matrix.py): every minor's
#   latest patch from v1.41.0 (the offset table's first, the first under github.com/IBM/sarama)
#   to v1.62.0, and the table's first and last release, with the installed Go, plain, stripped
#   and PIE, each a SendMessage and a SendMessages through a real Kafka broker. 42 cells: on two
#   cores 64 s with the builds cached; building them two at a time took 2.3 minutes more (with
#   sarama's packages in Go's build cache; 1 to 3 s a plain or stripped build, up to 23 s a PIE).
# - franz-go (tests/e2e/test_kafka_franz.py -k test_release, cells in kafka_matrix.py): every
#   release from v1.21.0 to v1.22.3 with the installed Go, plain, stripped and PIE, 33 cells:
#   9 minutes on two cores building every cell, 1.5 minutes with the builds cached.
# Each writes its client's section of COMPATIBILITY.md once all its cells ran
# (`python3 tests/e2e/kafka_matrix.py --page build/e2e/sarama-versions-full.json` rewrites it
# from a saved run; kafka-go's are kafka-versions-full.json, franz-go's franz-versions-full.json).
# make test (CI) runs a slice of each; for the data stores, every database/sql cell (39), 13
# pgx and go-redis cells and 4 go-sql-driver/mysql cells: about a minute with the builds cached,
# 2.3 minutes without them (but with the Go standard library of each toolchain in Go's build
# cache, which test_go_versions.py
# builds need anyway); for the routers, 25 cells (a release of every offset table row, stripped,
# and each framework's newest plain, stripped and PIE): 27 s with the builds cached, 45 s without;
# for kafka-go, 5 cells (the first release of each offset table row, stripped, and the newest
# plain, stripped and PIE): 39 s with the builds cached (the broker's start included), 66 s
# without (kafka-go in Go's build cache); for sarama, 4 cells alike (v1.41.0 stripped, v1.62.0
# plain, stripped and PIE), beside kafka-go's in test_kafka_versions.py: 5 s more with the
# builds cached (23 s for the 9 on 2026-12-07), 10 s more without (sarama in Go's build cache);
# for franz-go, 2 cells (v1.21.0 and v1.22.0 stripped) in test_kafka_franz.py.
compat: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)GOSPAN_COMPAT=1 GOSPAN_BUILD=$(abspath $(OUTPUT)) $(PYTHON) -m pytest -ra \
		tests/e2e/test_grpc_versions.py tests/e2e/test_db_versions.py \
		tests/e2e/test_router_versions.py tests/e2e/test_fasthttp_versions.py \
		tests/e2e/test_kafka_versions.py tests/e2e/test_kafka_franz.py $(PYTEST_ARGS)

# ---- fuzzing: make fuzz, make fuzz-smoke (tests/fuzz/README.md) -------------------------------

# One libFuzzer harness per parser of input gospan does not control, linked with the exporter
# objects rebuilt by clang with ASan and UBSan under $(FUZZ_OUT). `make fuzz` runs each for
# FUZZ_TIME seconds and keeps what it finds in $(FUZZ_OUT)/corpus/NAME; `make fuzz-smoke` (CI)
# runs each over its seed corpus, then FUZZ_SMOKE_TIME seconds more. Any crash, leak, UB report or
# hang fails the target and leaves the input in $(FUZZ_OUT)/crash-NAME-*.
DEB_PKGS += libclang-rt-14-dev
FUZZ_TIME ?= 60
# CI replays every seed (the regression check) and fuzzes each harness 4 s more: 13 harnesses at
# 10 s each took over two minutes of CI's half hour and rarely found more than `make fuzz` does.
FUZZ_SMOKE_TIME ?= 4
FUZZ_OUT := $(OUTPUT)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(patsubst %,$(FUZZ_OUT)/fuzz_%,$(FUZZ_NAMES))
FUZZ_LIB_OBJS := $(patsubst $(OUTPUT)/%,$(FUZZ_OUT)/%,$(LIB_OBJS))
FUZZ_RUN = ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	$(FUZZ_OUT)/fuzz_$$n -close_fd_mask=2 -timeout=20 -print_final_stats=1 \
	-artifact_prefix=$(FUZZ_OUT)/crash-$$n-

.PHONY: fuzz fuzz-smoke

$(FUZZ_OUT)/obj/analysis/embed.o: override CFLAGS += $(EMBED_CFLAGS)
$(FUZZ_OUT)/obj/analysis/embed.o: $(EMBED_JSON)

$(FUZZ_OUT)/obj/%.o: exporter/%.c $(HDRS) $(wildcard bpf/include/*.h) $(SKELS) $(PB_HDRS)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_OUT)/proto/%.pb-c.o: $(OUTPUT)/proto/%.pb-c.c $(PB_HDRS)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) -O1 -g $(FUZZ_SAN) -Wno-unused-parameter -c $< -o $@

$(FUZZ_OUT)/libgospan.a: $(FUZZ_LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_OUT)/libgospan.a
	$(call msg,LINK,$@)
	$(Q)$(CLANG) $(CFLAGS) -O1 -g $(FUZZ_SAN) -fsanitize=fuzzer $(LDFLAGS) $< \
		$(FUZZ_OUT)/libgospan.a $(LDLIBS) -o $@

fuzz: $(FUZZ_BINS)
	$(Q)fail=0; for n in $(FUZZ_NAMES); do \
		echo "== fuzz_$$n: $(FUZZ_TIME) s"; \
		mkdir -p $(FUZZ_OUT)/corpus/$$n; \
		$(FUZZ_RUN) -max_total_time=$(FUZZ_TIME) $(FUZZ_OUT)/corpus/$$n tests/fuzz/corpus/$$n \
			>$(FUZZ_OUT)/log-$$n.txt 2>&1 || { fail=1; tail -n 60 $(FUZZ_OUT)/log-$$n.txt; }; \
		grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::average_exec_per_sec)' \
			$(FUZZ_OUT)/log-$$n.txt | tr '\n' ' '; echo; \
	done; exit $$fail

fuzz-smoke: $(FUZZ_BINS)
	$(Q)fail=0; for n in $(FUZZ_NAMES); do \
		seeds=$$(ls tests/fuzz/corpus/$$n 2>/dev/null | wc -l); \
		if [ "$$seeds" = 0 ]; then echo "fuzz_$$n: no seed corpus" >&2; fail=1; continue; fi; \
		rm -rf $(FUZZ_OUT)/smoke/$$n && mkdir -p $(FUZZ_OUT)/smoke/$$n; \
		if $(FUZZ_RUN) -max_total_time=$(FUZZ_SMOKE_TIME) $(FUZZ_OUT)/smoke/$$n \
			tests/fuzz/corpus/$$n >$(FUZZ_OUT)/log-$$n.txt 2>&1; then \
			echo "fuzz_$$n: ok, $$seeds seeds, $$(sed -n 's/^stat::number_of_executed_units: //p' \
				$(FUZZ_OUT)/log-$$n.txt) runs"; \
		else \
			fail=1; tail -n 60 $(FUZZ_OUT)/log-$$n.txt; echo "fuzz_$$n: FAILED" >&2; \
		fi; \
	done; exit $$fail

# ---- demo, offsets, formatting --------------------------------------------------------------

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)GOSPAN_BUILD=$(abspath $(OUTPUT)) GO=$(GO) PYTHON=$(PYTHON) examples/demo.sh

# The same demo in containers, from docker-compose.yml as a user runs it: see tests/e2e/compose.py.
compose-demo: deps
	$(Q)$(PYTHON) tests/e2e/compose.py demo

# The Kubernetes DaemonSet and the example Collector's k8s_attributes processor on a real
# single-node cluster built from source (about 17 minutes the first time, then cached): see
# tests/kube/run.py. Not part of `make test`.
# Boots Debian's kernels (fetched through apt with a configuration of its own) with this machine's
# files shared read-only; the guests run tests/e2e with the gospan built here. The arm64 boots
# (every run but one naming only amd64 boots) run gospan cross-built into $(OUTPUT)/arm64.
VM_ARM64 := $(if $(VM_BOOTS),$(findstring arm64,$(VM_BOOTS)),yes)
vm-test: DEB_PKGS += qemu-system-x86 busybox-static qemu-system-arm lld
vm-test: deps all
	$(Q)$(if $(VM_ARM64),$(MAKE) --no-print-directory CROSS=arm64 STATIC= SANITIZE= BUILD=$(OUTPUT) \
		$(OUTPUT)/arm64/gospan)
	$(Q)GOSPAN_BUILD=$(abspath $(OUTPUT)) $(PYTHON) tests/vm/run.py $(VM_ARGS) $(VM_BOOTS)

kube-test: DEB_PKGS += containerd runc containernetworking-plugins
kube-test: deps
	$(Q)$(PYTHON) tests/kube/run.py

# OFFSETS_ARGS: more flags for offsets/gen (e.g. -verify; offsets/README.md lists them).
offsets:
	$(Q)cd offsets/gen && $(GO) run . -dir $(OFFSETS_DIR) $(OFFSETS_ARGS)

fmt:
	$(Q)clang-format -i $(SRCS) $(HDRS) bpf/*.bpf.c bpf/include/*.h tests/unit/*.c tests/unit/*.h

# ---- static build: make STATIC=1 (build/static/gospan) ----------------------------------------

# cJSON, which Debian ships shared only, from Debian's source package of the installed
# libcjson-dev: the same version and security patches as the shared library, fetched by apt-get
# source. The system's deb entries are turned into deb-src entries in apt state of this build's
# own, so nothing of the system's apt configuration changes. dpkg-dev unpacks the source; libdw.a
# needs liblzma.a and libbz2.a.
DEB_PKGS += liblzma-dev libbz2-dev dpkg-dev
CJSON_DIR = $(OUTPUT)/cjson
# apt takes a relative Dir:: path as relative to /etc/apt: these are absolute.
CJSON_APT = -o Dir::Etc::SourceList=$(abspath $(CJSON_DIR))/apt/sources.list \
	-o Dir::Etc::SourceParts=$(abspath $(CJSON_DIR))/apt/parts \
	-o Dir::State::Lists=$(abspath $(CJSON_DIR))/apt/lists \
	-o Dir::Cache=$(abspath $(CJSON_DIR))/apt/cache -o APT::Sandbox::User=root

$(CJSON_DIR)/src/cJSON.c:
	$(call msg,APT-SRC,cjson)
	$(Q)src=$$(dpkg-query -W -f='$${source:Package}=$${source:Version}' libcjson-dev 2>/dev/null) \
		|| { echo "cjson: libcjson-dev is not installed (make deps)" >&2; exit 1; }; \
	rm -rf $(CJSON_DIR)/apt $(CJSON_DIR)/src $(CJSON_DIR)/tree && \
	mkdir -p $(CJSON_DIR)/apt/parts $(CJSON_DIR)/apt/lists/partial $(CJSON_DIR)/apt/cache \
		$(CJSON_DIR)/tree && \
	{ sed -n 's/^deb /deb-src /p' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		2>/dev/null || true; } >$(CJSON_DIR)/apt/sources.list && \
	for f in /etc/apt/sources.list.d/*.sources; do [ -f "$$f" ] || continue; \
		sed 's/^Types:.*/Types: deb-src/' "$$f" >$(CJSON_DIR)/apt/parts/$${f##*/}; done && \
	{ apt-get -qq $(CJSON_APT) update >$(CJSON_DIR)/apt/update.log 2>&1 || \
		cat $(CJSON_DIR)/apt/update.log >&2; } && \
	(cd $(CJSON_DIR)/tree && apt-get -qq $(CJSON_APT) source "$$src" >../apt/source.log 2>&1) \
		|| { cat $(CJSON_DIR)/apt/source.log >&2; \
		     echo "cjson: apt-get source $$src failed: the static build needs it" >&2; exit 1; }
	$(Q)mkdir -p $(@D) && cp $(CJSON_DIR)/tree/cjson-*/cJSON.c $(CJSON_DIR)/tree/cjson-*/cJSON.h \
		$(@D)/

# cJSON's own code, built with its own flags (C89), not the project's warnings.
$(CJSON_DIR)/cJSON.o: $(CJSON_DIR)/src/cJSON.c
	$(call msg,CC,$@)
	$(Q)$(CC) -std=c89 -O2 -g -fstack-protector-strong -c $< -o $@

$(CJSON_DIR)/libcjson.a: $(CJSON_DIR)/cJSON.o
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

ifeq ($(STATIC),1)
$(OUTPUT)/gospan $(UNIT_BINS) $(FUZZ_BINS): $(CJSON_A)
endif

# ---- install: make install [PREFIX=/usr/local] [DESTDIR=] [STATIC=1] ----------------------------

# The binary; the docs a user reads, with an example settings file and functions file, under
# DOCDIR as they are laid out here, so that their links between each other still work; the
# systemd unit (examples/systemd/README.md), its paths made the installed ones.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DOCDIR ?= $(PREFIX)/share/doc/gospan
UNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL ?= install
INSTALL_DOCS := README.md COMPATIBILITY.md $(wildcard docs/*.md docs/*.png) \
	examples/systemd/README.md examples/systemd/gospan.env examples/systemd/functions.json
UNIT := gospan@.service

.PHONY: install uninstall

install: $(OUTPUT)/gospan
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -D -m 0755 $(OUTPUT)/gospan $(DESTDIR)$(BINDIR)/gospan
	$(Q)for f in $(INSTALL_DOCS); do \
		$(INSTALL) -D -m 0644 $$f $(DESTDIR)$(DOCDIR)/$$f || exit 1; done
	$(Q)sed 's|/usr/local/bin/gospan|$(BINDIR)/gospan|g; s|/usr/local/share/doc/gospan|$(DOCDIR)|g' \
		examples/systemd/$(UNIT) >$(OUTPUT)/$(UNIT) && \
		$(INSTALL) -D -m 0644 $(OUTPUT)/$(UNIT) $(DESTDIR)$(UNITDIR)/$(UNIT)

# What install put, by name, and the doc folders it made once they are empty.
uninstall:
	$(Q)rm -f $(DESTDIR)$(BINDIR)/gospan $(DESTDIR)$(UNITDIR)/$(UNIT) \
		$(addprefix $(DESTDIR)$(DOCDIR)/,$(INSTALL_DOCS))
	$(Q)for d in $(addprefix $(DESTDIR)$(DOCDIR),/docs /examples/systemd /examples ''); do \
		[ ! -d "$$d" ] || rmdir "$$d" || exit 1; done

# ---- benchmark: make bench (bench/README.md) -------------------------------------------------

BENCH_OUT := $(OUTPUT)/bench
BENCH_FLOOR := $(BENCH_OUT)/floor
BENCH_SKELS := $(patsubst bench/floor/%.bpf.c,$(BENCH_OUT)/%.skel.h,$(wildcard bench/floor/*.bpf.c))

$(BENCH_OUT)/%.bpf.o: bench/floor/%.bpf.c
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH_SKELS): $(BENCH_OUT)/%.skel.h: $(BENCH_OUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BENCH_FLOOR): bench/floor/floor.c $(BENCH_SKELS) $(SKELS) $(OUTPUT)/libgospan.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -I$(BENCH_OUT) $(LDFLAGS) $< $(OUTPUT)/libgospan.a $(LDLIBS) -o $@

# bench/feed: records written into a running gospan's ring buffer by a test-run BPF program.
BENCH_FEED := $(BENCH_OUT)/feed

$(BENCH_OUT)/parts/feed.bpf.o: bench/feed/feed.bpf.c bench/feed/feed.h bpf/include/events.h \
		bpf/include/ring.bpf.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH_OUT)/feed.bpf.o: $(OUTPUT)/bpf/parts/ring.bpf.o $(BENCH_OUT)/parts/feed.bpf.o
	$(call msg,BPF-LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(BENCH_OUT)/feed.skel.h: $(BENCH_OUT)/feed.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BENCH_FEED): bench/feed/feed.c bench/feed/feed.h $(BENCH_OUT)/feed.skel.h $(OUTPUT)/libgospan.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -I$(BENCH_OUT) $(LDFLAGS) $< $(OUTPUT)/libgospan.a $(LDLIBS) -o $@

# A gospan whose entry program times its own stages (GOSPAN_BPF_PROFILE), for bench/run's
# bpfprofile part; a tree of its own, so that it is never mistaken for gospan.
BENCH_PROFILED := $(OUTPUT)/bench/profiled/gospan

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BENCH_FLOOR) $(BENCH_FEED)
	$(Q)$(MAKE) --no-print-directory OUTPUT=$(OUTPUT)/bench/profiled \
		BPF_EXTRA=-DGOSPAN_BPF_PROFILE $(BENCH_PROFILED)
	$(Q)GOSPAN_BUILD=$(abspath $(OUTPUT)) $(PYTHON) bench/run

clean:
	$(Q)rm -rf $(BUILD)

-include $(wildcard $(OUTPUT)/obj/*.d $(OUTPUT)/obj/*/*.d)

# ---- soak: make soak (bench/soak; an hour by default, not part of CI) ------------------------
soak: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)GOSPAN_BUILD=$(abspath $(OUTPUT)) bench/soak
