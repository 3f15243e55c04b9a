/* SPDX-License-Identifier: MIT */
/*
 * pg-input: an in-memory packet generator (VPP's packet-generator in
 * small) for measuring the processing cost of the graph without I/O. Each
 * call makes one vector of max_vector packets from a template (Ethernet /
 * IPv4 or IPv6 / UDP), varying source and destination over `flows` flows,
 * or a random destination per packet (dst-random), as received on port
 * `port`. Its own cost (a copy per packet) is the input node's, outside
 * the forwarding path that bench/vfwd_nodes.py sums.
 */
#include <stdlib.h>

#include "vfwd.h"

#define foreach_pg_input_error _(NONE, "none")
typedef enum {
#define _(sym, str) PG_INPUT_ERROR_##sym,
	foreach_pg_input_error
#undef _
	PG_INPUT_N_ERROR,
} pg_input_error_t;
static const char *const pg_input_error_strings[] = {
#define _(sym, str) str,
	foreach_pg_input_error
#undef _
};

typedef enum { PG_INPUT_NEXT_ETHERNET, PG_INPUT_N_NEXT } pg_input_next_t;

typedef struct { uint32_t flow, len; } pg_trace_t;

static int format_pg_trace(char *s, size_t n, const void *rec)
{
	const pg_trace_t *t = rec;
	return snprintf(s, n, "flow %u length %u", t->flow, t->len);
}

typedef struct {
	uint8_t tmpl[1536];
	uint32_t len;                /* L2 bytes without FCS */
	uint32_t src_lo, dst_lo;     /* low 32 bits of the first addresses */
	uint64_t seq, limit, rng;
	int limited;                 /* packets given: limit may be 0 (more workers than packets) */
	uint32_t step, offset;       /* flows of this worker: offset + k * step */
	struct vf_pg_cfg cfg;
} pg_state_t;

static uint16_t csum_hdr(const uint8_t *p, uint32_t len)
{
	return (uint16_t)~vf_csum_fold(vf_csum_add(p, len, 0));
}

static int pg_input_init(vf_worker_t *w, vf_node_rt_t *rt)
{
	const struct vf_config *c = w->cfg;
	const struct vf_pg_cfg *g = &c->pg;
	if (!g->enabled)
		return 0;
	pg_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -12;
	s->cfg = *g;
	s->len = g->size - 4;
	s->step = c->workers;
	s->offset = w->id;
	s->rng = g->seed * 0x9e3779b97f4a7c15ull + w->id + 1;
	s->limited = g->packets != 0;
	if (s->limited)
		s->limit = g->packets / c->workers + (w->id < g->packets % c->workers);
	uint8_t *p = s->tmpl;
	static const uint8_t def_src[6] = { 0x02, 0xfb, 0, 0, 0, 0x01 };
	memcpy(p, g->has_dst_mac ? g->dst_mac : c->port[g->port].mac, 6);
	memcpy(p + 6, g->src_mac[0] | g->src_mac[1] | g->src_mac[5] ? g->src_mac : def_src, 6);
	uint8_t *ip = p + 14;
	if (!g->ipv6) {
		vf_wr16(p + 12, 0x0800);
		ip[0] = 0x45;
		vf_wr16(ip + 2, (uint16_t)(s->len - 14));
		ip[8] = g->ttl;
		ip[9] = 17;
		memcpy(ip + 12, g->src, 4);
		memcpy(ip + 16, g->dst, 4);
		vf_wr16(ip + 10, csum_hdr(ip, 20));
		uint8_t *udp = ip + 20;
		vf_wr16(udp, 1024);
		vf_wr16(udp + 2, 1024);
		vf_wr16(udp + 4, (uint16_t)(s->len - 34));
		/* UDP checksum 0: none, allowed for IPv4 */
		s->src_lo = vf_rd32(g->src);
		s->dst_lo = vf_rd32(g->dst);
	} else {
		vf_wr16(p + 12, 0x86dd);
		ip[0] = 0x60;
		vf_wr16(ip + 4, (uint16_t)(s->len - 54));
		ip[6] = 17;
		ip[7] = g->ttl;
		memcpy(ip + 8, g->src, 16);
		memcpy(ip + 24, g->dst, 16);
		uint8_t *udp = ip + 40;
		vf_wr16(udp, 1024);
		vf_wr16(udp + 2, 1024);
		vf_wr16(udp + 4, (uint16_t)(s->len - 54));
		uint32_t sum = vf_csum_add(ip + 8, 32, 0);
		sum += 17 + (s->len - 54);
		sum = vf_csum_add(udp, s->len - 54, sum);
		uint16_t ck = (uint16_t)~vf_csum_fold(sum);
		vf_wr16(udp + 6, ck ? ck : 0xffff);
		s->src_lo = vf_rd32(g->src + 12);
		s->dst_lo = vf_rd32(g->dst + 12);
	}
	rt->state = s;
	return 0;
}

