/* SPDX-License-Identifier: MIT */
/*
 * Longest-prefix match for IPv4 behind an ops struct, one file per
 * implementation (vf_lpm_dir24.c: DIR-24-8, the fast one; vf_lpm_ref.c: a
 * linear list, obviously correct, the reference for tests), and the IPv6
 * table (vf_lpm6.c: one hash table per prefix length, longest first).
 *
 * Next hops are adjacency indices (< 2^30); VF_LPM_MISS (0) means no route.
 */
#ifndef VF_LPM_H
#define VF_LPM_H

#include <stddef.h>
#include <stdint.h>

#define VF_LPM_MISS 0u

struct vf_lpm4_ops {
	const char *name;
	void *(*create)(uint32_t tbl8_groups);
	/* addr and the result in host order; returns 0, -ENOSPC, -EINVAL */
	int (*add)(void *t, uint32_t prefix, uint8_t len, uint32_t nh);
	uint32_t (*lookup)(const void *t, uint32_t addr);
	/* n lookups; implementations prefetch across the batch when asked */
	void (*lookup_bulk)(const void *t, const uint32_t *addr, uint32_t *nh, uint32_t n,
			    int prefetch);
	size_t (*memory)(const void *t);   /* bytes in use */
	void (*destroy)(void *t);
};

extern const struct vf_lpm4_ops vf_lpm4_dir24;
extern const struct vf_lpm4_ops vf_lpm4_ref;
const struct vf_lpm4_ops *vf_lpm4_by_name(const char *name);

struct vf_lpm6;
struct vf_lpm6 *vf_lpm6_create(void);
int vf_lpm6_add(struct vf_lpm6 *t, const uint8_t prefix[16], uint8_t len, uint32_t nh);
uint32_t vf_lpm6_lookup(const struct vf_lpm6 *t, const uint8_t addr[16]);
void vf_lpm6_lookup_bulk(const struct vf_lpm6 *t, const uint8_t **addr, uint32_t *nh,
			 uint32_t n, int prefetch);
void vf_lpm6_destroy(struct vf_lpm6 *t);

#endif
