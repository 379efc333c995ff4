# vmact build. Object lists live in Kbuild; this file only knows how to
# build them. `make V=1` prints full commands.

include Kbuild

BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
SANITIZE ?= 0
VECTORS  ?= ../shared/vectors/wire.json
# The project's own vectors, beside the shared ones: each era's agent request
# bodies (doc/protocols.md, "What each era's agents sent").
VECTORS  += tests/conformance/agent-eras.json

comma := ,
empty :=
space := $(empty) $(empty)
join-words = $(subst $(space),$(comma),$(strip $(1)))

CC      ?= gcc
CLANG   ?= clang
LLVM_STRIP ?= llvm-strip
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
           libnl-genl-3.0 libnl-3.0 libbpf nettle
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
	actuator/metrics actuator/config actuator/cgroup actuator/policy guestd \
	agent-glue/arbiter agent-glue/client agent-glue/codec hotplug bpf net shared base
# What each component may include besides itself (make check-layers).
layers-hook       := hotplug shared base
agent-glue := agent-glue/arbiter agent-glue/client agent-glue/codec
layers-actuator/daemon := actuator/runner actuator/worker actuator/control actuator/metrics \
	actuator/config actuator/cgroup actuator/policy guestd $(agent-glue) net hotplug bpf shared base
layers-actuator/runner := actuator/worker actuator/control actuator/metrics actuator/config \
	actuator/cgroup actuator/policy guestd $(agent-glue) net hotplug bpf shared base
layers-actuator/worker := guestd $(agent-glue) net shared base
layers-actuator/control := actuator/policy net hotplug shared base
layers-actuator/metrics := actuator/policy net shared base
layers-actuator/config := agent-glue/codec net shared base
layers-actuator/cgroup := shared base
layers-actuator/policy := agent-glue/codec hotplug shared base
layers-guestd := agent-glue/client agent-glue/codec net shared base
layers-agent-glue/arbiter := agent-glue/codec net shared base
layers-agent-glue/client := agent-glue/codec net shared base
layers-agent-glue/codec := net shared base
layers-net        := shared base
layers-hotplug    := shared base
layers-bpf        := shared base
layers-shared     := base
layers-base       :=
# Components outside the daemon's layers, linked only into their own
# programs (and the unit tests): cli/vmactl/ (vmactl) uses shared/ and base/ alone.
# cluster/'s sub-layers, top first (doc/ARCHITECTURE.md, "Inside cluster/").
CLUSTER_COMPONENTS := cluster/daemon cluster/engine cluster/plugins cluster/host \
	cluster/framework cluster/config
TOOL_COMPONENTS := cli/vmactl $(CLUSTER_COMPONENTS) cloudprovider node
layers-cli/vmactl := shared base
# node/ (vmact-node, in node images): the claim's codec and the kubelet's
# files, on shared/ (the JSON codec by table) and base/ only.
layers-node := shared base
# cluster/ (vmact-groupd): each sub-layer uses those below it, the
# transport, shared/ (the lease protocol) and base; the framework and the
# configuration use base alone.
layers-cluster/config := base
layers-cluster/framework := base
layers-cluster/host := cluster/config net shared base
layers-cluster/plugins := cluster/host cluster/framework cluster/config net shared base
layers-cluster/engine := cluster/plugins cluster/host cluster/framework cluster/config \
	net shared base
layers-cluster/daemon := cluster/engine cluster/plugins cluster/host cluster/framework \
	cluster/config net shared base
layers-cloudprovider := shared base
# Directories that hold a program's main() and nothing else: check-layers
# knows them (what the main may include), no archive is made of them.
MAIN_COMPONENTS := cluster arbiter cli/groupctl
layers-cluster := $(CLUSTER_COMPONENTS) net shared base
# arbiter/: vmact-arbiter's main, over the arbiter's core in agent-glue/
layers-arbiter := agent-glue/arbiter agent-glue/codec net shared base
# cli/groupctl/: vmact-groupctl's main, over vmact-groupd's API's codec
layers-cli/groupctl := shared base
# ...and whose top holds nothing but the mains Kbuild's <prog>-objs name
# there (+main=FILE).
main-files = $(foreach c,$(MAIN_COMPONENTS),$(foreach p,$(progs-y),$(filter $(c)/%,$($(p)-objs:.o=.c))))
layer-specs = $(foreach c,$(COMPONENTS) $(TOOL_COMPONENTS) $(MAIN_COMPONENTS),$(c)=$(call join-words,$(layers-$(c)))) \
	$(addprefix +main=,$(main-files))
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
TOOL_OBJS := $(foreach c,$(TOOL_COMPONENTS),$(addprefix $(BUILD)/$(c)/,$($(c)-y)))