static inline uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static inline void pg_fill(pg_state_t *s, uint8_t *p, uint64_t seq)
{
	const struct vf_pg_cfg *g = &s->cfg;
	uint32_t flow = (uint32_t)((seq * s->step + s->offset) % g->flows);
	uint32_t src = s->src_lo + (g->src_n == UINT32_MAX ? flow : flow % g->src_n);
	uint32_t dst;
	if (g->dst_random)
		dst = s->dst_lo + (g->dst_n == UINT32_MAX ? (uint32_t)xorshift(&s->rng)
				   : (uint32_t)(xorshift(&s->rng) % g->dst_n));
	else
		dst = s->dst_lo + (g->dst_n == UINT32_MAX ? flow : flow % g->dst_n);
	memcpy(p, s->tmpl, s->len);
	uint8_t *ip = p + 14;
	if (!g->ipv6) {
		vf_wr32(ip + 12, src);
		vf_wr32(ip + 16, dst);
		vf_wr16(ip + 10, 0);
		uint16_t c = (uint16_t)~vf_ip4_sum20(ip);
		memcpy(ip + 10, &c, 2);
	} else {
		uint8_t *ck = ip + 40 + 6;
		uint16_t c = vf_rd16(ck);
		c = vf_csum_update16(c, (uint16_t)(s->src_lo >> 16), (uint16_t)(src >> 16));
		c = vf_csum_update16(c, (uint16_t)s->src_lo, (uint16_t)src);
		c = vf_csum_update16(c, (uint16_t)(s->dst_lo >> 16), (uint16_t)(dst >> 16));
		c = vf_csum_update16(c, (uint16_t)s->dst_lo, (uint16_t)dst);
		vf_wr16(ck, c ? c : 0xffff);
		vf_wr32(ip + 8 + 12, src);
		vf_wr32(ip + 24 + 12, dst);
	}
}

static uint32_t pg_input_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	(void)f;
	pg_state_t *s = rt->state;
	uint32_t bi[VF_FRAME_SIZE];
	uint32_t n = w->max_vector;
	if (s->limited) {
		if (s->seq >= s->limit)
			return 0;
		if (s->seq + n > s->limit)
			n = (uint32_t)(s->limit - s->seq);
	}
	n = vf_alloc(&w->pool, bi, n);
	vf_pool_t *pool = &w->pool;
	for (uint32_t i = 0; i < n; i++) {
		vf_buf_t *b = &pool->meta[bi[i]];
		b->len = (uint16_t)s->len;
		b->rx_port = s->cfg.port;
		pg_fill(s, vf_buf_data(pool, bi[i]), s->seq + i);
	}
	if (VF_UNLIKELY(w->trace_left))
		vf_trace_mark(w, bi, n);
	if (VF_UNLIKELY(w->tracing))
		for (uint32_t i = 0; i < n && w->tracing; i++) {
			pg_trace_t t = { (uint32_t)((s->seq + i) % s->cfg.flows), s->len };
			vf_trace_add(w, rt, bi[i], &t, sizeof(t));
		}
	s->seq += n;
	w->pg_sent += n;
	vf_enqueue_one(w, rt, bi, n, PG_INPUT_NEXT_ETHERNET);
	return n;
}

/* 1 when pg-input of w has sent its `packets` (or is not running). */
int vf_pg_done(vf_worker_t *w)
{
	vf_node_t *n = vf_node_by_name("pg-input");
	pg_state_t *s = w->rt[n->index].state;
	return !s || (s->limited && s->seq >= s->limit);
}

static const char *const pg_input_next_nodes[] = {
	[PG_INPUT_NEXT_ETHERNET] = "ethernet-input",
};

static vf_node_t pg_input_node = {
	.name = "pg-input",
	.type = VF_NODE_INPUT,
	.fn = pg_input_node_fn,
	.n_next = PG_INPUT_N_NEXT,
	.next_names = pg_input_next_nodes,
	.n_errors = PG_INPUT_N_ERROR,
	.error_names = pg_input_error_strings,
	.format_trace = format_pg_trace,
	.init = pg_input_init,
};
VF_REGISTER_NODE(pg_input_node)
