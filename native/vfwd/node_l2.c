/* SPDX-License-Identifier: MIT */
/*
 * Layer 2: l2-xconnect (every frame of a port leaves through its peer,
 * unchanged) and l2-bridge (one bridge domain of all ports: source MAC
 * learning, aging, forwarding by destination MAC, flooding of unknown,
 * broadcast and multicast destinations).
 *
 * The bridge's MAC table is per worker (as its runtime state is never
 * shared): with several workers each learns what it sees.
 */
#include <stdlib.h>

#include "vfwd.h"

/* ====================================================================== */
/* l2-xconnect                                                            */

#define foreach_l2_xconnect_error _(NONE, "none")
typedef enum {
#define _(sym, str) L2_XCONNECT_ERROR_##sym,
	foreach_l2_xconnect_error
#undef _
	L2_XCONNECT_N_ERROR,
} l2_xconnect_error_t;
static const char *const l2_xconnect_error_strings[] = {
#define _(sym, str) str,
	foreach_l2_xconnect_error
#undef _
};

typedef enum { L2_XCONNECT_NEXT_OUTPUT, L2_XCONNECT_N_NEXT } l2_xconnect_next_t;

typedef struct { uint16_t rx_port, tx_port; } l2_trace_t;

static int format_l2_trace(char *s, size_t n, const void *rec)
{
	const l2_trace_t *t = rec;
	return snprintf(s, n, "rx port %u -> tx port %u", t->rx_port, t->tx_port);
}

typedef struct { uint16_t peer[VF_MAX_PORTS]; } l2_xconnect_state_t;

static int l2_xconnect_init(vf_worker_t *w, vf_node_rt_t *rt)
{
	l2_xconnect_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -12;
	for (uint32_t i = 0; i < w->cfg->n_ports; i++)
		s->peer[i] = (uint16_t)(w->cfg->port[i].xc_peer < 0 ? (int)i : w->cfg->port[i].xc_peer);
	rt->state = s;
	return 0;
}

static uint32_t l2_xconnect_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	const l2_xconnect_state_t *s = rt->state;
	vf_buf_t *meta = w->pool.meta;
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i = 0;

	/* only metadata is touched: no packet prefetch needed */
	for (; i + 4 <= n; i += 4) {
		vf_buf_t *b0 = &meta[bi[i]], *b1 = &meta[bi[i + 1]];
		vf_buf_t *b2 = &meta[bi[i + 2]], *b3 = &meta[bi[i + 3]];
		b0->tx_port = s->peer[b0->rx_port];
		b1->tx_port = s->peer[b1->rx_port];
		b2->tx_port = s->peer[b2->rx_port];
		b3->tx_port = s->peer[b3->rx_port];
	}
	for (; i < n; i++)
		meta[bi[i]].tx_port = s->peer[meta[bi[i]].rx_port];
	if (VF_UNLIKELY(w->tracing))
		for (i = 0; i < n && w->tracing; i++) {
			l2_trace_t t = { meta[bi[i]].rx_port, meta[bi[i]].tx_port };
			vf_trace_add(w, rt, bi[i], &t, sizeof(t));
		}
	vf_enqueue_one(w, rt, bi, n, L2_XCONNECT_NEXT_OUTPUT);
	return n;
}

static const char *const l2_xconnect_next_nodes[] = {
	[L2_XCONNECT_NEXT_OUTPUT] = "port-output",
};

static vf_node_t l2_xconnect_node = {
	.name = "l2-xconnect",
	.fn = l2_xconnect_node_fn,
	.n_next = L2_XCONNECT_N_NEXT,
	.next_names = l2_xconnect_next_nodes,
	.n_errors = L2_XCONNECT_N_ERROR,
	.error_names = l2_xconnect_error_strings,
	.format_trace = format_l2_trace,
	.init = l2_xconnect_init,
};
VF_REGISTER_NODE(l2_xconnect_node)

/* ====================================================================== */
/* l2-bridge                                                              */

