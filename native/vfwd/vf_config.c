/* SPDX-License-Identifier: MIT */
/*
 * The config file: one statement a line, '#' starts a comment. Errors name
 * the file and line ("vfwd: r.conf:7: route: bad prefix '10.0.0/33'").
 * Routes are resolved after the whole file is read, so neighbours and
 * ports may come after the routes that use them. See docs/vfwd.md.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vfwd.h"
#include "vf_lpm.h"

#define MAX_TOK 32

struct route_line {
	int ipv6, port, line, random;
	uint8_t pfx[16], via[16];
	uint8_t len;
	/* routes-random */
	uint32_t count, seed;
	uint8_t len_lo, len_hi;
	uint8_t within[16];
	uint8_t within_len;
};

struct neigh_line { int ipv6; uint8_t ip[16]; uint8_t mac[6]; int port, line; };

struct parser {
	struct vf_config *c;
	const char *file;
	int line;
	char *err;
	size_t errlen;
	struct route_line *routes;
	uint32_t n_routes, cap_routes;
	struct neigh_line *neigh;
	uint32_t n_neigh, cap_neigh;
	int fill_depth_line;    /* where fill-depth was set (checked against ring-size at the end) */
	int mode_line, workers_line, nat_line, pg_line;  /* for errors found at the end */
};

