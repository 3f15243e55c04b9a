/* SPDX-License-Identifier: MIT */
/*
 * The FIB: adjacencies (port + MAC rewrite), neighbours, and the IPv4 /
 * IPv6 LPM tables that map prefixes to adjacencies. Built from the config
 * before the workers start, read-only afterwards (no locks on the path).
 * Adjacency 0 is "drop" (the LPM miss value), 1 is "local" (addressed to
 * vfwd itself: it has no control plane, so it drops them by name).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vfwd.h"
#include "vf_lpm.h"

const struct vf_lpm4_ops *vf_lpm4_by_name(const char *name)
{
	if (!name || !strcmp(name, "dir24"))
		return &vf_lpm4_dir24;
	if (!strcmp(name, "ref"))
		return &vf_lpm4_ref;
	return NULL;
}

vf_fib_t *vf_fib_create(const char *lpm_name, uint32_t tbl8_groups)
{
	vf_fib_t *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->ops4 = vf_lpm4_by_name(lpm_name);
	if (!f->ops4)
		goto fail;
	f->lpm4 = f->ops4->create(tbl8_groups);
	f->lpm6 = vf_lpm6_create();
	f->cap_adj = 16;
	f->adj = calloc(f->cap_adj, sizeof(vf_adj_t));
	if (!f->lpm4 || !f->lpm6 || !f->adj)
		goto fail;
	f->adj[0].kind = VF_ADJ_DROP;
	f->adj[1].kind = VF_ADJ_LOCAL;
	f->n_adj = 2;
	return f;
fail:
	vf_fib_free(f);
	return NULL;
}

void vf_fib_free(vf_fib_t *f)
{
	if (!f)
		return;
	if (f->ops4 && f->lpm4)
		f->ops4->destroy(f->lpm4);
	vf_lpm6_destroy(f->lpm6);
	free(f->adj);
	free(f->neigh);
	free(f);
}

int vf_fib_add_neigh(vf_fib_t *f, int ipv6, const uint8_t ip[16], const uint8_t mac[6],
		     uint16_t port)
{
	for (uint32_t i = 0; i < f->n_neigh; i++) {
		struct vf_neigh *n = &f->neigh[i];
		if (n->ipv6 == ipv6 && !memcmp(n->ip, ip, 16) && n->port == port) {
			memcpy(n->mac, mac, 6);
			return 0;
		}
	}
	if (f->n_neigh == f->cap_neigh) {
		uint32_t cap = f->cap_neigh ? 2 * f->cap_neigh : 8;
		struct vf_neigh *n = realloc(f->neigh, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		f->neigh = n;
		f->cap_neigh = cap;
	}
	struct vf_neigh *n = &f->neigh[f->n_neigh++];
	memset(n, 0, sizeof(*n));
	n->ipv6 = ipv6;
	memcpy(n->ip, ip, 16);
	memcpy(n->mac, mac, 6);
	n->port = port;
	return 0;
}

/* The adjacency for (port, dst MAC), made once and shared by routes. */
static int adj_get(vf_fib_t *f, const struct vf_config *c, uint16_t port, const uint8_t mac[6])
{
	for (uint32_t i = 2; i < f->n_adj; i++)
		if (f->adj[i].port == port && !memcmp(f->adj[i].rewrite, mac, 6))
			return (int)i;
	if (f->n_adj == f->cap_adj) {
		vf_adj_t *a = realloc(f->adj, 2 * f->cap_adj * sizeof(*a));
		if (!a)
			return -ENOMEM;
		f->adj = a;
		f->cap_adj *= 2;
	}
	vf_adj_t *a = &f->adj[f->n_adj];
	memset(a, 0, sizeof(*a));
	memcpy(a->rewrite, mac, 6);
	memcpy(a->rewrite + 6, c->port[port].mac, 6);
	a->port = port;
	a->kind = VF_ADJ_FWD;
	return (int)f->n_adj++;
}

int vf_fib_add_route(vf_fib_t *f, const struct vf_config *c, int ipv6, const uint8_t pfx[16],
		     uint8_t len, const uint8_t via[16], int port, char *msg, size_t n)
{
	const struct vf_neigh *nb = NULL;
	for (uint32_t i = 0; i < f->n_neigh; i++)
		if (f->neigh[i].ipv6 == ipv6 && !memcmp(f->neigh[i].ip, via, 16) &&
		    (port < 0 || f->neigh[i].port == port)) {
			nb = &f->neigh[i];
			break;
		}
	if (!nb) {
		snprintf(msg, n, "next hop has no neighbour entry (add 'neighbor ADDR MAC port N')");
		return -1;
	}
	int adj = adj_get(f, c, nb->port, nb->mac);
	if (adj < 0) {
		snprintf(msg, n, "out of memory");
		return -1;
	}
	int err = ipv6 ? vf_lpm6_add(f->lpm6, pfx, len, (uint32_t)adj)
		       : f->ops4->add(f->lpm4, vf_rd32(pfx), len, (uint32_t)adj);
	if (err) {
		snprintf(msg, n, "%s", err == -ENOSPC ? "DIR-24-8 has no free tbl8 group "
			 "(raise 'lpm-tbl8')" : strerror(-err));
		return -1;
	}
	if (ipv6)
		f->n_routes6++;
	else
		f->n_routes4++;
	return 0;
}

int vf_fib_add_local(vf_fib_t *f, int ipv6, const uint8_t addr[16], char *msg, size_t n)
{
	int err = ipv6 ? vf_lpm6_add(f->lpm6, addr, 128, 1)
		       : f->ops4->add(f->lpm4, vf_rd32(addr), 32, 1);
	if (err) {
		snprintf(msg, n, "%s", strerror(-err));
		return -1;
	}
	return 0;
}
