/* SPDX-License-Identifier: MIT */
/*
 * The IPv6 forwarding path: ip6-input (length, version, hop limit),
 * ip6-lookup (LPM, one hash probe per prefix length present), ip6-rewrite
 * (hop limit decrement, MAC rewrite; IPv6 has no header checksum).
 */
#include "vfwd.h"
#include "vf_lpm.h"

/* ====================================================================== */
/* ip6-input                                                              */

#define foreach_ip6_input_error \
	_(SHORT, "packet too short") \
	_(VERSION, "ip6 version != 6") \
	_(LENGTH, "bad payload length") \
	_(HOP_LIMIT, "hop limit expired")

typedef enum {
#define _(sym, str) IP6_INPUT_ERROR_##sym,
	foreach_ip6_input_error
#undef _
	IP6_INPUT_N_ERROR,
} ip6_input_error_t;
static const char *const ip6_input_error_strings[] = {
#define _(sym, str) str,
	foreach_ip6_input_error
#undef _
};

typedef enum { IP6_INPUT_NEXT_DROP, IP6_INPUT_NEXT_LOOKUP, IP6_INPUT_N_NEXT } ip6_input_next_t;

typedef struct { uint8_t dst[16]; uint8_t hlim, nxt; uint16_t plen; } ip6_trace_t;

static int format_ip6_trace(char *s, size_t n, const void *rec)
{
	const ip6_trace_t *t = rec;
	int k = snprintf(s, n, "dst ");
	for (int i = 0; i < 16 && k > 0 && (size_t)k < n; i += 2)
		k += snprintf(s + k, n - (size_t)k, "%x%s", vf_rd16(t->dst + i), i < 14 ? ":" : "");
	if (k > 0 && (size_t)k < n)
		k += snprintf(s + k, n - (size_t)k, " next %u hop limit %u payload %u", t->nxt,
			      t->hlim, t->plen);
	return k;
}

static void ip6_trace_frame(vf_worker_t *w, vf_node_rt_t *rt, const uint32_t *bi, uint32_t n)
{
	for (uint32_t i = 0; i < n && w->tracing; i++) {
		const vf_buf_t *b = &w->pool.meta[bi[i]];
		const uint8_t *ip = vf_buf_data(&w->pool, bi[i]) + b->l3;
		ip6_trace_t t = { { 0 }, 0, 0, 0 };
		if (b->len >= b->l3 + 40u) {
			memcpy(t.dst, ip + 24, 16);
			t.hlim = ip[7];
			t.nxt = ip[6];
			t.plen = vf_rd16(ip + 4);
		}
		vf_trace_add(w, rt, bi[i], &t, sizeof(t));
	}
}

VF_INLINE uint16_t ip6_check(vf_node_rt_t *rt, vf_buf_t *b, const uint8_t *ip)
{
	if (VF_UNLIKELY(b->len < b->l3 + 40u)) {
		b->error = vf_error(rt, IP6_INPUT_ERROR_SHORT);
		return IP6_INPUT_NEXT_DROP;
	}
	if (VF_UNLIKELY((ip[0] >> 4) != 6)) {
		b->error = vf_error(rt, IP6_INPUT_ERROR_VERSION);
		return IP6_INPUT_NEXT_DROP;
	}
	uint32_t plen = vf_rd16(ip + 4);
	if (VF_UNLIKELY(plen + 40u > (uint32_t)(b->len - b->l3))) {
		b->error = vf_error(rt, IP6_INPUT_ERROR_LENGTH);
		return IP6_INPUT_NEXT_DROP;
	}
	if (VF_UNLIKELY(ip[7] <= 1)) {
		b->error = vf_error(rt, IP6_INPUT_ERROR_HOP_LIMIT);
		return IP6_INPUT_NEXT_DROP;
	}
	b->len = (uint16_t)(b->l3 + 40 + plen);
	return IP6_INPUT_NEXT_LOOKUP;
}

static uint32_t ip6_input_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	vf_pool_t *pool = &w->pool;
	uint16_t next[VF_FRAME_SIZE];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i = 0;

	/* headers are in L1 since ethernet-input: no prefetch (see ip4-input) */
	for (; i + 4 <= n; i += 4) {
		for (uint32_t k = 0; k < 4; k++) {
			vf_buf_t *b = &pool->meta[bi[i + k]];
			next[i + k] = ip6_check(rt, b, vf_buf_data(pool, bi[i + k]) + b->l3);
		}
	}
	for (; i < n; i++) {
		vf_buf_t *b = &pool->meta[bi[i]];
		next[i] = ip6_check(rt, b, vf_buf_data(pool, bi[i]) + b->l3);
	}
	if (VF_UNLIKELY(w->tracing))
		ip6_trace_frame(w, rt, bi, n);
	vf_enqueue(w, rt, bi, next, n);
	return n;
}

static const char *const ip6_input_next_nodes[] = {
	[IP6_INPUT_NEXT_DROP] = "drop",
	[IP6_INPUT_NEXT_LOOKUP] = "ip6-lookup",
};

static vf_node_t ip6_input_node = {
	.name = "ip6-input",
	.fn = ip6_input_node_fn,
	.n_next = IP6_INPUT_N_NEXT,
	.next_names = ip6_input_next_nodes,
	.n_errors = IP6_INPUT_N_ERROR,
	.error_names = ip6_input_error_strings,
	.format_trace = format_ip6_trace,
};
VF_REGISTER_NODE(ip6_input_node)

