# fwdbench: everything a fresh Debian 12 machine (root) needs, idempotent.
#   make demo   - set up, run the demo campaign on the local lab, write the report
#   make test   - set up, run every test (C unit tests, ASan/UBSan, pytest incl. root/netns)
# VPP_SRC=<FD.io VPP release tarball> also builds VPP once into $(FWDBENCH_OPT)/vpp-<version>
# (scripts/build-vpp.sh) unless a VPP is installed; later runs reuse it.
# TREX_SRC=<Cisco TRex source tarball> likewise builds TRex's server once into
# $(FWDBENCH_OPT)/trex-<version> (scripts/build-trex.sh) for the trex generator.

PYTHON      ?= /usr/bin/python3
VPP_SRC     ?=
TREX_SRC    ?=
FWDBENCH_OPT ?= /opt/fwdbench
export FWDBENCH_OPT
VENV        := .venv
STAMP       := .stamp
# openssh-server, sudo: the ssh testbed's test rig (tests/sshrig.py) runs a real sshd;
# socat, conntrack: what fwdbench runs on a DUT host reached over SSH (docs/testbeds.md)
APT_PACKAGES := build-essential clang libclang-rt-dev llvm libbpf-dev libxdp-dev libelf-dev zlib1g-dev \
                pkg-config libjansson-dev bpftool iproute2 nftables ethtool tcpdump python3-venv python3-dev \
                valgrind linux-perf chromium dpdk-dev librte-net-af-xdp23 librte-net-af-packet23 postgresql \
                openssh-client openssh-server sudo socat conntrack
# what building VPP from its release source needs (scripts/build-vpp.sh; libdpdk-dev:
# its dpdk plugin links Debian's DPDK, scripts/dpdk-driver-headers.sh)
VPP_BUILD_PACKAGES := cmake ninja-build python3-ply libssl-dev libnuma-dev libunwind-dev uuid-dev \
                libiberty-dev libdpdk-dev

.PHONY: all setup deps venv native vpp trex demo test test-native test-python bench clean distclean

all: setup

setup: deps venv native vpp trex

deps: $(STAMP)/apt
$(STAMP)/apt: Makefile
	@mkdir -p $(STAMP)
	@missing=""; for p in $(APT_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@touch $@

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml $(STAMP)/apt
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,export]'
	@touch $@

native: $(STAMP)/apt
	$(MAKE) -C native

# FD.io VPP: an installed one (FD.io's packages) is used as it is; with VPP_SRC and
# none installed, build it once (cached outside the repo by version); else say how
vpp: $(STAMP)/apt
	@if [ -n "$(VPP_SRC)" ] && ! command -v vpp >/dev/null 2>&1; then \
	    missing=""; for p in $(VPP_BUILD_PACKAGES); do \
	        dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	    done; \
	    if [ -n "$$missing" ]; then \
	        echo "installing Debian packages:$$missing"; \
	        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	    fi; \
	    scripts/build-vpp.sh "$(VPP_SRC)"; \
	elif ! command -v vpp >/dev/null 2>&1 && ! ls -d $(FWDBENCH_OPT)/vpp-*/bin/vpp >/dev/null 2>&1; then \
	    echo "VPP not installed: the VPP DUT is unavailable (install FD.io's vpp packages, or make ... VPP_SRC=<vpp release tarball>)"; \
	fi

# Cisco TRex (the trex generator): one on $PATH (t-rex-64) or already built in
# $(FWDBENCH_OPT)/trex-* is used as it is; with TREX_SRC and none, build its server
# once (7-25 min on 2 cores; cached by version and tarball checksum); else say how
trex: $(STAMP)/apt
	@if [ -n "$(TREX_SRC)" ] && ! command -v t-rex-64 >/dev/null 2>&1; then \
	    scripts/build-trex.sh "$(TREX_SRC)"; \
	elif ! command -v t-rex-64 >/dev/null 2>&1 && ! ls $(FWDBENCH_OPT)/trex-*/t-rex-64 >/dev/null 2>&1; then \
	    echo "TRex not installed: the trex generator is unavailable (make ... TREX_SRC=<trex source tarball>, or [generator] trex_prefix = <TRex release folder>)"; \
	fi

demo: setup
	$(VENV)/bin/fwdbench run examples/demo.toml --out results/demo.sqlite --force

test: setup test-native test-python

test-native: native
	$(MAKE) -C native test

test-python: venv native
	$(VENV)/bin/pytest -q -p no:cacheprovider tests

bench: setup
	$(VENV)/bin/python bench/fwdgen_peers.py

clean:
	$(MAKE) -C native clean
	rm -rf out results/*-report

distclean: clean
	rm -rf $(VENV) $(STAMP) src/*.egg-info
