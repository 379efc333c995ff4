# vmact build. Object lists live in Kbuild; this file only knows how to
# build them. `make V=1` prints full commands.

include Kbuild

BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
SANITIZE ?= 0
VECTORS  ?= ../shared/vectors/wire.json

comma := ,
empty :=
space := $(empty) $(empty)
join-words = $(subst $(space),$(comma),$(strip $(1)))

CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
AR      ?= ar

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-7s %s\n' $(1) $(2)
endif

# Evaluated lazily: `make ci` must be able to parse this file before the
# packages that provide these .pc files are installed.
PKGS     = libvirt libvirt-qemu jansson libxml-2.0 libcurl libmicrohttpd libsystemd \
           libnl-genl-3.0 libnl-3.0 libbpf libcgroup nettle
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lwslay -lm -lpthread
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 \
           -Wstrict-prototypes -Wmissing-prototypes
CFLAGS  ?= -O2 -g
VERSION := 0.1.0
ALL_CFLAGS = -DVMACT_VERSION='"$(VERSION)"' -std=gnu17 $(WARN) -D_GNU_SOURCE -I. -I$(BUILD) $(PKG_CFLAGS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(LDFLAGS)
ifeq ($(SANITIZE),1)
ALL_CFLAGS  += -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ALL_LDFLAGS += -fsanitize=address,undefined
endif

# ---- object lists -------------------------------------------------------
# Layer order, top first: the link order of the archives (Kbuild).
COMPONENTS := hook actuator/daemon actuator/runner actuator/worker actuator/control \
	actuator/metrics actuator/config actuator/cgroup actuator/policy actuator/guestd \
	agent-glue/arbiter agent-glue/client agent-glue/codec hotplug bpf net base
# What each component may include besides itself (make check-layers).
layers-hook       := hotplug base
agent-glue := agent-glue/arbiter agent-glue/client agent-glue/codec
layers-actuator/daemon := actuator/runner actuator/worker actuator/control actuator/metrics \
	actuator/config actuator/cgroup actuator/policy actuator/guestd $(agent-glue) net hotplug bpf base
layers-actuator/runner := actuator/worker actuator/control actuator/metrics actuator/config \
	actuator/cgroup actuator/policy actuator/guestd $(agent-glue) net hotplug bpf base
layers-actuator/worker := actuator/guestd $(agent-glue) net base
layers-actuator/control := actuator/policy net hotplug base
layers-actuator/metrics := actuator/policy net base
layers-actuator/config := agent-glue/codec net base
layers-actuator/cgroup := base
layers-actuator/policy := agent-glue/codec hotplug base
layers-actuator/guestd := agent-glue/client agent-glue/codec net base
layers-agent-glue/arbiter := agent-glue/codec net base
layers-agent-glue/client := agent-glue/codec net base
layers-agent-glue/codec := net base
layers-net        := base
layers-hotplug    := base
layers-bpf        := base
layers-base       :=
# Components outside the daemon's layers, linked only into their own
# programs (and the unit tests): cli/ (vmactl) uses base alone.
TOOL_COMPONENTS := cli cluster cloudprovider
layers-cli        := base
# cluster/ (vmact-groupd): the lease codec, the transport, base.
layers-cluster    := agent-glue/codec net base
layers-cloudprovider := base
layer-specs = $(foreach c,$(COMPONENTS) $(TOOL_COMPONENTS),$(c)=$(call join-words,$(layers-$(c))))
LIB_OBJS := $(foreach c,$(COMPONENTS),$(addprefix $(BUILD)/$(c)/,$($(c)-y)))
# A component's archive: build/lib<dir with / as ->.a (build/libactuator-policy.a).
lib-of = $(BUILD)/lib$(subst /,-,$(1)).a
LIB      := $(foreach c,$(COMPONENTS),$(call lib-of,$(c)))

# protobuf-c: protoc-c writes C for the .proto files under $(BUILD), and
# for the well-known types they import from libprotobuf-dev's copies.
PROTO_INC ?= /usr/include
CP_GEN_OBJS := $(addprefix $(BUILD)/,$(cloudprovider-gen-y))
CP_GEN_HDRS := $(CP_GEN_OBJS:.o=.h)
CP_CFLAGS = $(shell pkg-config --cflags grpc libprotobuf-c 2>/dev/null)
$(BUILD)/cloudprovider/%.pb-c.c $(BUILD)/cloudprovider/%.pb-c.h: cloudprovider/%.proto
	$(call msg,PROTOC,$<)
	@mkdir -p $(@D)
	$(Q)protoc-c -I. -I$(PROTO_INC) --c_out=$(BUILD) $<
$(BUILD)/google/protobuf/%.pb-c.c $(BUILD)/google/protobuf/%.pb-c.h: $(PROTO_INC)/google/protobuf/%.proto
	$(call msg,PROTOC,google/protobuf/$*.proto)
	@mkdir -p $(@D)
	$(Q)protoc-c -I$(PROTO_INC) --c_out=$(BUILD) google/protobuf/$*.proto
$(CP_GEN_OBJS): %.o: %.c
	$(call msg,CC,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_CFLAGS) $(CP_CFLAGS) -MMD -MP -c -o $@ $<
$(call lib-of,cloudprovider): $(CP_GEN_OBJS)
# Every object of cloudprovider/ (and the tests that use it) may include a
# generated header: they exist before any of them compiles.
$(BUILD)/cloudprovider/%.o: ALL_CFLAGS += $(CP_CFLAGS)
$(addprefix $(BUILD)/cloudprovider/,$(cloudprovider-y)) $(BUILD)/cloudprovider/vmact-cloudprovider.o: | $(CP_GEN_HDRS)

TESTLIB  := $(BUILD)/libtesthelpers.a
TOOL_LIB := $(foreach c,$(TOOL_COMPONENTS),$(call lib-of,$(c)))

BPF_OBJS  := $(addprefix $(BUILD)/bpf/,$(bpf-progs-y:=.bpf.o))
BPF_SKELS := $(addprefix $(BUILD)/bpf/,$(bpf-progs-y:=.skel.h))

# A program links every layer, or only the components in <prog>-libs
# (Kbuild) with the pkg-config packages in <prog>-pkgs.
prog-libs = $(if $($(1)-libs),$(foreach c,$($(1)-libs),$(call lib-of,$(c))),$(LIB))
prog-ldlibs = $(if $($(1)-pkgs),$(shell pkg-config --libs $($(1)-pkgs) 2>/dev/null),$(PKG_LIBS))
define prog_rule
$(BUILD)/$(1): $$(addprefix $(BUILD)/,$$($(1)-objs)) $(call prog-libs,$(1))
	$$(call msg,LD,$(1))
	$$(Q)$$(CC) $$(ALL_LDFLAGS) $$($(1)-ldflags) -o $$@ $$(addprefix $(BUILD)/,$$($(1)-objs)) $(call prog-libs,$(1)) $$(call prog-ldlibs,$(1)) $$($(1)-extra-ldlibs)
endef
$(foreach p,$(progs-y) $(tools-y),$(eval $(call prog_rule,$(p))))

UNIT_BINS  := $(addprefix $(BUILD)/tests/unit/,$(tests-unit-y))
LOOP_BINS  := $(addprefix $(BUILD)/tests/loopback/,$(tests-loopback-y))
INTEG_BINS := $(addprefix $(BUILD)/tests/integration/,$(tests-integration-y))
FUZZ_BINS  := $(addprefix $(BUILD)/fuzz/,$(fuzz-y))
PROGS      := $(addprefix $(BUILD)/,$(progs-y) $(tools-y))
SECCOMP_EXEC := $(BUILD)/tests/sandbox/seccomp-exec

.PHONY: all check unit loopback integration wirecheck-run fuzz-replay fuzz install uninstall \
        clean ci setup guest bench-hotplug bench-sampler bench-cgroup bench-reaction bench-memory \
        bench-provision \
        tests demo
.DEFAULT_GOAL := all
# Keep objects that chained rules produce (fuzz objects, test objects).
.SECONDARY:

all: $(PROGS)

tests: $(PROGS) $(UNIT_BINS) $(LOOP_BINS) $(INTEG_BINS) $(SECCOMP_EXEC)

# ---- compile rules ------------------------------------------------------
$(BUILD)/%.o: %.c | $(BPF_SKELS)
	$(call msg,CC,$(patsubst $(BUILD)/%,%,$@))
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

define lib_rule
$(call lib-of,$(1)): $$(addprefix $(BUILD)/$(1)/,$$($(1)-y))
	$$(call msg,AR,$$(patsubst $(BUILD)/%,%,$$@))
	$$(Q)rm -f $$@ && $$(AR) rcs $$@ $$^
endef
$(foreach c,$(COMPONENTS) $(TOOL_COMPONENTS),$(eval $(call lib_rule,$(c))))

$(TESTLIB): $(addprefix $(BUILD)/tests/lib/,$(testhelpers-y))
	$(call msg,AR,$(patsubst $(BUILD)/%,%,$@))
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# make check-format: every C file as clang-format leaves it (make check runs
# it); make format rewrites them (doc/CODING_STYLE.md).
.PHONY: check-format format
check-format:
	$(Q)tests/checks/check-format.sh
format:
	$(Q)tests/checks/check-format.sh --fix

# make print-VAR: a variable's value, for scripts (tests/checks/).
print-%:
	@echo $($*)

# make check-layers: no component includes a header of one above it or of
# a sibling (the archives' link order catches calls; this catches headers,
# inline functions and struct layouts too).
.PHONY: check-layers
check-layers:
	$(Q)tests/checks/check-layers.sh $(layer-specs)

$(BUILD)/tests/unit/%: $(BUILD)/tests/unit/%.o $(TESTLIB) $(TOOL_LIB) $(LIB)
	$(call msg,LD,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(TOOL_LIB) $(LIB) $(PKG_LIBS) $(CMOCKA_LIBS) $($(notdir $@)-ldlibs)

$(BUILD)/tests/loopback/%: $(BUILD)/tests/loopback/%.o $(TESTLIB) $(TOOL_LIB) $(LIB)
	$(call msg,LD,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(TOOL_LIB) $(LIB) $(PKG_LIBS) $(CMOCKA_LIBS)

# The sandbox test's launcher (tests/sandbox/seccomp-exec.c): vmactd.service's
# system-call filter, loaded with libseccomp, then exec.
$(SECCOMP_EXEC): $(BUILD)/tests/sandbox/seccomp-exec.o
	$(call msg,LD,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(shell pkg-config --libs libseccomp 2>/dev/null)

$(BUILD)/tests/integration/%: $(BUILD)/tests/integration/%.o $(TESTLIB) $(TOOL_LIB) $(LIB)
	$(call msg,LD,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(TOOL_LIB) $(LIB) $(PKG_LIBS) $(CMOCKA_LIBS)

# BPF: CO-RE objects against the running kernel's BTF, then skeletons.
$(BUILD)/bpf/vmlinux.h:
	$(call msg,BTF,$(patsubst $(BUILD)/%,%,$@))
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(BUILD)/bpf/vmlinux.h
	$(call msg,BPF,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(BUILD)/bpf -I. -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,GENSKEL,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*) > $@.tmp && mv $@.tmp $@

# libFuzzer harnesses are built with clang against the sources directly so
# the sanitizer and coverage instrumentation cover the decoders.
FUZZ_CFLAGS = -DVMACT_VERSION='"$(VERSION)"' -std=gnu17 -g -O1 -D_GNU_SOURCE -I. -I$(BUILD) $(PKG_CFLAGS) \
              -fsanitize=fuzzer,address,undefined
$(BUILD)/fuzz/%: tests/fuzz/%.c $(addprefix $(BUILD)/fuzzobj/,$(LIB_OBJS:$(BUILD)/%=%))
	$(call msg,FUZZ,$(patsubst $(BUILD)/%,%,$@))
	@mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/fuzzobj/%.o: %.c | $(BPF_SKELS)
	$(call msg,CC-FUZZ,$(patsubst $(BUILD)/%,%,$@))
	@mkdir -p $(@D)
	$(Q)$(CLANG) -DVMACT_VERSION='"$(VERSION)"' -std=gnu17 -g -O1 -D_GNU_SOURCE -I. -I$(BUILD) $(PKG_CFLAGS) \
		-fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<

# cloudprovider/ is outside LIB_OBJS (its own program): its harness names
# the objects it covers, the generated k8s Node code and protobuf-c.
CP_FUZZ_OBJS := $(addprefix $(BUILD)/fuzzobj/cloudprovider/,group.o template.o arena.o \
	k8s-node.pb-c.o)
$(BUILD)/fuzz/cp_groups: $(CP_FUZZ_OBJS)
$(BUILD)/fuzz/cp_groups: PKG_LIBS += -lprotobuf-c
$(BUILD)/fuzzobj/cloudprovider/k8s-node.pb-c.o: $(BUILD)/cloudprovider/k8s-node.pb-c.c
	$(call msg,CC-FUZZ,$(patsubst $(BUILD)/%,%,$@))
	@mkdir -p $(@D)
	$(Q)$(CLANG) -std=gnu17 -g -O1 -D_GNU_SOURCE -I. -I$(BUILD) \
		-fsanitize=fuzzer-no-link,address,undefined -c -o $@ $<
$(filter-out %.pb-c.o,$(CP_FUZZ_OBJS)): | $(CP_GEN_HDRS)

# (Not make deb's copy of the tree, check-host's machine or the test
# guest's and npm's files: they have files and directories named *.d.)
-include $(shell find $(BUILD) \( -path '$(BUILD)/deb' -o -path '$(BUILD)/host' -o -path '$(BUILD)/guest' \
	-o -path '$(BUILD)/npm' \) -prune -o -type f -name '*.d' -print 2>/dev/null)

# ---- test entry points --------------------------------------------------
# make check: everything, under ASan+UBSan, in build/san.
SANBUILD := $(BUILD)/san
check:
	$(Q)$(MAKE) --no-print-directory check-layers
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 tests
	$(Q)$(MAKE) --no-print-directory fuzz-build
	$(Q)$(MAKE) --no-print-directory guest
	$(Q)$(MAKE) --no-print-directory $(BUILD)/vmactd $(BUILD)/vmact-guestd $(SECCOMP_EXEC)
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) VMACT_PLAIN_BUILD=$(abspath $(BUILD)) \
		tests/run-tests.sh --build $(SANBUILD) --fuzz $(BUILD)/fuzz --vectors $(VECTORS) \
		--unit "$(tests-unit-y)" --loopback "$(tests-loopback-y)" \
		--integration "$(tests-integration-y)" --fuzzers "$(fuzz-y)" \
		--layers "$(layer-specs)" --install "BUILD=$(SANBUILD) SANITIZE=1" --scripts "$(tests-script-y)"

# make unit: every test that needs no privileges (tests/unit and
# tests/loopback) and the conformance vectors; make loopback: only those
# of tests/loopback.
unit:
	$(Q)$(MAKE) --no-print-directory check-layers
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 tests
	$(Q)tests/run-tests.sh --build $(SANBUILD) --vectors $(VECTORS) --unit "$(tests-unit-y)" \
		--loopback "$(tests-loopback-y)" --layers "$(layer-specs)" \
		--install "BUILD=$(SANBUILD) SANITIZE=1" --scripts "$(tests-script-unit-y)"

loopback:
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 $(LOOP_BINS)
	$(Q)tests/run-tests.sh --build $(SANBUILD) --vectors "" --loopback "$(tests-loopback-y)"

.PHONY: fuzz-build
fuzz-build: $(FUZZ_BINS)

# make fuzz: each harness for FUZZ_SECONDS (default 60), corpus grown under
# build/fuzz-corpus, seeds from tests/fuzz/corpus.
FUZZ_SECONDS ?= 60
fuzz: $(FUZZ_BINS)
	$(Q)tests/fuzz/run-fuzz.sh $(BUILD) $(FUZZ_SECONDS) $(fuzz-y)

# make fuzz-long: each harness for FUZZ_LONG_SECONDS (default 600),
# FUZZ_JOBS at a time (default: one per CPU); prints executions and
# coverage per harness and fails on any finding (README "Reliability and
# security"). FUZZ_HARNESSES picks a subset.
FUZZ_LONG_SECONDS ?= 600
FUZZ_JOBS ?= $(shell nproc)
FUZZ_HARNESSES ?= $(fuzz-y)
.PHONY: fuzz-long
fuzz-long: $(FUZZ_BINS)
	$(Q)tests/fuzz/run-fuzz-long.sh $(BUILD) $(FUZZ_LONG_SECONDS) $(FUZZ_JOBS) $(FUZZ_HARNESSES)

# make soak-arbiter: 100 000 plugin requests from 200 concurrent clients
# against the arbiter, under ASan+UBSan with leak detection; asserts no
# grant ever exceeds capacity and prints the time, the largest sum of
# permits and RSS. make check runs a 1000-request version (50 clients).
.PHONY: soak-arbiter
soak-arbiter:
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 $(SANBUILD)/tests/loopback/test_arbiter_soak
	$(Q)VMACT_SOAK_REQUESTS=100000 VMACT_SOAK_CLIENTS=200 ASAN_OPTIONS=detect_leaks=1 \
		$(SANBUILD)/tests/loopback/test_arbiter_soak

# make soak: vmactd scaling four TCG guests under random load for
# SOAK_MINUTES (default 30) while their vm-monitors approve and deny at
# random and libvirtd is restarted twice (tests/integration/test_soak.c;
# VMACT_SOAK_SEED repeats a run). Root. The plain build (RSS and
# descriptors checked flat); SOAK_SANITIZE=1: build/san, ASan+UBSan.
SOAK_MINUTES ?= 30
SOAK_SANITIZE ?=
SOAK_BUILD = $(if $(SOAK_SANITIZE),$(SANBUILD),$(BUILD))
.PHONY: soak
soak:
	$(Q)$(MAKE) --no-print-directory guest
	$(Q)$(MAKE) --no-print-directory BUILD=$(SOAK_BUILD) $(if $(SOAK_SANITIZE),SANITIZE=1) \
		$(SOAK_BUILD)/vmactd $(SOAK_BUILD)/vmactl $(SOAK_BUILD)/tests/integration/test_soak
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) VMACT_SOAK_MINUTES=$(SOAK_MINUTES) \
		ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
		UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		$(SOAK_BUILD)/tests/integration/test_soak

# make torture: vmactd SIGKILLed at a random moment of a resize, then a
# new vmactd, TORTURE_ROUNDS times (tests/integration/test_torture.c; make
# check runs its 10-round version). Sanitized vmactd, as make check's; root.
# VMACT_TORTURE_SEED=N replays a run's kill delays.
TORTURE_ROUNDS ?= 100
.PHONY: torture
torture:
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 \
		$(SANBUILD)/tests/integration/test_torture $(SANBUILD)/vmactd $(SANBUILD)/vmactl
	$(Q)$(MAKE) --no-print-directory guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) VMACT_TORTURE_ROUNDS=$(TORTURE_ROUNDS) \
		$(SANBUILD)/tests/integration/test_torture

# make guest: the TCG test guest (Debian cloud kernel + busybox initramfs,
# tests/guest/). Always under the top-level build/ (not build/san): it does
# not depend on compiler flags, and integration tests and benches share it.
GUEST_DIR ?= build/guest
guest: $(GUEST_DIR)/stamp
$(GUEST_DIR)/stamp: tests/guest/build-guest.sh tests/guest/init tests/guest/cpu-online.c \
		tests/guest/mem-load.c
	$(call msg,GUEST,$(GUEST_DIR))
	$(Q)tests/guest/build-guest.sh $(GUEST_DIR)

# make bench-hotplug: vmact vs virsh latency for vCPU and virtio-mem
# resizes on a real TCG guest (bench/hotplug-bench.c).
BENCH_ITER ?= 10
bench-hotplug: $(BUILD)/bench/hotplug-bench guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) $(BUILD)/bench/hotplug-bench $(BENCH_ITER)

# make bench-reaction: issue 9's benchmark, how long a busy 1-vCPU guest
# waits for its second vCPU: an operator's virsh loop vs vmactd with the
# Neon policy vs vmactd's defaults, plus vmactd's way back down
# (bench/reaction-bench.c). Needs root and node (the vm-monitor peer).
bench-reaction: $(BUILD)/bench/reaction-bench $(BUILD)/vmactd guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) $(BUILD)/bench/reaction-bench $(BENCH_ITER)