/* ====================================================================== */
/* ip6-lookup                                                             */

#define foreach_ip6_lookup_error \
	_(NO_ROUTE, "no route") \
	_(LOCAL, "for us (no control plane)")

typedef enum {
#define _(sym, str) IP6_LOOKUP_ERROR_##sym,
	foreach_ip6_lookup_error
#undef _
	IP6_LOOKUP_N_ERROR,
} ip6_lookup_error_t;
static const char *const ip6_lookup_error_strings[] = {
#define _(sym, str) str,
	foreach_ip6_lookup_error
#undef _
};

typedef enum { IP6_LOOKUP_NEXT_DROP, IP6_LOOKUP_NEXT_REWRITE, IP6_LOOKUP_N_NEXT } ip6_lookup_next_t;

static uint32_t ip6_lookup_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	vf_pool_t *pool = &w->pool;
	const uint8_t *dst[VF_FRAME_SIZE];
	uint32_t adj[VF_FRAME_SIZE];
	uint16_t next[VF_FRAME_SIZE];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n;

	/* gather, one batched lookup for the vector, then adjacency -> next */
	for (uint32_t i = 0; i < n; i++)
		dst[i] = vf_buf_data(pool, bi[i]) + pool->meta[bi[i]].l3 + 24;
	vf_lpm6_lookup_bulk(vf_fib->lpm6, dst, adj, n, w->prefetch);
	for (uint32_t i = 0; i < n; i++) {
		vf_buf_t *b = &pool->meta[bi[i]];
		uint32_t a = adj[i];
		b->adj = a;
		if (VF_LIKELY(a >= 2)) {
			next[i] = IP6_LOOKUP_NEXT_REWRITE;
		} else {
			next[i] = IP6_LOOKUP_NEXT_DROP;
			b->error = vf_error(rt, a == 1 ? IP6_LOOKUP_ERROR_LOCAL
						       : IP6_LOOKUP_ERROR_NO_ROUTE);
		}
	}
	if (VF_UNLIKELY(w->tracing))
		ip6_trace_frame(w, rt, bi, n);
	vf_enqueue(w, rt, bi, next, n);
	return n;
}

static const char *const ip6_lookup_next_nodes[] = {
	[IP6_LOOKUP_NEXT_DROP] = "drop",
	[IP6_LOOKUP_NEXT_REWRITE] = "ip6-rewrite",
};

static vf_node_t ip6_lookup_node = {
	.name = "ip6-lookup",
	.fn = ip6_lookup_node_fn,
	.n_next = IP6_LOOKUP_N_NEXT,
	.next_names = ip6_lookup_next_nodes,
	.n_errors = IP6_LOOKUP_N_ERROR,
	.error_names = ip6_lookup_error_strings,
	.format_trace = format_ip6_trace,
};
VF_REGISTER_NODE(ip6_lookup_node)

/* ====================================================================== */
/* ip6-rewrite                                                            */

#define foreach_ip6_rewrite_error _(NONE, "none")
typedef enum {
#define _(sym, str) IP6_REWRITE_ERROR_##sym,
	foreach_ip6_rewrite_error
#undef _
	IP6_REWRITE_N_ERROR,
} ip6_rewrite_error_t;
static const char *const ip6_rewrite_error_strings[] = {
#define _(sym, str) str,
	foreach_ip6_rewrite_error
#undef _
};

typedef enum { IP6_REWRITE_NEXT_OUTPUT, IP6_REWRITE_N_NEXT } ip6_rewrite_next_t;

VF_INLINE void ip6_rewrite_one(const vf_adj_t *adjs, vf_buf_t *b, uint8_t *p)
{
	const vf_adj_t *a = &adjs[b->adj];
	p[b->l3 + 7]--;
	memcpy(p, a->rewrite, 12);
	b->tx_port = a->port;
}

static uint32_t ip6_rewrite_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	vf_pool_t *pool = &w->pool;
	const vf_adj_t *adjs = vf_fib->adj;
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i = 0;

	for (; i + 4 <= n; i += 4) {
		for (uint32_t k = 0; k < 4; k++)
			ip6_rewrite_one(adjs, &pool->meta[bi[i + k]], vf_buf_data(pool, bi[i + k]));
	}
	for (; i < n; i++)
		ip6_rewrite_one(adjs, &pool->meta[bi[i]], vf_buf_data(pool, bi[i]));
	if (VF_UNLIKELY(w->tracing))
		ip6_trace_frame(w, rt, bi, n);
	vf_enqueue_one(w, rt, bi, n, IP6_REWRITE_NEXT_OUTPUT);
	return n;
}

static const char *const ip6_rewrite_next_nodes[] = {
	[IP6_REWRITE_NEXT_OUTPUT] = "port-output",
};

static vf_node_t ip6_rewrite_node = {
	.name = "ip6-rewrite",
	.fn = ip6_rewrite_node_fn,
	.n_next = IP6_REWRITE_N_NEXT,
	.next_names = ip6_rewrite_next_nodes,
	.n_errors = IP6_REWRITE_N_ERROR,
	.error_names = ip6_rewrite_error_strings,
	.format_trace = format_ip6_trace,
};
VF_REGISTER_NODE(ip6_rewrite_node)
