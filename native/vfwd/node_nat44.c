/* SPDX-License-Identifier: MIT */
/*
 * nat44: source NAT of UDP/TCP from the inside port to one outside
 * address, with a session table (endpoint-independent mapping: inside
 * address + port + protocol <-> an outside port). Frames from the outside
 * port addressed to the pool address are translated back by session, or
 * dropped when none exists. IP and L4 checksums are updated incrementally.
 * The table is per worker; each worker owns a slice of the port range.
 * Sessions do not age out (a trial's flows stay for its whole duration).
 */
#include <stdlib.h>

#include "vfwd.h"

#define foreach_nat44_error \
	_(PROTO, "unsupported protocol (not udp/tcp)") \
	_(SHORT, "l4 header truncated") \
	_(NO_SESSION, "out2in: no session") \
	_(FULL, "in2out: session table or port range full")

typedef enum {
#define _(sym, str) NAT44_ERROR_##sym,
	foreach_nat44_error
#undef _
	NAT44_N_ERROR,
} nat44_error_t;
static const char *const nat44_error_strings[] = {
#define _(sym, str) str,
	foreach_nat44_error
#undef _
};

typedef enum { NAT44_NEXT_LOOKUP, NAT44_NEXT_DROP, NAT44_N_NEXT } nat44_next_t;

typedef struct {
	uint32_t in_addr;
	uint16_t in_port, out_port;
	uint8_t proto, in2out;
} nat44_trace_t;

static int format_nat44_trace(char *s, size_t n, const void *rec)
{
	const nat44_trace_t *t = rec;
	return snprintf(s, n, "%s proto %u inside %u.%u.%u.%u:%u outside port %u",
			t->in2out ? "in2out" : "out2in", t->proto, t->in_addr >> 24,
			(t->in_addr >> 16) & 255, (t->in_addr >> 8) & 255, t->in_addr & 255,
			t->in_port, t->out_port);
}

typedef struct {
	uint32_t in_addr;
	uint16_t in_port, out_port;
	uint8_t proto;
} nat44_session_t;

typedef struct {
	nat44_session_t *s;         /* sessions, index + 1 stored in the hashes */
	uint32_t *in2out, *out2in;  /* open addressing, 0 = empty */
	uint32_t mask, n, max;
	uint16_t port_lo, port_hi, port_next;
	uint32_t pool;
	uint16_t inside, outside;
	uint64_t created;
} nat44_state_t;

static inline uint32_t h32(uint64_t k)
{
	k *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(k >> 32);
}
static inline uint64_t key_in(uint32_t a, uint16_t p, uint8_t pr)
{
	return (uint64_t)a << 32 | (uint32_t)p << 8 | pr;
}
static inline uint64_t key_out(uint16_t p, uint8_t pr) { return (uint32_t)p << 8 | pr; }

static int nat44_init(vf_worker_t *w, vf_node_rt_t *rt)
{
	const struct vf_config *c = w->cfg;
	if (c->mode != VF_MODE_NAT44)
		return 0;
	nat44_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -12;
	uint32_t size = 16;
	while (size < 2 * c->nat.sessions)
		size <<= 1;
	s->s = calloc(c->nat.sessions, sizeof(*s->s));
	s->in2out = calloc(size, sizeof(uint32_t));
	s->out2in = calloc(size, sizeof(uint32_t));
	if (!s->s || !s->in2out || !s->out2in) {
		free(s->s);
		free(s->in2out);
		free(s->out2in);
		free(s);
		return -12;
	}
	s->mask = size - 1;
	s->max = c->nat.sessions;
	uint32_t range = (uint32_t)c->nat.port_hi - c->nat.port_lo + 1;
	uint32_t per = range / c->workers ? range / c->workers : 1;
	s->port_lo = (uint16_t)(c->nat.port_lo + per * w->id);
	s->port_hi = (uint16_t)(s->port_lo + per - 1);
	s->port_next = s->port_lo;
	s->pool = c->nat.pool;
	s->inside = (uint16_t)c->nat.inside;
	s->outside = (uint16_t)c->nat.outside;
	rt->state = s;
	return 0;
}

static void nat44_fini(void *state)
{
	nat44_state_t *s = state;
	free(s->s);
	free(s->in2out);
	free(s->out2in);
}

static nat44_session_t *find_in(nat44_state_t *s, uint32_t a, uint16_t p, uint8_t pr)
{
	uint64_t k = key_in(a, p, pr);
	for (uint32_t i = h32(k) & s->mask;; i = (i + 1) & s->mask) {
		uint32_t v = s->in2out[i];
		if (!v)
			return NULL;
		nat44_session_t *x = &s->s[v - 1];
		if (x->in_addr == a && x->in_port == p && x->proto == pr)
			return x;
	}
}

static nat44_session_t *find_out(nat44_state_t *s, uint16_t p, uint8_t pr)
{
	uint64_t k = key_out(p, pr);
	for (uint32_t i = h32(k) & s->mask;; i = (i + 1) & s->mask) {
		uint32_t v = s->out2in[i];
		if (!v)
			return NULL;
		nat44_session_t *x = &s->s[v - 1];
		if (x->out_port == p && x->proto == pr)
			return x;
	}
}

