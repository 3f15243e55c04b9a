/* SPDX-License-Identifier: MIT */
/*
 * ethernet-input: checks the frame is long enough, then sends it by the
 * receiving port's role: L2 ports (xconnect, bridge) to their L2 node,
 * L3 ports by EtherType to ip4-input / ip6-input when addressed to the
 * port's MAC. vfwd has no control plane, so ARP/ND and frames for other
 * MACs are dropped by name.
 */
#include <stdlib.h>

#include "vfwd.h"

#define foreach_ethernet_input_error \
	_(SHORT, "frame too short") \
	_(ETHERTYPE, "unknown ethertype") \
	_(NOT_FOR_US, "l3 port: destination MAC is not the port's") \
	_(ARP, "arp (no control plane)")

typedef enum {
#define _(sym, str) ETHERNET_INPUT_ERROR_##sym,
	foreach_ethernet_input_error
#undef _
	ETHERNET_INPUT_N_ERROR,
} ethernet_input_error_t;
static const char *const ethernet_input_error_strings[] = {
#define _(sym, str) str,
	foreach_ethernet_input_error
#undef _
};

typedef enum {
	ETHERNET_INPUT_NEXT_DROP,
	ETHERNET_INPUT_NEXT_IP4,
	ETHERNET_INPUT_NEXT_IP6,
	ETHERNET_INPUT_NEXT_L2_XCONNECT,
	ETHERNET_INPUT_NEXT_L2_BRIDGE,
	ETHERNET_INPUT_N_NEXT,
} ethernet_input_next_t;

typedef struct {
	uint8_t dst[6], src[6];
	uint16_t type, rx_port;
} ethernet_input_trace_t;

static int format_ethernet_input_trace(char *s, size_t n, const void *rec)
{
	const ethernet_input_trace_t *t = rec;
	return snprintf(s, n, "port %u %02x:%02x:%02x:%02x:%02x:%02x -> "
			"%02x:%02x:%02x:%02x:%02x:%02x type 0x%04x", t->rx_port,
			t->src[0], t->src[1], t->src[2], t->src[3], t->src[4], t->src[5],
			t->dst[0], t->dst[1], t->dst[2], t->dst[3], t->dst[4], t->dst[5], t->type);
}

enum { ROLE_L3, ROLE_XC, ROLE_BRIDGE, ROLE_MIXED };
typedef struct {
	uint8_t role[VF_MAX_PORTS];
	uint8_t one_role;            /* every port's role, or ROLE_MIXED */
	uint64_t mac[VF_MAX_PORTS];  /* port MAC as loaded by mac48() */
} ethernet_input_state_t;

static inline uint64_t mac48(const uint8_t *p)
{
	uint64_t v = 0;
	memcpy(&v, p, 6);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v >>= 16;
#endif
	return v;
}

/* The destination MAC from one 8-byte load (the frame is >= 14 bytes). */
VF_INLINE uint64_t dst_mac48(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return v & 0x0000ffffffffffffull;
#else
	return v >> 16;
#endif
}

static int ethernet_input_init(vf_worker_t *w, vf_node_rt_t *rt)
{
	const struct vf_config *c = w->cfg;
	ethernet_input_state_t *s = calloc(1, sizeof(*s));
	if (!s)
		return -12;
	for (uint32_t i = 0; i < c->n_ports; i++) {
		s->role[i] = c->mode == VF_MODE_XCONNECT ? ROLE_XC :
			     c->mode == VF_MODE_BRIDGE ? ROLE_BRIDGE : ROLE_L3;
		s->mac[i] = mac48(c->port[i].mac);
	}
	s->one_role = c->n_ports ? s->role[0] : ROLE_MIXED;
	for (uint32_t i = 1; i < c->n_ports; i++)
		if (s->role[i] != s->one_role)
			s->one_role = ROLE_MIXED;
	rt->state = s;
	return 0;
}

/* Port MACs may be learnt from the interfaces after init. */
void vf_ethernet_set_mac(vf_worker_t *w, uint32_t port, const uint8_t mac[6])
{
	vf_node_t *n = vf_node_by_name("ethernet-input");
	ethernet_input_state_t *s = w->rt[n->index].state;
	if (s && port < VF_MAX_PORTS)
		s->mac[port] = mac48(mac);
}

/* one_role is a constant where this is inlined: a worker whose ports share
 * a role (every mode today) classifies without the per-port lookup and the
 * branches of the other roles (callgrind: 45 -> 41 instructions a packet) */
