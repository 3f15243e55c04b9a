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

/* Every check, one at a time, with its error: the path of a packet that
 * failed the fast check below (or has options). */
static __attribute__((noinline)) uint16_t ip4_check_slow(vf_node_rt_t *rt, vf_buf_t *b,
							 const uint8_t *ip, uint16_t ok_next)
{
	uint32_t avail = (uint32_t)b->len - b->l3;
	uint32_t ihl;
	if (b->len < b->l3 + 20u) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_SHORT);
		return IP4_INPUT_NEXT_DROP;
	}
	if ((ip[0] >> 4) != 4) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_VERSION);
		return IP4_INPUT_NEXT_DROP;
	}
	ihl = (ip[0] & 15u) * 4;
	if (ihl < 20 || ihl > avail) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_HDR_LEN);
		return IP4_INPUT_NEXT_DROP;
	}
	uint32_t tot = vf_rd16(ip + 2);
	if (tot < ihl || tot > avail) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_LENGTH);
		return IP4_INPUT_NEXT_DROP;
	}
	if (!ip4_csum_ok(ip, ihl)) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_CHECKSUM);
		return IP4_INPUT_NEXT_DROP;
	}
	if (ip[8] <= 1) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_TTL);
		return IP4_INPUT_NEXT_DROP;
	}
	if (ok_next == IP4_INPUT_NEXT_NAT44 && (vf_rd16(ip + 6) & 0x3fff)) {
		b->error = vf_error(rt, IP4_INPUT_ERROR_FRAGMENT);
		return IP4_INPUT_NEXT_DROP;
	}
	b->len = (uint16_t)(b->l3 + tot);
	return ok_next;
}

/* The common header (version 4, no options, length within the frame,
 * TTL > 1, valid checksum; not a fragment when nat44 follows) in one test,
 * else the slow path finds the reason. The header checksum as two 64-bit
 * words and a 32-bit one: 2^16 = 1 (mod 0xffff), so a valid header's one's complement sum
 * folds to 0xffff exactly when the words' sum with end-around carries
 * (2^64 = 1 too) is a multiple of 0xffff (never 0: the first byte is 0x45);
 * a byte swap multiplies the sum by 256 (mod 0xffff), so the byte order does
 * not matter. Loads past a short frame stay inside its buffer (2 KiB), and
 * such a frame fails the length test. Measured in bench/vfwd_nodes.py
 * (callgrind): see ip4_input_frame. */
VF_INLINE int ip4_fast_ok(vf_buf_t *b, const uint8_t *ip, int nat)
{
	uint64_t w0, w1, s, t;
	uint32_t w2, tot = vf_rd16(ip + 2);
	memcpy(&w0, ip, 8);
	memcpy(&w1, ip + 8, 8);
	memcpy(&w2, ip + 16, 4);
	s = w0 + w1;
	s += s < w0;
	t = s + w2;
	t += t < s;
	if (VF_LIKELY(ip[0] == 0x45 && tot >= 20 && b->l3 + tot <= b->len && ip[8] > 1 &&
		      t % 0xffff == 0 && !(nat && (vf_rd16(ip + 6) & 0x3fff)))) {
		/* trim an Ethernet pad: the IP length is the packet */
		b->len = (uint16_t)(b->l3 + tot);
		return 1;
	}
	return 0;
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

VF_INLINE void ip4_input_frame(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f, uint16_t ok,
				 uint16_t *next, int nat)
{
	vf_pool_t *pool = &w->pool;
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i = 0;

	/* no packet prefetch here: ethernet-input touched these headers moments
	 * ago and a 256-vector of them stays in L1 (measured: prefetching cost
	 * ~6 instructions/packet and no clocks); only the first node that reads
	 * a packet prefetches it. The loop has no call: a packet that fails the
	 * fast test is marked and checked afterwards, so everything stays in
	 * registers (callgrind, ip4 1 route: ip4-input 76 -> 45 instructions a
	 * packet with the 64-bit checksum, the 4-wide next scan in vf_enqueue
	 * and this) */
	uint32_t slow = 0;
	for (; i < n; i++) {
		vf_buf_t *b = &pool->meta[bi[i]];
		int good = ip4_fast_ok(b, vf_buf_data(pool, bi[i]) + b->l3, nat);
		next[i] = good ? ok : IP4_INPUT_N_NEXT;
		slow |= !good;
	}
	if (VF_UNLIKELY(slow))
		for (i = 0; i < n; i++)
			if (next[i] == IP4_INPUT_N_NEXT) {
				vf_buf_t *b = &pool->meta[bi[i]];
				next[i] = ip4_check_slow(rt, b, vf_buf_data(pool, bi[i]) + b->l3, ok);
			}
}

static uint32_t ip4_input_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	uint16_t next[VF_FRAME_SIZE];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n;
	uint16_t ok = ((ip4_input_state_t *)rt->state)->ok_next;

	/* the fragment test only where nat44 follows: two copies of the loop */
	if (ok == IP4_INPUT_NEXT_NAT44)
		ip4_input_frame(w, rt, f, ok, next, 1);
	else
		ip4_input_frame(w, rt, f, ok, next, 0);
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
	if (VF_UNLIKELY(!n))
		return 0;
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
	 * 0x0100 to the checksum (RFC 1624, one's complement, end-around
	 * carry), done in the header's own byte order: a one's complement sum
	 * does not depend on it (RFC 1071), so no byte swap */
	uint16_t raw;
	memcpy(&raw, ip + 10, 2);
	uint32_t c = (uint32_t)raw + VF_BE16((uint16_t)0x0100);
	raw = (uint16_t)((c & 0xffff) + (c >> 16));
	ip[8]--;
	memcpy(ip + 10, &raw, 2);
	memcpy(p, a->rewrite, 12);
	b->tx_port = a->port;
}

static uint32_t ip4_rewrite_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	/* a local copy of the pool's pointers: the byte stores into packets
	 * could alias w->pool, so the compiler would reload it per packet */
	const vf_pool_t pool_copy = w->pool, *pool = &pool_copy;
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
