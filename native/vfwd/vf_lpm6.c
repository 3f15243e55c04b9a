/* SPDX-License-Identifier: MIT */
/*
 * IPv6 LPM: one open-addressing hash table keyed by (masked prefix,
 * length); a lookup probes the lengths present, longest first, so a FIB
 * with one prefix length costs one hash probe.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vf_lpm.h"

struct e6 { uint64_t hi, lo; uint32_t nh; uint8_t len, used; };
struct vf_lpm6 {
	struct e6 *t;
	uint32_t mask, n;
	uint8_t lens[129];      /* lengths present, longest first */
	uint32_t n_lens;
	uint32_t count[129];
};

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline void mask128(uint64_t *hi, uint64_t *lo, uint8_t len)
{
	if (len == 0) {
		*hi = *lo = 0;
	} else if (len < 64) {
		*hi &= ~0ull << (64 - len);
		*lo = 0;
	} else if (len == 64) {
		*lo = 0;
	} else if (len < 128) {
		*lo &= ~0ull << (128 - len);
	}
}

static inline __attribute__((always_inline)) uint32_t hash(uint64_t hi, uint64_t lo, uint8_t len)
{
	uint64_t h = hi * 0x9e3779b97f4a7c15ull ^ (lo + len) * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h ^ (h >> 32));
}

struct vf_lpm6 *vf_lpm6_create(void)
{
	struct vf_lpm6 *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->mask = 63;
	t->t = calloc(t->mask + 1, sizeof(struct e6));
	if (!t->t) {
		free(t);
		return NULL;
	}
	return t;
}

static inline __attribute__((always_inline)) struct e6 *find(struct e6 *tab, uint32_t mask, uint64_t hi, uint64_t lo, uint8_t len)
{
	for (uint32_t i = hash(hi, lo, len) & mask;; i = (i + 1) & mask) {
		struct e6 *e = &tab[i];
		if (!e->used || (e->hi == hi && e->lo == lo && e->len == len))
			return e;
	}
}

static int grow(struct vf_lpm6 *t)
{
	uint32_t nm = t->mask * 2 + 1;
	struct e6 *nt = calloc(nm + 1, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	for (uint32_t i = 0; i <= t->mask; i++)
		if (t->t[i].used)
			*find(nt, nm, t->t[i].hi, t->t[i].lo, t->t[i].len) = t->t[i];
	free(t->t);
	t->t = nt;
	t->mask = nm;
	return 0;
}

int vf_lpm6_add(struct vf_lpm6 *t, const uint8_t prefix[16], uint8_t len, uint32_t nh)
{
	if (len > 128)
		return -EINVAL;
	if ((t->n + 1) * 2 > t->mask && grow(t))
		return -ENOMEM;
	uint64_t hi = ld64(prefix), lo = ld64(prefix + 8);
	mask128(&hi, &lo, len);
	struct e6 *e = find(t->t, t->mask, hi, lo, len);
	if (!e->used) {
		*e = (struct e6){ hi, lo, nh, len, 1 };
		t->n++;
		if (t->count[len]++ == 0) {
			uint32_t i = t->n_lens++;
			while (i > 0 && t->lens[i - 1] < len) {
				t->lens[i] = t->lens[i - 1];
				i--;
			}
			t->lens[i] = len;
		}
	} else {
		e->nh = nh;
	}
	return 0;
}

static inline __attribute__((always_inline)) uint32_t lookup(const struct vf_lpm6 *t,
								const uint8_t addr[16])
{
	uint64_t ahi = ld64(addr), alo = ld64(addr + 8);
	for (uint32_t k = 0; k < t->n_lens; k++) {
		uint64_t hi = ahi, lo = alo;
		uint8_t len = t->lens[k];
		mask128(&hi, &lo, len);
		const struct e6 *e = find(t->t, t->mask, hi, lo, len);
		if (e->used)
			return e->nh;
	}
	return VF_LPM_MISS;
}

uint32_t vf_lpm6_lookup(const struct vf_lpm6 *t, const uint8_t addr[16])
{
	return lookup(t, addr);
}

/* n lookups: with prefetch, the home buckets of the longest prefix length
 * are fetched for the whole batch before any is read. */
void vf_lpm6_lookup_bulk(const struct vf_lpm6 *t, const uint8_t **addr, uint32_t *nh,
			 uint32_t n, int prefetch)
{
	/* a prefetch pass pays only when the table is bigger than the caches
	 * (measured: a 1-route table spends ~16 instructions/packet on it) */
	if (prefetch && t->n_lens && (size_t)(t->mask + 1) * sizeof(struct e6) > (256u << 10))
		for (uint32_t i = 0; i < n; i++) {
			uint64_t hi = ld64(addr[i]), lo = ld64(addr[i] + 8);
			mask128(&hi, &lo, t->lens[0]);
			__builtin_prefetch(&t->t[hash(hi, lo, t->lens[0]) & t->mask], 0, 3);
		}
	for (uint32_t i = 0; i < n; i++)
		nh[i] = lookup(t, addr[i]);
}

void vf_lpm6_destroy(struct vf_lpm6 *t)
{
	if (t)
		free(t->t);
	free(t);
}
