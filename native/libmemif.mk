# libmemif, the memif reference library from FD.io VPP's release source,
# built as a static library from the published tarball (never copied into
# this repository). Included by native/Makefile and native/vfwd/Makefile.
#
#   LIBMEMIF_SRC  the VPP source tarball (default: VPP_SRC)
#   VPP_SRC       default ../shared/vpp/vpp-26.06.tar.xz from the repository
#                 root (from a git worktree: from the main checkout's root)
#   MEMIF_BUILD   where it goes (the including makefile's build directory)
#
# Defines MEMIF_OK (1 when the tarball exists), MEMIF_LIB, MEMIF_CFLAGS
# (-DFG_HAVE_MEMIF -isystem <headers>) and MEMIF_WHY (why not, for `check`).
# libmemif's CMake asks git for a version; its two sources build directly
# with -DHAVE_MEMFD_CREATE (VPP's README for the tarball says so). It is
# third-party: its own flags, no -Werror; libmemif 4.0 (VPP v26.06).

MEMIF_MK_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
MEMIF_REPO   := $(abspath $(MEMIF_MK_DIR)/..)
MEMIF_MAIN   := $(abspath $(dir $(shell git -C $(MEMIF_REPO) rev-parse --path-format=absolute \
                    --git-common-dir 2>/dev/null)))
VPP_SRC      ?= $(firstword $(wildcard $(MEMIF_REPO)/../shared/vpp/vpp-26.06.tar.xz \
                    $(MEMIF_MAIN)/../shared/vpp/vpp-26.06.tar.xz) \
                    $(MEMIF_REPO)/../shared/vpp/vpp-26.06.tar.xz)
LIBMEMIF_SRC ?= $(VPP_SRC)
MEMIF_SRCDIR := $(MEMIF_BUILD)/libmemif/src
MEMIF_LIB    := $(MEMIF_BUILD)/libmemif.a
MEMIF_LIB_CFLAGS := -O2 -g -fPIC -DHAVE_MEMFD_CREATE -I$(MEMIF_SRCDIR)

ifneq ($(wildcard $(LIBMEMIF_SRC)),)
MEMIF_OK     := 1
MEMIF_CFLAGS := -DFG_HAVE_MEMIF -isystem $(MEMIF_SRCDIR)
MEMIF_WHY    :=
else
MEMIF_OK     :=
MEMIF_LIB    :=
MEMIF_CFLAGS :=
MEMIF_WHY    := no VPP source tarball at $(LIBMEMIF_SRC) at build time \
                (make -C native LIBMEMIF_SRC=/path/to/vpp-26.06.tar.xz)
ifndef MEMIF_SAID
$(info native: $(LIBMEMIF_SRC) not found: building without memif (set LIBMEMIF_SRC or VPP_SRC to VPP's source tarball))
export MEMIF_SAID := 1
endif
endif

ifeq ($(MEMIF_OK),1)
# the two sources and their headers, extracted from the tarball as published
$(MEMIF_SRCDIR)/.extracted: $(LIBMEMIF_SRC)
	rm -rf $(MEMIF_BUILD)/libmemif && mkdir -p $(MEMIF_BUILD)/libmemif
	tar -xJf $(LIBMEMIF_SRC) -C $(MEMIF_BUILD)/libmemif --strip-components=3 \
	    --wildcards '*/extras/libmemif/src/*'
	test -f $(MEMIF_SRCDIR)/main.c && test -f $(MEMIF_SRCDIR)/socket.c
	touch $@

$(MEMIF_BUILD)/libmemif/%.o: $(MEMIF_SRCDIR)/.extracted
	$(CC) $(MEMIF_LIB_CFLAGS) -c $(MEMIF_SRCDIR)/$*.c -o $@

$(MEMIF_LIB): $(MEMIF_BUILD)/libmemif/main.o $(MEMIF_BUILD)/libmemif/socket.o
	$(AR) rcs $@ $^
endif