BPF_OBJS  := $(addprefix $(BUILD)/bpf/,$(bpf-progs-y:=.bpf.o))
BPF_SKELS := $(addprefix $(BUILD)/bpf/,$(bpf-progs-y:=.skel.h))

# A program links the components in <prog>-libs (Kbuild), top first, with
# the pkg-config packages in <prog>-pkgs, and nothing else: a program
# without both lists is an error, never "everything".
prog-libs = $(if $($(1)-libs),$(foreach c,$($(1)-libs),$(call lib-of,$(c))),$(error \
	Kbuild: program $(1) has no $(1)-libs: list the archives it links (doc/ARCHITECTURE.md)))
prog-ldlibs = $(if $($(1)-pkgs),$(shell pkg-config --libs $($(1)-pkgs) 2>/dev/null),$(error \
	Kbuild: program $(1) has no $(1)-pkgs: list the packages it links (doc/ARCHITECTURE.md)))
progs-listed := $(foreach p,$(progs-y) $(tools-y),$(call prog-libs,$(p))$(if $($(p)-pkgs),,$(call \
	prog-ldlibs,$(p))))
define prog_rule
$(BUILD)/$(1): $$(addprefix $(BUILD)/,$$($(1)-objs)) $(call prog-libs,$(1))
	$$(call msg,LD,$(1))
	$$(Q)$$(CC) $$(ALL_LDFLAGS) $$($(1)-ldflags) -o $$@ $$(addprefix $(BUILD)/,$$($(1)-objs)) $(call prog-libs,$(1)) $$(call prog-ldlibs,$(1)) $$($(1)-extra-ldlibs)
endef
$(foreach p,$(progs-y) $(tools-y),$(eval $(call prog_rule,$(p))))

UNIT_BINS  := $(addprefix $(BUILD)/tests/unit/,$(tests-unit-y))
LOOP_BINS  := $(addprefix $(BUILD)/tests/loopback/,$(tests-loopback-y))
INTEG_BINS := $(addprefix $(BUILD)/tests/integration/,$(tests-integration-y) $(tests-k8s-y))
FUZZ_BINS  := $(addprefix $(BUILD)/fuzz/,$(fuzz-y))
PROGS      := $(addprefix $(BUILD)/,$(progs-y) $(tools-y))
SECCOMP_EXEC := $(BUILD)/tests/sandbox/seccomp-exec

.PHONY: all check check-upstream unit loopback integration wirecheck-run fuzz-replay fuzz install uninstall \
        clean ci setup guest bench-hotplug bench-sampler bench-cgroup bench-reaction bench-memory \
        bench-provision bench-footprint bench-migrate check-poll \
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
.PHONY: check-doc-refs
# make check-doc-refs: every link of every *.md, every tree path a page
# cites and every doc heading a comment cites resolves (doc/README.md).
check-doc-refs:
	$(Q)tests/checks/check-doc-refs.sh

# make check-group-api: vmact-groupd's API spoken through its one codec
# (shared/group-api.c) by the files of Kbuild's group-api-users-y.
.PHONY: check-group-api
check-group-api:
	$(Q)tests/checks/check-group-api.sh

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

# BPF: CO-RE objects, then skeletons. The kernel's types come from the
# vmlinux.h kept in the tree for each architecture (bpf/vmlinux/ARCH/), not
# from the build host's running kernel: the build is the same on every host
# and in a chroot, and libbpf relocates the programs' field accesses to the
# running kernel's BTF when vmactd loads them. `make vmlinux-h` writes it
# anew from VMLINUX_BTF (the types the programs use must be in it: the
# iterator kfuncs of readvm.bpf.c need Linux >= 6.7's BTF).
BPF_ARCH ?= $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(firstword $(subst -, ,$(shell $(CC) -dumpmachine 2>/dev/null)))))
VMLINUX_H := bpf/vmlinux/$(BPF_ARCH)/vmlinux.h
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
.PHONY: vmlinux-h
vmlinux-h:
	@mkdir -p $(dir $(VMLINUX_H))
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $(VMLINUX_H).tmp && mv $(VMLINUX_H).tmp $(VMLINUX_H)

