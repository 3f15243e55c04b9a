/* SPDX-License-Identifier: MIT */
/*
 * The IPv4 forwarding path: ip4-input (header checks), ip4-lookup
 * (longest-prefix match through the FIB's LPM ops, batched with prefetch
 * across the whole vector), ip4-rewrite (TTL decrement, incremental
 * checksum, MAC rewrite from the adjacency) -> port-output.
 */
#include <stdlib.h>

#include "vfwd.h"
#include "vf_lpm.h"

/* ====================================================================== */
/* ip4-input                                                              */

#define foreach_ip4_input_error \
	_(SHORT, "packet too short") \
	_(VERSION, "ip4 version != 4") \
	_(HDR_LEN, "bad header length") \
	_(LENGTH, "bad total length") \
	_(CHECKSUM, "bad checksum") \
	_(TTL, "ttl expired") \
	_(FRAGMENT, "fragment (not forwarded by nat44/work)")

typedef enum {
#define _(sym, str) IP4_INPUT_ERROR_##sym,
	foreach_ip4_input_error
#undef _
	IP4_INPUT_N_ERROR,
} ip4_input_error_t;
static const char *const ip4_input_error_strings[] = {
#define _(sym, str) str,
	foreach_ip4_input_error
#undef _
};

typedef enum {
	IP4_INPUT_NEXT_DROP,
	IP4_INPUT_NEXT_LOOKUP,
	IP4_INPUT_NEXT_NAT44,
	IP4_INPUT_NEXT_WORK,
	IP4_INPUT_N_NEXT,
} ip4_input_next_t;

typedef struct { uint32_t src, dst; uint8_t ttl, proto, ihl; uint16_t len; } ip4_trace_t;

static int format_ip4_trace(char *s, size_t n, const void *rec)
{
	const ip4_trace_t *t = rec;
	return snprintf(s, n, "%u.%u.%u.%u -> %u.%u.%u.%u proto %u ttl %u ihl %u len %u",
			t->src >> 24, (t->src >> 16) & 255, (t->src >> 8) & 255, t->src & 255,
			t->dst >> 24, (t->dst >> 16) & 255, (t->dst >> 8) & 255, t->dst & 255,
			t->proto, t->ttl, t->ihl, t->len);
}

static void ip4_trace_frame(vf_worker_t *w, vf_node_rt_t *rt, const uint32_t *bi, uint32_t n)
{
	for (uint32_t i = 0; i < n && w->tracing; i++) {
		const vf_buf_t *b = &w->pool.meta[bi[i]];
		const uint8_t *ip = vf_buf_data(&w->pool, bi[i]) + b->l3;
		ip4_trace_t t = { 0 };
		if (b->len >= b->l3 + 20u) {
			t.src = vf_rd32(ip + 12);
			t.dst = vf_rd32(ip + 16);
			t.ttl = ip[8];
			t.proto = ip[9];
			t.ihl = ip[0] & 15;
			t.len = vf_rd16(ip + 2);
		}
		vf_trace_add(w, rt, bi[i], &t, sizeof(t));
	}
}

/* Sum of the header's 16-bit words in native order: the one's complement
 * sum of a valid header folds to 0xffff whatever the byte order. */
VF_INLINE int ip4_csum_ok(const uint8_t *ip, uint32_t hlen)
{
	uint64_t s = 0;
	uint32_t w;
	for (uint32_t k = 0; k < hlen; k += 4) {
		memcpy(&w, ip + k, 4);
		s += w;
	}
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	uint32_t t = (uint32_t)((s & 0xffff) + (s >> 16));
	t = (t & 0xffff) + (t >> 16);
	t = (t & 0xffff) + (t >> 16);
	return t == 0xffff;
}

/* The checks, with a fast path for the common header (version 4, no
 * options): measured in bench/vfwd_nodes.py, the generic loop cost ~90
 * instructions per packet, this path ~30. */