# make bench-memory: issue 17's benchmark, memory pressure onset (an
# allocation beyond what the guest has free) -> more memory in the guest,
# vmactd on the host's own evidence (balloon statistics, no agent) against
# the vm-monitor's upscale request, interleaved per run; the guest's OOM
# kills and major faults (bench/memory-bench.c). Needs root and node.
bench-memory: $(BUILD)/bench/memory-bench $(BUILD)/vmactd guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) $(BUILD)/bench/memory-bench $(BENCH_ITER)

# make bench-provision: vmact-groupd's increase -> a healthy VM in service,
# per standby tier and for a cold boot, p50/p90 over BENCH_ITER runs each,
# ending with "ratio: X" = running tier p50 / cold boot p50
# (bench/provision-bench.c; root, the cluster user of setup-host.sh).
bench-provision: $(BUILD)/bench/provision-bench $(BUILD)/vmact-groupd $(BUILD)/vmact-arbiter guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) $(BUILD)/bench/provision-bench $(BENCH_ITER)

# make bench-provision-grpc: bench-provision as cluster-autoscaler sees
# it, through vmact-cloudprovider: NodeGroupIncreaseSize -> the instance
# Running in NodeGroupNodes, per pool tier and for a cold boot, p50/p90 of
# BENCH_ITER runs each, ending with `ratio: X` = running p50 / cold p50
# (bench/provision-grpc.c; root, the test guest, node; doc/cloudprovider.md).
.PHONY: bench-provision-grpc
bench-provision-grpc: $(BUILD)/bench/provision-grpc $(BUILD)/vmact-groupd $(BUILD)/vmact-arbiter \
		$(BUILD)/vmact-cloudprovider guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) VMACT_CP_BUILD=$(abspath $(BUILD)) \
		$(BUILD)/bench/provision-grpc $(BENCH_ITER)