# The watch's lock is an atomic compare-and-exchange, an instruction of
# the BPF ISA's v3 (Linux 5.12; the watch needs 5.17 anyway); the other
# objects keep clang's default for the older kernels the sampler runs on.
$(BUILD)/bpf/watch.bpf.o: BPF_CPU := -mcpu=v3
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c bpf/sampler-types.h bpf/vcpu-comm.bpf.h $(VMLINUX_H)
	$(call msg,BPF,$(patsubst $(BUILD)/%,%,$@))
	@mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -target bpf $(BPF_CPU) -D__TARGET_ARCH_$(BPF_ARCH) -I$(dir $(VMLINUX_H)) -I. -c $< -o $@.tmp
	@# The DWARF goes (BTF stays): the object is embedded in vmactd, whose
	@# private memory its pages would be (doc/actuation.md,
	@# "vmactd's own footprint"); bcc's libbpf-tools strip theirs the same way.
	$(Q)$(LLVM_STRIP) -g $@.tmp && mv $@.tmp $@

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
# node/ likewise (vmact-node's own program).
$(BUILD)/fuzz/nd_claim: $(BUILD)/fuzzobj/node/claim.o

# (Not make deb's copy of the tree, check-host's machine or the test
# guest's and npm's files: they have files and directories named *.d.)
-include $(shell find $(BUILD) \( -path '$(BUILD)/deb' -o -path '$(BUILD)/deb-next' -o -path '$(BUILD)/host' -o -path '$(BUILD)/guest' \
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
		tests/run-tests.sh --build $(SANBUILD) --fuzz $(BUILD)/fuzz --vectors "$(VECTORS)" \
		--unit "$(tests-unit-y)" --loopback "$(tests-loopback-y)" \
		--integration "$(tests-integration-y)" --fuzzers "$(fuzz-y)" \
		--layers "$(layer-specs)" --install "BUILD=$(SANBUILD) SANITIZE=1" --scripts "$(tests-script-y)" \
		--upstream yes

# make check-upstream: vmact-cloudprovider driven by upstream's own Go
# modules (tests/peers/kube, one module per pinned k8s.io/api version; Go
# from the machine, modules from Go's cache, setup-host.sh downloads them);
# one line "MODULE VERSION: N passed, M failed" per module. The sanitized
# provider, as make check runs it.
check-upstream:
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 $(SANBUILD)/vmact-cloudprovider
	$(Q)tests/checks/check-upstream.sh $(SANBUILD)

# make check-poll: the reactive policy's integration tests with the kernel's
# watch off (policy.events false, VMACT_TEST_EVENTS=off): the poll every VM
# falls back to where the watch does not load (doc/policy.md, "Saturation
# found in the kernel"). make check runs them on the watch.
POLL_TESTS := test_reaction test_agentless test_daemon
check-poll:
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 \
		$(addprefix $(SANBUILD)/tests/integration/,$(POLL_TESTS))
	$(Q)$(MAKE) --no-print-directory guest
	$(Q)$(MAKE) --no-print-directory $(BUILD)/vmactd $(BUILD)/vmact-guestd $(SECCOMP_EXEC)
	$(Q)VMACT_TEST_EVENTS=off VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) \
		VMACT_PLAIN_BUILD=$(abspath $(BUILD)) \
		tests/run-tests.sh --build $(SANBUILD) --vectors "" --integration "$(POLL_TESTS)"

# The test control plane's binaries (kube-apiserver, kubelet, etcd), built
# from tests/peers/kube/control-plane into the build cache, kept while
# their inputs stay the same (tests/k8s/build-bins.sh).
.PHONY: k8s-bins
k8s-bins:
	$(Q)tests/k8s/build-bins.sh

# make check-k8s (root): a node VM joins a real control plane
# (tests/integration/test_k8s.c): the binaries above, the node image
# (tests/k8s/build-node-image.sh, kept in the build cache while its inputs
# stay), then the test. Run under the integration tests' lock.
K8S_CACHE = $(or $(VMACT_CACHE_DIR),/var/cache/vmact-tests)/k8s
.PHONY: check-k8s
check-k8s: guest
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 $(SANBUILD)/vmact-groupd \
		$(SANBUILD)/vmact-cloudprovider $(SANBUILD)/vmact-arbiter \
		$(SANBUILD)/tests/integration/test_k8s
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bins=$$(tests/k8s/build-bins.sh) && \
		tests/k8s/build-node-image.sh $(K8S_CACHE)/node $$bins/kubelet $(BUILD) && \
		VMACT_K8S_BIN=$$bins VMACT_K8S_NODE=$(K8S_CACHE)/node VMACT_GUEST_DIR=$(GUEST_DIR) \
		$(SANBUILD)/tests/integration/test_k8s

# make unit: every test that needs no privileges (tests/unit and
# tests/loopback) and the conformance vectors; make loopback: only those
# of tests/loopback.
unit:
	$(Q)$(MAKE) --no-print-directory check-layers
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 tests
	$(Q)tests/run-tests.sh --build $(SANBUILD) --vectors "$(VECTORS)" --unit "$(tests-unit-y)" \
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

# make torture-cluster: vmact-groupd, vmact-cloudprovider, the arbiter,
# libvirtd or a node VM's QEMU SIGKILLed at a random point of a random
# cluster operation, then the invariants checked, TORTURE_CLUSTER_ROUNDS
# times (tests/integration/test_cluster_torture.c; make check runs 4
# rounds). Sanitized programs, as make check's; root, the cluster user,
# node. VMACT_CLUSTER_TORTURE_SEED=N replays a run. Then live migration
# under kill -9 as many rounds (tests/integration/test_migrate_torture.c:
# two libvirt daemons, vmact-groupd, either vmactd or (here only) either
# libvirtd killed, the move aborted (also the moment the source pauses the
# guest), or vmact-groupd's connections lost the moment the source pauses
# the guest; make check runs 3 rounds without the
# libvirtd kills; VMACT_MIGRATE_TORTURE_SEED=N replays,
# VMACT_MIGRATE_TORTURE_FAULT="NAME" runs one fault every round): first on
# an operator's VM, then on a group's member moving with its disk
# (VMACT_TEST_ONLY=migrate_torture_node runs that one only).
TORTURE_CLUSTER_ROUNDS ?= 50
.PHONY: torture-cluster
torture-cluster:
	$(Q)$(MAKE) --no-print-directory BUILD=$(SANBUILD) SANITIZE=1 \
		$(SANBUILD)/tests/integration/test_cluster_torture $(SANBUILD)/vmact-groupd \
		$(SANBUILD)/vmact-arbiter $(SANBUILD)/vmact-cloudprovider \
		$(SANBUILD)/tests/integration/test_migrate_torture $(SANBUILD)/vmactd \
		$(SANBUILD)/vmact-groupctl
	$(Q)$(MAKE) --no-print-directory guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) VMACT_CLUSTER_TORTURE_ROUNDS=$(TORTURE_CLUSTER_ROUNDS) \
		$(SANBUILD)/tests/integration/test_cluster_torture
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) VMACT_PLAIN_BUILD=$(abspath $(BUILD)) \
		VMACT_MIGRATE_TORTURE_ROUNDS=$(TORTURE_CLUSTER_ROUNDS) VMACT_MIGRATE_TORTURE_LIBVIRTD=1 \
		$(SANBUILD)/tests/integration/test_migrate_torture

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