#define foreach_l2_bridge_error \
	_(FILTERED, "destination is on the receiving port") \
	_(NO_BUFFER, "no buffer to flood") \
	_(TABLE_FULL, "mac table full (not learnt)")

typedef enum {
#define _(sym, str) L2_BRIDGE_ERROR_##sym,
	foreach_l2_bridge_error
#undef _
	L2_BRIDGE_N_ERROR,
} l2_bridge_error_t;
static const char *const l2_bridge_error_strings[] = {
#define _(sym, str) str,
	foreach_l2_bridge_error
#undef _
};

typedef enum { L2_BRIDGE_NEXT_OUTPUT, L2_BRIDGE_NEXT_DROP, L2_BRIDGE_N_NEXT } l2_bridge_next_t;

#define L2_VALID (1ull << 63)
typedef struct {
	uint64_t key;          /* L2_VALID | MAC */
	uint32_t seen;         /* [s] coarse monotonic */
	uint16_t port;
	uint16_t is_static;    /* configured: never ages, never moves */
} l2_entry_t;

typedef struct {
	l2_entry_t *tab;
	l2_entry_t *spare;     /* the live entries while a sweep rebuilds tab */
	uint32_t mask, n, max, aging;
	uint32_t n_ports;
	uint32_t swept;        /* [s] of the last sweep: at most one a second */
	uint64_t learnt, moved, flooded, table_full, aged;
} l2_bridge_state_t;

VF_INLINE uint64_t mac_key(const uint8_t *p)
{
	uint64_t v = 0;
	memcpy(&v, p, 6);
	return v | L2_VALID;
}

/* Destination and source keys of a frame from two 8-byte loads. */
VF_INLINE void frame_keys(const uint8_t *p, uint64_t *dst, uint64_t *src)
{
	uint64_t a, b;
	memcpy(&a, p, 8);
	memcpy(&b, p + 6, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	*dst = (a & 0x0000ffffffffffffull) | L2_VALID;
	*src = (b & 0x0000ffffffffffffull) | L2_VALID;
#else
	*dst = (a >> 16) | L2_VALID;
	*src = (b >> 16) | L2_VALID;
#endif
}

VF_INLINE uint32_t mac_hash(uint64_t k, uint32_t mask)
{
	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 40) & mask;
}

static int l2_bridge_init(vf_worker_t *w, vf_node_rt_t *rt)
{
	const struct vf_config *c = w->cfg;
	l2_bridge_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -12;
	uint32_t size = 16;
	while (size < 2 * c->bridge_size)
		size <<= 1;
	s->tab = calloc(size, sizeof(l2_entry_t));
	s->spare = calloc(size, sizeof(l2_entry_t));
	if (!s->tab || !s->spare) {
		free(s->tab);
		free(s->spare);
		free(s);
		return -12;
	}
	s->swept = UINT32_MAX;
	s->mask = size - 1;
	s->max = c->bridge_size;
	s->aging = c->bridge_aging_s;
	s->n_ports = c->n_ports;
	for (uint32_t i = 0; i < c->n_bridge_static; i++) {
		uint64_t key = mac_key(c->bridge_static[i].mac);
		uint32_t k = mac_hash(key, s->mask);
		while (s->tab[k].key && s->tab[k].key != key)
			k = (k + 1) & s->mask;
		if (!s->tab[k].key)
			s->n++;
		s->tab[k] = (l2_entry_t){ key, 0, c->bridge_static[i].port, 1 };
	}
	rt->state = s;
	return 0;
}

static void l2_bridge_fini(void *state)
{
	free(((l2_bridge_state_t *)state)->tab);
	free(((l2_bridge_state_t *)state)->spare);
}

static inline int expired(const l2_bridge_state_t *s, const l2_entry_t *e, uint32_t now)
{
	return s->aging && !e->is_static && now - e->seen > s->aging;
}

/* The table is full: drop the aged-out entries by rebuilding it from the
 * live ones (linear probing has no cheap delete; a learn reuses an aged
 * entry only when one sits in its own probe chain). At most once a second,
 * so a table full of live entries costs one sweep a second. Returns the
 * entries freed. */