# make bench-cgroup: cost of applying a VM's CPU limit, vmact's libcgroup
# write vs libvirt's global_quota, on a real TCG guest (bench/cgroup-bench.c).
bench-cgroup: $(BUILD)/bench/cgroup-bench
	$(Q)$(BUILD)/bench/cgroup-bench $(BENCH_ITER)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(TESTLIB) $(LIB)
	$(call msg,LD,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(LIB) $(PKG_LIBS) $(CMOCKA_LIBS)

# make ci: the README's test command. Installs what the host lacks, then
# runs make check.
ci:
	$(Q)tests/host/setup-host.sh
	$(Q)$(MAKE) --no-print-directory -j$(shell nproc) check

setup:
	$(Q)tests/host/setup-host.sh

# make check-ui: the Cockpit page in headless Chromium against cockpit-ws,
# a real vmactd and a real TCG guest (tests/checks/check-ui.sh); root.
# make check runs it too (tests-script-y). Screenshots: $(BUILD)/ui.
.PHONY: check-ui
check-ui: $(BUILD)/vmactd
	$(Q)$(MAKE) --no-print-directory guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) VMACT_BUILD=$(BUILD) tests/checks/check-ui.sh

# make demo: the README's first command (demo/vmact-demo.sh). As root on
# Debian 12: prepares the host as make ci does, builds vmact and the test
# guest, then shows vmactd scaling a TCG guest. DEMO_SHORT=1: the short
# phases its test uses (tests/integration/test_demo.c).
DEMO_SHORT ?=
demo:
	$(Q)tests/host/setup-host.sh
	$(Q)$(MAKE) --no-print-directory all guest
	$(Q)VMACT_DEMO_SHORT=$(DEMO_SHORT) VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) \
		VMACT_DEMO_BUILD=$(abspath $(BUILD)) demo/vmact-demo.sh

