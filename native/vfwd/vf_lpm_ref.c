/* SPDX-License-Identifier: MIT */
/*
 * Reference IPv4 LPM: an unsorted list scanned in full for the longest
 * matching prefix (a later add of the same prefix replaces it). Slow and
 * obviously correct: the tests compare DIR-24-8 against it.
 */
#include <errno.h>
#include <stdlib.h>

#include "vf_lpm.h"

struct ref_route { uint32_t prefix; uint8_t len; uint32_t nh; };
struct ref { struct ref_route *r; uint32_t n, cap; };

static void *ref_create(uint32_t groups)
{
	(void)groups;
	return calloc(1, sizeof(struct ref));
}

static inline uint32_t mask(uint8_t len) { return len ? ~0u << (32 - len) : 0; }

static int ref_add(void *t_, uint32_t prefix, uint8_t len, uint32_t nh)
{
	struct ref *t = t_;
	if (len > 32)
		return -EINVAL;
	prefix &= mask(len);
	for (uint32_t i = 0; i < t->n; i++)
		if (t->r[i].len == len && t->r[i].prefix == prefix) {
			t->r[i].nh = nh;
			return 0;
		}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? 2 * t->cap : 64;
		struct ref_route *r = realloc(t->r, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		t->r = r;
		t->cap = cap;
	}
	t->r[t->n++] = (struct ref_route){ prefix, len, nh };
	return 0;
}

static uint32_t ref_lookup(const void *t_, uint32_t addr)
{
	const struct ref *t = t_;
	int best = -1;
	uint32_t nh = VF_LPM_MISS;
	for (uint32_t i = 0; i < t->n; i++)
		if ((addr & mask(t->r[i].len)) == t->r[i].prefix && (int)t->r[i].len > best) {
			best = t->r[i].len;
			nh = t->r[i].nh;
		}
	return nh;
}

static void ref_lookup_bulk(const void *t, const uint32_t *addr, uint32_t *nh, uint32_t n,
			    int prefetch)
{
	(void)prefetch;
	for (uint32_t i = 0; i < n; i++)
		nh[i] = ref_lookup(t, addr[i]);
}

static size_t ref_memory(const void *t_)
{
	const struct ref *t = t_;
	return sizeof(*t) + t->cap * sizeof(struct ref_route);
}

static void ref_destroy(void *t_)
{
	struct ref *t = t_;
	if (t)
		free(t->r);
	free(t);
}

const struct vf_lpm4_ops vf_lpm4_ref = {
	.name = "ref",
	.create = ref_create,
	.add = ref_add,
	.lookup = ref_lookup,
	.lookup_bulk = ref_lookup_bulk,
	.memory = ref_memory,
	.destroy = ref_destroy,
};