static __attribute__((noinline, cold)) uint32_t l2_sweep(l2_bridge_state_t *s, uint32_t now)
{
	uint32_t live = 0, old = s->n;

	if (!s->aging || s->swept == now)
		return 0;
	s->swept = now;
	for (uint32_t i = 0; i <= s->mask; i++)
		if (s->tab[i].key && !expired(s, &s->tab[i], now))
			s->spare[live++] = s->tab[i];
	if (live == old)
		return 0;
	memset(s->tab, 0, (size_t)(s->mask + 1) * sizeof(l2_entry_t));
	for (uint32_t j = 0; j < live; j++) {
		uint32_t k = mac_hash(s->spare[j].key, s->mask);
		while (s->tab[k].key)
			k = (k + 1) & s->mask;
		s->tab[k] = s->spare[j];
	}
	s->n = live;
	s->aged += old - live;
	return old - live;
}

/* Learn src -> port. Returns 0, or -1 when the table is full. */
VF_INLINE int l2_learn(l2_bridge_state_t *s, uint64_t key, uint16_t port, uint32_t now)
{
	l2_entry_t *stale;
retry:
	stale = NULL;
	for (uint32_t i = mac_hash(key, s->mask);; i = (i + 1) & s->mask) {
		l2_entry_t *e = &s->tab[i];
		if (e->key == key) {
			if (VF_UNLIKELY(e->is_static))
				return 0;
			/* write only what changed: a hot entry stays clean */
			if (VF_UNLIKELY(e->port != port)) {
				e->port = port;
				s->moved++;
			}
			if (VF_UNLIKELY(e->seen != now))
				e->seen = now;
			return 0;
		}
		if (!e->key) {
			if (!stale) {
				if (s->n >= s->max) {
					if (l2_sweep(s, now))
						goto retry;
					return -1;
				}
				stale = e;
				s->n++;
			}
			stale->key = key;
			stale->port = port;
			stale->seen = now;
			stale->is_static = 0;
			s->learnt++;
			return 0;
		}
		if (!stale && expired(s, e, now))
			stale = e;
	}
}

VF_INLINE int l2_lookup(const l2_bridge_state_t *s, uint64_t key, uint32_t now)
{
	for (uint32_t i = mac_hash(key, s->mask);; i = (i + 1) & s->mask) {
		const l2_entry_t *e = &s->tab[i];
		if (e->key == key)
			return expired(s, e, now) ? -1 : e->port;
		if (!e->key)
			return -1;
	}
}