static int fail(struct parser *p, const char *fmt, ...)
{
	char m[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	if (p->line)
		snprintf(p->err, p->errlen, "vfwd: %s:%d: %s", p->file, p->line, m);
	else
		snprintf(p->err, p->errlen, "vfwd: %s: %s", p->file, m);
	return -1;
}

const char *const vf_mode_names[5] = { "router", "xconnect", "bridge", "nat44", "work" };
const char *const vf_rx_mode_names[3] = { "poll", "adaptive", "interrupt" };

/* index of `s` in names[0..n), or -1 */
static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

void vf_config_defaults(struct vf_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mode = VF_MODE_ROUTER;
	c->max_vector = VF_FRAME_SIZE;
	c->workers = 1;
	c->ring_size = 2048;
	c->fill_depth = VF_FILL_DEPTH;
	c->prefetch = 1;
	c->rx_mode = VF_RX_ADAPTIVE;
	c->bridge_aging_s = 300;
	c->bridge_size = 4096;
	c->lpm_tbl8 = 8192;
	c->lpm = "dir24";
	c->nat.inside = c->nat.outside = -1;
	c->nat.sessions = 65536;
	c->nat.port_lo = 1024;
	c->nat.port_hi = 65535;
	c->work.table_size = 4096;
	for (int i = 0; i < VF_MAX_PORTS; i++)
		c->port[i].xc_peer = -1;
}

void vf_config_free(struct vf_config *c)
{
	vf_fib_free(c->fib);
	c->fib = NULL;
}

int vf_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;
	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -1;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end || end == s || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* "a.b.c.d" or IPv6; family -1: either. Returns family (0 v4, 1 v6) or -1. */
static int parse_addr(const char *s, int family, uint8_t out[16])
{
	memset(out, 0, 16);
	if (family != 1 && inet_pton(AF_INET, s, out) == 1)
		return 0;
	if (family != 0 && inet_pton(AF_INET6, s, out) == 1)
		return 1;
	return -1;
}

static int parse_prefix(const char *s, int family, uint8_t out[16], uint8_t *len)
{
	char buf[64];
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	int fam = parse_addr(buf, family, out);
	if (fam < 0)
		return -1;
	uint32_t l = fam ? 128 : 32;
	if (slash && parse_u32(slash + 1, 0, fam ? 128 : 32, &l))
		return -1;
	*len = (uint8_t)l;
	return fam;
}

static int onoff(const char *s)
{
	if (!strcmp(s, "on") || !strcmp(s, "1") || !strcmp(s, "yes"))
		return 1;
	if (!strcmp(s, "off") || !strcmp(s, "0") || !strcmp(s, "no"))
		return 0;
	return -1;
}

#define NEED(n, usage) \
	do { if (nt < (n)) return fail(p, "%s: expected '%s'", tok[0], usage); } while (0)

static int port_index(struct parser *p, const char *s, const char *what, int *out)
{
	uint32_t v;
	if (parse_u32(s, 0, VF_MAX_PORTS - 1, &v))
		return fail(p, "%s: bad port '%s' (0..%d)", what, s, VF_MAX_PORTS - 1);
	*out = (int)v;
	return 0;
}

static int push_route(struct parser *p, struct route_line *r)
{
	if (p->n_routes == p->cap_routes) {
		uint32_t cap = p->cap_routes ? 2 * p->cap_routes : 16;
		struct route_line *n = realloc(p->routes, cap * sizeof(*n));
		if (!n)
			return fail(p, "out of memory");
		p->routes = n;
		p->cap_routes = cap;
	}
	p->routes[p->n_routes++] = *r;
	return 0;
}

static int stmt_port(struct parser *p, char **tok, int nt)
{
	struct vf_config *c = p->c;
	int idx = 0;
	NEED(3, "port INDEX IFNAME [mac MAC] [driver auto|xdp|afpacket|pg|memif] [ip4 A] [ip6 A] "
	     "[socket PATH] [id N] [role slave|master]");
	if (port_index(p, tok[1], "port", &idx))
		return -1;
	if ((uint32_t)idx != c->n_ports)
		return fail(p, "port: index %d out of order (next is %u)", idx, c->n_ports);
	struct vf_port_cfg *pc = &c->port[idx];
	if (strlen(tok[2]) >= sizeof(pc->ifname))
		return fail(p, "port: interface name '%s' is too long", tok[2]);
	strcpy(pc->ifname, tok[2]);
	pc->line = p->line;
	pc->drv = VF_PORT_AUTO;
	for (int i = 3; i < nt; i += 2) {
		if (i + 1 >= nt)
			return fail(p, "port: '%s' needs a value", tok[i]);
		const char *k = tok[i], *v = tok[i + 1];
		uint8_t a[16], l;
		if (!strcmp(k, "mac")) {
			if (vf_parse_mac(v, pc->mac))
				return fail(p, "port: bad MAC '%s'", v);
		} else if (!strcmp(k, "driver")) {
			if (!strcmp(v, "auto")) pc->drv = VF_PORT_AUTO;
			else if (!strcmp(v, "xdp")) pc->drv = VF_PORT_XDP;
			else if (!strcmp(v, "afpacket")) pc->drv = VF_PORT_AFPACKET;
			else if (!strcmp(v, "pg")) pc->drv = VF_PORT_PG;
			else if (!strcmp(v, "memif")) pc->drv = VF_PORT_MEMIF;
			else return fail(p, "port: driver '%s' is not auto, xdp, afpacket, pg or memif",
					 v);
		} else if (!strcmp(k, "socket")) {
			if (strlen(v) >= sizeof(pc->socket))
				return fail(p, "port: socket '%s' is longer than %zu characters", v,
					    sizeof(pc->socket) - 1);
			strcpy(pc->socket, v);
		} else if (!strcmp(k, "id")) {
			if (parse_u32(v, 0, 0xffffffffu, &pc->memif_id))
				return fail(p, "port: id '%s' is not a memif interface id (0..4294967295)", v);
		} else if (!strcmp(k, "role")) {
			if (strcmp(v, "slave") && strcmp(v, "master"))
				return fail(p, "port: role '%s' is not slave or master", v);
			pc->memif_master = !strcmp(v, "master");
		} else if (!strcmp(k, "ip4")) {
			if (parse_prefix(v, 0, a, &l) < 0)
				return fail(p, "port: bad IPv4 address '%s'", v);
			pc->ip4 = vf_rd32(a);
		} else if (!strcmp(k, "ip6")) {
			if (parse_prefix(v, 1, a, &l) < 0)
				return fail(p, "port: bad IPv6 address '%s'", v);
			memcpy(pc->ip6, a, 16);
			pc->has_ip6 = 1;
		} else {
			return fail(p, "port: unknown option '%s'", k);
		}
	}
	if (pc->drv != VF_PORT_MEMIF && pc->socket[0])
		return fail(p, "port: socket is for driver memif only");
	if (pc->drv == VF_PORT_MEMIF && !pc->socket[0])
		return fail(p, "port: driver memif needs 'socket PATH' (the memif control socket)");
	c->n_ports++;
	return 0;
}

static int stmt_pg(struct parser *p, char **tok, int nt)
{
	struct vf_pg_cfg *g = &p->c->pg;
	g->enabled = 1;
	g->flows = 1;
	g->size = 64;
	g->ttl = 64;
	g->seed = 1;
	int have_src = 0, have_dst = 0;
	for (int i = 1; i < nt; i++) {
		const char *k = tok[i];
		if (!strcmp(k, "ipv6")) { g->ipv6 = 1; continue; }
		if (!strcmp(k, "dst-random")) { g->dst_random = 1; continue; }
		if (i + 1 >= nt)
			return fail(p, "pg: '%s' needs a value", k);
		const char *v = tok[++i];
		uint32_t u;
		uint8_t l;
		if (!strcmp(k, "port")) {
			int pi = 0;
			if (port_index(p, v, "pg", &pi))
				return -1;
			g->port = (uint16_t)pi;
		} else if (!strcmp(k, "size")) {
			if (parse_u32(v, 64, 1518, &g->size))
				return fail(p, "pg: size '%s' must be 64..1518 (bytes incl. FCS)", v);
		} else if (!strcmp(k, "flows")) {
			if (parse_u32(v, 1, 1u << 24, &g->flows))
				return fail(p, "pg: flows '%s' must be 1..16777216", v);
		} else if (!strcmp(k, "ttl")) {
			if (parse_u32(v, 0, 255, &u))
				return fail(p, "pg: ttl '%s' must be 0..255", v);
			g->ttl = (uint8_t)u;
		} else if (!strcmp(k, "seed")) {
			if (parse_u32(v, 0, UINT32_MAX, &u))
				return fail(p, "pg: bad seed '%s'", v);
			g->seed = u;
		} else if (!strcmp(k, "packets")) {
			if (parse_u32(v, 0, UINT32_MAX, &u))
				return fail(p, "pg: bad packet count '%s'", v);
			g->packets = u;
		} else if (!strcmp(k, "dst-mac")) {
			if (vf_parse_mac(v, g->dst_mac))
				return fail(p, "pg: bad MAC '%s'", v);
			g->has_dst_mac = 1;
		} else if (!strcmp(k, "src-mac")) {
			if (vf_parse_mac(v, g->src_mac))
				return fail(p, "pg: bad MAC '%s'", v);
		} else if (!strcmp(k, "src") || !strcmp(k, "dst")) {
			uint8_t *a = k[0] == 's' ? g->src : g->dst;
			int fam = parse_prefix(v, -1, a, &l);
			if (fam < 0)
				return fail(p, "pg: bad prefix '%s'", v);
			uint32_t bits = (fam ? 128u : 32u) - l;
			uint32_t n = bits >= 32 ? UINT32_MAX : (1u << bits);
			if (k[0] == 's') { g->src_n = n; have_src = 1 + fam; }
			else { g->dst_n = n; have_dst = 1 + fam; }
		} else {
			return fail(p, "pg: unknown option '%s'", k);
		}
	}
	if (!have_src || !have_dst)
		return fail(p, "pg: needs 'src PREFIX' and 'dst PREFIX'");
	if (have_src != have_dst || (have_src == 2) != g->ipv6)
		return fail(p, "pg: src and dst must both be %s (add or drop 'ipv6')",
			    g->ipv6 ? "IPv6" : "IPv4");
	return 0;
}

static int stmt_routes_random(struct parser *p, char **tok, int nt)
{
	struct route_line r = { .random = 1, .port = -1, .line = p->line, .seed = 1,
				.len_lo = 24, .len_hi = 24 };
	NEED(4, "routes-random COUNT via ADDR [port N] [seed S] [len A[-B]] [within PREFIX]");
	if (parse_u32(tok[1], 1, 1u << 24, &r.count))
		return fail(p, "routes-random: count '%s' must be 1..16777216", tok[1]);
	int have_via = 0;
	for (int i = 2; i < nt; i += 2) {
		if (i + 1 >= nt)
			return fail(p, "routes-random: '%s' needs a value", tok[i]);
		const char *k = tok[i], *v = tok[i + 1];
		uint32_t a, b;
		if (!strcmp(k, "via")) {
			if (parse_addr(v, 0, r.via) < 0)
				return fail(p, "routes-random: bad IPv4 next hop '%s'", v);
			have_via = 1;
		} else if (!strcmp(k, "port")) {
			if (port_index(p, v, "routes-random", &r.port))
				return -1;
		} else if (!strcmp(k, "seed")) {
			if (parse_u32(v, 0, UINT32_MAX, &r.seed))
				return fail(p, "routes-random: bad seed '%s'", v);
		} else if (!strcmp(k, "len")) {
			char buf[16];
			snprintf(buf, sizeof(buf), "%s", v);
			char *dash = strchr(buf, '-');
			if (dash)
				*dash = 0;
			if (parse_u32(buf, 1, 32, &a) || (dash && parse_u32(dash + 1, a, 32, &b)))
				return fail(p, "routes-random: len '%s' must be A or A-B in 1..32", v);
			r.len_lo = (uint8_t)a;
			r.len_hi = (uint8_t)(dash ? b : a);
		} else if (!strcmp(k, "within")) {
			if (parse_prefix(v, 0, r.within, &r.within_len) < 0)
				return fail(p, "routes-random: bad prefix '%s'", v);
		} else {
			return fail(p, "routes-random: unknown option '%s'", k);
		}
	}
	if (!have_via)
		return fail(p, "routes-random: needs 'via ADDR'");
	return push_route(p, &r);
}

static int stmt(struct parser *p, char **tok, int nt)
{
	struct vf_config *c = p->c;
	const char *k = tok[0];
	uint32_t u;
	if (!strcmp(k, "mode")) {
		NEED(2, "mode router|xconnect|bridge|nat44|work");
		int i = name_index(vf_mode_names, 5, tok[1]);
		if (i < 0)
			return fail(p, "mode: '%s' is not router, xconnect, bridge, nat44 or work",
				    tok[1]);
		c->mode = (enum vf_mode)i;
		p->mode_line = p->line;
		return 0;
	}
	if (!strcmp(k, "max-vector")) {
		NEED(2, "max-vector 1..256");
		if (parse_u32(tok[1], 1, VF_FRAME_SIZE, &c->max_vector))
			return fail(p, "max-vector: '%s' must be 1..%d", tok[1], VF_FRAME_SIZE);
		return 0;
	}
	if (!strcmp(k, "workers")) {
		NEED(2, "workers N");
		if (parse_u32(tok[1], 1, VF_MAX_WORKERS, &c->workers))
			return fail(p, "workers: '%s' must be 1..%d", tok[1], VF_MAX_WORKERS);
		p->workers_line = p->line;
		return 0;
	}
	if (!strcmp(k, "cpus")) {
		NEED(2, "cpus N[,N...]");
		char buf[256];
		snprintf(buf, sizeof(buf), "%s", tok[1]);
		c->n_cpus = 0;
		for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
			if (c->n_cpus >= VF_MAX_WORKERS || parse_u32(s, 0, 4095, &u))
				return fail(p, "cpus: bad CPU list '%s'", tok[1]);
			c->cpus[c->n_cpus++] = (int)u;
		}
		return 0;
	}
	if (!strcmp(k, "prefetch") || !strcmp(k, "busy-poll")) {
		NEED(2, "on|off");
		int v = onoff(tok[1]);
		if (v < 0)
			return fail(p, "%s: '%s' must be on or off", k, tok[1]);
		if (k[0] == 'p')
			c->prefetch = v;
		else    /* the older spelling of rx-mode poll|adaptive */
			c->rx_mode = v ? VF_RX_POLL : VF_RX_ADAPTIVE;
		return 0;
	}
	if (!strcmp(k, "rx-mode")) {
		NEED(2, "rx-mode poll|adaptive|interrupt");
		int i = name_index(vf_rx_mode_names, 3, tok[1]);
		if (i < 0)
			return fail(p, "rx-mode: '%s' must be poll, adaptive or interrupt", tok[1]);
		c->rx_mode = (enum vf_rx_mode)i;
		return 0;
	}
	if (!strcmp(k, "sched-priority")) {
		NEED(2, "sched-priority N");
		if (parse_u32(tok[1], 0, 99, &u))
			return fail(p, "sched-priority: '%s' must be 0 (normal) .. 99 (SCHED_FIFO)",
				    tok[1]);
		c->sched_priority = (int)u;
		return 0;
	}
	if (!strcmp(k, "ring-size")) {
		NEED(2, "ring-size N");
		if (parse_u32(tok[1], 64, 16384, &u) || (u & (u - 1)))
			return fail(p, "ring-size: '%s' must be a power of two in 64..16384", tok[1]);
		c->ring_size = u;
		return 0;
	}
	if (!strcmp(k, "fill-depth")) {
		NEED(2, "fill-depth N");
		if (parse_u32(tok[1], 16, 32768, &u))
			return fail(p, "fill-depth: '%s' must be 16..32768 buffers", tok[1]);
		c->fill_depth = u;
		c->fill_depth_set = 1;
		p->fill_depth_line = p->line;
		return 0;
	}
	if (!strcmp(k, "trace")) {
		NEED(2, "trace N");
		if (parse_u32(tok[1], 0, VF_TRACE_MAX, &u))
			return fail(p, "trace: '%s' must be 0..%d", tok[1], VF_TRACE_MAX);
		c->trace = (int)u;
		return 0;
	}
	if (!strcmp(k, "lpm")) {
		NEED(2, "lpm dir24|ref");
		if (!vf_lpm4_by_name(tok[1]))
			return fail(p, "lpm: '%s' is not dir24 or ref", tok[1]);
		c->lpm = vf_lpm4_by_name(tok[1])->name;
		return 0;
	}
	if (!strcmp(k, "lpm-tbl8")) {
		NEED(2, "lpm-tbl8 GROUPS");
		if (parse_u32(tok[1], 1, 1u << 20, &c->lpm_tbl8))
			return fail(p, "lpm-tbl8: '%s' must be 1..1048576", tok[1]);
		return 0;
	}
	if (!strcmp(k, "port"))
		return stmt_port(p, tok, nt);
	if (!strcmp(k, "xconnect")) {
		int a, b;
		NEED(3, "xconnect PORT PORT");
		if (port_index(p, tok[1], k, &a) || port_index(p, tok[2], k, &b))
			return -1;
		c->port[a].xc_peer = b;
		c->port[b].xc_peer = a;
		return 0;
	}
	if (!strcmp(k, "neighbor") || !strcmp(k, "neighbour")) {
		NEED(5, "neighbor ADDR MAC port N");
		if (p->n_neigh == p->cap_neigh) {
			uint32_t cap = p->cap_neigh ? 2 * p->cap_neigh : 8;
			void *n = realloc(p->neigh, cap * sizeof(*p->neigh));
			if (!n)
				return fail(p, "out of memory");
			p->neigh = n;
			p->cap_neigh = cap;
		}
		struct neigh_line *n = &p->neigh[p->n_neigh];
		n->ipv6 = parse_addr(tok[1], -1, n->ip);
		if (n->ipv6 < 0)
			return fail(p, "neighbor: bad address '%s'", tok[1]);
		if (vf_parse_mac(tok[2], n->mac))
			return fail(p, "neighbor: bad MAC '%s'", tok[2]);
		if (strcmp(tok[3], "port"))
			return fail(p, "neighbor: expected 'port N' after the MAC, got '%s'", tok[3]);
		if (port_index(p, tok[4], "neighbor", &n->port))
			return -1;
		n->line = p->line;
		p->n_neigh++;
		return 0;
	}
	if (!strcmp(k, "route")) {
		struct route_line r = { .port = -1, .line = p->line };
		NEED(4, "route PREFIX via ADDR [port N]");
		r.ipv6 = parse_prefix(tok[1], -1, r.pfx, &r.len);
		if (r.ipv6 < 0)
			return fail(p, "route: bad prefix '%s'", tok[1]);
		if (strcmp(tok[2], "via"))
			return fail(p, "route: expected 'via', got '%s'", tok[2]);
		if (parse_addr(tok[3], r.ipv6, r.via) < 0)
			return fail(p, "route: bad next hop '%s' (same family as the prefix)", tok[3]);
		if (nt >= 6 && !strcmp(tok[4], "port")) {
			if (port_index(p, tok[5], "route", &r.port))
				return -1;
		} else if (nt > 4) {
			return fail(p, "route: unexpected '%s'", tok[4]);
		}
		return push_route(p, &r);
	}
	if (!strcmp(k, "routes-random"))
		return stmt_routes_random(p, tok, nt);
	if (!strcmp(k, "pg")) {
		p->pg_line = p->line;
		return stmt_pg(p, tok, nt);
	}
	if (!strcmp(k, "bridge-mac")) {
		int port;
		NEED(4, "bridge-mac MAC port N");
		if (c->n_bridge_static >= 16)
			return fail(p, "bridge-mac: at most 16 static entries");
		if (vf_parse_mac(tok[1], c->bridge_static[c->n_bridge_static].mac))
			return fail(p, "bridge-mac: bad MAC '%s'", tok[1]);
		if (strcmp(tok[2], "port"))
			return fail(p, "bridge-mac: expected 'port N' after the MAC, got '%s'", tok[2]);
		if (port_index(p, tok[3], "bridge-mac", &port))
			return -1;
		c->bridge_static[c->n_bridge_static++].port = (uint16_t)port;
		return 0;
	}
	if (!strcmp(k, "bridge")) {
		for (int i = 1; i < nt; i += 2) {
			if (i + 1 >= nt)
				return fail(p, "bridge: '%s' needs a value", tok[i]);
			if (!strcmp(tok[i], "aging")) {
				if (parse_u32(tok[i + 1], 0, 86400, &c->bridge_aging_s))
					return fail(p, "bridge: aging '%s' must be 0..86400 s", tok[i + 1]);
			} else if (!strcmp(tok[i], "size")) {
				if (parse_u32(tok[i + 1], 16, 1u << 24, &c->bridge_size))
					return fail(p, "bridge: size '%s' must be 16..16777216", tok[i + 1]);
			} else {
				return fail(p, "bridge: unknown option '%s'", tok[i]);
			}
		}
		return 0;
	}
	if (!strcmp(k, "nat44")) {
		struct vf_nat_cfg *n = &c->nat;
		p->nat_line = p->line;
		for (int i = 1; i < nt; i += 2) {
			if (i + 1 >= nt)
				return fail(p, "nat44: '%s' needs a value", tok[i]);
			const char *o = tok[i], *v = tok[i + 1];
			uint8_t a[16];
			if (!strcmp(o, "inside")) {
				if (port_index(p, v, "nat44", &n->inside))
					return -1;
			} else if (!strcmp(o, "outside")) {
				if (port_index(p, v, "nat44", &n->outside))
					return -1;
			} else if (!strcmp(o, "pool")) {
				if (parse_addr(v, 0, a) < 0)
					return fail(p, "nat44: bad pool address '%s'", v);
				n->pool = vf_rd32(a);
			} else if (!strcmp(o, "sessions")) {
				if (parse_u32(v, 16, 1u << 24, &n->sessions))
					return fail(p, "nat44: sessions '%s' must be 16..16777216", v);
			} else if (!strcmp(o, "ports")) {
				uint32_t lo, hi;
				if (sscanf(v, "%u-%u", &lo, &hi) != 2 || lo < 1 || lo > hi || hi > 65535)
					return fail(p, "nat44: ports '%s' must be LO-HI in 1..65535", v);
				n->port_lo = (uint16_t)lo;
				n->port_hi = (uint16_t)hi;
			} else {
				return fail(p, "nat44: unknown option '%s'", o);
			}
		}
		if (n->inside < 0 || n->outside < 0 || !n->pool)
			return fail(p, "nat44: needs 'inside PORT outside PORT pool ADDR'");
		return 0;
	}
	if (!strcmp(k, "work")) {
		struct vf_work_cfg *w = &c->work;
		for (int i = 1; i < nt; i += 2) {
			if (i + 1 >= nt)
				return fail(p, "work: '%s' needs a value", tok[i]);
			const char *o = tok[i], *v = tok[i + 1];
			uint32_t *dst = !strcmp(o, "lookups") ? &w->lookups :
					!strcmp(o, "hashes") ? &w->hashes :
					!strcmp(o, "arith") ? &w->arith :
					!strcmp(o, "regs") ? &w->regs :
					!strcmp(o, "recirc") ? &w->recirc :
					!strcmp(o, "table") ? &w->table_size : NULL;
			if (!strcmp(o, "hash")) {
				if (!strcmp(v, "crc32")) w->jhash = 0;
				else if (!strcmp(v, "jhash")) w->jhash = 1;
				else return fail(p, "work: hash '%s' is not crc32 or jhash", v);
				continue;
			}
			if (!dst)
				return fail(p, "work: unknown option '%s'", o);
			uint32_t hi = dst == &w->table_size ? (1u << 26) : dst == &w->recirc ? 64 : 100000;
			if (parse_u32(v, dst == &w->table_size ? 1 : 0, hi, dst))
				return fail(p, "work: %s '%s' must be %u..%u", o, v,
					    dst == &w->table_size ? 1 : 0, hi);
		}
		return 0;
	}
	return fail(p, "unknown statement '%s'", k);
}