# make bench-footprint: issue 28's benchmark, vmactd's memory, threads,
# descriptors and CPU per managed VM with FOOTPRINT_VMS tiny idle TCG
# guests (0 = vmactd alone), beside libvirtd's in the same run, over
# FOOTPRINT_SECONDS windows, FOOTPRINT_BATCH guests booting at once; ends
# with rss_1vm_mib, rss_per_vm_kib, uss_1vm_mib, uss_per_vm_kib and
# cpu_per_idle_vm_pct (bench/footprint-bench.c); then the sampler bench's
# watch section gives the CPU per idle VM at 1000 synthetic VMs
# (cpu_per_idle_vm_pct_1000vm). Root, the plain build, the shared lock.
FOOTPRINT_SECONDS ?= 30
FOOTPRINT_VMS ?= 0 1 10 30
FOOTPRINT_BATCH ?= 3
bench-footprint: $(BUILD)/bench/footprint-bench $(BUILD)/bench/sampler-bench $(BUILD)/vmactd guest
	@# A binary just linked has dirty pages in the page cache, which
	@# vmactd cannot hand back (bpf/embedded.c): written out first, as an
	@# installed one is.
	$(Q)sync $(BUILD)/vmactd $(VMACT_FP_BASELINE)
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) FOOTPRINT_BATCH=$(FOOTPRINT_BATCH) \
		$(BUILD)/bench/footprint-bench \
		$(FOOTPRINT_SECONDS) $(FOOTPRINT_VMS)
	$(Q)$(BUILD)/bench/sampler-bench $(FOOTPRINT_SECONDS) watch

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

