/* SPDX-License-Identifier: MIT */
/*
 * DIR-24-8 (Gupta, Lin, McKeown 1998): one 2^24-entry table indexed by the
 * top 24 address bits; an entry is a next hop, or (bit 31) the index of a
 * 256-entry tbl8 group for prefixes longer than /24. A lookup is one memory
 * access, two for long prefixes, at any table size: the structure stays
 * fast at 2^20+ routes. Its cost at scale is the cache miss on tbl24,
 * which lookup_bulk() hides by prefetching every entry of the batch first.
 *
 * Routes may be added in any order: a separate depth array (prefix length
 * + 1 of the route that wrote each entry) lets a shorter prefix leave the
 * entries of longer ones alone. Depths are only read when adding.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>

#include "vf_lpm.h"

#define TBL24_N (1u << 24)
#define EXT 0x80000000u

struct dir24 {
	uint32_t *tbl24;         /* next hop, or EXT | group */
	uint8_t *depth24;        /* prefix length + 1 of the writer, 0: none */
	uint32_t *tbl8;          /* groups * 256 */
	uint8_t *depth8;
	uint32_t n_groups, max_groups;
};

/* Tables are 2 MB aligned and ask for transparent huge pages: tbl24 is
 * 64 MB, and random lookups over it with 4 KB pages miss the TLB on
 * nearly every packet (measured, 2^20 random routes: see docs/vfwd.md).
 * Untouched pages stay unbacked: a small table costs little memory. */
#define HUGE_SZ (2u << 20)
static size_t map_len(size_t bytes) { return (bytes + HUGE_SZ - 1) / HUGE_SZ * HUGE_SZ; }

static void *map(size_t bytes)
{
	size_t len = map_len(bytes);
	uint8_t *m = mmap(NULL, len + HUGE_SZ, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	uint8_t *a = (uint8_t *)(((uintptr_t)m + HUGE_SZ - 1) & ~(uintptr_t)(HUGE_SZ - 1));
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (a + len < m + len + HUGE_SZ)
		munmap(a + len, (size_t)(m + len + HUGE_SZ - (a + len)));
	madvise(a, len, MADV_HUGEPAGE);
	return a;
}

static void unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, map_len(bytes));
}

static void dir24_destroy(void *t_)
{
	struct dir24 *t = t_;
	if (!t)
		return;
	unmap(t->tbl24, TBL24_N * sizeof(uint32_t));
	unmap(t->depth24, TBL24_N);
	unmap(t->tbl8, (size_t)t->max_groups * 256 * sizeof(uint32_t));
	unmap(t->depth8, (size_t)t->max_groups * 256);
	free(t);
}

static void *dir24_create(uint32_t groups)
{
	struct dir24 *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (!groups)
		groups = 1;
	t->max_groups = groups;
	t->tbl24 = map(TBL24_N * sizeof(uint32_t));
	t->depth24 = map(TBL24_N);
	t->tbl8 = map((size_t)groups * 256 * sizeof(uint32_t));
	t->depth8 = map((size_t)groups * 256);
	if (!t->tbl24 || !t->depth24 || !t->tbl8 || !t->depth8) {
		dir24_destroy(t);
		return NULL;
	}
	return t;
}

static int dir24_add(void *t_, uint32_t prefix, uint8_t len, uint32_t nh)
{
	struct dir24 *t = t_;
	if (len > 32 || nh >= EXT)
		return -EINVAL;
	if (len)
		prefix &= ~0u << (32 - len);
	else
		prefix = 0;
	uint8_t d = len + 1;
	if (len <= 24) {
		uint32_t start = prefix >> 8, count = 1u << (24 - len);
		for (uint32_t i = start; i < start + count; i++) {
			uint32_t e = t->tbl24[i];
			if (e & EXT) {
				uint32_t *g = t->tbl8 + (size_t)(e & ~EXT) * 256;
				uint8_t *gd = t->depth8 + (size_t)(e & ~EXT) * 256;
				for (int k = 0; k < 256; k++)
					if (gd[k] <= d) {
						g[k] = nh;
						gd[k] = d;
					}
			} else if (t->depth24[i] <= d) {
				t->tbl24[i] = nh;
				t->depth24[i] = d;
			}
		}
		return 0;
	}
	uint32_t i = prefix >> 8;
	uint32_t e = t->tbl24[i];
	if (!(e & EXT)) {
		if (t->n_groups >= t->max_groups)
			return -ENOSPC;
		uint32_t gi = t->n_groups++;
		uint32_t *g = t->tbl8 + (size_t)gi * 256;
		uint8_t *gd = t->depth8 + (size_t)gi * 256;
		for (int k = 0; k < 256; k++) {
			g[k] = e;
			gd[k] = t->depth24[i];
		}
		t->tbl24[i] = EXT | gi;
		e = t->tbl24[i];
	}
	uint32_t *g = t->tbl8 + (size_t)(e & ~EXT) * 256;
	uint8_t *gd = t->depth8 + (size_t)(e & ~EXT) * 256;
	uint32_t start = prefix & 0xff, count = 1u << (32 - len);
	for (uint32_t k = start; k < start + count; k++)
		if (gd[k] <= d) {
			g[k] = nh;
			gd[k] = d;
		}
	return 0;
}

static inline uint32_t resolve(const struct dir24 *t, uint32_t e, uint32_t addr)
{
	if (__builtin_expect(e & EXT, 0))
		return t->tbl8[(size_t)(e & ~EXT) * 256 + (addr & 0xff)];
	return e;
}

static uint32_t dir24_lookup(const void *t_, uint32_t addr)
{
	const struct dir24 *t = t_;
	return resolve(t, t->tbl24[addr >> 8], addr);
}

/* Batched lookups: all tbl24 entries of the batch are requested before any
 * is used, so the misses of a vector overlap instead of being paid one by
 * one (the scalar processor, vector 1, pays each in full). Measured
 * (bench/vfwd_nodes.py, 2^20 random /24 routes, random destinations,
 * vector 256, THP tables): ip4-lookup ~45 clocks/packet with the explicit
 * prefetch pass and ~42 without: on this AMD EPYC the independent loads of
 * the second loop already overlap out of order; vector 1 costs ~435. The
 * pass stays (knob `prefetch`) for cores with less memory parallelism. */
static void dir24_lookup_bulk(const void *t_, const uint32_t *addr, uint32_t *nh, uint32_t n,
			      int prefetch)
{
	const struct dir24 *t = t_;
	if (prefetch)
		for (uint32_t i = 0; i < n; i++)
			__builtin_prefetch(&t->tbl24[addr[i] >> 8], 0, 0);
	for (uint32_t i = 0; i < n; i++)
		nh[i] = resolve(t, t->tbl24[addr[i] >> 8], addr[i]);
}

static size_t dir24_memory(const void *t_)
{
	const struct dir24 *t = t_;
	return TBL24_N * (sizeof(uint32_t) + 1) + (size_t)t->n_groups * 256 * 5;
}

const struct vf_lpm4_ops vf_lpm4_dir24 = {
	.name = "dir24",
	.create = dir24_create,
	.add = dir24_add,
	.lookup = dir24_lookup,
	.lookup_bulk = dir24_lookup_bulk,
	.memory = dir24_memory,
	.destroy = dir24_destroy,
};