VF_INLINE uint16_t ip4_check(vf_node_rt_t *rt, vf_buf_t *b, const uint8_t *ip,
				 uint16_t ok_next)
{
	uint32_t avail = (uint32_t)b->len - b->l3;
	uint32_t ihl;
	int ok;
	if (VF_UNLIKELY(b->len < b->l3 + 20u)) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_SHORT);
		return IP4_INPUT_NEXT_DROP;
	}
	if (VF_LIKELY(ip[0] == 0x45)) {
		ihl = 20;
		ok = vf_ip4_sum20(ip) == 0xffff;
	} else {
		if (VF_UNLIKELY((ip[0] >> 4) != 4)) {
			b->error = vf_error(rt, IP4_INPUT_ERROR_VERSION);
			return IP4_INPUT_NEXT_DROP;
		}
		ihl = (ip[0] & 15u) * 4;
		if (VF_UNLIKELY(ihl < 20 || ihl > avail)) {
			b->error = vf_error(rt, IP4_INPUT_ERROR_HDR_LEN);
			return IP4_INPUT_NEXT_DROP;
		}
		ok = ip4_csum_ok(ip, ihl);
	}
	uint32_t tot = vf_rd16(ip + 2);
	if (VF_UNLIKELY(tot < ihl || tot > avail)) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_LENGTH);
		return IP4_INPUT_NEXT_DROP;
	}
	if (VF_UNLIKELY(!ok)) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_CHECKSUM);
		return IP4_INPUT_NEXT_DROP;
	}
	if (VF_UNLIKELY(ip[8] <= 1)) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_TTL);
		return IP4_INPUT_NEXT_DROP;
	}
	if (VF_UNLIKELY(ok_next == IP4_INPUT_NEXT_NAT44 && (vf_rd16(ip + 6) & 0x3fff))) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_FRAGMENT);
		return IP4_INPUT_NEXT_DROP;
	}
	/* trim an Ethernet pad: the IP length is the packet */
	b->len = (uint16_t)(b->l3 + tot);
	return ok_next;
}

typedef struct { uint16_t ok_next; } ip4_input_state_t;

static int ip4_input_init(vf_worker_t *w, vf_node_rt_t *rt)
{
	ip4_input_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -12;
	s->ok_next = w->cfg->mode == VF_MODE_NAT44 ? IP4_INPUT_NEXT_NAT44 :
		     w->cfg->mode == VF_MODE_WORK ? IP4_INPUT_NEXT_WORK : IP4_INPUT_NEXT_LOOKUP;
	rt->state = s;
	return 0;
}

static uint32_t ip4_input_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	vf_pool_t *pool = &w->pool;
	uint16_t next[VF_FRAME_SIZE];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i = 0;
	uint16_t ok = ((ip4_input_state_t *)rt->state)->ok_next;

	/* no packet prefetch here: ethernet-input touched these headers moments
	 * ago and a 256-vector of them stays in L1 (measured: prefetching cost
	 * ~6 instructions/packet and no clocks); only the first node that reads
	 * a packet prefetches it */
	for (; i + 4 <= n; i += 4) {
		for (uint32_t k = 0; k < 4; k++) {
			vf_buf_t *b = &pool->meta[bi[i + k]];
			next[i + k] = ip4_check(rt, b, vf_buf_data(pool, bi[i + k]) + b->l3, ok);
		}
	}
	for (; i < n; i++) {
		vf_buf_t *b = &pool->meta[bi[i]];
		next[i] = ip4_check(rt, b, vf_buf_data(pool, bi[i]) + b->l3, ok);
	}
	if (VF_UNLIKELY(w->tracing))
		ip4_trace_frame(w, rt, bi, n);
	vf_enqueue(w, rt, bi, next, n);
	return n;
}

static const char *const ip4_input_next_nodes[] = {
	[IP4_INPUT_NEXT_DROP] = "drop",
	[IP4_INPUT_NEXT_LOOKUP] = "ip4-lookup",
	[IP4_INPUT_NEXT_NAT44] = "nat44",
	[IP4_INPUT_NEXT_WORK] = "work",
};