static uint32_t l2_bridge_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	l2_bridge_state_t *s = rt->state;
	vf_pool_t *pool = &w->pool;
	uint32_t out[VF_FRAME_SIZE * VF_MAX_PORTS];
	uint16_t next[VF_FRAME_SIZE * VF_MAX_PORTS];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, n_out = 0, now = w->now_s;

	for (uint32_t i = 0; i < n; i++) {
		if (w->prefetch && i + 4 < n) {
			VF_PREFETCH(vf_buf_data(pool, bi[i + 4]));
			VF_PREFETCH(&pool->meta[bi[i + 4]]);
		}
		vf_buf_t *b = &pool->meta[bi[i]];
		const uint8_t *p = vf_buf_data(pool, bi[i]);
		uint64_t dk, sk;
		frame_keys(p, &dk, &sk);
		/* learn: the common case is a known source on the same port, seen
		 * this second: one probe, no write */
		const l2_entry_t *se = &s->tab[mac_hash(sk, s->mask)];
		if (VF_UNLIKELY(se->key != sk || se->port != b->rx_port || se->seen != now) &&
		    !(p[6] & 1) && VF_UNLIKELY(l2_learn(s, sk, b->rx_port, now)))
			s->table_full++;
		/* forward: one probe when the destination sits in its home slot */
		int port;
		const l2_entry_t *de = &s->tab[mac_hash(dk, s->mask)];
		if (VF_LIKELY(de->key == dk) && !(p[0] & 1))
			port = expired(s, de, now) ? -1 : de->port;
		else
			port = (p[0] & 1) ? -1 : l2_lookup(s, dk, now);
		if (VF_LIKELY(port >= 0)) {
			out[n_out] = bi[i];
			if (VF_UNLIKELY(port == b->rx_port)) {
				b->error = vf_error(rt, L2_BRIDGE_ERROR_FILTERED);
				next[n_out++] = L2_BRIDGE_NEXT_DROP;
			} else {
				b->tx_port = (uint16_t)port;
				next[n_out++] = L2_BRIDGE_NEXT_OUTPUT;
			}
			continue;
		}
		/* flood: the original to the first other port, copies to the rest */
		s->flooded++;
		int first = 1;
		for (uint32_t q = 0; q < s->n_ports; q++) {
			if (q == b->rx_port)
				continue;
			uint32_t c = bi[i];
			if (!first) {
				if (!vf_alloc(pool, &c, 1)) {
					b->error = vf_error(rt, L2_BRIDGE_ERROR_NO_BUFFER);
					continue;
				}
				vf_buf_t *cb = &pool->meta[c];
				cb->len = b->len;
				cb->rx_port = b->rx_port;
				cb->l3 = b->l3;
				memcpy(vf_buf_data(pool, c), p, b->len);
			}
			first = 0;
			pool->meta[c].tx_port = (uint16_t)q;
			out[n_out] = c;
			next[n_out++] = L2_BRIDGE_NEXT_OUTPUT;
		}
		if (first) {     /* a bridge of one port */
			b->error = vf_error(rt, L2_BRIDGE_ERROR_FILTERED);
			out[n_out] = bi[i];
			next[n_out++] = L2_BRIDGE_NEXT_DROP;
		}
	}
	if (VF_UNLIKELY(w->tracing))
		for (uint32_t i = 0; i < n_out && w->tracing; i++) {
			l2_trace_t t = { pool->meta[out[i]].rx_port, pool->meta[out[i]].tx_port };
			vf_trace_add(w, rt, out[i], &t, sizeof(t));
		}
	vf_enqueue(w, rt, out, next, n_out);
	return n;
}

static const char *const l2_bridge_next_nodes[] = {
	[L2_BRIDGE_NEXT_OUTPUT] = "port-output",
	[L2_BRIDGE_NEXT_DROP] = "drop",
};

static vf_node_t l2_bridge_node = {
	.name = "l2-bridge",
	.fn = l2_bridge_node_fn,
	.n_next = L2_BRIDGE_N_NEXT,
	.next_names = l2_bridge_next_nodes,
	.n_errors = L2_BRIDGE_N_ERROR,
	.error_names = l2_bridge_error_strings,
	.format_trace = format_l2_trace,
	.init = l2_bridge_init,
	.fini = l2_bridge_fini,
};
VF_REGISTER_NODE(l2_bridge_node)

/* Learnt entries of worker w's table (tests and stats). */
uint32_t vf_l2_bridge_entries(vf_worker_t *w)
{
	vf_node_t *n = vf_node_by_name("l2-bridge");
	l2_bridge_state_t *s = w->rt[n->index].state;
	return s ? s->n : 0;
}

/* Worker w's MAC table counters, in the order of vfwd.h's VF_L2_STATS
 * names; all 0 when the bridge does not run. */
void vf_l2_bridge_stats(vf_worker_t *w, uint64_t out[VF_L2_N_STATS])
{
	vf_node_t *n = vf_node_by_name("l2-bridge");
	const l2_bridge_state_t *s = w->rt[n->index].state;
	memset(out, 0, VF_L2_N_STATS * sizeof(out[0]));
	if (!s)
		return;
	out[0] = s->n;
	out[1] = s->learnt;
	out[2] = s->moved;
	out[3] = s->flooded;
	out[4] = s->table_full;
	out[5] = s->aged;
}
