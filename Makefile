# fwdbench: everything a fresh Debian 12 machine (root) needs, idempotent.
#   make demo   - set up, run the demo campaign on the local lab, write the report
#   make test   - set up, run every test (C unit tests, ASan/UBSan, pytest incl. root/netns)

PYTHON      ?= /usr/bin/python3
VENV        := .venv
STAMP       := .stamp
APT_PACKAGES := build-essential clang libclang-rt-dev llvm libbpf-dev libxdp-dev libelf-dev zlib1g-dev \
                pkg-config libjansson-dev bpftool iproute2 nftables ethtool tcpdump python3-venv python3-dev \
                valgrind linux-perf chromium dpdk-dev librte-net-af-xdp23 librte-net-af-packet23 postgresql

.PHONY: all setup deps venv native demo test test-native test-python bench clean distclean

all: setup

setup: deps venv native

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