# make bench-migrate: issue 34's benchmark, a full host relieved by a live
# migration: refusal of a VM's growth -> that VM grown after vmact-groupd
# moved another VM away, p50/p90, the move, resume and downtime, beside
# the same move by virsh migrate; ends with "ratio: X" = vmact-groupd's
# move p50 / virsh's (bench/migrate-bench.c; root, the cluster user of
# setup-host.sh, host B of tests/host/host2.sh started and stopped).
.PHONY: bench-migrate
bench-migrate: $(BUILD)/bench/migrate-bench $(BUILD)/vmact-groupd $(BUILD)/vmact-groupctl \
		$(BUILD)/vmactd guest
	$(Q)VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) VMACT_PLAIN_BUILD=$(abspath $(BUILD)) \
		$(BUILD)/bench/migrate-bench $(BENCH_ITER)

# make bench-cluster: vmact-groupd at 1000 nodes over 20 hosts (libvirt's
# test driver for the count, served by a libvirtd of the cluster user's own,
# test+unix:///FILE?socket=...): a scheduling cycle's p99, a
# full poll of the autoscaler's (the groups, every group's nodes), its RSS,
# each against issue 25's goal (bench/cluster-bench.c; root, the cluster
# user of setup-host.sh; doc/cluster.md).
.PHONY: bench-cluster
BENCH_POLLS ?= 50
bench-cluster: $(BUILD)/bench/cluster-bench $(BUILD)/vmact-groupd $(BUILD)/vmact-arbiter
	$(Q)$(BUILD)/bench/cluster-bench $(BENCH_POLLS)