static vf_node_t ip4_input_node = {
	.name = "ip4-input",
	.fn = ip4_input_node_fn,
	.n_next = IP4_INPUT_N_NEXT,
	.next_names = ip4_input_next_nodes,
	.n_errors = IP4_INPUT_N_ERROR,
	.error_names = ip4_input_error_strings,
	.format_trace = format_ip4_trace,
	.init = ip4_input_init,
};
VF_REGISTER_NODE(ip4_input_node)

/* ====================================================================== */
/* ip4-lookup                                                             */

#define foreach_ip4_lookup_error \
	_(NO_ROUTE, "no route") \
	_(LOCAL, "for us (no control plane)")

typedef enum {
#define _(sym, str) IP4_LOOKUP_ERROR_##sym,
	foreach_ip4_lookup_error
#undef _
	IP4_LOOKUP_N_ERROR,
} ip4_lookup_error_t;
static const char *const ip4_lookup_error_strings[] = {
#define _(sym, str) str,
	foreach_ip4_lookup_error
#undef _
};

typedef enum { IP4_LOOKUP_NEXT_DROP, IP4_LOOKUP_NEXT_REWRITE, IP4_LOOKUP_N_NEXT } ip4_lookup_next_t;

typedef struct { uint32_t dst, adj; } ip4_lookup_trace_t;

static int format_ip4_lookup_trace(char *s, size_t n, const void *rec)
{
	const ip4_lookup_trace_t *t = rec;
	return snprintf(s, n, "dst %u.%u.%u.%u adjacency %u", t->dst >> 24, (t->dst >> 16) & 255,
			(t->dst >> 8) & 255, t->dst & 255, t->adj);
}

static uint32_t ip4_lookup_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	vf_pool_t *pool = &w->pool;
	const vf_fib_t *fib = vf_fib;
	uint32_t dst[VF_FRAME_SIZE], adj[VF_FRAME_SIZE];
	uint16_t next[VF_FRAME_SIZE];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i = 0;

	/* 1: gather destinations (headers are in cache since ip4-input) */
	for (; i + 4 <= n; i += 4)
		for (uint32_t k = 0; k < 4; k++) {
			const vf_buf_t *b = &pool->meta[bi[i + k]];
			dst[i + k] = vf_rd32(vf_buf_data(pool, bi[i + k]) + b->l3 + 16);
		}
	for (; i < n; i++) {
		const vf_buf_t *b = &pool->meta[bi[i]];
		dst[i] = vf_rd32(vf_buf_data(pool, bi[i]) + b->l3 + 16);
	}
	/* 2: one batched lookup for the vector: the table misses overlap */
	fib->ops4->lookup_bulk(fib->lpm4, dst, adj, n, w->prefetch);
	/* 3: adjacency kind -> next */
	for (i = 0; i < n; i++) {
		vf_buf_t *b = &pool->meta[bi[i]];
		uint32_t a = adj[i];
		b->adj = a;
		if (VF_LIKELY(a >= 2)) {
			next[i] = IP4_LOOKUP_NEXT_REWRITE;
		} else {
			next[i] = IP4_LOOKUP_NEXT_DROP;
			b->error = vf_error(rt, a == 1 ? IP4_LOOKUP_ERROR_LOCAL
						       : IP4_LOOKUP_ERROR_NO_ROUTE);
		}
	}
	if (VF_UNLIKELY(w->tracing))
		for (i = 0; i < n && w->tracing; i++) {
			ip4_lookup_trace_t t = { dst[i], adj[i] };
			vf_trace_add(w, rt, bi[i], &t, sizeof(t));
		}
	vf_enqueue(w, rt, bi, next, n);
	return n;
}

static const char *const ip4_lookup_next_nodes[] = {
	[IP4_LOOKUP_NEXT_DROP] = "drop",
	[IP4_LOOKUP_NEXT_REWRITE] = "ip4-rewrite",
};