VF_INLINE uint16_t ethernet_classify(vf_node_rt_t *rt, const ethernet_input_state_t *s,
					 vf_buf_t *b, const uint8_t *p, uint8_t one_role)
{
	if (VF_UNLIKELY(b->len < 14)) {
		b->error = vf_error(rt, ETHERNET_INPUT_ERROR_SHORT);
		return ETHERNET_INPUT_NEXT_DROP;
	}
	b->l3 = 14;
	uint8_t role = one_role == ROLE_MIXED ? s->role[b->rx_port] : one_role;
	if (role == ROLE_XC)
		return ETHERNET_INPUT_NEXT_L2_XCONNECT;
	if (role == ROLE_BRIDGE)
		return ETHERNET_INPUT_NEXT_L2_BRIDGE;
	uint16_t type = vf_rd16(p + 12);
	if (VF_UNLIKELY(dst_mac48(p) != s->mac[b->rx_port])) {
		b->error = vf_error(rt, type == 0x0806 ? ETHERNET_INPUT_ERROR_ARP
						       : ETHERNET_INPUT_ERROR_NOT_FOR_US);
		return ETHERNET_INPUT_NEXT_DROP;
	}
	if (VF_LIKELY(type == 0x0800))
		return ETHERNET_INPUT_NEXT_IP4;
	if (type == 0x86dd)
		return ETHERNET_INPUT_NEXT_IP6;
	b->error = vf_error(rt, type == 0x0806 ? ETHERNET_INPUT_ERROR_ARP
					       : ETHERNET_INPUT_ERROR_ETHERTYPE);
	return ETHERNET_INPUT_NEXT_DROP;
}

VF_INLINE void ethernet_input_frame(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f,
				      uint16_t *next, uint8_t one_role)
{
	const ethernet_input_state_t *s = rt->state;
	vf_pool_t *pool = &w->pool;
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i = 0;

	/* quad loop: classify 4, prefetch the headers of the next 4 */
	for (; i + 8 <= n; i += 4) {
		if (w->prefetch) {
			VF_PREFETCH(vf_buf_data(pool, bi[i + 4]));
			VF_PREFETCH(vf_buf_data(pool, bi[i + 5]));
			VF_PREFETCH(vf_buf_data(pool, bi[i + 6]));
			VF_PREFETCH(vf_buf_data(pool, bi[i + 7]));
			VF_PREFETCH(&pool->meta[bi[i + 4]]);
			VF_PREFETCH(&pool->meta[bi[i + 5]]);
			VF_PREFETCH(&pool->meta[bi[i + 6]]);
			VF_PREFETCH(&pool->meta[bi[i + 7]]);
		}
		for (uint32_t k = 0; k < 4; k++)
			next[i + k] = ethernet_classify(rt, s, &pool->meta[bi[i + k]],
							vf_buf_data(pool, bi[i + k]), one_role);
	}
	for (; i < n; i++)
		next[i] = ethernet_classify(rt, s, &pool->meta[bi[i]], vf_buf_data(pool, bi[i]),
					    one_role);
}

static uint32_t ethernet_input_node_fn(vf_worker_t *w, vf_node_rt_t *rt, vf_frame_t *f)
{
	const ethernet_input_state_t *s = rt->state;
	vf_pool_t *pool = &w->pool;
	uint16_t next[VF_FRAME_SIZE];
	const uint32_t *bi = f->bi;
	uint32_t n = f->n, i;

	switch (s->one_role) {
	case ROLE_L3:
		ethernet_input_frame(w, rt, f, next, ROLE_L3);
		break;
	case ROLE_XC:
		ethernet_input_frame(w, rt, f, next, ROLE_XC);
		break;
	case ROLE_BRIDGE:
		ethernet_input_frame(w, rt, f, next, ROLE_BRIDGE);
		break;
	default:
		ethernet_input_frame(w, rt, f, next, ROLE_MIXED);
	}

	if (VF_UNLIKELY(w->tracing))
		for (i = 0; i < n && w->tracing; i++) {
			const uint8_t *p = vf_buf_data(pool, bi[i]);
			ethernet_input_trace_t t = { .rx_port = pool->meta[bi[i]].rx_port };
			if (pool->meta[bi[i]].len >= 14) {
				memcpy(t.dst, p, 6);
				memcpy(t.src, p + 6, 6);
				t.type = vf_rd16(p + 12);
			}
			vf_trace_add(w, rt, bi[i], &t, sizeof(t));
		}
	vf_enqueue(w, rt, bi, next, n);
	return n;
}

static const char *const ethernet_input_next_nodes[] = {
	[ETHERNET_INPUT_NEXT_DROP] = "drop",
	[ETHERNET_INPUT_NEXT_IP4] = "ip4-input",
	[ETHERNET_INPUT_NEXT_IP6] = "ip6-input",
	[ETHERNET_INPUT_NEXT_L2_XCONNECT] = "l2-xconnect",
	[ETHERNET_INPUT_NEXT_L2_BRIDGE] = "l2-bridge",
};

static vf_node_t ethernet_input_node = {
	.name = "ethernet-input",
	.fn = ethernet_input_node_fn,
	.n_next = ETHERNET_INPUT_N_NEXT,
	.next_names = ethernet_input_next_nodes,
	.n_errors = ETHERNET_INPUT_N_ERROR,
	.error_names = ethernet_input_error_strings,
	.format_trace = format_ethernet_input_trace,
	.init = ethernet_input_init,
};
VF_REGISTER_NODE(ethernet_input_node)