# The cluster bench drives the framework in-process: the tools' archives too.
$(BUILD)/bench/cluster-bench: $(BUILD)/bench/cluster-bench.o $(TESTLIB) $(TOOL_LIB) $(LIB)
	$(call msg,LD,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(TOOL_LIB) $(LIB) $(PKG_LIBS) $(CMOCKA_LIBS)

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

# make bench-provision-k8s: increase -> the node's Node registered and
# Ready in a real API server, from a cold boot and from the running tier,
# p50 of BENCH_K8S_RUNS runs each (default 3: a TCG node boots in minutes),
# ending with `ratio: X` = running p50 / cold p50 to registered
# (bench/provision-k8s.c; root, the binaries and node image of check-k8s;
# doc/cloudprovider.md).
.PHONY: bench-provision-k8s
bench-provision-k8s: $(BUILD)/bench/provision-k8s $(BUILD)/vmact-groupd $(BUILD)/vmact-arbiter \
		$(BUILD)/vmact-cloudprovider guest
	$(Q)bins=$$(tests/k8s/build-bins.sh) && \
		tests/k8s/build-node-image.sh $(K8S_CACHE)/node $$bins/kubelet $(BUILD) && \
		VMACT_K8S_BIN=$$bins VMACT_K8S_NODE=$(K8S_CACHE)/node VMACT_GUEST_DIR=$(abspath $(GUEST_DIR)) \
		VMACT_CP_BUILD=$(abspath $(BUILD)) $(BUILD)/bench/provision-k8s $(BENCH_K8S_RUNS)
BENCH_K8S_RUNS ?= 3

# It asks vmact-groupd through the provider's client code: the tools' archives too.
$(BUILD)/bench/provision-k8s: $(BUILD)/bench/provision-k8s.o $(TESTLIB) $(TOOL_LIB) $(LIB)
	$(call msg,LD,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(TOOL_LIB) $(LIB) $(PKG_LIBS) $(CMOCKA_LIBS)

# make bench-cgroup: cost of applying a VM's CPU limit, vmact's cgroup
# file write vs libvirt's global_quota, on a real TCG guest (bench/cgroup-bench.c).
bench-cgroup: $(BUILD)/bench/cgroup-bench
	$(Q)$(BUILD)/bench/cgroup-bench $(BENCH_ITER)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(TESTLIB) $(LIB)
	$(call msg,LD,$(patsubst $(BUILD)/%,%,$@))
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(TESTLIB) $(LIB) $(PKG_LIBS) $(CMOCKA_LIBS)

# make ci: the README's test command. Installs what the host lacks, then
# runs make check with make check-k8s's binaries and node image made
# beside it at nice 19 (tests/k8s/beside.sh), then make check-k8s.
ci:
	$(Q)tests/host/setup-host.sh
	$(Q)$(MAKE) --no-print-directory -j$(shell nproc) all
	$(Q)tests/k8s/beside.sh $(BUILD)/k8s-prepare.log $(K8S_CACHE) $(abspath $(BUILD)) -- \
		$(MAKE) --no-print-directory -j$(shell nproc) check
	$(Q)$(MAKE) --no-print-directory check-k8s

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
# BENCH_SECTIONS: some of "events readout policy watch" (default: all).
BENCH_SECONDS ?= 10
bench-sampler: $(BUILD)/bench/sampler-bench
	$(Q)$(BUILD)/bench/sampler-bench $(BENCH_SECONDS) $(BENCH_SECTIONS)

# ---- install ------------------------------------------------------------
# `make install-manifest` prints every path `make install` creates (under
# DESTDIR), one per line: tests/checks/check-install.sh compares the two.
# The hook's entry in HOOKDIR is a symbolic link to PREFIX/sbin/vmact-hook.
SYSCONFDIR  ?= /etc
# systemd reads /usr/local/lib/systemd/system too; the package names the
# distribution's own (pkg-config systemd, debian/rules).
UNITDIR     ?= $(PREFIX)/lib/systemd/system
MANDIR      ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
HOOKDIR     ?= $(SYSCONFDIR)/libvirt/hooks/qemu.d
LIBEXECDIR  ?= $(PREFIX)/libexec
DOCDIR      ?= $(PREFIX)/share/doc/vmact
# systemd-sysusers and systemd-tmpfiles read /usr/local/lib's as well as /usr/lib's.
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
DOCS        := README.md actuator/daemon/vmactd.json.example actuator/daemon/vmactd.json.commented
# doc/ keeps its name, so that the README's links to doc/*.md still work.
DOCS_DOC    := $(wildcard doc/*.md)
# doc/notes/: the lab notebooks the pages cite (doc/README.md).
DOCS_NOTES  := $(wildcard doc/notes/*.md)
# The Cockpit page (cockpit/): Cockpit finds it in share/cockpit of /usr
# and /usr/local alike.
COCKPITDIR  ?= $(PREFIX)/share/cockpit/vmact
COCKPIT     := cockpit/manifest.json cockpit/index.html cockpit/vmact.js cockpit/vmact.css
# Prometheus alert rules and the Grafana dashboard (monitoring/), beside the docs.
MONITORING  := monitoring/vmact-alerts.yml monitoring/vmact-dashboard.json
install-files = $(addprefix $(PREFIX)/sbin/,$(sbin-progs-y)) \
	$(addprefix $(PREFIX)/bin/,$(bin-progs-y)) \
	$(addprefix $(LIBEXECDIR)/vmact/,$(libexec-progs-y)) \
	$(HOOKDIR)/vmact $(UNITDIR)/vmactd.service $(SYSUSERSDIR)/vmact.conf \
	$(UNITDIR)/vmact-groupd.service $(SYSUSERSDIR)/vmact-cluster.conf \
	$(TMPFILESDIR)/vmact-cluster.conf \
	$(UNITDIR)/vmact-cloudprovider.service \
	$(foreach m,$(man-y),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m)) \
	$(addprefix $(BASHCOMPDIR)/,$(completion-y)) \
	$(addprefix $(DOCDIR)/,$(notdir $(DOCS))) $(addprefix $(DOCDIR)/,$(DOCS_DOC) $(DOCS_NOTES)) \
	$(addprefix $(COCKPITDIR)/,$(notdir $(COCKPIT))) $(addprefix $(DOCDIR)/,$(MONITORING))

# vmact-node for a node image (vmact-node(8)): the program, its unit, the
# kubelet's drop-in and the page; never part of a host's make install.
.PHONY: install-node
install-node: $(BUILD)/vmact-node
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(UNITDIR)/kubelet.service.d \
		$(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(BUILD)/vmact-node $(DESTDIR)$(PREFIX)/sbin/vmact-node
	sed 's|@SBINDIR@|$(PREFIX)/sbin|' node/vmact-node.service > $(DESTDIR)$(UNITDIR)/vmact-node.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/vmact-node.service
	install -m 0644 node/kubelet-vmact-node.conf \
		$(DESTDIR)$(UNITDIR)/kubelet.service.d/20-vmact-node.conf
	install -m 0644 man/vmact-node.8 $(DESTDIR)$(MANDIR)/man8/vmact-node.8

.PHONY: install-manifest
install-manifest:
	@printf '%s\n' $(install-files)

# Into the running system (no DESTDIR): the users and vmact-cluster's home
# now, and systemd told of the new units, so that `systemctl enable --now
# vmactd` follows.
define install-live
if command -v systemd-sysusers >/dev/null; then systemd-sysusers $(SYSUSERSDIR)/vmact.conf $(SYSUSERSDIR)/vmact-cluster.conf; \
else echo "make install: no systemd-sysusers: create the vmact user by hand ($(SYSUSERSDIR)/vmact.conf)"; fi
! command -v systemd-tmpfiles >/dev/null || systemd-tmpfiles --create $(TMPFILESDIR)/vmact-cluster.conf
! getent group libvirt >/dev/null || ! getent passwd vmact-cluster >/dev/null || usermod -a -G libvirt vmact-cluster
[ ! -d /run/systemd/system ] || systemctl daemon-reload
endef
define uninstall-live
if [ -d /run/systemd/system ] && [ -f $(UNITDIR)/vmactd.service ]; then systemctl disable --now vmactd.service; fi
endef

install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(DOCDIR)/doc $(DESTDIR)$(HOOKDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(LIBEXECDIR)/vmact \
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
	install -m 0644 cluster/vmact-cluster.tmpfiles $(DESTDIR)$(TMPFILESDIR)/vmact-cluster.conf
	install -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 0644 $(DOCS_DOC) $(DESTDIR)$(DOCDIR)/doc/
	install -d $(DESTDIR)$(DOCDIR)/doc/notes
	install -m 0644 $(DOCS_NOTES) $(DESTDIR)$(DOCDIR)/doc/notes/
	install -m 0644 $(COCKPIT) $(DESTDIR)$(COCKPITDIR)/
	install -m 0644 $(MONITORING) $(DESTDIR)$(DOCDIR)/monitoring/
	$(foreach p,$(sbin-progs-y),install -m 0755 $(BUILD)/$(p) $(DESTDIR)$(PREFIX)/sbin/$(p);)
	$(foreach p,$(bin-progs-y),install -m 0755 $(BUILD)/$(p) $(DESTDIR)$(PREFIX)/bin/$(p);)
	$(foreach p,$(libexec-progs-y),install -m 0755 $(BUILD)/$(p) $(DESTDIR)$(LIBEXECDIR)/vmact/$(p);)
	ln -sfn $(PREFIX)/sbin/vmact-hook $(DESTDIR)$(HOOKDIR)/vmact
	$(foreach m,$(man-y),install -m 0644 man/$(m) $(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m);)
	$(foreach c,$(completion-y),install -m 0644 man/vmact.bash-completion $(DESTDIR)$(BASHCOMPDIR)/$(c);)
	$(if $(DESTDIR),,$(install-live))

# make uninstall: removes what make install put there (the same PREFIX,
# DESTDIR and directories), stopping and disabling vmactd first on a
# running system. Keeps /etc/vmact (the operator's configuration) and the
# users (files they owned may remain: Debian's practice for system users).
uninstall:
	$(if $(DESTDIR),,$(uninstall-live))
	rm -f $(addprefix $(DESTDIR),$(install-files))
	rmdir $(DESTDIR)$(DOCDIR)/doc/notes $(DESTDIR)$(DOCDIR)/doc $(DESTDIR)$(DOCDIR)/monitoring \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(LIBEXECDIR)/vmact $(DESTDIR)$(COCKPITDIR) 2>/dev/null || true
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
# The stamp holds the hash of the build script and debian/control (the
# image has its build dependencies): a new checkout (new mtimes) reuses the
# image, a changed script or Build-Depends rebuilds it.
check-host-image:
	$(Q)if [ "$$(cat tests/host/build-image.sh tests/lib/debootstrap.sh debian/control | sha256sum | cut -d' ' -f1)" != \
	       "$$(cat $(HOST_IMG)/stamp 2>/dev/null)" ] || [ ! -f $(HOST_IMG)/rootfs.img ]; then \
		tests/host/build-image.sh $(HOST_IMG); fi
check-host: check-host-image
	$(Q)tests/host/setup-host.sh
	$(Q)$(MAKE) --no-print-directory deb guest
	$(Q)$(MAKE) --no-print-directory deb DEBDIR=$(BUILD)/deb-next DEB_BUMP=$(DEB_VERSION)+1
	$(Q)tests/host/check-host.sh $(HOST_IMG) $(DEB) $(GUEST_DIR) $(BUILD)/npm/node_modules $(BUILD)/deb-next

# make deb: the Debian packages (debian/, debhelper), built by
# dpkg-buildpackage from a copy of the tree's files (tracked or not,
# git ls-files) under $(DEBDIR)/src, so that it never touches this
# tree's build/. The .debs land in $(DEBDIR) ($(BUILD)/deb). Then lintian,
# which must find no error or warning in either package. DEB_BUMP=VERSION
# builds them as that version (a changelog entry on top of the copy's):
# check-host upgrades to it.
DEBDIR     ?= $(BUILD)/deb
DEB_BUMP   ?=
DEB_VERSION = $(or $(DEB_BUMP),$(shell dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null))
DEB_ARCH    = $(shell dpkg --print-architecture 2>/dev/null)
DEB         = $(DEBDIR)/vmact_$(DEB_VERSION)_$(DEB_ARCH).deb
# the layer above one host, apart so that a host's package needs no gRPC
DEB_CLUSTER = $(DEBDIR)/vmact-cluster_$(DEB_VERSION)_$(DEB_ARCH).deb
.PHONY: deb
deb:
	$(call msg,DEB,$(DEB))
	$(Q)rm -rf $(DEBDIR) && mkdir -p $(DEBDIR)/src
	$(Q)git ls-files -z --cached --others --exclude-standard | \
		xargs -0 cp --parents -t $(DEBDIR)/src 2>/dev/null; \
		git ls-files -z --cached --others --exclude-standard | (cd $(DEBDIR)/src && \
		xargs -0 ls -d >/dev/null) || { echo "make deb: copying the tree failed"; exit 1; }
	$(Q)$(if $(DEB_BUMP),cd $(DEBDIR)/src && { printf '%s\n\n%s\n\n%s\n\n' \
		'vmact ($(DEB_BUMP)) unstable; urgency=medium' '  * Built by make deb DEB_BUMP=$(DEB_BUMP).' \
		" -- $$(dpkg-parsechangelog -S Maintainer)  $$(date -R)"; cat debian/changelog; } >debian/changelog.new && \
		mv debian/changelog.new debian/changelog,true)
	$(Q)cd $(DEBDIR)/src && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		dpkg-buildpackage -b -us -uc -j$(shell nproc) >../build.log 2>&1 || \
		{ tail -n 40 ../build.log; echo "make deb: dpkg-buildpackage failed ($(DEBDIR)/build.log)"; exit 1; }
	$(Q)test -f $(DEB) && echo "$(DEB)" && test -f $(DEB_CLUSTER) && echo "$(DEB_CLUSTER)"
	$(call msg,LINTIAN,$(DEBDIR)/vmact_$(DEB_VERSION)_$(DEB_ARCH).changes)
	$(Q)command -v lintian >/dev/null || { echo "make deb: lintian is not installed (tests/host/setup-host.sh installs it)"; exit 1; }
	$(Q)lintian --fail-on error,warning --tag-display-limit 0 \
		$(DEBDIR)/vmact_$(DEB_VERSION)_$(DEB_ARCH).changes > $(DEBDIR)/lintian.log 2>&1 || \
		{ cat $(DEBDIR)/lintian.log; echo "make deb: lintian found errors or warnings"; exit 1; }
	$(Q)grep -v '^running with root privileges' $(DEBDIR)/lintian.log || true

clean:
	rm -rf $(BUILD)