static vf_node_t ip4_lookup_node = {
	.name = "ip4-lookup",
	.fn = ip4_lookup_node_fn,
	.n_next = IP4_LOOKUP_N_NEXT,
	.next_names = ip4_lookup_next_nodes,
	.n_errors = IP4_LOOKUP_N_ERROR,
	.error_names = ip4_lookup_error_strings,
	.format_trace = format_ip4_lookup_trace,
};
VF_REGISTER_NODE(ip4_lookup_node)

/* ====================================================================== */
/* ip4-rewrite                                                            */

#define foreach_ip4_rewrite_error _(NONE, "none")
typedef enum {
#define _(sym, str) IP4_REWRITE_ERROR_##sym,
	foreach_ip4_rewrite_error
#undef _
	IP4_REWRITE_N_ERROR,
} ip4_rewrite_error_t;
static const char *const ip4_rewrite_error_strings[] = {
#define _(sym, str) str,
	foreach_ip4_rewrite_error
#undef _
};

typedef enum { IP4_REWRITE_NEXT_OUTPUT, IP4_REWRITE_N_NEXT } ip4_rewrite_next_t;

typedef struct { uint32_t adj; uint16_t port, check; uint8_t ttl; } ip4_rewrite_trace_t;

static int format_ip4_rewrite_trace(char *s, size_t n, const void *rec)
{
	const ip4_rewrite_trace_t *t = rec;
	return snprintf(s, n, "adjacency %u tx port %u ttl %u checksum 0x%04x", t->adj, t->port,
			t->ttl, t->check);
}

VF_INLINE void ip4_rewrite_one(const vf_adj_t *adjs, vf_buf_t *b, uint8_t *p)
{
	const vf_adj_t *a = &adjs[b->adj];
	uint8_t *ip = p + b->l3;
	/* TTL is the high byte of its 16-bit word: decrementing it adds
	 * 0x0100 to the checksum (RFC 1624, one's complement, end-around carry) */
	uint32_t c = vf_rd16(ip + 10) + 0x0100u;
	c = (c & 0xffff) + (c >> 16);
	ip[8]--;
	vf_wr16(ip + 10, (uint16_t)c);
	memcpy(p, a->rewrite, 12);
	b->tx_port = a->port;
}

static uint32_t ip4_rewrite_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	vf_pool_t *pool = &w->pool;
	const vf_adj_t *adjs = vf_fib->adj;
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i = 0;

	/* adjacencies are few and hot: no prefetch (measured, as in ip4-input) */
	for (; i + 4 <= n; i += 4) {
		for (uint32_t k = 0; k < 4; k++)
			ip4_rewrite_one(adjs, &pool->meta[bi[i + k]], vf_buf_data(pool, bi[i + k]));
	}
	for (; i < n; i++)
		ip4_rewrite_one(adjs, &pool->meta[bi[i]], vf_buf_data(pool, bi[i]));
	if (VF_UNLIKELY(w->tracing))
		for (i = 0; i < n && w->tracing; i++) {
			const vf_buf_t *b = &pool->meta[bi[i]];
			const uint8_t *ip = vf_buf_data(pool, bi[i]) + b->l3;
			ip4_rewrite_trace_t t = { b->adj, b->tx_port, vf_rd16(ip + 10), ip[8] };
			vf_trace_add(w, rt, bi[i], &t, sizeof(t));
		}
	vf_enqueue_one(w, rt, bi, n, IP4_REWRITE_NEXT_OUTPUT);
	return n;
}

static const char *const ip4_rewrite_next_nodes[] = {
	[IP4_REWRITE_NEXT_OUTPUT] = "port-output",
};

static vf_node_t ip4_rewrite_node = {
	.name = "ip4-rewrite",
	.fn = ip4_rewrite_node_fn,
	.n_next = IP4_REWRITE_N_NEXT,
	.next_names = ip4_rewrite_next_nodes,
	.n_errors = IP4_REWRITE_N_ERROR,
	.error_names = ip4_rewrite_error_strings,
	.format_trace = format_ip4_rewrite_trace,
};
VF_REGISTER_NODE(ip4_rewrite_node)