# make bench-sampler: per-event cost of the sampler's BPF programs against
# libbpf-tools' runqlat under the same load, and the daemon-side readout
# cost; ends with `ratio: X`. Needs root. BENCH_SECONDS: measuring window;
# BENCH_SECTIONS: some of "events readout policy" (default: all).
BENCH_SECONDS ?= 10
bench-sampler: $(BUILD)/bench/sampler-bench
	$(Q)$(BUILD)/bench/sampler-bench $(BENCH_SECONDS) $(BENCH_SECTIONS)

# ---- install ------------------------------------------------------------
# `make install-manifest` prints every path `make install` creates (under
# DESTDIR), one per line: tests/checks/check-install.sh compares the two.
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
HOOKDIR     ?= $(SYSCONFDIR)/libvirt/hooks/qemu.d
DOCDIR      ?= $(PREFIX)/share/doc/vmact
# systemd-sysusers reads /usr/local/lib/sysusers.d as well as /usr/lib's.
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
DOCS        := README.md actuator/daemon/vmactd.json.example
# doc/ keeps its name, so that the README's links to doc/*.md still work.
DOCS_DOC    := $(wildcard doc/*.md)
# The Cockpit page (cockpit/): Cockpit finds it in share/cockpit of /usr
# and /usr/local alike.
COCKPITDIR  ?= $(PREFIX)/share/cockpit/vmact
COCKPIT     := cockpit/manifest.json cockpit/index.html cockpit/vmact.js cockpit/vmact.css
# Prometheus alert rules and the Grafana dashboard (monitoring/), beside the docs.
MONITORING  := monitoring/vmact-alerts.yml monitoring/vmact-dashboard.json
install-files = $(addprefix $(PREFIX)/sbin/,$(sbin-progs-y)) \
	$(addprefix $(PREFIX)/bin/,$(bin-progs-y)) \
	$(HOOKDIR)/vmact $(UNITDIR)/vmactd.service $(SYSUSERSDIR)/vmact.conf \
	$(UNITDIR)/vmact-groupd.service $(SYSUSERSDIR)/vmact-cluster.conf \
	$(UNITDIR)/vmact-cloudprovider.service \
	$(foreach m,$(man-y),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m)) \
	$(addprefix $(BASHCOMPDIR)/,$(completion-y)) \
	$(addprefix $(DOCDIR)/,$(notdir $(DOCS))) $(addprefix $(DOCDIR)/,$(DOCS_DOC)) \
	$(addprefix $(COCKPITDIR)/,$(notdir $(COCKPIT))) $(addprefix $(DOCDIR)/,$(MONITORING))

.PHONY: install-manifest
install-manifest:
	@printf '%s\n' $(install-files)

# Into the running system (no DESTDIR): the vmact user now, and systemd
# told of the new unit, so that `systemctl enable --now vmactd` follows.
define install-live
if command -v systemd-sysusers >/dev/null; then systemd-sysusers $(SYSUSERSDIR)/vmact.conf $(SYSUSERSDIR)/vmact-cluster.conf; \
else echo "make install: no systemd-sysusers: create the vmact user by hand ($(SYSUSERSDIR)/vmact.conf)"; fi
[ ! -d /run/systemd/system ] || systemctl daemon-reload
endef
define uninstall-live
if [ -d /run/systemd/system ] && [ -f $(UNITDIR)/vmactd.service ]; then systemctl disable --now vmactd.service; fi
endef

install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(DOCDIR)/doc $(DESTDIR)$(HOOKDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(COCKPITDIR) $(DESTDIR)$(DOCDIR)/monitoring \
		$(DESTDIR)$(BASHCOMPDIR) $(sort $(foreach m,$(man-y),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))))
	sed -e 's|@SBINDIR@|$(PREFIX)/sbin|' -e 's|@DOCDIR@|$(DOCDIR)|' actuator/daemon/vmactd.service \
		> $(DESTDIR)$(UNITDIR)/vmactd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/vmactd.service
	sed 's|@SBINDIR@|$(PREFIX)/sbin|' cloudprovider/vmact-cloudprovider.service > $(DESTDIR)$(UNITDIR)/vmact-cloudprovider.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/vmact-cloudprovider.service
	install -m 0644 actuator/daemon/vmact.sysusers $(DESTDIR)$(SYSUSERSDIR)/vmact.conf
	sed 's|@SBINDIR@|$(PREFIX)/sbin|' cluster/vmact-groupd.service > $(DESTDIR)$(UNITDIR)/vmact-groupd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/vmact-groupd.service
	install -m 0644 cluster/vmact-cluster.sysusers $(DESTDIR)$(SYSUSERSDIR)/vmact-cluster.conf
	install -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 0644 $(DOCS_DOC) $(DESTDIR)$(DOCDIR)/doc/
	install -m 0644 $(COCKPIT) $(DESTDIR)$(COCKPITDIR)/
	install -m 0644 $(MONITORING) $(DESTDIR)$(DOCDIR)/monitoring/
	$(foreach p,$(sbin-progs-y),install -m 0755 $(BUILD)/$(p) $(DESTDIR)$(PREFIX)/sbin/$(p);)
	$(foreach p,$(bin-progs-y),install -m 0755 $(BUILD)/$(p) $(DESTDIR)$(PREFIX)/bin/$(p);)
	install -m 0755 $(BUILD)/vmact-hook $(DESTDIR)$(HOOKDIR)/vmact
	$(foreach m,$(man-y),install -m 0644 man/$(m) $(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m);)
	$(foreach c,$(completion-y),install -m 0644 man/vmact.bash-completion $(DESTDIR)$(BASHCOMPDIR)/$(c);)
	$(if $(DESTDIR),,$(install-live))

# make uninstall: removes what make install put there (the same PREFIX,
# DESTDIR and directories), stopping and disabling vmactd first on a
# running system. Keeps /etc/vmact (the operator's configuration) and the
# vmact user (files it owned may remain: Debian's practice for system users).
uninstall:
	$(if $(DESTDIR),,$(uninstall-live))
	rm -f $(addprefix $(DESTDIR),$(install-files))
	rmdir $(DESTDIR)$(DOCDIR)/doc $(DESTDIR)$(DOCDIR)/monitoring $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(COCKPITDIR) 2>/dev/null || true
	$(if $(DESTDIR),,[ ! -d /run/systemd/system ] || systemctl daemon-reload)

# make check-host: a Debian 12 machine under QEMU TCG (systemd as PID 1,
# cgroup v2 only, libvirt inside, built from Debian packages and cached in
# $(BUILD)/host; rebuilt only when tests/host/build-image.sh changes), vmact
# installed there from make deb's package, then checked under the real
# systemd: start, reload, libvirtd restart, sandbox, journal, a nested TCG
# test guest grown and shrunk through its cgroup, the BPF sampler
# (tests/host/in-vm.sh). Root; not part of make check (an hour or more).
HOST_IMG := $(BUILD)/host
.PHONY: check-host check-host-image
# The stamp holds the build script's hash: a new checkout (new mtimes)
# reuses the image, a changed script rebuilds it.
check-host-image:
	$(Q)if [ "$$(sha256sum tests/host/build-image.sh | cut -d' ' -f1)" != \
	       "$$(cat $(HOST_IMG)/stamp 2>/dev/null)" ] || [ ! -f $(HOST_IMG)/rootfs.img ]; then \
		tests/host/build-image.sh $(HOST_IMG); fi
check-host: check-host-image
	$(Q)tests/host/setup-host.sh
	$(Q)$(MAKE) --no-print-directory deb guest
	$(Q)tests/host/check-host.sh $(HOST_IMG) $(DEB) $(GUEST_DIR) $(BUILD)/npm/node_modules

# make deb: the Debian package (debian/, debhelper), built by
# dpkg-buildpackage from a copy of the tree's files (tracked or not,
# git ls-files) under $(BUILD)/deb/src, so that it never touches this
# tree's build/. The .deb lands in $(BUILD)/deb/.
DEB_VERSION = $(shell dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null)
DEB_ARCH    = $(shell dpkg --print-architecture 2>/dev/null)
DEB         = $(BUILD)/deb/vmact_$(DEB_VERSION)_$(DEB_ARCH).deb
# the layer above one host, apart so that a host's package needs no gRPC
DEB_CLUSTER = $(BUILD)/deb/vmact-cluster_$(DEB_VERSION)_$(DEB_ARCH).deb
.PHONY: deb
deb:
	$(call msg,DEB,$(DEB))
	$(Q)rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/src
	$(Q)git ls-files -z --cached --others --exclude-standard | \
		xargs -0 cp --parents -t $(BUILD)/deb/src 2>/dev/null; \
		git ls-files -z --cached --others --exclude-standard | (cd $(BUILD)/deb/src && \
		xargs -0 ls -d >/dev/null) || { echo "make deb: copying the tree failed"; exit 1; }
	$(Q)cd $(BUILD)/deb/src && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -b -us -uc -j$(shell nproc) >../build.log 2>&1 || \
		{ tail -n 40 ../build.log; echo "make deb: dpkg-buildpackage failed ($(BUILD)/deb/build.log)"; exit 1; }
	$(Q)test -f $(DEB) && echo "$(DEB)" && test -f $(DEB_CLUSTER) && echo "$(DEB_CLUSTER)"

clean:
	rm -rf $(BUILD)