static nat44_session_t *create(nat44_state_t *s, uint32_t a, uint16_t p, uint8_t pr)
{
	if (s->n >= s->max)
		return NULL;
	uint32_t tries = (uint32_t)s->port_hi - s->port_lo + 1;
	uint16_t port = 0;
	while (tries--) {
		uint16_t cand = s->port_next;
		s->port_next = cand == s->port_hi ? s->port_lo : (uint16_t)(cand + 1);
		if (!find_out(s, cand, pr)) {
			port = cand;
			break;
		}
	}
	if (!port)
		return NULL;
	uint32_t idx = s->n++;
	nat44_session_t *x = &s->s[idx];
	*x = (nat44_session_t){ a, p, port, pr };
	uint32_t i;
	for (i = h32(key_in(a, p, pr)) & s->mask; s->in2out[i]; i = (i + 1) & s->mask)
		;
	s->in2out[i] = idx + 1;
	for (i = h32(key_out(port, pr)) & s->mask; s->out2in[i]; i = (i + 1) & s->mask)
		;
	s->out2in[i] = idx + 1;
	s->created++;
	return x;
}

/* Replace a 32-bit field covered by checksum at ck (both network order in
 * the packet). */
static inline void csum_replace32(uint8_t *ck, uint32_t old, uint32_t new_)
{
	uint16_t c = vf_rd16(ck);
	c = vf_csum_update16(c, (uint16_t)(old >> 16), (uint16_t)(new_ >> 16));
	c = vf_csum_update16(c, (uint16_t)old, (uint16_t)new_);
	vf_wr16(ck, c);
}

static inline uint16_t nat44_one(vf_worker_t *w, vf_node_rt_t *rt, nat44_state_t *s,
				 vf_buf_t *b, uint8_t *ip, uint32_t bi)
{
	uint32_t ihl = (ip[0] & 15u) * 4;
	uint8_t pr = ip[9];
	if (pr != 6 && pr != 17) {
		b->error = vf_error(rt, NAT44_ERROR_PROTO);
		return NAT44_NEXT_DROP;
	}
	uint32_t l4len = vf_rd16(ip + 2) - ihl;
	uint32_t need = pr == 6 ? 18 : 8;
	if (l4len < need) {
		b->error = vf_error(rt, NAT44_ERROR_SHORT);
		return NAT44_NEXT_DROP;
	}
	uint8_t *l4 = ip + ihl;
	uint8_t *l4ck = l4 + (pr == 6 ? 16 : 6);
	int l4ck_on = pr == 6 || vf_rd16(l4ck) != 0;
	nat44_session_t *x;
	int in2out = b->rx_port == s->inside;
	if (in2out) {
		uint32_t a = vf_rd32(ip + 12);
		uint16_t p = vf_rd16(l4);
		x = find_in(s, a, p, pr);
		if (!x)
			x = create(s, a, p, pr);
		if (!x) {
			b->error = vf_error(rt, NAT44_ERROR_FULL);
			return NAT44_NEXT_DROP;
		}
		vf_wr32(ip + 12, s->pool);
		csum_replace32(ip + 10, a, s->pool);
		vf_wr16(l4, x->out_port);
		if (l4ck_on) {
			csum_replace32(l4ck, a, s->pool);
			vf_wr16(l4ck, vf_csum_update16(vf_rd16(l4ck), p, x->out_port));
		}
	} else if (b->rx_port == s->outside && vf_rd32(ip + 16) == s->pool) {
		uint16_t p = vf_rd16(l4 + 2);
		x = find_out(s, p, pr);
		if (!x) {
			b->error = vf_error(rt, NAT44_ERROR_NO_SESSION);
			return NAT44_NEXT_DROP;
		}
		vf_wr32(ip + 16, x->in_addr);
		csum_replace32(ip + 10, s->pool, x->in_addr);
		vf_wr16(l4 + 2, x->in_port);
		if (l4ck_on) {
			csum_replace32(l4ck, s->pool, x->in_addr);
			vf_wr16(l4ck, vf_csum_update16(vf_rd16(l4ck), p, x->in_port));
		}
	} else {
		return NAT44_NEXT_LOOKUP;   /* not subject to NAT: routed as is */
	}
	if (pr == 17 && l4ck_on && vf_rd16(l4ck) == 0)
		vf_wr16(l4ck, 0xffff);      /* RFC 768: a computed 0 is sent as all ones */
	if (VF_UNLIKELY(w->tracing)) {
		nat44_trace_t t = { x->in_addr, x->in_port, x->out_port, pr, (uint8_t)in2out };
		vf_trace_add(w, rt, bi, &t, sizeof(t));
	}
	return NAT44_NEXT_LOOKUP;
}

static uint32_t nat44_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	nat44_state_t *s = rt->state;
	vf_pool_t *pool = &w->pool;
	uint16_t next[VF_FRAME_SIZE];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n;

	for (uint32_t i = 0; i < n; i++) {
		vf_buf_t *b = &pool->meta[bi[i]];
		next[i] = nat44_one(w, rt, s, b, vf_buf_data(pool, bi[i]) + b->l3, bi[i]);
	}
	vf_enqueue(w, rt, bi, next, n);
	return n;
}

static const char *const nat44_next_nodes[] = {
	[NAT44_NEXT_LOOKUP] = "ip4-lookup",
	[NAT44_NEXT_DROP] = "drop",
};

static vf_node_t nat44_node = {
	.name = "nat44",
	.fn = nat44_node_fn,
	.n_next = NAT44_N_NEXT,
	.next_names = nat44_next_nodes,
	.n_errors = NAT44_N_ERROR,
	.error_names = nat44_error_strings,
	.format_trace = format_nat44_trace,
	.init = nat44_init,
	.fini = nat44_fini,
};
VF_REGISTER_NODE(nat44_node)

uint32_t vf_nat44_sessions(vf_worker_t *w)
{
	vf_node_t *n = vf_node_by_name("nat44");
	nat44_state_t *s = w->rt[n->index].state;
	return s ? s->n : 0;
}