/* memif ports: one worker (its pool is their shared memory), no kernel
 * ports beside them (an AF_XDP UMEM would need that pool too). */
static int check_memif(struct parser *p)
{
	struct vf_config *c = p->c;
	int mif = -1, dev = -1;

	c->pool_shared = 0;
	for (uint32_t i = 0; i < c->n_ports; i++) {
		if (c->port[i].drv == VF_PORT_MEMIF) {
			mif = (int)i;
			if (!c->port[i].memif_master)
				c->pool_shared = 1;
			for (uint32_t j = 0; j < i; j++)
				if (c->port[j].drv == VF_PORT_MEMIF &&
				    !strcmp(c->port[j].socket, c->port[i].socket) &&
				    c->port[j].memif_id == c->port[i].memif_id &&
				    c->port[j].memif_master == c->port[i].memif_master) {
					p->line = c->port[i].line;
					return fail(p, "port %u: memif id %u on %s is port %u's too", i,
						    c->port[i].memif_id, c->port[i].socket, j);
				}
		} else if (c->port[i].drv != VF_PORT_PG) {
			dev = (int)i;
		}
	}
	if (mif < 0)
		return 0;
	if (dev >= 0) {
		p->line = c->port[dev].line;
		return fail(p, "port %d: memif ports (port %d) and kernel ports cannot be mixed: a "
			    "worker's buffers are the memif shared memory; use driver memif or pg",
			    dev, mif);
	}
	if (c->workers > 1) {
		p->line = p->workers_line;
		return fail(p, "workers %u: memif ports run one worker (one ring pair per memif "
			    "interface); use workers 1", c->workers);
	}
	return 0;
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int finish(struct parser *p)
{
	struct vf_config *c = p->c;
	char msg[160];
	p->line = 0;
	if (!c->n_ports)
		return fail(p, "no 'port' statement (at least one port is needed)");
	if (c->fill_depth > 2 * c->ring_size && !p->fill_depth_line)
		c->fill_depth = 2 * c->ring_size;   /* the default follows a small ring */
	if (c->fill_depth > 2 * c->ring_size) {
		p->line = p->fill_depth_line;
		return fail(p, "fill-depth %u is more than the fill ring holds (2 x ring-size = %u): "
			    "lower it or raise ring-size", c->fill_depth, 2 * c->ring_size);
	}
	if (c->mode == VF_MODE_XCONNECT)
		for (uint32_t i = 0; i < c->n_ports; i++)
			if (c->port[i].xc_peer < 0 || (uint32_t)c->port[i].xc_peer >= c->n_ports) {
				p->line = c->port[i].line;
				return fail(p, "port %u: mode xconnect needs 'xconnect %u PEER' with "
					    "an existing peer port", i, i);
			}
	if (c->mode == VF_MODE_NAT44 &&
	    ((uint32_t)c->nat.inside >= c->n_ports || (uint32_t)c->nat.outside >= c->n_ports)) {
		p->line = p->nat_line ? p->nat_line : p->mode_line;
		return fail(p, "mode nat44 needs 'nat44 inside PORT outside PORT pool ADDR' "
			    "naming existing ports");
	}
	/* Sessions are per worker, and nothing hands return traffic (spread by
	 * RSS on the outside port) to the worker that owns its session. */
	if (c->mode == VF_MODE_NAT44 && c->workers > 1 &&
	    (c->port[c->nat.inside].drv != VF_PORT_PG || c->port[c->nat.outside].drv != VF_PORT_PG)) {
		p->line = p->workers_line;
		return fail(p, "workers %u: mode nat44 keeps its sessions per worker and does not "
			    "hand return traffic to the session's worker; use workers 1",
			    c->workers);
	}
	if (c->pg.enabled && c->pg.port >= c->n_ports) {
		p->line = p->pg_line;
		return fail(p, "pg: port %u does not exist", c->pg.port);
	}
	if (check_memif(p))
		return -1;
	c->fib = vf_fib_create(c->lpm, c->lpm_tbl8);
	if (!c->fib)
		return fail(p, "cannot allocate the FIB (%s)", c->lpm);
	for (uint32_t i = 0; i < p->n_neigh; i++) {
		p->line = p->neigh[i].line;
		if ((uint32_t)p->neigh[i].port >= c->n_ports)
			return fail(p, "neighbor: port %d does not exist", p->neigh[i].port);
		if (vf_fib_add_neigh(c->fib, p->neigh[i].ipv6, p->neigh[i].ip, p->neigh[i].mac,
				     (uint16_t)p->neigh[i].port))
			return fail(p, "out of memory");
	}
	for (uint32_t i = 0; i < c->n_ports; i++) {
		uint8_t a[16] = { 0 };
		p->line = c->port[i].line;
		if (c->port[i].ip4) {
			vf_wr32(a, c->port[i].ip4);
			if (vf_fib_add_local(c->fib, 0, a, msg, sizeof(msg)))
				return fail(p, "port: local address: %s", msg);
		}
		if (c->port[i].has_ip6 && vf_fib_add_local(c->fib, 1, c->port[i].ip6, msg, sizeof(msg)))
			return fail(p, "port: local address: %s", msg);
	}
	for (uint32_t i = 0; i < p->n_routes; i++) {
		struct route_line *r = &p->routes[i];
		p->line = r->line;
		if (r->port >= 0 && (uint32_t)r->port >= c->n_ports)
			return fail(p, "route: port %d does not exist", r->port);
		if (!r->random) {
			if (vf_fib_add_route(c->fib, c, r->ipv6, r->pfx, r->len, r->via, r->port,
					     msg, sizeof(msg)))
				return fail(p, "route: %s", msg);
			continue;
		}
		uint64_t s = r->seed;
		uint32_t wbase = vf_rd32(r->within);
		uint32_t wmask = r->within_len ? ~0u << (32 - r->within_len) : 0;
		for (uint32_t k = 0; k < r->count; k++) {
			uint64_t x = splitmix(&s);
			uint8_t len = (uint8_t)(r->len_lo + x % (uint32_t)(r->len_hi - r->len_lo + 1));
			uint32_t a = (uint32_t)(x >> 32);
			a = (wbase & wmask) | (a & ~wmask);
			uint8_t pfx[16] = { 0 };
			vf_wr32(pfx, a);
			if (vf_fib_add_route(c->fib, c, 0, pfx, len, r->via, r->port, msg, sizeof(msg)))
				return fail(p, "routes-random: route %u: %s", k, msg);
		}
	}
	return 0;
}

int vf_config_parse_string(struct vf_config *c, const char *name, const char *text,
			   char *err, size_t errlen)
{
	struct parser p = { .c = c, .file = name, .err = err, .errlen = errlen };
	char *copy = strdup(text), *save = NULL;
	int rc = 0;
	if (!copy)
		return -1;
	/* strtok_r would merge empty lines and break line numbers: walk by hand */
	char *s = copy;
	while (s && !rc) {
		char *nl = strchr(s, '\n');
		if (nl)
			*nl = 0;
		p.line++;
		char *hash = strchr(s, '#');
		if (hash)
			*hash = 0;
		char *tok[MAX_TOK];
		int nt = 0;
		for (char *t = strtok_r(s, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
			if (nt == MAX_TOK) {
				rc = fail(&p, "too many words (max %d)", MAX_TOK);
				break;
			}
			tok[nt++] = t;
		}
		if (!rc && nt)
			rc = stmt(&p, tok, nt);
		s = nl ? nl + 1 : NULL;
	}
	if (!rc)
		rc = finish(&p);
	free(copy);
	free(p.routes);
	free(p.neigh);
	return rc;
}

int vf_config_load(struct vf_config *c, const char *path, char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!f) {
		snprintf(err, errlen, "vfwd: %s: %s", path, strerror(errno));
		return -1;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	size_t k;
	while (buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (n + 1 == cap) {
			char *b = realloc(buf, cap *= 2);
			if (!b) {
				free(buf);
				buf = NULL;
			}
			buf = b;
		}
	}
	if (f != stdin)
		fclose(f);
	if (!buf) {
		snprintf(err, errlen, "vfwd: %s: out of memory", path);
		return -1;
	}
	buf[n] = 0;
	int rc = vf_config_parse_string(c, path, buf, err, errlen);
	free(buf);
	return rc;
}
